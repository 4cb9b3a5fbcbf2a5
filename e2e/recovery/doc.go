// Package recovery holds the end-to-end tests of surviving failure: the server killed (SIGKILL)
// or crashed at random points under writes, backfills, sinks and Kafka and PostgreSQL CDC sources;
// a Kafka broker outage; and data directories damaged as a crash or a disk would. Afterwards each
// checks that nothing acknowledged was lost or applied twice. They live apart from e2e so that each
// package stays well within go test's default 10-minute timeout; both use e2e/e2etest's helpers.
package recovery
