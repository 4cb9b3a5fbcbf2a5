package badger

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"sort"
	"sync"

	bdg "github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/pb"

	"github.com/tributary/tributary/storage"
)

// Small commits made durable by the (synced) commit log go into Badger later, many together
// (deferred; with NoSync every commit does: the windows below). Each of Badger's writes is a
// round of hand-offs between goroutines (its write queue, its writer, the waiting committer);
// on a small VM every hand-off that wakes an idle vCPU costs tens of microseconds, and a lone
// client's commit measured about 40 µs faster without them. The batches wait in memory, in
// epoch order, until a read at or above the first of their epochs needs them (a point read at
// or below the committed epoch looks them up in memory instead: deferredGet), a commit that
// cannot wait (a big, staged or empty one: the barrier loop commits an empty epoch every
// interval) or the commit log's checkpoint (but with NoSync: the log's halves, redo.go), Sync
// or Close writes them first, or maxDeferred of them are waiting. When reads had to write them
// pauseReads times within 2*maxDeferred commits, commits stop waiting for the next maxDeferred
// commits: reads that follow every commit (scans, many sessions) gain nothing from the wait and
// would write the batches while holding up the next statements; a lone read (a query now and
// then) or a few in a row (a new view's backfill and the first statements after it) pause
// nothing. A crash loses nothing: they are in the commit log, which replays them at the next
// Open (a partial write of them included: the same versions again).

// maxDeferred and maxDeferredEntries bound the batches (and their entries) waiting.
const (
	maxDeferred        = 64
	maxDeferredEntries = 4096
)

// pauseReads is how many reads that had to write the deferred commits, within 2*maxDeferred
// commits, pause them. Two were too few: a new view's backfill makes three at consecutive
// commits (its read of the table's snapshot, its readers' vnode by vnode, its catch-up on the
// changes since), the first INSERT after it a fourth (its key check learns the table's
// blocks), and the pause then cost the 64 statements after CREATE MATERIALIZED VIEW twice
// their time: each went into Badger on its own, the view's rows included, before it
// returned. Reads that follow every commit lose little to the wait: each writes one commit,
// as the commit would have.
const pauseReads = 8

// With NoSync every commit that goes through the commit log waits, whatever its size, in a
// window of at most maxWindowCommits commits or windowBytes of batches (maxWindowBytes, or a
// quarter of a memtable when those are smaller: a small memory limit). A full window is
// sealed and Badger takes it on a goroutine of its own while the next window fills (one window
// is written at a time; a commit that fills the next one waits for it). Reads at or above the
// sealed window's first epoch wait for that write (windowOp), as for a commit applying later.
// Writing many epochs together costs Badger less per entry, and lets versions that no read can
// see any more go before they reach it (loadMerged): a state that every statement rewrites (a
// GROUP BY view's groups) takes a fraction of its writes.
const (
	maxWindowCommits = 256
	maxWindowBytes   = 16 << 20
)

// deferredCommit is a committed epoch's batch that Badger has not taken yet.
type deferredCommit struct {
	epoch, discard uint64
	batch          *storage.Batch
}

// batchPool recycles the deferred commits' copies of their batches.
var batchPool = sync.Pool{New: func() any { return new(storage.Batch) }}

// deferrable reports whether epoch's batch b may wait (the caller holds commitMu, b is
// normalized): within the log's durability (no staged epoch, no abandoned stage to roll back,
// no value for the value log) and, but with NoSync, small, not empty and within the bounds. With
// NoSync an empty commit waits when others do (the barrier loop commits an empty epoch every
// interval).
func (s *Store) deferrable(epoch uint64, b *storage.Batch) bool {
	if s.redo == nil || (s.wal == nil && !s.noSync) || s.loseLogged || s.stagedBig || s.staged.Has(epoch) || len(s.staged.Abandoned(epoch)) > 0 {
		return false
	}
	if s.hasBigValue(b) || (!s.noSync && (b.Len() == 0 || b.Len() >= parallelWriteEntries)) || b.Size() >= redoBigBatch {
		return false
	}
	s.deferMu.Lock()
	defer s.deferMu.Unlock()
	s.deferMu.seq++
	if s.deferMu.pause > 0 {
		s.deferMu.pause--
		return false
	}
	if s.noSync {
		return b.Len() > 0 || len(s.deferMu.commits) > 0
	}
	return len(s.deferMu.commits) < maxDeferred && s.deferMu.entries+b.Len() <= maxDeferredEntries
}

