// Package session is one client connection's SQL engine: it parses
// statements, binds and plans them, runs queries and DML through the batch
// executor and commits writes through the coordinator, executes DDL against
// the catalog, and keeps session variables. Engine is the shared state every
// session uses (catalog, store, coordinator); Session implements pgwire.Session.
package session
