// Package state provides Table, a stream operator's view of one state table: rows keyed by primary
// key and spread over vnodes, stored in a storage.KV under table_id | vnode | memcomparable(pk).
//
// Writes (Insert, Delete, Update) go to a per-epoch buffer; Flush moves it into the storage.Batch the
// coordinator commits and keeps it readable until that epoch is committed. Reads (Get, Iter) see
// committed data merged with these pending writes; PendingAt and StoredKeys answer many existence
// checks (a bulk insert's primary keys) with one ordered read. Schema describes the layout;
// RowIterator walks rows.
//
// A table whose Schema sets Blocks (every table with a key) may store rows many to a key: rows
// inserted with InsertFresh (a bulk statement's or a CDC copy's new keys) are written by a SealJob, or
// by Stage, as blocks of up to 256 rows and 16 KiB per vnode; deleting rows a block holds rewrites
// the block without them (blocks.go). Readers of such a table's keys outside Table use Scan, GetRow
// and ChangedRows, which read blocks as rows.
//
// A table its owner declares the only writer of its vnodes (TrackKeys: an operator's own state) learns
// each vnode's greatest stored key once and raises it over what it writes, so reads of keys above it
// read no store (key_bounds.go).
package state
