// Package e2e runs the sqllogictest scripts (*.slt, by area in sub-directories) against the real
// server: TestSLT runs each script as a subtest with its own server process and data directory
// (go test ./e2e -run TestSLT/basic/errors); TestMain builds ./cmd/server once for the package.
// Flags: -rewrite writes the actual answers into the scripts; -pg (or TRIBUTARY_E2E_PG=1) runs
// them against a private PostgreSQL instead, with engine name "postgres" for skipif/onlyif. Files
// under include/ and *.slt.part files are only for `include`. The runner lives in e2e/slt, the
// process helpers in e2e/testserver and e2e/pgtest. TestCompatDifferential runs the statements of
// testdata/compat/*.sql on PostgreSQL and on Tributary and compares their outcomes. The Go tests
// beside them cover clients, the protocol and features; the tests of surviving kills, crashes
// and outages are in e2e/recovery (a package of its own, so that neither comes near go test's
// default 10-minute timeout), and the helpers both use in e2e/e2etest.
package e2e
