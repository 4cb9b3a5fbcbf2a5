package stream

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage/codec"
	"github.com/tributary/tributary/storage/state"
)

// joinEntry holds every row of one join side that has one join key, as the
// side's state table has them (side columns, then the degree when kept),
// flattened: row i is rows[i*width : (i+1)*width]. Changes made in the current
// epoch are written to the state table at the barrier (flush): dirty marks the
// rows to write, gone holds (flattened) the rows to delete.
type joinEntry struct {
	rows    []types.Datum
	dirty   []bool
	gone    []types.Datum
	used    uint64 // the side's tick when last used, for LRU eviction
	pending bool   // in the side's dirty list
	// partial: the key's stored rows were never read. rows holds only the
	// rows added since (all dirty), gone the rows removed that were not among
	// them. A row's own side only adds and removes, so it needs no read; the
	// first probe from the other side (read) merges in the stored rows.
	partial bool
	// index maps the state key of each row (its columns after the join key,
	// encoded) to its number, once a row is looked up in an entry of
	// indexMin rows or more, so that removing a row of a hot key costs a
	// lookup, not a comparison with every row. nil: none (yet).
	index map[string]int
	// unindexed: two rows share a state key (an inconsistent input), so the
	// entry is searched row by row.
	unindexed bool
}

// indexMin is the row count from which an entry keeps an index of its rows
// (and a read a set of the rows its partial entry removed); a variable for tests.
var indexMin = 32

// joinSide is one input of a hash join: its fixed layout and its run state
// (state table and the cache of entries by encoded join key).
//
// The cache is write-behind: a row change updates the cached entry of its key
// (loaded first if needed), and the changed rows reach the state table only at
// the barrier. When the cache grows past its bound within an epoch, the
// changes are written early (to the table's epoch buffer, which the table's
// reads merge in) so that any entry may be evicted; an entry with more rows
// than the bound is written and dropped as soon as its row is processed
// (shed), so a hot key costs a read per probe, not memory (a probe reads it
// in batches of the bound and writes back the degrees each batch changed:
// read). Entries count
// their rows (an empty one counts as one) and keep no spare capacity beyond
// that count's order.
type joinSide struct {
	table    *state.Table
	limit    int          // rows the cache may hold now (budget.limit, as of the last check)
	budget   *cacheBudget // bounds the cache (rows and bytes)
	width    int          // state row width: ncols (+1 with a degree column)
	ncols    int          // the input's column count
	degree   bool         // rows carry their degree at column ncols
	key      []int        // join key columns of the input row
	keyTypes []types.T    // their types
	keyIdx   []int        // 0..len(key)-1
	rest     []int        // state pk columns after the join key: identify a row within an entry
	restT    []types.T    // their types
	rowT     []types.T    // the state row's column types
	hasDec   bool         // some column is numeric (cached rows must not share coefficients)

	cache map[string]*joinEntry
	// complete: every key the state table holds rows of has a full (not
	// partial) entry in the cache, so a key the cache lacks has no rows and
	// is neither read nor cached when probed (a small side, such as one
	// row per window, then costs no read per probe). Set by warm when the
	// stored rows fit the cache; cleared when an entry leaves the cache.
	complete bool
	none     joinEntry // what read returns for a key a complete side lacks: read only
	stats    *OpStats  // counts probes of the cache (nil: not counted)
	cached   int       // rows held by cache entries (an empty entry counts as one)
	pending  []*joinEntry
	keyBuf   []byte
	restBuf  []byte // scratch for restKey
}

// joinRowOverhead is what a cached row costs besides its datums: its dirty
// flag, and its share of its entry (struct, map slot and key), taken as
// about 64 bytes an entry over a few rows.
const joinRowOverhead = 24

// check refreshes the side's row limit from its budget.
func (s *joinSide) check() { s.limit = s.budget.limit() }

// newJoinSide returns a side whose state table t holds rows of types ts: the
// input's columns, then the degree when degree is set.
func newJoinSide(t *state.Table, ts []types.T, key, pk []int, degree bool, budget *cacheBudget) *joinSide {
	s := &joinSide{table: t, budget: budget, limit: budget.limit(), width: len(ts), ncols: len(ts), degree: degree, key: key, cache: make(map[string]*joinEntry)}
	if degree {
		s.ncols--
	}
	for i, c := range key {
		s.keyTypes = append(s.keyTypes, ts[c])
		s.keyIdx = append(s.keyIdx, i)
	}
	s.rest = pk[len(key):]
	s.rowT = ts
	for _, c := range s.rest {
		s.restT = append(s.restT, ts[c])
	}
	for _, t := range ts {
		if t.Physical() == types.PhysDec {
			s.hasDec = true
		}
	}
	return s
}

