package batch

import (
	"bytes"
	"context"
	"fmt"
	"hash/maphash"
	"slices"
	"sync/atomic"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage/codec"
	"github.com/tributary/tributary/storage/state"
)

// insertWriter writes each input row (already in the table's column order and
// types) after checking NOT NULL and that no row with its primary key exists.
type insertWriter struct {
	rel      *catalog.Relation
	conflict *plan.InsertConflict // ON CONFLICT, nil when absent
	// touched are the keys this statement wrote (ON CONFLICT DO UPDATE may
	// not write a row twice).
	touched map[string]bool
	written int    // rows this statement wrote
	run     uint32 // the statement's run of fresh rows (0: none yet)
	// last says the chunk being written is the statement's last input and no
	// RETURNING follows (dmlExec): nothing after its checks can fail, so its
	// rows may go to the table's streaming jobs before they are written
	// (writeFresh).
	last bool
	seen keySet // writeFresh: the keys of a block's rows checked so far
}

// setLast is dmlExec's word that the next chunk is the statement's last
// and no RETURNING follows.
func (w *insertWriter) setLast(last bool) { w.last = last }

// insertRuns numbers statements' runs of fresh rows: a block holds one run's
// rows, so two statements' keys in one epoch make blocks of their own, which
// do not span the range between them that each one's next statement fills.
var insertRuns atomic.Uint32

// freshRows is how many rows a statement must write for its new keys to go
// as blocks (state.Table.InsertFresh): two a vnode on average. A smaller
// statement's rows are too few per vnode for a block, and holding them for
// the barrier's seal costs more than writing them at the flush. A 1000-row
// statement's four rows a vnode make one Badger entry instead of four.
const freshRows = 512

func (w *insertWriter) write(ctx context.Context, env *Env, tbl *state.Table, rel *catalog.Relation, rows *types.Chunk) (*types.Chunk, error) {
	if w.conflict != nil {
		return w.writeOnConflict(ctx, env, tbl, rel, rows)
	}
	nc := len(rel.Columns)
	var (
		row     []types.Datum
		pk      = make([]types.Datum, len(rel.PK))
		scratch []types.Datum
		err     error
		vis     []bool // set when a row is skipped
		probe   keyProbe
	)
	fresh := w.written+rows.Len() >= freshRows
	if fresh && w.run == 0 {
		w.run = insertRuns.Add(1) | 1<<31 // apart from 0 (unnamed) and most RunTags
	}
	if fresh && rel.OnConflict == "" {
		return w.writeFresh(ctx, env, tbl, rel, rows)
	}
	recorded := 0 // rows before it are in the captured changes (plain inserts, recorded a block at a time)
	for i := 0; i < rows.Len(); i++ {
		if i%types.DefaultChunkSize == 0 {
			if rel.OnConflict == "" {
				env.Tables.recordInserts(rel, rows, recorded, i)
				recorded = i
			}
			if err := checkCtx(ctx); err != nil {
				return nil, err
			}
			// The input is all read (or never reads this table): what
			// this statement wrote may move to storage (TableSet.MaybeSpill).
			if err := env.Tables.MaybeSpill(); err != nil {
				return nil, err
			}
			if rel.OnConflict == "" {
				// Nothing is staged until the next block: one ordered read
				// of the block's keys answers the conflict checks.
				if err := probe.load(ctx, env, tbl, rel, rows, i, min(i+types.DefaultChunkSize, rows.Len())); err != nil {
					return nil, err
				}
			}
		}
		row = rows.Row(i, row)[:nc]
		if err := checkNotNull(rel, row); err != nil {
			return nil, err
		}
		if rel.OnConflict == "" {
			if err := probe.check(env, tbl, rel, row, i); err != nil {
				return nil, err
			}
			// The table holds no row with its key (a large statement's
			// rows go as blocks: writeFresh).
			if err := tbl.InsertKeyed(probe.key(i), row); err != nil {
				return nil, errorf("insert into %s: %w", rel.QualifiedName(), err)
			}
			w.written++
			continue
		}
		var inserted bool
		if inserted, scratch, err = insertRow(ctx, env, tbl, rel, row, pk, scratch); err != nil {
			return nil, err
		}
		if !inserted { // ON CONFLICT IGNORE: not written, not counted
			if vis == nil {
				vis = make([]bool, rows.Len())
				for k := range vis {
					vis[k] = rows.Visible(k)
				}
			}
			vis[i] = false
		}
	}
	if rel.OnConflict == "" {
		env.Tables.recordInserts(rel, rows, recorded, rows.Len())
	}
	if vis != nil { // only the rows written are the statement's (count, RETURNING)
		out := types.NewChunk(rows.Types(), rows.Len())
		for i := 0; i < rows.Len(); i++ {
			if vis[i] {
				out.AppendFrom(rows, i)
			}
		}
		return out, nil
	}
	return rows, nil
}

