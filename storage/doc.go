// Package storage defines the versioned key-value contract every state store meets.
//
// A KV keeps several versions per key; a version is the epoch that wrote it. Commit applies a Batch
// atomically at a new epoch and only then publishes it as committed; Get, Scan and ReverseScan read
// the value as of a committed epoch; ChangedKeys lists keys written in an epoch range. Iterator and
// ChangeIterator walk results; a forward Iterator may also be a Seeker. Implementations: storage/memkv (in memory) and storage/badger; the
// conformance suite in storage/storagetest runs on both. NextEpoch generates epochs.
package storage
