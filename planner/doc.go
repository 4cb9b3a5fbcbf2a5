// Package planner turns parsed statements into plans. Its sub-packages: plan
// (plan nodes as data, printed as trees), bind (TiDB AST + catalog → logical
// plan: name resolution, typing, subqueries and their decorrelation,
// aggregation), physical (logical plan → stream plan: exchanges, stream keys,
// state tables, watermarks) and job (a streaming job's plan from its catalog
// entry, for CREATE and for every rebuild). Executors are built from plans
// by executor/batch and executor/coordinator; the planner never imports
// executors or storage.
package planner
