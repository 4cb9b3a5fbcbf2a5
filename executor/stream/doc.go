// Package stream is the streaming runtime: Message (a Chunk of changes, a
// Barrier or a Watermark) flowing through pull-based Executors, one goroutine
// per Actor, connected by bounded channels through Dispatchers (simple,
// broadcast, hash by vnode) and Merge receivers that align barriers. Stateful
// executors keep state in storage/state tables and, when a barrier passes,
// flush the epoch's writes into their ActorContext, which the actor hands to
// the coordinator with its barrier report. Each operator has a constructor
// (NewProject, NewAgg, NewHashJoin, NewBackfill, ...) that the coordinator's
// builder calls from its one type switch over stream plan nodes. Sources
// and sinks are looked up in the connector registry by name (OpenSource,
// OpenSink): a source reader (NewSourceScan, NewConnectorSource) reads the
// splits of a connector.Source, and NewSourceBackfill backfills a shared
// source's splits for a new job before it follows the shared stream.
// Watermarks start at NewWatermarkFilter (a WATERMARK FOR clause: one
// watermark per source split, late rows dropped against their own split's,
// counted by LateRows; held while a Backfiller below runs, and a table's or
// view's backfill drops its upstream's until done), are derived by
// projections, hop windows and
// aggregations and inner joins, and merged as the least over a Merge's
// inputs; an aggregation emitting on window close emits and deletes each
// group once the watermark on its window column passes it, and an inner
// join deletes the state rows below its key's watermark or an interval
// band's bound. NewDynamicFilter keeps the rows comparing true with a
// one-row right side's value, emitting and retracting the rows between the
// old and the new value when it changes. NewOverWindow maintains window
// functions (lag, frames, rankings) per partition, computed by
// executor/window. NewTemporalJoin joins each row of a stream with a
// relation's rows as of processing time, read from the relation's
// committed state (a memo state table lets a retracting stream retract
// what it produced).
package stream