// encodeKey sets s.keyBuf to the memcomparable encoding of the join key
// values kd (in s.key order), the prefix of the side's state keys.
func (s *joinSide) encodeKey(kd []types.Datum) {
	s.keyBuf = codec.AppendKey(s.keyBuf[:0], s.keyTypes, kd, s.keyIdx, nil)
}

// read returns the entry of the key last encoded (values kd), reading the
// state table on a cache miss; entries stay valid until evict. A key with
// more rows than the side may cache is not read whole but in batches of at
// most that many rows: each batch, an entry of its own, goes to visit, which
// may touch its rows (degrees); the touched rows are written to the state
// table before the next batch is read (the read resumes at the next key).
// read then returns no entry (nil), the partial entry's added rows visited
// last (its changes are then written: shed), so a hot key costs memory for
// one batch, not for all its rows.
func (s *joinSide) read(ctx context.Context, kd []types.Datum, tick uint64, visit func(b *joinEntry) error) (*joinEntry, error) {
	cached := s.cache[string(s.keyBuf)]
	s.stats.hit(cached != nil && !cached.partial || cached == nil && s.complete)
	if cached != nil && !cached.partial {
		cached.used = tick
		return cached, nil
	}
	if cached == nil && s.complete {
		return &s.none, nil
	}
	vnode := codec.VnodeOf(codec.HashRow(s.keyTypes, kd, s.keyIdx))
	opts := state.IterOptions{
		Vnode:  int(vnode),
		Range:  state.KeyRange{Start: s.keyBuf, End: codec.PrefixEnd(s.keyBuf)},
		Prefix: s.keyBuf,
	}
	it, err := s.table.Iter(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("hash join: read state: %w", err)
	}
	e := &joinEntry{used: tick}
	batched := false // some rows went to visit: e holds only the last batch
	var gone map[string]bool
	if cached != nil {
		gone = s.goneSet(cached)
	}
	for {
		err := it.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			it.Close()
			return nil, fmt.Errorf("hash join: read state: %w", err)
		}
		row := it.Row()
		if cached != nil && s.removedIn(cached, gone, row) {
			continue // removed this epoch, before the rows were read
		}
		if visit != nil && len(e.dirty) >= max(s.limit, 1) {
			// A batch is full: visit it; when it changed rows, write them and read on from this row.
			batched = true
			if err := s.visitBatch(e, visit); err != nil {
				it.Close()
				return nil, err
			}
			if slices.Contains(e.dirty, true) {
				opts.Range.Start = append(opts.Range.Start[:0:0], it.PK()...)
				if err := it.Close(); err != nil {
					return nil, fmt.Errorf("hash join: read state: %w", err)
				}
				if err := s.write(e); err != nil {
					return nil, err
				}
				e.rows, e.dirty = e.rows[:0], e.dirty[:0]
				if it, err = s.table.Iter(ctx, opts); err != nil {
					return nil, fmt.Errorf("hash join: read state: %w", err)
				}
				continue
			}
			e.rows, e.dirty = e.rows[:0], e.dirty[:0]
		}
		e.rows = s.appendRow(e.rows, row)
		e.dirty = append(e.dirty, false)
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("hash join: read state: %w", err)
	}
	if batched {
		if err := s.visitBatch(e, visit); err != nil {
			return nil, err
		}
		if err := s.write(e); err != nil {
			return nil, err
		}
		if cached != nil {
			if err := visit(cached); err != nil {
				return nil, err
			}
			if err := s.shed(cached); err != nil {
				return nil, err
			}
		}
		return nil, nil
	}
	if cached != nil {
		// Merge in the partial entry's changes; it stays the cached one.
		s.cached -= max(len(cached.dirty), 1)
		cached.rows = append(e.rows, cached.rows...)
		cached.dirty = append(e.dirty, cached.dirty...)
		cached.partial, cached.used = false, tick
		cached.index = nil // row numbers moved
		e = cached
	}
	s.cache[string(s.keyBuf)] = e
	s.cached += max(len(e.dirty), 1)
	return e, nil
}

