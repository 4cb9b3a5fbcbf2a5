// Package executor is the parent of the engines that run plans: executor/batch
// (pull-based, one-shot queries and DML) and, later, executor/stream and
// executor/coordinator (the streaming runtime and its control plane).
package executor
