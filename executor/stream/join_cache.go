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
// flattened: row i is rows[i*width : (i+1)*width].
type joinEntry struct {
	rows []types.Datum
	used uint64 // the side's tick when last used, for LRU eviction
}

// joinSide is one input of a hash join: its fixed layout and its run state
// (state table and the cache of entries by encoded join key).
type joinSide struct {
	table    *state.Table
	width    int       // state row width: ncols (+1 with a degree column)
	ncols    int       // the input's column count
	degree   bool      // rows carry their degree at column ncols
	key      []int     // join key columns of the input row
	keyTypes []types.T // their types
	keyIdx   []int     // 0..len(key)-1
	rest     []int     // state pk columns after the join key: identify a row within an entry
	restT    []types.T // their types
	hasDec   bool      // some column is numeric (cached rows must not share coefficients)

	cache  map[string]*joinEntry
	cached int // rows held by cache entries (an empty entry counts as one)
	// big is the entry returned for a key with more rows than the cache may hold; it is not cached.
	big    joinEntry
	keyBuf []byte
}

// newJoinSide returns a side whose state table t holds rows of types ts: the
// input's columns, then the degree when degree is set.
func newJoinSide(t *state.Table, ts []types.T, key, pk []int, degree bool) *joinSide {
	s := &joinSide{table: t, width: len(ts), ncols: len(ts), degree: degree, key: key, cache: make(map[string]*joinEntry)}
	if degree {
		s.ncols--
	}
	for i, c := range key {
		s.keyTypes = append(s.keyTypes, ts[c])
		s.keyIdx = append(s.keyIdx, i)
	}
	s.rest = pk[len(key):]
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

// cachedEntry returns the cached entry of the key last encoded, or nil.
func (s *joinSide) cachedEntry() *joinEntry { return s.cache[string(s.keyBuf)] }

// load returns the entry of the key last encoded (values kd), reading the
// state table on a cache miss. An entry with more than limit rows is not
// cached: the caller may use it until the next load.
func (s *joinSide) load(ctx context.Context, kd []types.Datum, limit int, tick uint64) (*joinEntry, error) {
	if e := s.cache[string(s.keyBuf)]; e != nil {
		e.used = tick
		return e, nil
	}
	vnode := codec.VnodeOf(codec.HashRow(s.keyTypes, kd, s.keyIdx))
	it, err := s.table.Iter(ctx, state.IterOptions{
		Vnode: int(vnode),
		Range: state.KeyRange{Start: s.keyBuf, End: codec.PrefixEnd(s.keyBuf)},
	})
	if err != nil {
		return nil, fmt.Errorf("hash join: read state: %w", err)
	}
	e := &joinEntry{used: tick}
	for {
		err := it.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			it.Close()
			return nil, fmt.Errorf("hash join: read state: %w", err)
		}
		e.rows = s.appendRow(e.rows, it.Row())
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("hash join: read state: %w", err)
	}
	n := len(e.rows) / s.width
	if n > limit {
		s.big.rows = append(s.big.rows[:0], e.rows...)
		return &s.big, nil
	}
	s.cache[string(s.keyBuf)] = e
	s.cached += max(n, 1)
	return e, nil
}

// appendRow appends a state row to a flattened row list, copying numeric
// coefficients so the cache owns them.
func (s *joinSide) appendRow(rows []types.Datum, row []types.Datum) []types.Datum {
	off := len(rows)
	rows = append(rows, row[:s.width]...)
	if s.hasDec {
		for i := off; i < len(rows); i++ {
			rows[i] = rows[i].Copy()
		}
	}
	return rows
}

// add appends row to a cached entry.
func (s *joinSide) add(e *joinEntry, row []types.Datum) {
	if len(e.rows) > 0 {
		s.cached++
	}
	e.rows = s.appendRow(e.rows, row)
}

// remove drops the row whose state key equals row's from a cached entry.
func (s *joinSide) remove(e *joinEntry, row []types.Datum) {
	w := s.width
	for off := 0; off < len(e.rows); off += w {
		if !s.sameRow(e.rows[off:off+w], row) {
			continue
		}
		last := len(e.rows) - w
		copy(e.rows[off:off+w], e.rows[last:])
		clear(e.rows[last:])
		e.rows = e.rows[:last]
		if len(e.rows) > 0 {
			s.cached--
		}
		return
	}
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

// lruMark is an entry's last use and weight, for eviction.
type lruMark struct {
	used uint64
	rows int
}

// evict drops the least recently used entries until at most limit rows stay
// cached. marks is scratch space, returned for reuse.
func (s *joinSide) evict(limit int, marks []lruMark) []lruMark {
	if s.cached <= limit {
		return marks
	}
	marks = marks[:0]
	for _, e := range s.cache {
		marks = append(marks, lruMark{used: e.used, rows: max(len(e.rows)/s.width, 1)})
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
			s.cached -= max(len(e.rows)/s.width, 1)
			delete(s.cache, k)
		}
	}
	return marks
}
