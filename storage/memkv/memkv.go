package memkv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/tributary/tributary/storage"
)

// Store is an in-memory storage.KV. Create it with New.
type Store struct {
	closed    atomic.Bool
	committed atomic.Uint64
	discard   storage.DiscardTracker
	commitMu  sync.Mutex // serialises Commit and Stage
	staged    storage.StagedEpochs

	mu struct {
		sync.RWMutex
		keys []*entry // sorted by key
		// gen changes whenever keys are inserted or removed, so iterators know when their cached
		// position is stale.
		gen     uint64
		gcEpoch uint64 // versions have been trimmed up to this discard epoch
	}
}

// entry is one key and its versions in ascending epoch order. key never changes; versions are only
// appended to or trimmed under Store.mu.
type entry struct {
	key      []byte
	versions []version
}

type version struct {
	epoch uint64
	value []byte
	del   bool
}

var _ storage.KV = (*Store)(nil)

// New returns an empty store at committed epoch 0.
func New() *Store { return &Store{} }

// at returns the value of e as of epoch.
func (e *entry) at(epoch uint64) (value []byte, found bool) {
	for i := len(e.versions) - 1; i >= 0; i-- {
		v := &e.versions[i]
		if v.epoch <= epoch {
			if v.del {
				return nil, false
			}
			return v.value, true
		}
	}
	return nil, false
}

// searchLocked returns the index of the first key >= key.
func (s *Store) searchLocked(key []byte) int {
	i, _ := slices.BinarySearchFunc(s.mu.keys, key, func(e *entry, k []byte) int { return bytes.Compare(e.key, k) })
	return i
}

func (s *Store) checkRead(epoch uint64) error {
	if s.closed.Load() {
		return storage.ErrClosed
	}
	return s.staged.CheckRead(&s.discard, epoch, s.committed.Load())
}

