// Package postgrescdc is the postgres-cdc source connector: a table that
// mirrors one upstream PostgreSQL table through logical replication
// (pgoutput, via jackc/pglogrepl). Its one split is the table; the split's
// offset (an Offset, JSON) holds the copy's progress and the change
// stream's position, so the engine's epoch commit persists both.
//
// Config is the parsed options; Source checks the upstream at CREATE
// (Check) and opens a Reader, which copies the table in primary-key chunks
// interleaved with the change stream (a watermark per chunk, as DBLog and
// RisingWave's CDC backfill do) and then follows the stream.
package postgrescdc
