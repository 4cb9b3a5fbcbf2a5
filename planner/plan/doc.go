// Package plan holds plan nodes as plain data: Node (Scan, Values, Series,
// Unnest, Changelog, GapFill, Filter, Project, Join, Expand, Agg, Sort, Limit,
// Distinct, SetOp, Window, RecursiveUnion and its WorkTableScan) for queries,
// and Insert, Update, Delete for DML. Each node reports
// its output Schema; Explain prints a tree. Expressions inside refer to input
// columns by position.
package plan
