// Package batch runs one-shot queries and DML as pull-based operators built
// from planner/plan nodes. Executor is the iterator every operator implements
// (Next returns columnar chunks, io.EOF at the end; Close always). Build turns
// a plan.Query into an Executor (init plans first), BuildDML does the same for
// INSERT, UPDATE and DELETE. Env carries the statement's expression context,
// its snapshot (store and epoch) and the TableSet through which DML writes.
package batch
