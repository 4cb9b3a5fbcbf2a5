package storage

import "context"

// KV is a versioned, ordered key-value store whose versions are epochs. It is narrow enough to be met by
// an embedded LSM (Badger) or by a distributed MVCC store (TiKV, timestamps as epochs).
//
// Reads name an epoch E with DiscardEpoch() <= E <= CommittedEpoch() (or a staged epoch, see Stage) and see, for every key, the value
// of its newest version at or below E. Epochs that were never committed (skipped by a crash that
// rolled back a half-written epoch) read undefined data: read only at epochs obtained from
// CommittedEpoch. Reads above the committed epoch fail with ErrEpochNotCommitted; below the discard
// epoch with ErrEpochDiscarded.
//
// Commit is atomic across a crash at any moment: after a restart, readers see exactly the last epoch
// whose Commit returned (or a later one whose Commit was in flight), never part of one. After Open,
// CommittedEpoch and MaxVersion are at least every version stored, so NextEpoch(MaxVersion()) starts
// above anything stored.
//
// Keys are non-empty, at most MaxKeySize bytes, and outside ReservedPrefix. Values may be empty; an
// empty value is distinct from a missing key. All methods are safe for concurrent use; Commit calls are
// serialised. Errors wrap the sentinels in errors.go.
type KV interface {
	// Get appends the value of key as of epoch to dst and returns the extended slice, with found
	// false (and dst unchanged) when the key has no value at epoch.
	Get(ctx context.Context, key []byte, epoch uint64, dst []byte) (value []byte, found bool, err error)
	// Scan returns an iterator over the keys in [lower, upper) in ascending order, with their values as
	// of epoch. A nil lower is unbounded; a nil upper stops before ReservedPrefix.
	Scan(ctx context.Context, lower, upper []byte, epoch uint64) (Iterator, error)
	// ReverseScan is Scan in descending key order.
	ReverseScan(ctx context.Context, lower, upper []byte, epoch uint64) (Iterator, error)
	// ChangedKeys lists, in ascending order, the keys in [lower, upper) that have a version in
	// (since, until], each once. Requires DiscardEpoch() <= since <= until <= CommittedEpoch();
	// hold the versions with Pin(since) while a consumer needs them.
	ChangedKeys(ctx context.Context, lower, upper []byte, since, until uint64) (ChangeIterator, error)

	// Commit applies the batch at epoch, atomically, then publishes epoch as committed. epoch must be
	// above CommittedEpoch (else ErrStaleEpoch). An empty or nil batch just publishes the epoch.
	// Commit may reorder the batch (Normalize) but does not keep it; the caller may Reset and reuse it
	// once Commit returns. Commit is durable against a process crash; whether it is also durable
	// against an operating-system crash or power loss before Sync is the implementation's option
	// (storage/badger: yes, unless opened with NoSync).
	Commit(ctx context.Context, epoch uint64, b *Batch) error
	// Stage writes b at version epoch ahead of Commit(epoch), so a writer need not hold a big
	// epoch's writes in memory. Staged writes are invisible to reads at committed epochs; they
	// become visible with Commit(epoch, ...), whose own batch is written after them (it wins where
	// both write a key, as a later Stage of the same epoch wins over an earlier one); a crash before
	// that Commit drops them, and so does the Commit of a later epoch: an epoch staged and never
	// committed is abandoned, and each of its keys reads as of the last committed epoch again. epoch
	// must be above CommittedEpoch (else ErrStaleEpoch). Reads at a staged epoch are allowed until it
	// commits or is dropped: they see the newest version at or below it, so also what earlier
	// epochs staged (and, during their Commit, wrote) before committing: a writer that reads its
	// staged epoch lets every earlier epoch commit or be dropped by a Commit first, or knows them
	// bound to commit before its own. Stage does not sync. b belongs to the store once passed: the
	// write may go on after Stage returns (reads above the committed epoch then wait for it, and
	// a failure comes back from the next Stage or Commit).
	Stage(ctx context.Context, epoch uint64, b *Batch) error
	// CommittedEpoch returns the last committed epoch (0 for an empty store).
	CommittedEpoch() uint64
	// MaxVersion returns the highest version the store may hold: at least CommittedEpoch.
	MaxVersion() uint64

	// SetDiscardEpoch allows the store to discard versions older than the newest version at or below
	// epoch of each key, except where a Pin holds them. The discard epoch only moves forward: a lower
	// value is ignored. epoch must be <= CommittedEpoch (else ErrEpochNotCommitted).
	SetDiscardEpoch(epoch uint64) error
	// DiscardEpoch returns the effective discard epoch: the lowest epoch still readable, which is the
	// epoch last set by SetDiscardEpoch, held back by the lowest live pin.
	DiscardEpoch() uint64
	// Pin keeps every version needed to read at epoch (and ChangedKeys since epoch) until release is
	// called. It fails with ErrEpochDiscarded when epoch is below DiscardEpoch. release is idempotent.
	Pin(epoch uint64) (release func(), err error)

	// Sync makes every committed epoch durable against power loss.
	Sync() error
	// Close releases the store; open iterators then fail with ErrClosed. Close is idempotent.
	Close() error
}

// Iterator walks key/value pairs in the order of the scan that made it.
//
// It starts before the first entry: call Next before Key or Value. Next returns nil when positioned at
// an entry, io.EOF when the range is exhausted, or another error; after io.EOF or an error Next keeps
// returning it. Key and Value return slices that stay valid only until the next call to Next or Close;
// the caller must not modify them and copies what it keeps. Close must always be called, even after an
// error; it is idempotent and returns the first error the iterator met (io.EOF excluded). An iterator is
// used by one goroutine at a time and reads one snapshot: commits made after it was created are not seen.
type Iterator interface {
	Next() error
	Key() []byte
	Value() []byte
	Close() error
}

// Seeker is implemented by the forward iterators of Scan that can move without a new scan: after
// Seek(key), the next Next moves to the first entry at or after key (and at or after the scan's
// lower bound), also after io.EOF. Successive keys need not increase. Seek fails on a reverse
// iterator, and after an error other than io.EOF (returning it). A caller that finds no Seeker
// reads with Get or a new Scan instead.
type Seeker interface {
	Seek(key []byte) error
}

// ChangeIterator walks keys changed in an epoch range, in ascending key order. Its contract for Next,
// Key and Close is Iterator's.
type ChangeIterator interface {
	Next() error
	// Key returns the changed key (valid until the next Next or Close).
	Key() []byte
	// Epoch returns the newest version of Key within the range.
	Epoch() uint64
	// Deleted reports whether that newest version is a delete.
	Deleted() bool
	// Value returns that newest version's value (empty when Deleted), valid
	// until the next Next or Close.
	Value() []byte
	Close() error
}
