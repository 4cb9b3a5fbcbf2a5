// Package kafka is the Kafka connector (connector = 'kafka'), both ways.
//
// The sink produces a sink's changes to a topic as JSON messages. Config is
// parsed from the WITH options and the FORMAT clause, and its Format says the
// messages' shape: FormatPlain (inserted rows), FormatUpsert (rows and
// tombstones by key) or FormatDebezium (change events). A Sink produces
// asynchronously with an idempotent franz-go client, keyed records hashed to
// partitions so one key's changes stay in order, and Commit flushes the epoch.
//
// The source (registered as a shared connector.SourceConnector) reads a topic
// of JSON messages. ParseSource checks the options (properties.bootstrap.server,
// topic, scan.startup.mode = earliest | latest | timestamp with
// scan.startup.timestamp.millis, properties.message.max.bytes: default 4 MiB,
// a larger message is skipped) and FORMAT PLAIN | UPSERT ENCODE JSON (UPSERT
// only for a table: the message key is the primary key, as a JSON object or
// scalar or as the raw INCLUDE KEY column; a message without a value deletes).
// Splits are partitions named by number; a split's offset is the next Kafka
// offset, 8 bytes big-endian, and a row's position its offset. The hidden row
// id is RowID: partition<<40 | offset. An Enumerator lists partitions and their
// bounds; a Reader assigns its partitions to a franz-go client (no consumer
// group, nothing committed to Kafka) that fetches in the background into a
// bounded queue. JSON fields fill columns by name, ignoring case (missing: NULL);
// a value that does not fit its column is NULL, malformed or oversized messages
// are skipped, both reported through ReaderEnv.BadMessage; broker and topic
// failures go to ReaderEnv.Trouble and are retried, never failing a Read.
package kafka
