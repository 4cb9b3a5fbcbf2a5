// Package executor is the parent of the engines that run plans:
// executor/batch (pull-based, one-shot queries and DML), executor/stream
// (the streaming runtime: actors, exchanges, stream operators, backfills,
// source readers and sinks) and executor/coordinator (its control plane:
// barriers, epoch commits, job life and recovery).
package executor