// goneSet returns the state keys of the rows a partial entry removed, when
// there are indexMin or more (nil: fewer, compared one by one).
func (s *joinSide) goneSet(e *joinEntry) map[string]bool {
	if len(e.gone) < indexMin*s.width {
		return nil
	}
	set := make(map[string]bool, len(e.gone)/s.width)
	for off := 0; off < len(e.gone); off += s.width {
		set[string(s.restKey(e.gone[off:off+s.width]))] = true
	}
	return set
}

// visitBatch passes a batch of a key's stored rows to visit; the caller
// writes the rows it touched (write). The batch is no cache entry: it never
// joins the pending list.
func (s *joinSide) visitBatch(b *joinEntry, visit func(b *joinEntry) error) error {
	b.pending = true // touch must not list it
	err := visit(b)
	b.pending = false
	return err
}

// removedIn reports whether row is among the rows a partial entry removed
// (gone: their goneSet, or nil).
func (s *joinSide) removedIn(e *joinEntry, gone map[string]bool, row []types.Datum) bool {
	if gone != nil {
		return gone[string(s.restKey(row))]
	}
	for off := 0; off < len(e.gone); off += s.width {
		if s.sameRow(e.gone[off:off+s.width], row) {
			return true
		}
	}
	return false
}

// loadForWrite returns the entry of the key last encoded for adding or
// removing rows: the cached one, or a new partial entry (no read).
func (s *joinSide) loadForWrite(tick uint64) *joinEntry {
	if e := s.cache[string(s.keyBuf)]; e != nil {
		e.used = tick
		return e
	}
	e := &joinEntry{used: tick, partial: !s.complete} // a complete side stores no rows of an uncached key
	s.cache[string(s.keyBuf)] = e
	s.cached++
	return e
}

// appendRow appends a state row to a flattened row list, copying numeric
// coefficients so the cache owns them.
func (s *joinSide) appendRow(rows []types.Datum, row []types.Datum) []types.Datum {
	s.budget.sample(row[:s.width], joinRowOverhead)
	off := len(rows)
	rows = append(rows, row[:s.width]...)
	if s.hasDec {
		for i := off; i < len(rows); i++ {
			rows[i] = rows[i].Copy()
		}
	}
	return rows
}

func (s *joinSide) markPending(e *joinEntry) {
	if !e.pending {
		e.pending = true
		s.pending = append(s.pending, e)
	}
}

// add appends row (a state row) to an entry.
func (s *joinSide) add(e *joinEntry, row []types.Datum) {
	if len(e.dirty) > 0 {
		s.cached++
	}
	e.rows = s.appendRow(e.rows, row)
	e.dirty = append(e.dirty, true)
	if e.index != nil {
		k := s.restKey(row)
		if _, dup := e.index[string(k)]; dup {
			e.index, e.unindexed = nil, true
		} else {
			e.index[string(k)] = len(e.dirty) - 1
		}
	}
	s.markPending(e)
}

// touch marks row i of an entry changed (its degree).
func (s *joinSide) touch(e *joinEntry, i int) {
	e.dirty[i] = true
	s.markPending(e)
}

// remove drops the row whose state key equals row's from an entry. It
// reports false when there is none (an inconsistent input). A partial entry
// that does not hold the row records its removal for the barrier.
func (s *joinSide) remove(e *joinEntry, row []types.Datum) bool {
	if i := s.find(e, row); i >= 0 {
		return s.removeAt(e, i)
	}
	if e.partial {
		e.gone = s.appendRow(e.gone, row)
		s.markPending(e)
		return true
	}
	return false
}

// find returns the number of the row of e whose state key equals row's, or -1.
func (s *joinSide) find(e *joinEntry, row []types.Datum) int {
	w, n := s.width, len(e.dirty)
	if e.index == nil && !e.unindexed && n >= indexMin {
		e.index = make(map[string]int, n)
		for i := range n {
			k := s.restKey(e.rows[i*w : (i+1)*w])
			if _, dup := e.index[string(k)]; dup {
				e.index, e.unindexed = nil, true
				break
			}
			e.index[string(k)] = i
		}
	}
	if e.index != nil {
		if i, ok := e.index[string(s.restKey(row))]; ok {
			return i
		}
		return -1
	}
	for i := range n {
		if s.sameRow(e.rows[i*w:(i+1)*w], row) {
			return i
		}
	}
	return -1
}

