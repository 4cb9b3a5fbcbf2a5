// Command bench measures Tributary's streaming engine over the wire and compares it with
// PostgreSQL 15 recomputing the same materialized view by REFRESH after every batch:
//
//	go run ./cmd/bench stream [--rows N] [--batch B[,B...]] [--json] [--addr host:port]
//	go run ./cmd/bench memory [--groups G] [--server-args '--stream-cache-rows=4096']
//	go run ./cmd/bench isolation [--base-rows N] [--hot-rate R] [--phases ...]
//
// It builds ./cmd/server and starts it on a free port with a temporary data directory (or
// uses --addr), initdb's a private PostgreSQL cluster, and prints a table (or JSON). The
// workloads live in stream.go, the peak-RSS run in memory.go, the backfill isolation phases
// (hot throughput and barrier latency while a view backfills) in isolation.go, the Kafka
// source against datagen (an in-process kfake broker, server and bench CPU apart) in
// kafka.go, ALTER ... SET PARALLELISM's pause and a running pipeline meanwhile (issue 12) in
// rescale.go, durable single-row commits beside PostgreSQL with fsync on (issue 14) in
// durable.go, the memory of one big INSERT ... SELECT (issue 14) in dml_memory.go, COPY FROM STDIN
// ingest beside PostgreSQL's (issue 17) in copy.go, Nexmark q5 and q7 with EMIT ON WINDOW CLOSE and
// their state rows and RSS as the events go by (issue 18) in eowc.go, multi-row INSERT ... VALUES
// ingest from 1 and 8 connections beside PostgreSQL's (issue 19) in ingest.go, a GROUP BY view
// created over an existing table beside PostgreSQL's CREATE MATERIALIZED VIEW (issue 19) in
// backfill.go, the child
// processes and the private PostgreSQL clusters in procs.go.
package main
