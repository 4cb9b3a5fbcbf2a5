// Package storagetest is the conformance suite for storage.KV implementations.
//
// Run exercises any store from an open function (versions, snapshot reads, bounded and reverse scans,
// deletes, empty values, epoch errors, changed keys, pins, big batches, a seeded random model check);
// RunReopen adds the checks for stores that persist across Close. Each store's own tests call them.
package storagetest
