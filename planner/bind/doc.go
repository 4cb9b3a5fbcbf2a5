// Package bind turns parsed statements (TiDB AST wrapped by sql/parser) into
// plans: it resolves names against a catalog.Reader, types expressions through
// sql/expr, infers parameter types, plans aggregation, window functions,
// subqueries (uncorrelated: semi/anti joins and init plans; correlated:
// decorrelated into joins, correlate.go), CTEs and WITH RECURSIVE
// (recursive.go), and inlines user SQL functions (function.go). Binder is
// the one public type; the TiDB AST stops here.
package bind
