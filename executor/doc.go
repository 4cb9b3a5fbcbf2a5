// Package executor is the parent of the engines that run plans:
// executor/batch (pull-based, one-shot queries and DML), executor/stream
// (the streaming runtime: actors, exchanges, stream operators, backfills,
// source readers and sinks), executor/coordinator (its control plane:
// barriers, epoch commits, job life and recovery) and executor/window (window
// functions over one partition, shared by the batch and stream engines).
package executor
