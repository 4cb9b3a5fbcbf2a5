// Package e2etest holds the helpers the end-to-end test packages (e2e and e2e/recovery) share:
// StartServer and Connect for a fresh server and a session on it; Rows, MustRows, CheckView,
// WaitRows and the other query helpers, which compare rows as sorted "a|b" text lines;
// ProduceJSON and KafkaWith for Kafka sources; and the streaming oracle (CreateOracleTables,
// CreateOracleViews, DMLGen, CheckMVs), whose views must equal their batch recompute after
// every FLUSH. Main is both packages' TestMain: it builds the server once for all their tests.
// The server processes themselves are e2e/testserver's.
package e2etest
