// Package postgres is the sink connector that writes a streaming job's changes
// into a PostgreSQL table (connector = 'postgres'). It owns three things:
// Config, the WITH options (Parse), with Check, run at CREATE SINK, which
// verifies the target table against the sink's Columns (names, types and,
// for upsert, a unique key ON CONFLICT can use); and Sink, which buffers each
// epoch's rows as text and applies them in one PostgreSQL transaction at
// Commit: append-only sinks INSERT; upsert sinks keep the last change of each
// key, then DELETE and INSERT ... ON CONFLICT DO UPDATE, so replaying an
// epoch converges.
package postgres