// restKey encodes the state key columns of row after the join key (into
// s.restBuf: valid until the next call).
func (s *joinSide) restKey(row []types.Datum) []byte {
	s.restBuf = codec.AppendKey(s.restBuf[:0], s.rowT, row, s.rest, nil)
	return s.restBuf
}

// removeAt drops row i of an entry (to be deleted from the table at the barrier).
func (s *joinSide) removeAt(e *joinEntry, i int) bool {
	w := s.width
	r := e.rows[i*w : (i+1)*w]
	e.gone = s.appendRow(e.gone, r)
	last := len(e.dirty) - 1
	if e.index != nil {
		delete(e.index, string(s.restKey(r)))
		if i != last {
			e.index[string(s.restKey(e.rows[last*w:]))] = i
		}
	}
	copy(r, e.rows[last*w:])
	clear(e.rows[last*w:])
	e.rows = e.rows[:last*w]
	e.dirty[i] = e.dirty[last]
	e.dirty = e.dirty[:last]
	if last > 0 {
		s.cached--
	}
	s.markPending(e)
	return true
}

// sameRow reports whether two rows of one entry have the same state key (the
// join key is equal within an entry).
func (s *joinSide) sameRow(a, b []types.Datum) bool {
	for i, c := range s.rest {
		if types.Compare(s.restT[i], &a[c], &b[c]) != 0 {
			return false
		}
	}
	return true
}

// flush writes the changes of every pending entry to the state table (its
// epoch buffer): deletions first, then the rows inserted or changed (a row
// deleted and inserted again in one epoch ends up present). It runs at the
// barrier, and during an epoch when the cache is over its bound (bound).
func (s *joinSide) flush() error {
	for _, e := range s.pending {
		if err := s.write(e); err != nil {
			return err
		}
		e.pending = false
		if e.partial {
			// Its rows are stored now: a later read reads them from the table. The
			// arrays go too: an entry keeps no capacity its count does not show.
			s.cached -= max(len(e.dirty), 1) - 1
			e.rows, e.dirty, e.index, e.unindexed = nil, nil, nil, false
		} else if w := s.width; cap(e.rows) > 2*len(e.rows)+4*w {
			// Rows were removed: give back what the count no longer shows.
			e.rows = slices.Clip(slices.Clone(e.rows))
			e.dirty = slices.Clip(slices.Clone(e.dirty))
		}
	}
	clear(s.pending)
	s.pending = s.pending[:0]
	return nil
}

// write writes one entry's changes to the state table and marks it clean
// (it stays in the pending list until flush).
func (s *joinSide) write(e *joinEntry) error {
	w := s.width
	for off := 0; off < len(e.gone); off += w {
		if err := s.table.Delete(e.gone[off : off+w]); err != nil {
			return fmt.Errorf("hash join: write state: %w", err)
		}
	}
	e.gone = nil
	for i, d := range e.dirty {
		if !d {
			continue
		}
		if err := s.table.Insert(e.rows[i*w : (i+1)*w]); err != nil {
			return fmt.Errorf("hash join: write state: %w", err)
		}
		e.dirty[i] = false
	}
	return nil
}

// shed writes the changes of e, the entry of the key last encoded, to the
// state table and drops it from the cache: a key with more rows than the
// side may cache is never kept, each probe reads it from the table.
func (s *joinSide) shed(e *joinEntry) error {
	if err := s.write(e); err != nil {
		return err
	}
	if s.cache[string(s.keyBuf)] == e {
		delete(s.cache, string(s.keyBuf))
		s.cached -= max(len(e.dirty), 1)
		s.complete = false
	}
	// A pending entry stays in the pending list, with nothing left to write.
	e.rows, e.dirty, e.partial, e.index, e.unindexed = nil, nil, false, nil, false
	return nil
}

// lruMark is an entry's last use and weight, for eviction.
type lruMark struct {
	used uint64
	rows int
}

// evict drops the least recently used entries until at most limit rows stay
// cached; call it after flush. marks is scratch space, returned for reuse.
func (s *joinSide) evict(limit int, marks []lruMark) []lruMark {
	if s.cached <= limit || len(s.pending) > 0 {
		return marks
	}
	marks = marks[:0]
	for _, e := range s.cache {
		marks = append(marks, lruMark{used: e.used, rows: max(len(e.dirty), 1)})
	}
	slices.SortFunc(marks, func(a, b lruMark) int { return cmp.Compare(a.used, b.used) })
	// Find the newest use that must go: dropping every entry used at or before it
	// frees at least the excess.
	over, freed := s.cached-limit, 0
	var cut uint64
	for _, m := range marks {
		cut, freed = m.used, freed+m.rows
		if freed >= over {
			break
		}
	}
	for k, e := range s.cache {
		if e.used <= cut {
			s.cached -= max(len(e.dirty), 1)
			delete(s.cache, k)
			s.complete = false
		}
	}
	return marks
}

