// Package postgrescdc is the postgres-cdc connector: tables that mirror
// upstream PostgreSQL tables through logical replication (pgoutput, via
// jackc/pglogrepl). A CDC source (CREATE SOURCE, no columns, no rows)
// holds the connection, one replication slot and one publication; each
// table created FROM it, or a table of the single-table form (its own
// slot), has splits whose offsets (an Offset, JSON) hold the copy's
// progress and the change stream's position, so the engine's epoch commit
// persists both: one split, or with backfill.parallelism > 1 one split per
// key range, the ranges fixed at CREATE (OptRanges).
//
// Config is the parsed options; Source checks the upstream at CREATE
// (Check) and opens a Reader per actor over its share of a table's splits.
// The Readers of one slot share a hub: one goroutine and one session that
// reads the slot once, routes each change to its table's split (a ranged
// table's range holding its key), and copies the splits still copying in
// primary-key chunks interleaved with the stream (a watermark per chunk, as
// DBLog and RisingWave's CDC backfill do): a table in one range round robin
// on the session's connection, a ranged table's ranges over each actor's
// own connection (parallel.go), so ALTER TABLE ... SET PARALLELISM changes
// how many ranges are copied at once. A chunk's values are kept as sent
// (rawRows: non-key columns of fixed-size types in binary format, decode.go)
// and decoded by Read on the engine's goroutine. The slot's confirmed LSN
// is the least LSN all the slot's splits have committed.
package postgrescdc