// deferCommit keeps a copy of epoch's batch for Badger (after its log record is written) and
// reports whether the window is full (NoSync: the caller seals it).
func (s *Store) deferCommit(epoch, discard uint64, b *storage.Batch) (full bool) {
	s.deferMu.Lock()
	defer s.deferMu.Unlock()
	d := deferredCommit{epoch: epoch, discard: discard, batch: batchPool.Get().(*storage.Batch)}
	d.batch.CopyFrom(b)
	if len(s.deferMu.commits) == 0 {
		s.deferFirst.Store(epoch)
	}
	s.deferMu.commits = append(s.deferMu.commits, d)
	if s.deferMu.index != nil {
		s.indexLocked(len(s.deferMu.commits) - 1)
	}
	s.deferMu.entries += b.Len()
	s.deferMu.bytes += b.Size()
	return s.noSync && (len(s.deferMu.commits) >= maxWindowCommits || s.deferMu.bytes >= s.windowBytes())
}

// indexFrom is the window length from which point reads of its newest epoch use the index
// rather than a search of every batch.
const indexFrom = 8

// indexLocked adds commit i's keys to the window's index (the newest version of each key, by
// its hash; a later key with the same hash takes the entry, and a read that finds another key
// there searches the batches). The caller holds deferMu.
func (s *Store) indexLocked(i int) {
	if s.deferMu.seed == (maphash.Seed{}) {
		s.deferMu.seed = maphash.MakeSeed()
	}
	b := s.deferMu.commits[i].batch
	for j := 0; j < b.Len(); j++ {
		k, _, _ := b.Entry(j)
		s.deferMu.index[maphash.Bytes(s.deferMu.seed, k)] = uint64(i)<<32 | uint64(j)
	}
}

// windowBytes is the most a window's batches hold before it is sealed: at most half of a half
// of the commit log (redoNoSyncHalf), so that the windows of a generation's records are sealed,
// and written, before the generation after next overwrites them (switchHalf).
func (s *Store) windowBytes() int {
	return int(min(maxWindowBytes, s.sizes.MemTableSize/4))
}

// CommitWindow returns the memory the commit windows may hold (the one filling and the one
// being written; 0 without NoSync) and what they hold now, in bytes.
func (s *Store) CommitWindow() (budget, used int64) {
	s.deferMu.Lock()
	used = int64(s.deferMu.bytes)
	s.deferMu.Unlock()
	used += s.sealedBytes.Load()
	if !s.noSync {
		return 0, used
	}
	return 2 * int64(s.windowBytes()), used
}

// sealWindow hands the full window to a goroutine that writes it into Badger, after the
// previous window's write finished. The caller holds commitMu (and closeMu shared: Close waits
// for the write through applyDeferred).
func (s *Store) sealWindow() error {
	if err := s.waitWindow(); err != nil {
		return err
	}
	s.deferMu.Lock()
	commits := s.deferMu.commits
	op := &applyOp{epoch: commits[0].epoch, done: make(chan struct{})}
	s.sealedBytes.Store(int64(s.deferMu.bytes))
	s.windowOp.Store(op) // before the window leaves deferMu: its readers then wait for op
	s.deferMu.commits, s.deferMu.index = nil, nil
	s.deferMu.entries, s.deferMu.bytes = 0, 0
	s.deferFirst.Store(0)
	s.deferMu.Unlock()
	go func() {
		defer close(op.done)
		if s.beforeApply != nil {
			s.beforeApply()
		}
		op.err = s.writeDeferred(commits)
		recycle(commits)
		s.sealedBytes.Store(0)
	}()
	return nil
}

// waitWindow waits for the sealed window's write, if one is running, and returns its error.
func (s *Store) waitWindow() error {
	op := s.windowOp.Load()
	if op == nil {
		return nil
	}
	<-op.done
	if op.err != nil {
		return fmt.Errorf("write of the epochs from %d: %w", op.epoch, op.err)
	}
	return nil
}

