// Package job plans streaming jobs from their catalog entries: a
// materialized view's or sink's job from its definition and settings (at
// CREATE, and again at every rebuild: recovery, rescale), a connector
// table's source job and a shared source's reader. The coordinator rebuilds
// jobs through it (executor/coordinator.JobPlanner); sessions plan new jobs
// with the same functions.
package job