// writeFresh is write of a large statement's rows, whose new keys go as
// blocks (freshRows), a block of rows at a time in two passes: the first
// checks each row (NOT NULL, no row with its key in the table's pending
// writes or in the store, none among the block's rows before it), the second
// writes them. After the first pass over the statement's last chunk the rows
// go to the table's streaming jobs (TableSet.SendEarly): the jobs' actors
// work on them while the second pass encodes and writes them into the
// table, which cannot fail. The block's own keys are checked in a set of
// its own (keySet), not through the table's pending writes: a row is put
// there only once the whole block is checked.
func (w *insertWriter) writeFresh(ctx context.Context, env *Env, tbl *state.Table, rel *catalog.Relation, rows *types.Chunk) (*types.Chunk, error) {
	nc := len(rel.Columns)
	var (
		row   []types.Datum
		probe keyProbe
	)
	for from := 0; from < rows.Len(); from += types.DefaultChunkSize {
		to := min(from+types.DefaultChunkSize, rows.Len())
		if err := checkCtx(ctx); err != nil {
			return nil, err
		}
		// The input is all read (or never reads this table): what this
		// statement wrote may move to storage (TableSet.MaybeSpill).
		if err := env.Tables.MaybeSpill(); err != nil {
			return nil, err
		}
		if err := probe.load(ctx, env, tbl, rel, rows, from, to); err != nil {
			return nil, err
		}
		w.seen.reset(to - from)
		for i := from; i < to; i++ {
			row = rows.Row(i, row)[:nc]
			if err := checkNotNull(rel, row); err != nil {
				return nil, err
			}
			if err := probe.check(env, tbl, rel, row, i); err != nil {
				return nil, err
			}
			if w.seen.add(probe.keys, i-from) {
				return nil, uniqueViolation(rel, row)
			}
		}
		env.Tables.recordInserts(rel, rows, from, to)
		if w.last && to == rows.Len() {
			if err := env.Tables.SendEarly(); err != nil {
				return nil, err
			}
		}
		for i := from; i < to; i++ {
			row = rows.Row(i, row)[:nc]
			if err := tbl.InsertFreshKeyed(probe.key(i), row, w.run); err != nil {
				return nil, errorf("insert into %s: %w", rel.QualifiedName(), err)
			}
			w.written++
		}
	}
	return rows, nil
}

// keySet is a set of a block's row keys by their position, for the
// duplicates among them: an open-addressing table of positions, twice the
// block's size.
type keySet struct {
	seed  maphash.Seed
	slots []int32 // a position, or -1
}

// reset empties the set for a block of n keys.
func (s *keySet) reset(n int) {
	if s.seed == (maphash.Seed{}) {
		s.seed = maphash.MakeSeed()
	}
	size := 16
	for size < 2*n {
		size *= 2
	}
	if cap(s.slots) < size {
		s.slots = make([]int32, size)
	}
	s.slots = s.slots[:size]
	for i := range s.slots {
		s.slots[i] = -1
	}
}

// add adds keys[i] and reports whether a key before it was equal (it is not
// added then).
func (s *keySet) add(keys [][]byte, i int) (dup bool) {
	mask := uint64(len(s.slots) - 1)
	for j := maphash.Bytes(s.seed, keys[i]) & mask; ; j = (j + 1) & mask {
		k := s.slots[j]
		if k < 0 {
			s.slots[j] = int32(i)
			return false
		}
		if bytes.Equal(keys[k], keys[i]) {
			return true
		}
	}
}

