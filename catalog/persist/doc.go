// Package persist saves catalog descriptors in storage (as JSON under a
// reserved table id) and loads them at start-up. Store is its one type; writes
// go into the caller's storage.Batch so a DDL commits with its data changes in
// one epoch. Schemas, databases (SaveDatabases) and roles are kept beside the
// relations. It also keeps how far each serial or identity column's
// sequence has reserved its values (SaveSequence, LoadSequence).
package persist
