package stream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage"
	"github.com/tributary/tributary/storage/codec"
	"github.com/tributary/tributary/storage/state"
)

// temporalJoin is the process-time temporal join (plan.StreamTemporalJoin):
// each left row is joined with the rows of the right relation that its
// lookup key finds in the relation's last committed state (every chunk pins
// one committed epoch and reads at it), filtered by the condition; a left
// join pads a row that finds none. Changes of the relation never touch
// earlier outputs, so only the left input is consumed; its barriers and
// watermarks pass through (the left columns keep their positions).
//
// A left input that retracts keeps the memo: per left row, the right rows
// it was joined with, so a delete (or an update's delete half) retracts
// exactly what the row's insert produced, whatever the relation holds now.
// The memo is a state table keyed by the left row's distribution and stream
// key columns, so it moves with its vnodes on a rescale and survives
// recovery. Updates are processed as a delete then an insert; the output
// has only Insert and Delete.
type temporalJoin struct {
	actx  *ActorContext
	in    Executor
	outer bool // a left join: unmatched rows are emitted NULL-padded
	nl    int
	outT  []types.T
	cond  expr.Expr // nil: none

	// The relation read: its id, column types (and values of columns added
	// later), the types of its primary key, how many leading key columns
	// distribute its rows, and the columns the right side outputs.
	relID     uint32
	blocks    bool // the relation may store blocks (catalog.Relation.StoresBlocks)
	relT      []types.T
	missing   []types.Datum
	pkT       []types.T
	distLen   int
	keyLeft   []int
	rightCols []int

	memo     *state.Table // nil: an append-only left input
	memoLeft []int        // left columns leading a memo row
	memoT    []types.T
	memoDist int // leading memo columns that place it on its vnode

	run temporalRun
}

// temporalRun is the temporal join's per-run state.
type temporalRun struct {
	ectx    expr.Ctx
	lenient lenientEval
	epoch   uint64 // the committed epoch the current chunk reads
	row     []types.Datum
	key     []types.Datum // lookup key values
	rel     []types.Datum // a decoded relation row
	joined  []types.Datum
	nulls   []types.Datum
	memoRow []types.Datum
	gone    [][]types.Datum // memo rows to delete
	keyBuf  []byte
	cur     *types.Chunk
	out     []*types.Chunk
	stopped bool
}

// NewTemporalJoin returns the temporal join of n over its left input. When
// the left input may retract, n.State() must hold the memo's layout with
// its id assigned.
func NewTemporalJoin(actx *ActorContext, n *plan.StreamTemporalJoin, left Executor) (Executor, error) {
	if n.Kind != plan.InnerJoin && n.Kind != plan.LeftJoin {
		return nil, fmt.Errorf("temporal join: unsupported join kind %s", n.Kind)
	}
	lk := n.Lookup
	if len(n.KeyLeft) > len(lk.PK) {
		return nil, fmt.Errorf("temporal join: %d lookup columns for a key of %d", len(n.KeyLeft), len(lk.PK))
	}
	dist := lk.DistKey()
	if len(dist) > len(lk.PK) || !slices.Equal(lk.PK[:len(dist)], dist) || (len(n.KeyLeft) > 0 && len(n.KeyLeft) < len(dist)) {
		return nil, fmt.Errorf("temporal join: lookup key %v of %s does not cover its distribution key %v", n.KeyLeft, lk.QualifiedName(), dist)
	}
	lt := left.Schema()
	e := &temporalJoin{
		actx: actx, in: left, outer: n.Kind == plan.LeftJoin, nl: len(lt), outT: plan.Types(n.Schema()), cond: n.Cond,
		relID: lk.ID, blocks: lk.StoresBlocks(), relT: lk.ColumnTypes(), missing: lk.MissingValues(), distLen: len(dist),
		keyLeft: slices.Clone(n.KeyLeft), rightCols: slices.Clone(n.RightCols),
	}
	if len(e.outT) != len(lt)+len(n.RightCols) {
		return nil, fmt.Errorf("temporal join: %d output columns for %d left and %d right", len(e.outT), len(lt), len(n.RightCols))
	}
	for _, c := range lk.PK {
		e.pkT = append(e.pkT, e.relT[c])
	}
	for i, l := range n.KeyLeft {
		if l < 0 || l >= len(lt) || !(lt[l].Physical() == e.pkT[i].Physical()) {
			return nil, fmt.Errorf("temporal join: lookup column $%d does not match key column %d of %s", l, i, lk.QualifiedName())
		}
	}
	for _, c := range n.RightCols {
		if c < 0 || c >= len(e.relT) {
			return nil, fmt.Errorf("temporal join: right column %d out of %d", c, len(e.relT))
		}
	}
	if !n.AppendOnly {
		st := n.State()
		if len(st) != 1 {
			return nil, fmt.Errorf("temporal join: %d state tables, want 1", len(st))
		}
		t, err := actx.NewTable(state.Schema{TableID: st[0].ID, Types: st[0].Types, PK: st[0].PK, PKDesc: st[0].PKDesc, DistKey: st[0].Dist})
		if err != nil {
			return nil, fmt.Errorf("temporal join: open memo: %w", err)
		}
		e.memo, e.memoLeft, e.memoT, e.memoDist = t, n.MemoLeftCols(), st[0].Types, len(st[0].Dist)
		if len(e.memoT) != len(e.memoLeft)+len(n.RightCols) {
			return nil, fmt.Errorf("temporal join: memo has %d columns, want %d", len(e.memoT), len(e.memoLeft)+len(n.RightCols))
		}
	}
	r := &e.run
	r.lenient = newLenientEval(actx)
	r.key = make([]types.Datum, len(n.KeyLeft))
	r.joined = make([]types.Datum, len(e.outT))
	r.nulls = make([]types.Datum, len(n.RightCols))
	for i := range r.nulls {
		r.nulls[i] = types.NullDatum
	}
	r.memoRow = make([]types.Datum, len(e.memoT))
	return e, nil
}

