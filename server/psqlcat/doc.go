// Package psqlcat answers the catalog queries psql 15 sends for its describe
// commands (\d, \dt, \dv, \dm, \di, \d NAME, \d+ NAME, \l, \dn, \du, \dp, \z, \df, \dT, \dx), which use
// constructs the general SQL engine does not run (correlated subqueries,
// regclass casts, OPERATOR(pg_catalog.~), pg_get_* functions). Answer
// recognises a query by its whitespace-normalised text, extracts the variable
// parts (oids, name patterns, relkind lists, verbose columns) and builds the
// rows PostgreSQL would return from the catalog. Column is one result column;
// RoleReader and FuncReader are the catalog with the roles and the built-in
// functions.
package psqlcat
