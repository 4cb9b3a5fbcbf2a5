// Package kafka is the sink connector that produces a sink's changes to a
// Kafka topic as JSON messages (connector = 'kafka'). Config is parsed from
// the WITH options and the FORMAT clause, and its Format says the messages'
// shape: FormatPlain (inserted rows), FormatUpsert (rows and tombstones by
// key) or FormatDebezium (change events). A Sink produces asynchronously
// with an idempotent franz-go client, keyed records hashed to partitions so
// one key's changes stay in order, and Commit flushes the epoch.
package kafka
