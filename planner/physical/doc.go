// Package physical plans bound queries for execution engines. Stream turns a
// bound query (plan.Query) into a stream plan (plan.StreamNode tree) whose
// every node has a valid stream key, with StreamExchange nodes where rows must
// be redistributed (fragment boundaries); Materialize puts the materialized
// view's sink on top, and AssignState gives stateful nodes their state-table
// ids in a fixed order. StreamQuery is the planned query with the MV's
// columns (visible, then hidden stream-key columns) and primary key.
package physical
