// Package coordinator is the streaming control plane. Coordinator owns the
// epochs: it injects a barrier into every root of the dataflow (each table's
// DML source, each constant source) every barrier interval or on demand,
// collects each actor's report and state writes, commits the epoch's writes
// (DML, DDL and operator state) to storage atomically, and then publishes the
// epoch as committed. DML runs under its lock so its table writes and change
// chunks land in the open epoch; jobs (materialized views) are added and
// dropped by barrier mutations; Build turns a stream plan into actors. A
// BarrierLog keeps the recent epochs' barrier latencies (BarrierStat).
package coordinator
