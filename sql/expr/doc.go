// Package expr owns scalar expressions and aggregates. An Expr is a typed tree
// (ColumnRef, Const, ParamRef, CastExpr, FuncExpr, CaseExpr) built by Column,
// Literal, Param, Cast and Call, which resolve operators and functions against
// a registry with PostgreSQL-like overload rules. Eval runs vectorised over a
// types.Chunk; EvalRow runs on one row. A Ctx carries statement values
// (parameters, now(), user) and scratch vectors. Agg and AggState implement
// aggregate functions with retraction for streaming (all but jsonb_object_agg,
// which is batch-only).
package expr
