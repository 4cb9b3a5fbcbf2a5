// Package postgrescdc is the postgres-cdc connector: tables that mirror
// upstream PostgreSQL tables through logical replication (pgoutput, via
// jackc/pglogrepl). A CDC source (CREATE SOURCE, no columns, no rows)
// holds the connection, one replication slot and one publication; each
// table created FROM it, or a table of the single-table form (its own
// slot), is one split whose offset (an Offset, JSON) holds the table's copy
// progress and change stream position, so the engine's epoch commit
// persists both.
//
// Config is the parsed options; Source checks the upstream at CREATE
// (Check) and opens a Reader per table. The Readers of one slot share a
// hub: one goroutine and one session that reads the slot once, routes each
// change to its table, and copies the tables still copying in primary-key
// chunks, round robin, interleaved with the stream (a watermark per chunk,
// as DBLog and RisingWave's CDC backfill do). A table with
// backfill.parallelism copies its key ranges (Offset.Splits, SplitState) at
// once, each over its own connection (parallel.go). The slot's confirmed
// LSN is the least LSN all the slot's tables have committed.
package postgrescdc