func recycle(commits []deferredCommit) {
	for i := range commits {
		if b := commits[i].batch; b.Size() <= maxWindowBytes/4 {
			b.Reset()
			batchPool.Put(b)
		}
		commits[i].batch = nil
	}
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
		// Reads this frequent (pauseReads of them had to write them within the last
		// 2*maxDeferred commits) pause the windows; a lone read or a few leave them be: 64
		// commits written straight into Badger cost a lone session 1-3 ms each.
		f := &s.deferMu.forced
		if f.n == len(f.at) && s.deferMu.seq-f.at[f.next] <= 2*maxDeferred {
			s.deferMu.pause = maxDeferred
		}
		f.at[f.next] = s.deferMu.seq
		f.next = (f.next + 1) % len(f.at)
		f.n = min(f.n+1, len(f.at))
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

// applyDeferredLocked writes the deferred batches (after the sealed window's write, if one is
// running). On an error they stay deferred (their log records stay too).
func (s *Store) applyDeferredLocked() error {
	if err := s.waitWindow(); err != nil {
		return err
	}
	commits := s.deferMu.commits
	if len(commits) == 0 {
		return nil
	}
	if err := s.writeDeferred(commits); err != nil {
		return err
	}
	recycle(commits)
	s.deferMu.commits, s.deferMu.index = commits[:0], nil
	s.deferMu.entries, s.deferMu.bytes = 0, 0
	s.deferFirst.Store(0)
	return nil
}

// writeDeferred writes committed batches, each at its epoch, through one loader, less the
// versions superseded at or below the newest one's discard epoch (loadMerged), then that
// epoch's watermark.
func (s *Store) writeDeferred(commits []deferredCommit) error {
	last := commits[len(commits)-1]
	l := s.db.NewKVLoader(directPending)
	if err := loadMerged(l, commits, last.discard); err != nil {
		return errors.Join(fmt.Errorf("write deferred commits: %w", err), l.Finish())
	}
	if err := l.Finish(); err != nil {
		return fmt.Errorf("write %d deferred epochs: %w", len(commits), err)
	}
	if err := s.writeMeta(last.epoch, last.discard); err != nil {
		return fmt.Errorf("write deferred epochs: %w", err)
	}
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
	commits := s.deferMu.commits
	if len(commits) > indexFrom && epoch >= commits[len(commits)-1].epoch {
		// A read of the newest epoch in a long window: its index answers.
		if s.deferMu.index == nil {
			s.deferMu.index = make(map[uint64]uint64)
			for i := range commits {
				s.indexLocked(i)
			}
		}
		ref, ok := s.deferMu.index[maphash.Bytes(s.deferMu.seed, key)]
		if !ok {
			return dst, false, false, nil
		}
		if k, v, del := commits[ref>>32].batch.Entry(int(uint32(ref))); bytes.Equal(k, key) {
			if del {
				return dst, false, true, nil
			}
			return append(dst, v...), true, true, nil
		}
		// A hash collision: the search below answers.
	}
	for i := len(commits) - 1; i >= 0; i-- {
		d := &commits[i]
		if d.epoch > epoch || d.batch.Len() == 0 {
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

// loadMerged hands the commits' entries to l in key order, each at its commit's epoch, less
// the superseded versions: a version is left out when a later commit at or below discard writes
// the key too. No read sees it then (reads are at or above the discard epoch, which only moves
// up), and Badger's compaction would drop it anyway. Each batch is sorted: a merge of them
// (the newest version of a key first) puts each of Badger's skiplist inserts next to the one
// before, whose search then finds its nodes in the CPU's caches, and brings a key's versions
// together.
func loadMerged(l *bdg.KVLoader, commits []deferredCommit, discard uint64) error {
	kv := &pb.KV{}
	return mergeWindow(commits, discard, func(c *mergeCursor, epoch uint64) error {
		key, value, del := c.batch.Entry(c.pos)
		kv.Key, kv.Value, kv.Meta, kv.Version = key, value, nil, epoch
		if del {
			kv.Value, kv.Meta = nil, deleteMeta
		}
		if err := l.Set(kv); err != nil {
			return fmt.Errorf("write entry %d at %d: %w", c.pos, epoch, err)
		}
		return nil
	})
}

// mergeWindow calls fn with each of the commits' entries that loadMerged hands over, in key
// order, each with its commit's epoch.
func mergeWindow(commits []deferredCommit, discard uint64, fn func(c *mergeCursor, epoch uint64) error) error {
	m := newMerger(commits, supersededByNext(commits, discard))
	var last []byte  // the key of the last version handed over
	covered := false // a version of last at or below discard was handed over
	for c := m.top(); c != nil; c = m.pop() {
		epoch := commits[c.commit].epoch
		if same := bytes.Equal(c.key, last); !same || !covered {
			if err := fn(c, epoch); err != nil {
				return err
			}
			last, covered = c.key, epoch <= discard
		}
	}
	return nil
}

// supersededByNext returns, for each commit but the last, a bit set of its entries whose key
// the next commit writes too, when that commit is at or below discard (nil for the others):
// loadMerged would leave them out. A state that every commit rewrites (a GROUP BY view's
// rows) is most of a window's entries; a merge of two sorted batches finds them for about a
// comparison each, and the window's merge then plays its matches (a full key comparison each,
// every commit's version of the key tied on its head) only for the entries it hands over.
func supersededByNext(commits []deferredCommit, discard uint64) [][]uint64 {
	var sets [][]uint64
	for i := 0; i+1 < len(commits); i++ {
		if commits[i+1].epoch > discard {
			break // epochs ascend: so are the later ones
		}
		a, b := commits[i].batch, commits[i+1].batch
		var set []uint64
		for x, y := 0, 0; x < a.Len() && y < b.Len(); {
			switch c := bytes.Compare(a.Key(x), b.Key(y)); {
			case c < 0:
				x++
			case c > 0:
				y++
			default:
				if set == nil {
					set = make([]uint64, (a.Len()+63)/64)
				}
				set[x/64] |= 1 << (x % 64)
				x++
				y++
			}
		}
		if set != nil {
			if sets == nil {
				sets = make([][]uint64, len(commits))
			}
			sets[i] = set
		}
	}
	return sets
}

// mergeCursor is a commit's batch's place in loadMerged: its entry pos, whose key is key
// (head: its first 8 bytes, big endian, zeros past its end); done past its last entry. It
// skips the entries in skip (supersededByNext).
type mergeCursor struct {
	commit, pos int
	batch       *storage.Batch
	skip        []uint64
	key         []byte
	head        uint64
	done        bool
}

// next moves c to its next entry.
func (c *mergeCursor) next() {
	c.pos++
	for c.skip != nil && c.pos < c.batch.Len() && c.skip[c.pos/64]&(1<<(c.pos%64)) != 0 {
		c.pos++
	}
	if c.pos >= c.batch.Len() {
		c.done = true
		return
	}
	c.key, _, _ = c.batch.Entry(c.pos)
	if len(c.key) >= 8 {
		c.head = binary.BigEndian.Uint64(c.key)
	} else {
		var b [8]byte
		copy(b[:], c.key)
		c.head = binary.BigEndian.Uint64(b[:])
	}
}

// merger is a tournament (loser) tree over the commits' cursors: node t of 1..k-1 holds the
// loser of the match between its children 2t and 2t+1, nodes from k on are the cursors. The
// next entry costs one match per level.
type merger struct {
	c      []mergeCursor
	tree   []int
	winner int
}

func newMerger(commits []deferredCommit, skip [][]uint64) *merger {
	k := len(commits)
	m := &merger{c: make([]mergeCursor, k), tree: make([]int, k)}
	for i := range commits {
		m.c[i] = mergeCursor{commit: i, batch: commits[i].batch, pos: -1}
		if skip != nil {
			m.c[i].skip = skip[i]
		}
		m.c[i].next()
	}
	m.winner = m.build(1)
	return m
}

// build plays the matches below node t and returns its winner.
func (m *merger) build(t int) int {
	k := len(m.c)
	if t >= k {
		return t - k
	}
	a, b := m.build(2*t), m.build(2*t+1)
	if m.less(b, a) {
		a, b = b, a
	}
	m.tree[t] = b
	return a
}

// less reports whether cursor a's entry goes before b's: the smaller key, the newer commit
// for one key, a finished cursor last.
func (m *merger) less(a, b int) bool {
	x, y := &m.c[a], &m.c[b]
	switch {
	case x.done || y.done:
		return !x.done
	case x.head != y.head:
		return x.head < y.head
	}
	if c := bytes.Compare(x.key, y.key); c != 0 {
		return c < 0
	}
	return x.commit > y.commit
}

// top returns the cursor of the next entry, nil when none is left.
func (m *merger) top() *mergeCursor {
	if len(m.c) == 0 || m.c[m.winner].done {
		return nil
	}
	return &m.c[m.winner]
}

// pop moves past the next entry and returns top.
func (m *merger) pop() *mergeCursor {
	w := m.winner
	m.c[w].next()
	for t := (w + len(m.c)) / 2; t >= 1; t /= 2 {
		if m.less(m.tree[t], w) {
			m.tree[t], w = w, m.tree[t]
		}
	}
	m.winner = w
	return m.top()
}
