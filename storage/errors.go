package storage

import (
	"errors"
	"fmt"
	"syscall"
)

// Sentinel errors returned (wrapped, with context) by every KV implementation. Check them with errors.Is.
var (
	// ErrClosed is returned by any operation on a closed store or iterator.
	ErrClosed = errors.New("storage: closed")
	// ErrEpochNotCommitted is returned by reads at an epoch above CommittedEpoch.
	ErrEpochNotCommitted = errors.New("storage: epoch not committed")
	// ErrStaleEpoch is returned by Commit at an epoch not above CommittedEpoch.
	ErrStaleEpoch = errors.New("storage: epoch not above the committed epoch")
	// ErrEpochDiscarded is returned by reads and pins below DiscardEpoch: old versions there may be gone.
	ErrEpochDiscarded = errors.New("storage: epoch below the discard epoch")
	// ErrDiskFull is returned by Commit when the data directory's filesystem has less free space than
	// the configured minimum. Nothing was written. (SQLSTATE 53100 at the wire.)
	// It wraps syscall.ENOSPC, as a write that met a full disk does, so one check
	// (errors.Is(err, syscall.ENOSPC)) finds both.
	ErrDiskFull = fmt.Errorf("storage: not enough free disk space: %w", syscall.ENOSPC)
	// ErrInvalidKey is returned by Commit for an empty key, a key too long, or a key in the reserved range.
	ErrInvalidKey = errors.New("storage: invalid key")
	// ErrFailed is returned after a Commit failed half way: the store may hold part of an uncommitted
	// epoch and refuses further commits. Reads at committed epochs still work; reopen to recover.
	ErrFailed = errors.New("storage: store failed; reopen to recover")
	// ErrDamaged is returned by Open when a file of the data directory is missing or damaged: the
	// store refuses to start rather than lose or misread data. The error names the file.
	ErrDamaged = errors.New("storage: data damaged")
)
