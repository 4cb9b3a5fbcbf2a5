// Package physical plans bound queries for execution engines. Stream turns a
// bound query (plan.Query) into a stream plan (plan.StreamNode tree) whose
// every node has a valid stream key, with StreamExchange nodes where rows must
// be redistributed (fragment boundaries); an aggregation whose input must be
// redistributed and whose aggregates have a partial form (counts, sums of
// int2, int4 and int8) runs in two phases, a StreamLocalAgg before the exchange
// and a merging StreamAgg after it; Materialize puts the materialized
// view's sink on top, and AssignState gives stateful nodes their state-table
// ids in a fixed order. StreamQuery is the planned query with the MV's
// columns (visible, then hidden stream-key columns) and primary key. A scan
// of a relation with a WATERMARK FOR clause gets a StreamWatermarkFilter;
// EmitOnWindowClose makes every aggregation of the query emit on window
// close, when each has a group column carrying a watermark
// (plan.WatermarkCols) and nothing between them and the sources retracts.
// A join with a right side read FOR SYSTEM_TIME AS OF PROCTIME() becomes a
// StreamTemporalJoin looking rows up by the table's key or an index's
// leading columns (temporal_join.go).
// A window limited by rn <= N becomes a group top-N; any other window a
// chain of StreamOverWindow nodes, one per distinct PARTITION BY and ORDER BY.
// A comparison with an uncorrelated scalar subquery becomes a
// StreamDynamicFilter whose right side is the subquery's one-row stream
// (dynamic_filter.go); a join without an equality joins both sides on an
// appended constant column, one actor comparing every pair (a nested-loop
// join, nested_loop_join.go, which also reorders FROM lists whose written
// order lacks an equality).
//
// Each stream operator is planned in the file named as its executor in
// executor/stream (hash_join.go, hash_agg.go, top_n.go, union.go, ...);
// stream.go holds Stream, the dispatch over bound nodes (convert) and the
// helpers they share.
package physical
