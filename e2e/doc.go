// Package e2e runs the sqllogictest scripts (*.slt, by area in sub-directories) against the real
// server: TestSLT builds ./cmd/server once and runs each script as a subtest with its own server
// process and data directory (go test ./e2e -run TestSLT/basic/errors). Flags: -rewrite writes
// the actual answers into the scripts; -pg (or TRIBUTARY_E2E_PG=1) runs them against a private
// PostgreSQL instead, with engine name "postgres" for skipif/onlyif. Files under include/ and
// *.slt.part files are only for `include`. The runner lives in e2e/slt, the process helpers in
// e2e/testserver and e2e/pgtest. TestCompatDifferential runs the statements of
// testdata/compat/*.sql on PostgreSQL and on Tributary and compares their outcomes.
package e2e
