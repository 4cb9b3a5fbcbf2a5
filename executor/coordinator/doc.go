// Package coordinator is the streaming control plane. Coordinator owns the
// epochs: it injects a barrier into every root of the dataflow (each table's
// DML source, each constant source) every barrier interval or on demand,
// collects each actor's report and state writes, commits the epoch's writes
// (DML, DDL and operator state) to storage atomically, and then publishes the
// epoch as committed. Barriers run one at a time, on the barrier loop or on
// the goroutine of a statement that found none in flight and commits its own
// epoch (driveEpoch: no hand-off to the loop and back). A table's DML source
// that feeds no job and got no change in the epoch is skipped by barriers
// without mutations. DML runs under its
// lock so its table writes and change chunks land in the open epoch; jobs (materialized views) are added and
// dropped by barrier mutations; Build turns a stream plan into actors. A
// BarrierLog keeps the recent epochs' barrier latencies (BarrierStat).
//
// Streaming owns the jobs' whole life across coordinators: it builds every
// job of the catalog (planned by a JobPlanner, planner/job) on a
// Coordinator, and when an epoch fails (recovery), on ALTER ... SET
// PARALLELISM (rescale) or RECOVER it replaces the coordinator by one whose
// jobs are rebuilt over the last committed epoch, carrying their progress
// and holding old versions until the new jobs pinned theirs; it deletes the
// state of dropped and failed jobs.
package coordinator
