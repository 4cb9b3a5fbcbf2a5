// Package session is one client connection's SQL engine: it parses
// statements, binds and plans them, runs queries and DML through the batch
// executor and commits writes through the coordinator, executes DDL against
// the catalog (new jobs planned by planner/job, started, rescaled and
// dropped through coordinator.Streaming, which also recovers them), and
// keeps session variables and the session's database (database.go). Engine is the shared state every session uses
// (catalog, store, streaming engine); Session implements pgwire.Session.
package session