// warm reads the side's stored rows (in the actor's vnodes, nil: all) into
// the cache and marks the side complete, when there are at most maxRows of
// them; otherwise it leaves the cache empty. Call it before the first row.
func (s *joinSide) warm(ctx context.Context, vnodes []uint16, maxRows int) error {
	scan := vnodeScans(vnodes)
	kd := make([]types.Datum, len(s.key))
	rows := 0
	for _, v := range scan {
		it, err := s.table.Iter(ctx, state.IterOptions{Vnode: v})
		if err != nil {
			return fmt.Errorf("hash join: read state: %w", err)
		}
		for rows <= maxRows {
			err := it.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				it.Close()
				return fmt.Errorf("hash join: read state: %w", err)
			}
			row := it.Row()
			for i, c := range s.key {
				kd[i] = row[c]
			}
			s.encodeKey(kd)
			e := s.cache[string(s.keyBuf)]
			if e == nil {
				e = &joinEntry{}
				s.cache[string(s.keyBuf)] = e
				s.cached++
			} else {
				s.cached++ // an empty entry counts as one: from the second row on, each adds one
			}
			e.rows = s.appendRow(e.rows, row)
			e.dirty = append(e.dirty, false)
			rows++
		}
		if err := it.Close(); err != nil {
			return fmt.Errorf("hash join: read state: %w", err)
		}
		if rows > maxRows {
			clear(s.cache)
			s.cached = 0
			return nil
		}
	}
	s.complete = true
	return nil
}

// deleteBelow deletes the side's rows whose column col (of type t) is below
// wm, in the vnodes given (nil: all), from the state table, and drops the
// cache entries holding any; call it after flush, when no entry is pending.
// keyLeads says col is the first column of the state key (then only the
// rows below wm are read).
func (s *joinSide) deleteBelow(ctx context.Context, vnodes []uint16, col int, t types.T, wm *types.Datum, keyLeads bool) error {
	for key, e := range s.cache {
		for off := 0; off < len(e.rows); off += s.width {
			if d := &e.rows[off+col]; !d.Null && types.Compare(t, d, wm) < 0 {
				s.cached -= max(len(e.dirty), 1)
				delete(s.cache, key)
				s.complete = false
				break
			}
		}
	}
	return deleteStateBelow(ctx, s.table, s.width, vnodes, col, t, wm, keyLeads)
}

// vnodeScans returns the Vnode options that read an actor's vnodes (nil:
// all, in one scan).
func vnodeScans(vnodes []uint16) []int {
	if vnodes == nil {
		return []int{state.AllVnodes}
	}
	scan := make([]int, len(vnodes))
	for i, v := range vnodes {
		scan[i] = int(v)
	}
	return scan
}

// deleteStateBelow deletes from table (rows of width columns) the rows whose
// column col (of type t) is below wm, in the vnodes given (nil: all).
// keyLeads says col is the first column of the state key (then only the rows
// below wm are read). Watermark state cleaning of joins and top-N.
func deleteStateBelow(ctx context.Context, table *state.Table, width int, vnodes []uint16, col int, t types.T, wm *types.Datum, keyLeads bool) error {
	var rng state.KeyRange
	if keyLeads {
		rng.End = codec.EncodeKey(nil, t, wm, false)
	}
	scan := vnodeScans(vnodes)
	var doomed []types.Datum
	for _, v := range scan {
		it, err := table.Iter(ctx, state.IterOptions{Vnode: v, Range: rng})
		if err != nil {
			return err
		}
		for {
			err := it.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				it.Close()
				return err
			}
			row := it.Row()
			if row[col].Null || types.Compare(t, &row[col], wm) >= 0 {
				continue
			}
			for j := range row {
				doomed = append(doomed, row[j].Copy())
			}
		}
		if err := it.Close(); err != nil {
			return err
		}
	}
	for off := 0; off < len(doomed); off += width {
		if err := table.Delete(doomed[off : off+width]); err != nil {
			return err
		}
	}
	return nil
}