// Get implements storage.KV.
func (s *Store) Get(_ context.Context, key []byte, epoch uint64, dst []byte) ([]byte, bool, error) {
	if err := s.checkRead(epoch); err != nil {
		return dst, false, fmt.Errorf("memkv get: %w", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	i := s.searchLocked(key)
	if i == len(s.mu.keys) || !bytes.Equal(s.mu.keys[i].key, key) {
		return dst, false, nil
	}
	v, ok := s.mu.keys[i].at(epoch)
	if !ok {
		return dst, false, nil
	}
	return append(dst, v...), true, nil
}

// Scan implements storage.KV.
func (s *Store) Scan(_ context.Context, lower, upper []byte, epoch uint64) (storage.Iterator, error) {
	return s.newIter(lower, upper, epoch, false)
}

// ReverseScan implements storage.KV.
func (s *Store) ReverseScan(_ context.Context, lower, upper []byte, epoch uint64) (storage.Iterator, error) {
	return s.newIter(lower, upper, epoch, true)
}

func (s *Store) newIter(lower, upper []byte, epoch uint64, reverse bool) (*iter, error) {
	if err := s.checkRead(epoch); err != nil {
		return nil, fmt.Errorf("memkv scan: %w", err)
	}
	return &iter{
		s:       s,
		lower:   bytes.Clone(lower),
		upper:   bytes.Clone(storage.ClampUpper(upper)),
		epoch:   epoch,
		reverse: reverse,
	}, nil
}

// ChangedKeys implements storage.KV.
func (s *Store) ChangedKeys(_ context.Context, lower, upper []byte, since, until uint64) (storage.ChangeIterator, error) {
	if since > until {
		return nil, fmt.Errorf("memkv changed keys: since %d above until %d", since, until)
	}
	if err := s.checkRead(until); err != nil {
		return nil, fmt.Errorf("memkv changed keys: %w", err)
	}
	if err := s.checkRead(since); err != nil {
		return nil, fmt.Errorf("memkv changed keys: %w", err)
	}
	return &changeIter{iter: iter{
		s:     s,
		lower: bytes.Clone(lower),
		upper: bytes.Clone(storage.ClampUpper(upper)),
		epoch: until,
		since: since,
	}}, nil
}

// Commit implements storage.KV.
func (s *Store) Commit(_ context.Context, epoch uint64, b *storage.Batch) error {
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	if s.closed.Load() {
		return fmt.Errorf("memkv commit epoch %d: %w", epoch, storage.ErrClosed)
	}
	if c := s.committed.Load(); epoch <= c {
		return fmt.Errorf("memkv commit epoch %d, committed %d: %w", epoch, c, storage.ErrStaleEpoch)
	}
	if b != nil {
		if err := b.Validate(); err != nil {
			return fmt.Errorf("memkv commit epoch %d: %w", epoch, err)
		}
		b.Normalize()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropAbandonedLocked(epoch)
	s.staged.Forget(epoch)
	if b != nil && b.Len() > 0 {
		s.applyLocked(epoch, b)
	}
	if d := s.discard.Effective(); d > s.mu.gcEpoch {
		s.gcLocked(d)
	}
	s.committed.Store(epoch)
	return nil
}

// Stage implements storage.KV.
func (s *Store) Stage(_ context.Context, epoch uint64, b *storage.Batch) error {
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	if s.closed.Load() {
		return fmt.Errorf("memkv stage epoch %d: %w", epoch, storage.ErrClosed)
	}
	if c := s.committed.Load(); epoch <= c {
		return fmt.Errorf("memkv stage epoch %d, committed %d: %w", epoch, c, storage.ErrStaleEpoch)
	}
	if b != nil {
		if err := b.Validate(); err != nil {
			return fmt.Errorf("memkv stage epoch %d: %w", epoch, err)
		}
		b.Normalize()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.staged.Add(epoch)
	if b != nil && b.Len() > 0 {
		s.applyLocked(epoch, b)
	}
	return nil
}

// dropAbandonedLocked removes the versions of epochs staged below epoch and never committed.
func (s *Store) dropAbandonedLocked(epoch uint64) {
	abandoned := s.staged.Abandoned(epoch)
	if len(abandoned) == 0 {
		return
	}
	out := s.mu.keys[:0]
	for _, e := range s.mu.keys {
		e.versions = slices.DeleteFunc(e.versions, func(v version) bool { return slices.Contains(abandoned, v.epoch) })
		if len(e.versions) > 0 {
			out = append(out, e)
		}
	}
	clear(s.mu.keys[len(out):])
	s.mu.keys = out
	s.mu.gen++
}

// applyLocked adds the (normalised) batch's writes at epoch.
func (s *Store) applyLocked(epoch uint64, b *storage.Batch) {
	var added []*entry // new keys, in order
	for i := 0; i < b.Len(); i++ {
		key, value, del := b.Entry(i)
		v := version{epoch: epoch, del: del}
		if !del {
			v.value = bytes.Clone(value)
			if v.value == nil {
				v.value = []byte{}
			}
		}
		j := s.searchLocked(key)
		if j < len(s.mu.keys) && bytes.Equal(s.mu.keys[j].key, key) {
			s.mu.keys[j].versions = append(s.mu.keys[j].versions, v)
			continue
		}
		if del {
			continue // deleting a key that never existed leaves nothing to read
		}
		added = append(added, &entry{key: bytes.Clone(key), versions: []version{v}})
	}
	if len(added) == 0 {
		return
	}
	s.mu.gen++
	old := s.mu.keys
	merged := make([]*entry, 0, len(old)+len(added))
	i, j := 0, 0
	for i < len(old) && j < len(added) {
		if bytes.Compare(old[i].key, added[j].key) < 0 {
			merged = append(merged, old[i])
			i++
		} else {
			merged = append(merged, added[j])
			j++
		}
	}
	merged = append(merged, old[i:]...)
	merged = append(merged, added[j:]...)
	s.mu.keys = merged
}

// gcLocked drops the versions no read at or above discard can see.
func (s *Store) gcLocked(discard uint64) {
	out := s.mu.keys[:0]
	removed := false
	for _, e := range s.mu.keys {
		// Keep the newest version at or below discard and everything above it.
		keep := 0
		for i, v := range e.versions {
			if v.epoch <= discard {
				keep = i
			}
		}
		if keep > 0 {
			e.versions = slices.Delete(e.versions, 0, keep)
		}
		if v := e.versions[0]; v.del && v.epoch <= discard {
			e.versions = slices.Delete(e.versions, 0, 1)
		}
		if len(e.versions) == 0 {
			removed = true
			continue
		}
		out = append(out, e)
	}
	clear(s.mu.keys[len(out):])
	s.mu.keys = out
	if removed {
		s.mu.gen++
	}
	s.mu.gcEpoch = discard
}

// CommittedEpoch implements storage.KV.
func (s *Store) CommittedEpoch() uint64 { return s.committed.Load() }

// MaxVersion implements storage.KV: the committed epoch, or the highest staged one above it.
func (s *Store) MaxVersion() uint64 { return max(s.committed.Load(), s.staged.Max()) }

// SetDiscardEpoch implements storage.KV. Versions are trimmed at the next Commit.
func (s *Store) SetDiscardEpoch(epoch uint64) error {
	if s.closed.Load() {
		return fmt.Errorf("memkv set discard epoch: %w", storage.ErrClosed)
	}
	if err := s.discard.Set(epoch, s.committed.Load()); err != nil {
		return fmt.Errorf("memkv: %w", err)
	}
	return nil
}

// DiscardEpoch implements storage.KV.
func (s *Store) DiscardEpoch() uint64 { return s.discard.Effective() }

// Pin implements storage.KV.
func (s *Store) Pin(epoch uint64) (func(), error) {
	if s.closed.Load() {
		return nil, fmt.Errorf("memkv pin: %w", storage.ErrClosed)
	}
	release, err := s.discard.Pin(epoch)
	if err != nil {
		return nil, fmt.Errorf("memkv: %w", err)
	}
	return release, nil
}

// Sync implements storage.KV; memory has nothing to sync.
func (s *Store) Sync() error {
	if s.closed.Load() {
		return fmt.Errorf("memkv sync: %w", storage.ErrClosed)
	}
	return nil
}

// Close implements storage.KV.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.mu.Lock()
	s.mu.keys = nil
	s.mu.gen++
	s.mu.Unlock()
	return nil
}

// iter is a forward or reverse scan. It re-finds its position under the read lock on every Next, so
// concurrent commits never invalidate it.
type iter struct {
	s            *Store
	lower, upper []byte // upper already clamped
	epoch        uint64
	since        uint64 // change iterators only
	reverse      bool

	started bool
	seekTo  []byte // where a forward iterator starts after Seek (nil: lower)
	idx     int    // index of the current entry when gen matches
	gen     uint64 // s.mu.gen when idx was taken
	cur     *entry
	value   []byte
	err     error
	closed  bool
}

// startLocked returns the index to examine first, or next after the current entry.
func (it *iter) startLocked() int {
	s := it.s
	if !it.started {
		it.started = true
		if it.reverse {
			return s.searchLocked(it.upper) - 1
		}
		if it.seekTo != nil {
			return s.searchLocked(it.seekTo)
		}
		if it.lower == nil {
			return 0
		}
		return s.searchLocked(it.lower)
	}
	if it.gen == s.mu.gen {
		if it.reverse {
			return it.idx - 1
		}
		return it.idx + 1
	}
	i := s.searchLocked(it.cur.key)
	if it.reverse {
		return i - 1
	}
	if i < len(s.mu.keys) && bytes.Equal(s.mu.keys[i].key, it.cur.key) {
		i++
	}
	return i
}

// advance moves to the next entry accepted by visible, or sets it.err.
func (it *iter) advance(visible func(*entry) bool) error {
	if it.err != nil {
		return it.err
	}
	if it.s.closed.Load() {
		it.err = fmt.Errorf("memkv iterator: %w", storage.ErrClosed)
		return it.err
	}
	s := it.s
	s.mu.RLock()
	defer s.mu.RUnlock()
	keys := s.mu.keys
	for i := it.startLocked(); i >= 0 && i < len(keys); {
		e := keys[i]
		if it.reverse {
			if it.lower != nil && bytes.Compare(e.key, it.lower) < 0 {
				break
			}
		} else if bytes.Compare(e.key, it.upper) >= 0 {
			break
		}
		if visible(e) {
			it.idx, it.gen, it.cur = i, s.mu.gen, e
			return nil
		}
		if it.reverse {
			i--
		} else {
			i++
		}
	}
	it.cur, it.value = nil, nil
	it.err = io.EOF
	return it.err
}

func (it *iter) Next() error {
	return it.advance(func(e *entry) bool {
		v, ok := e.at(it.epoch)
		it.value = v
		return ok
	})
}

func (it *iter) Key() []byte   { return it.cur.key }
func (it *iter) Value() []byte { return it.value }

// Seek implements storage.Seeker for forward scans.
func (it *iter) Seek(key []byte) error {
	if it.reverse {
		return errors.New("memkv iterator: Seek on a reverse iterator")
	}
	if it.err != nil && it.err != io.EOF {
		return it.err
	}
	it.seekTo = bytes.Clone(key)
	if it.lower != nil && bytes.Compare(key, it.lower) < 0 {
		it.seekTo = it.lower
	}
	it.err, it.started, it.cur, it.value = nil, false, nil, nil
	return nil
}

func (it *iter) Close() error {
	if it.closed {
		return nil
	}
	it.closed = true
	err := it.err
	it.err = fmt.Errorf("memkv iterator: %w", storage.ErrClosed)
	it.cur, it.value = nil, nil
	if err == io.EOF {
		return nil
	}
	return err
}

// changeIter lists keys with a version in (since, epoch].
type changeIter struct {
	iter
	verEpoch uint64
	deleted  bool
}

func (it *changeIter) Next() error {
	return it.advance(func(e *entry) bool {
		for i := len(e.versions) - 1; i >= 0; i-- {
			v := &e.versions[i]
			if v.epoch <= it.since {
				return false
			}
			if v.epoch <= it.epoch {
				it.verEpoch, it.deleted = v.epoch, v.del
				it.value = nil
				if !v.del {
					it.value = v.value
				}
				return true
			}
		}
		return false
	})
}

func (it *changeIter) Epoch() uint64 { return it.verEpoch }
func (it *changeIter) Deleted() bool { return it.deleted }
