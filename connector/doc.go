// Package connector holds the sources and sinks that talk to the outside
// world, one sub-package per connector (connector/datagen and
// connector/nexmark generate rows; connector/blackhole is a sink), and the
// Sink interface every sink connector implements. A connector depends only
// on sql/types: the stream executors in executor/stream drive it, split by
// split for sources and actor by actor for sinks.
package connector