func (e *temporalJoin) Schema() []types.T { return e.outT }

func (e *temporalJoin) Next(ctx context.Context) (Message, error) {
	r := &e.run
	for {
		if len(r.out) > 0 {
			c := r.out[0]
			r.out[0] = nil
			r.out = r.out[1:]
			return ChunkMsg(c), nil
		}
		if r.stopped {
			return Message{}, io.EOF
		}
		m, err := e.in.Next(ctx)
		if err != nil {
			return Message{}, err
		}
		switch {
		case m.Chunk != nil:
			if err := e.processChunk(ctx, m.Chunk); err != nil {
				return Message{}, err
			}
		case m.Barrier != nil:
			if m.Barrier.Stops(e.actx.ID) {
				r.stopped = true
			}
			return m, nil // the memo's writes are flushed by the actor
		default:
			return m, nil // a watermark on a left column
		}
	}
}

// processChunk joins every visible row of c, reading the relation at the
// last committed epoch (pinned while the chunk is processed).
func (e *temporalJoin) processChunk(ctx context.Context, c *types.Chunk) error {
	release, err := e.pin()
	if err != nil {
		return err
	}
	defer release()
	r := &e.run
	for i := 0; i < c.Len(); i++ {
		if !c.Visible(i) {
			continue
		}
		r.row = c.Row(i, r.row[:0])
		if c.Op(i).IsInsert() {
			err = e.insert(ctx, r.row)
		} else {
			err = e.delete(ctx, r.row)
		}
		if err != nil {
			return err
		}
	}
	if r.cur != nil && r.cur.Len() > 0 {
		r.out = append(r.out, r.cur)
		r.cur = nil
	}
	return nil
}

// pin holds the last committed epoch's versions for the chunk's reads.
func (e *temporalJoin) pin() (func(), error) {
	var err error
	for range 3 {
		epoch := e.actx.Store.CommittedEpoch()
		var release func()
		if release, err = e.actx.Store.Pin(epoch); err == nil {
			e.run.epoch = epoch
			return release, nil
		}
		if !errors.Is(err, storage.ErrEpochDiscarded) {
			break
		}
	}
	return nil, fmt.Errorf("temporal join: pin the committed epoch: %w", err)
}

// insert joins a new left row with the relation's matching rows.
func (e *temporalJoin) insert(ctx context.Context, row []types.Datum) error {
	r := &e.run
	matched := false
	err := e.lookup(ctx, row, func(rel []types.Datum) error {
		e.fill(row, rel)
		if e.cond != nil {
			d, err := r.lenient.evalRow(&r.ectx, e.cond, r.joined)
			if err != nil {
				return fmt.Errorf("temporal join: condition: %w", err)
			}
			if d.Null || !d.Bool() {
				return nil
			}
		}
		matched = true
		e.emit(types.OpInsert, r.joined)
		if e.memo == nil {
			return nil
		}
		for i, c := range e.memoLeft {
			r.memoRow[i] = row[c]
		}
		copy(r.memoRow[len(e.memoLeft):], r.joined[e.nl:])
		return e.memo.Insert(r.memoRow)
	})
	if err != nil {
		return err
	}
	if !matched && e.outer {
		e.fill(row, nil)
		e.emit(types.OpInsert, r.joined)
	}
	return nil
}

