// Package planner turns parsed statements into plans. Its sub-packages: plan
// (plan nodes as data, printed as trees) and bind (TiDB AST + catalog → plan:
// name resolution, typing, subqueries, aggregation). Executors are built from
// plans by executor/batch; the planner never imports executors or storage.
package planner
