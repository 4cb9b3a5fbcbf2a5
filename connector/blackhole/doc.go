// Package blackhole is the sink connector that discards what it is given
// (connector = 'blackhole'): for benchmarks, and, with blackhole.delay_ms, a
// stand-in for a slow external system.
package blackhole
