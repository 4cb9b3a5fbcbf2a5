// Package badger implements storage.KV on Badger v4 in managed mode: a version is the epoch that wrote
// it. It is the only package importing Badger.
//
// Store adds what Badger lacks for atomic epochs: a committed-epoch watermark persisted under a reserved
// key, written after each epoch's writes, and a roll-back at Open of versions above it (a big batch is
// split into several Badger transactions, which a crash may leave half applied). Options configure it.
//
// Commits are synced to disk before they return (Options.NoSync turns that off): the writes of an
// epoch share one sync, of a record appended to the commit log (redo.go), and Badger takes them
// before (a small batch), beside (a big one) or after it: small commits wait in memory and go into
// Badger many together when a read, a commit that cannot wait or the bound needs them
// (deferred.go). Badger's own write-ahead files are synced (walsync.go, not Badger's SyncWrites,
// which flushes two files per write) when the log starts over, and for epochs the log does not
// cover (staged writes, value-log values, batches of 4 MiB or more). With NoSync the log is
// written and never synced (a killed process keeps it, as it keeps Badger's memory-mapped files),
// and a commit of 256 entries or more returns once its record is written: Badger takes the batch
// while the committer prepares its next one, and reads at or above its epoch wait for that write
// (a read that had to wait makes the next 64 commits write first again). Tables are written
// uncompressed. Values of 4 KiB and more (a bulk write's blocks) go to Badger's value log, whose
// files of mostly garbage a background collection rewrites and removes, each kept by a second
// link until the moved values are synced (vloggc.go). Open writes the logged commits Badger lost (or never
// got) back into it. Open checks the directory first (check.go, logscan.go) and refuses, with a
// *DamageError naming the file, a missing MANIFEST, a missing or damaged table file, or a
// write-ahead file with damaged bytes in front of readable ones: Badger alone would start empty,
// misread, panic or silently drop acknowledged writes.
package badger