// writeOnConflict is write under INSERT ... ON CONFLICT: a row whose key
// the table holds is skipped (DO NOTHING) or updates the stored row (DO
// UPDATE, when its WHERE holds); the rows written, inserted or updated, are
// the statement's (count, RETURNING).
func (w *insertWriter) writeOnConflict(ctx context.Context, env *Env, tbl *state.Table, rel *catalog.Relation, rows *types.Chunk) (*types.Chunk, error) {
	nc := len(rel.Columns)
	ts := rel.ColumnTypes()
	oc := w.conflict
	if w.touched == nil {
		w.touched = map[string]bool{}
	}
	out := types.NewChunk(rows.Types(), rows.Len())
	var (
		row, scratch, both []types.Datum
		pk                 = make([]types.Datum, len(rel.PK))
		key                []byte
		err                error
	)
	for i := 0; i < rows.Len(); i++ {
		if !rows.Visible(i) {
			continue
		}
		if i%types.DefaultChunkSize == 0 {
			if err := checkCtx(ctx); err != nil {
				return nil, err
			}
		}
		row = rows.Row(i, row)
		if err := checkNotNull(rel, row[:nc]); err != nil {
			return nil, err
		}
		for k, c := range rel.PK {
			pk[k] = row[c]
		}
		key = codec.AppendKey(key[:0], ts, row, rel.PK, nil)
		var found bool
		if scratch, found, err = tbl.GetAt(ctx, env.Epoch, pk, scratch); err != nil {
			return nil, fmt.Errorf("%s: check primary key: %w", rel.QualifiedName(), err)
		}
		if !found {
			if err := tbl.Insert(row[:nc]); err != nil {
				return nil, errorf("insert into %s: %w", rel.QualifiedName(), err)
			}
			env.Tables.record(rel, types.OpInsert, row[:nc])
			w.touched[string(key)] = true
			out.AppendRow(row)
			continue
		}
		if oc.DoNothing {
			continue
		}
		if w.touched[string(key)] {
			return nil, &types.Error{Kind: types.ErrCardinality, Msg: "ON CONFLICT DO UPDATE command cannot affect row a second time",
				Hint: "Ensure that no rows proposed for insertion within the same command have duplicate constrained values."}
		}
		old := slices.Clone(scratch[:nc])
		both = append(append(both[:0], old...), row[:nc]...)
		if oc.Where != nil {
			ok, err := oc.Where.EvalRow(env.Ctx, both)
			if err != nil {
				return nil, err
			}
			if ok.Null || ok.I == 0 {
				continue // not updated, not counted
			}
		}
		upd := slices.Clone(old)
		for k, c := range oc.Cols {
			if upd[c], err = oc.Set[k].EvalRow(env.Ctx, both); err != nil {
				return nil, err
			}
		}
		for c, g := range oc.Generated {
			if g == nil {
				continue
			}
			if upd[c], err = g.EvalRow(env.Ctx, upd); err != nil {
				return nil, err
			}
		}
		if err := checkNotNull(rel, upd); err != nil {
			return nil, err
		}
		if err := tbl.Update(old, upd); err != nil {
			return nil, errorf("insert into %s: %w", rel.QualifiedName(), err)
		}
		env.Tables.record(rel, types.OpUpdateDelete, old)
		env.Tables.record(rel, types.OpUpdateInsert, upd)
		w.touched[string(key)] = true
		out.AppendRow(append(upd, row[nc:]...))
	}
	return out, nil
}

// keyProbe answers the primary-key conflict checks of a block of rows to insert: the store's
// answer for all the block's keys comes from one ordered read (state.Table.StoredKeys) before
// the first row is written; each row's check then asks the table's pending writes first, which
// hold the block's earlier rows.
type keyProbe struct {
	from  int      // the block's first row
	keys  [][]byte // the block's row keys
	arena []byte
	found []bool
}

// load reads the keys of rows [from, to).
func (p *keyProbe) load(ctx context.Context, env *Env, tbl *state.Table, rel *catalog.Relation, rows *types.Chunk, from, to int) error {
	p.from = from
	p.keys, p.arena, p.found = p.keys[:0], p.arena[:0], p.found[:0]
	var row []types.Datum
	ends := make([]int, 0, to-from)
	for i := from; i < to; i++ {
		row = rows.Row(i, row)[:len(rel.Columns)]
		p.arena = tbl.RowKey(p.arena, row)
		ends = append(ends, len(p.arena))
		if i == from {
			// Room for the rest at the first key's length (plus a quarter), so the arena
			// is not grown and copied again and again.
			p.arena = slices.Grow(p.arena, len(p.arena)*(to-from-1)*5/4)
		}
	}
	start := 0
	for _, end := range ends { // slices of the arena once it no longer moves
		p.keys = append(p.keys, p.arena[start:end:end])
		start = end
	}
	p.found = append(p.found, make([]bool, len(p.keys))...)
	if err := tbl.StoredKeys(ctx, env.Epoch, p.keys, p.found); err != nil {
		return fmt.Errorf("%s: check primary key: %w", rel.QualifiedName(), err)
	}
	return nil
}

// key is row i's key, as load encoded it.
func (p *keyProbe) key(i int) []byte { return p.keys[i-p.from] }

// check fails with a unique violation when row i's key exists: in the table's pending writes,
// else in the store as load read it.
func (p *keyProbe) check(env *Env, tbl *state.Table, rel *catalog.Relation, row []types.Datum, i int) error {
	key := p.key(i)
	exists, known := tbl.PendingAt(env.Epoch, key)
	if !known {
		exists = p.found[i-p.from]
	}
	if !exists {
		return nil
	}
	return uniqueViolation(rel, row)
}
