// Package metrics serves the server's numbers in Prometheus text format.
//
// Metrics owns one registry: the barrier latency histogram, fed on the commit
// path through coordinator.BarrierLog.Watch (one observation per epoch), and a
// Collector that reads the engine's own structures at scrape time (backfill
// progress, source splits, log stores, CDC progress, connections), so nothing
// is counted per row. Sources is the narrow set of functions it reads them
// through; Handler serves /metrics.
package metrics
