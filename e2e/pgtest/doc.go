// Package pgtest runs a private, throwaway PostgreSQL cluster for tests, from the PostgreSQL
// binaries installed under /usr/lib/postgresql/*/bin: StartPostgres returns a DSN for its
// database dev, and Start returns the Cluster itself, which can be stopped, crashed and
// restarted like the Tributary server in e2e/testserver. Tests skip when PostgreSQL is absent.
package pgtest
