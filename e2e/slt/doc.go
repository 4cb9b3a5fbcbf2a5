// Package slt parses and runs sqllogictest scripts (the sqllogictest-rs dialect) against a
// PostgreSQL-wire server, plus Tributary's own directives (`restart`, `restart kill`).
//
// Parse turns a file into a Script of Records (includes expanded); Runner executes a Script over
// pgx's simple query protocol, comparing every value in its text form (NULL as `NULL`, the empty
// string as `(empty)`), and can rewrite expected results in place. Compare and FormatRows hold the
// result comparison rules so they can be tested without a server.
package slt
