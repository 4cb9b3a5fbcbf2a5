package badger

import (
	"bytes"
	"errors"
	"fmt"
	"sort"

	"github.com/tributary/tributary/storage"
)

// Small commits made durable by the commit log go into Badger later, many together
// (deferred). Each of Badger's writes is a round of hand-offs between goroutines (its write
// queue, its writer, the waiting committer); on a small VM every hand-off that wakes an idle
// vCPU costs tens of microseconds, and a lone client's commit measured about 40 µs faster
// without them. The batches wait in memory, in epoch order, until a read at or above the first
// of their epochs needs them (a point read at or below the committed epoch looks them up in
// memory instead: deferredGet), a commit that cannot wait (a big, staged or empty one: the
// barrier loop commits an empty epoch every interval) or the commit log's checkpoint, Sync or
// Close writes them first, or maxDeferred of them are waiting. When a read had to write them,
// commits stop waiting for the next maxDeferred commits: reads that follow every commit (scans,
// many sessions) gain nothing from the wait and would write the batches while holding up the
// next statements. A crash loses nothing:
// they are in the commit log, which replays them at the next Open (a partial write of them
// included: the same versions again).

// maxDeferred and maxDeferredEntries bound the batches (and their entries) waiting.
const (
	maxDeferred        = 64
	maxDeferredEntries = 4096
)

// deferredCommit is a committed epoch's batch that Badger has not taken yet.
type deferredCommit struct {
	epoch, discard uint64
	batch          storage.Batch
}

// deferrable reports whether epoch's batch b may wait (the caller holds commitMu, b is
// normalized): small, not empty, within the log's durability (no staged epoch, no abandoned
// stage to roll back, no value for the value log) and within the bounds.
func (s *Store) deferrable(epoch uint64, b *storage.Batch) bool {
	if s.redo == nil || s.wal == nil || s.loseLogged || s.stagedBig || s.staged.Has(epoch) || len(s.staged.Abandoned(epoch)) > 0 {
		return false
	}
	if b.Len() == 0 || b.Len() >= parallelWriteEntries || s.hasBigValue(b) {
		return false
	}
	s.deferMu.Lock()
	defer s.deferMu.Unlock()
	if s.deferMu.pause > 0 {
		s.deferMu.pause--
		return false
	}
	return len(s.deferMu.commits) < maxDeferred && s.deferMu.entries+b.Len() <= maxDeferredEntries
}

// deferCommit keeps a copy of epoch's batch for Badger (after its log record is synced).
func (s *Store) deferCommit(epoch, discard uint64, b *storage.Batch) {
	s.deferMu.Lock()
	defer s.deferMu.Unlock()
	d := deferredCommit{epoch: epoch, discard: discard}
	for i := 0; i < b.Len(); i++ {
		k, v, del := b.Entry(i)
		if del {
			d.batch.Delete(k)
		} else {
			d.batch.Put(k, v)
		}
	}
	if len(s.deferMu.commits) == 0 {
		s.deferFirst.Store(epoch)
	}
	s.deferMu.commits = append(s.deferMu.commits, d)
	s.deferMu.entries += b.Len()
}

// applyDeferredFor writes the deferred batches into Badger when a read at epoch could see them.
func (s *Store) applyDeferredFor(epoch uint64) error {
	if f := s.deferFirst.Load(); f == 0 || epoch < f {
		return nil
	}
	s.deferMu.Lock()
	defer s.deferMu.Unlock()
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closeMu.closed {
		return storage.ErrClosed
	}
	if len(s.deferMu.commits) > 0 {
		s.deferMu.pause = maxDeferred
	}
	return s.applyDeferredLocked()
}

// applyDeferred writes the deferred batches into Badger; the caller holds closeMu shared (and
// commitMu when it goes on to write).
func (s *Store) applyDeferred() error {
	s.deferMu.Lock()
	defer s.deferMu.Unlock()
	return s.applyDeferredLocked()
}

// applyDeferredLocked writes the deferred batches, each at its epoch, through one loader, then
// the newest epoch's watermark. On an error they stay deferred (their log records stay too).
func (s *Store) applyDeferredLocked() error {
	commits := s.deferMu.commits
	if len(commits) == 0 {
		return nil
	}
	l := s.db.NewKVLoader(directPending)
	for i := range commits {
		if err := load(l, commits[i].epoch, &commits[i].batch); err != nil {
			return errors.Join(fmt.Errorf("write deferred commits: %w", err), l.Finish())
		}
	}
	if err := l.Finish(); err != nil {
		return fmt.Errorf("write %d deferred epochs: %w", len(commits), err)
	}
	last := commits[len(commits)-1]
	if err := s.writeMeta(last.epoch, last.discard); err != nil {
		return fmt.Errorf("write deferred epochs: %w", err)
	}
	clear(commits)
	s.deferMu.commits = commits[:0]
	s.deferMu.entries = 0
	s.deferFirst.Store(0)
	return nil
}

// deferredGet answers a point read at epoch from the deferred batches, without writing them:
// found reports that the newest of them at or below epoch that writes key does (ok: a value,
// appended to dst; else a delete). It answers only reads at or below the committed epoch: the
// deferred batches are then the newest writes a read can see (a commit that does not wait writes
// them first), while above it a staged epoch's writes are newer (those reads write them first).
// err is the read's refusal (closed store, epoch below the discarded ones).
func (s *Store) deferredGet(key []byte, epoch uint64, dst []byte) (_ []byte, ok, found bool, err error) {
	if f := s.deferFirst.Load(); f == 0 || epoch < f || epoch > s.committed.Load() {
		return dst, false, false, nil
	}
	s.deferMu.Lock()
	defer s.deferMu.Unlock()
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if err := s.checkReadLocked(epoch); err != nil {
		return dst, false, false, err
	}
	for i := len(s.deferMu.commits) - 1; i >= 0; i-- {
		d := &s.deferMu.commits[i]
		if d.epoch > epoch {
			continue
		}
		n := d.batch.Len()
		j := sort.Search(n, func(j int) bool {
			k, _, _ := d.batch.Entry(j)
			return bytes.Compare(k, key) >= 0
		})
		if j == n {
			continue
		}
		k, v, del := d.batch.Entry(j)
		if !bytes.Equal(k, key) {
			continue
		}
		if del {
			return dst, false, true, nil
		}
		return append(dst, v...), true, true, nil
	}
	return dst, false, false, nil
}
