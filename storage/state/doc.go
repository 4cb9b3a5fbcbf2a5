// Package state provides Table, a stream operator's view of one state table: rows keyed by primary
// key and spread over vnodes, stored in a storage.KV under table_id | vnode | memcomparable(pk).
//
// Writes (Insert, Delete, Update) go to a per-epoch buffer; Flush moves it into the storage.Batch the
// coordinator commits and keeps it readable until that epoch is committed. Reads (Get, Iter) see
// committed data merged with these pending writes; PendingAt and StoredKeys answer many existence
// checks (a bulk insert's primary keys) with one ordered read. Schema describes the layout;
// RowIterator walks rows.
package state