// delete retracts what a left row's insert produced: the joined rows its
// memo holds, or its NULL-padded row.
func (e *temporalJoin) delete(ctx context.Context, row []types.Datum) error {
	if e.memo == nil {
		return fmt.Errorf("temporal join: a retraction from a left input planned as append-only")
	}
	r := &e.run
	k := len(e.memoLeft)
	for i, c := range e.memoLeft {
		r.memoRow[i] = row[c]
	}
	v := codec.VnodeOf(codec.HashRow(e.memoT, r.memoRow, span(e.memoDist)))
	start := codec.AppendKey(nil, e.memoT, r.memoRow, span(k), nil)
	it, err := e.memo.Iter(ctx, state.IterOptions{Vnode: int(v), Range: state.KeyRange{Start: start, End: codec.PrefixEnd(start)}})
	if err != nil {
		return fmt.Errorf("temporal join: read memo: %w", err)
	}
	r.gone = r.gone[:0]
	for {
		if err := it.Next(); err != nil {
			it.Close()
			if !errors.Is(err, io.EOF) {
				return fmt.Errorf("temporal join: read memo: %w", err)
			}
			break
		}
		m := it.Row()
		e.fillRight(row, m[k:])
		e.emit(types.OpDelete, r.joined)
		r.gone = append(r.gone, slices.Clone(m))
	}
	for _, m := range r.gone {
		if err := e.memo.Delete(m); err != nil {
			return err
		}
	}
	if len(r.gone) == 0 && e.outer {
		e.fill(row, nil)
		e.emit(types.OpDelete, r.joined)
	}
	return nil
}

// lookup calls fn with each row of the relation (all its columns) whose key starts with the row's lookup
// values, as of the pinned epoch: one point read when they are the whole
// key, one key-range read in their vnode otherwise, and every row of the
// relation for a nested loop.
func (e *temporalJoin) lookup(ctx context.Context, row []types.Datum, fn func(rel []types.Datum) error) error {
	r := &e.run
	kv := e.actx.Store
	var lower, upper []byte
	switch {
	case len(e.keyLeft) > 0:
		for i, c := range e.keyLeft {
			d := row[c]
			if d.Null || !fitsKey(e.pkT[i], d) {
				return nil // = NULL (or a value the column cannot hold) matches nothing
			}
			r.key[i] = d
		}
		v := codec.VnodeOf(codec.HashRow(e.pkT, r.key, span(e.distLen)))
		r.keyBuf = codec.AppendTablePrefix(r.keyBuf[:0], e.relID, v)
		r.keyBuf = codec.AppendKey(r.keyBuf, e.pkT, r.key, span(len(r.key)), nil)
		if len(e.keyLeft) == len(e.pkT) {
			val, found, err := state.GetRow(ctx, kv, r.keyBuf, r.epoch, nil, e.blocks)
			if err != nil || !found {
				return wrapLookup(err)
			}
			if r.rel, err = codec.DecodeRowMissing(e.relT, val, r.rel, e.missing); err != nil {
				return wrapLookup(err)
			}
			return fn(r.rel)
		}
		lower, upper = r.keyBuf, codec.PrefixEnd(r.keyBuf)
	case e.distLen == 0:
		lower, upper = codec.VnodeSpan(e.relID, 0)
	default:
		lower, upper = codec.TableSpan(e.relID)
	}
	it, err := state.Scan(ctx, kv, lower, upper, r.epoch, e.blocks)
	if err != nil {
		return wrapLookup(err)
	}
	defer it.Close()
	for {
		if err := it.Next(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return wrapLookup(err)
		}
		if r.rel, err = codec.DecodeRowMissing(e.relT, it.Value(), r.rel, e.missing); err != nil {
			return wrapLookup(err)
		}
		if err := fn(r.rel); err != nil {
			return err
		}
	}
}

func wrapLookup(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("temporal join: lookup: %w", err)
}

// fitsKey reports whether an integer value of a join key fits the key
// column's type (a wider left column's value may not).
func fitsKey(t types.T, d types.Datum) bool {
	switch t.ID {
	case types.Int16:
		return d.I >= math.MinInt16 && d.I <= math.MaxInt16
	case types.Int32:
		return d.I >= math.MinInt32 && d.I <= math.MaxInt32
	}
	return true
}

// fill sets run.joined to the left row followed by the right columns of
// rel, a relation row (all its columns); nil pads with NULLs.
func (e *temporalJoin) fill(row, rel []types.Datum) {
	j := e.run.joined
	copy(j[:e.nl], row[:e.nl])
	if rel == nil {
		copy(j[e.nl:], e.run.nulls)
		return
	}
	for i, c := range e.rightCols {
		j[e.nl+i] = rel[c]
	}
}

// fillRight sets run.joined to the left row followed by right, the right
// columns themselves (a memo row's tail).
func (e *temporalJoin) fillRight(row, right []types.Datum) {
	copy(e.run.joined[:e.nl], row[:e.nl])
	copy(e.run.joined[e.nl:], right)
}

// emit appends one output row, queueing full chunks.
func (e *temporalJoin) emit(op types.Op, row []types.Datum) {
	r := &e.run
	if r.cur == nil {
		r.cur = types.NewChunk(e.outT, types.DefaultChunkSize)
	}
	r.cur.AppendRowOp(op, row)
	if r.cur.Len() >= types.DefaultChunkSize {
		r.out = append(r.out, r.cur)
		r.cur = nil
	}
}

// span returns 0, 1, ..., n-1.
func span(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}
