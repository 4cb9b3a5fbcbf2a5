package stream

import (
	"context"
	"fmt"
	"io"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage/codec"
	"github.com/tributary/tributary/storage/state"
)

// dynamicFilter keeps the left rows whose column compares true with the
// right side's one value (RisingWave's dynamic filter). Every left row with
// a non-NULL column is kept in a state table keyed by (column, stream key);
// the value in force is kept in a one-row state table. A left change is
// compared with the value in force, so whether a left row is downstream is
// always "it compares true with the value in force". Right changes during an
// epoch only set the next value; at the barrier, when it differs, the rows
// between the old and the new value (a key range; every row when either is
// NULL or the types differ) are compared with both, and those whose answer
// changed are emitted as inserts or deletes before the barrier. Watermarks
// are dropped: a new value can let in rows of any age.
type dynamicFilter struct {
	dynamicFilterConfig
	dynamicFilterVars
}

// dynamicFilterConfig is the fixed configuration.
type dynamicFilterConfig struct {
	actx   *ActorContext
	align  *Aligner
	ts     []types.T
	col    int
	valT   types.T
	cmp    expr.Expr // $0 op $1: the left column, the value
	ranged bool      // the value has the column's type: a change scans a key range
	left   *state.Table
	right  *state.Table
}

// dynamicFilterVars is the per-run state.
type dynamicFilterVars struct {
	loaded  bool
	cur     types.Datum // the value in force (NULL: none)
	stored  bool        // the right table holds a row
	next    types.Datum // the value the right side has now
	pending []Message
	stopped bool
	ectx    expr.Ctx
	lenient lenientEval
	pair    [2]types.Datum
	row     []types.Datum
	old     []types.Datum
}

// NewDynamicFilter returns the executor of n over its two inputs, and the
// Aligner it pulls them through (the builder closes it when the actor ends).
func NewDynamicFilter(actx *ActorContext, n *plan.StreamDynamicFilter, left, right Executor) (Executor, *Aligner, error) {
	ts, rts := left.Schema(), right.Schema()
	if n.Col < 0 || n.Col >= len(ts) || len(rts) == 0 {
		return nil, nil, fmt.Errorf("dynamic filter: column %d of %d, %d right columns", n.Col, len(ts), len(rts))
	}
	if !plan.DynamicFilterOps[n.Op] {
		return nil, nil, fmt.Errorf("dynamic filter: unsupported comparison %q", n.Op)
	}
	cmp, err := expr.Call(n.Op, []expr.Expr{expr.Column(0, ts[n.Col]), expr.Column(1, rts[0])})
	if err != nil {
		return nil, nil, fmt.Errorf("dynamic filter: %s %s %s: %w", ts[n.Col], n.Op, rts[0], err)
	}
	st := n.State()
	if len(st) != 2 {
		return nil, nil, fmt.Errorf("dynamic filter: %d state tables, want 2", len(st))
	}
	if len(st[0].Types) != len(ts) || len(st[0].PK) == 0 || st[0].PK[0] != n.Col || len(st[0].Dist) != 0 {
		return nil, nil, fmt.Errorf("dynamic filter: left state %v does not fit the input", st[0])
	}
	if len(st[1].Types) != 2 || st[1].Types[1] != rts[0] {
		return nil, nil, fmt.Errorf("dynamic filter: right state %v does not fit the input", st[1])
	}
	lt, err := actx.NewTable(state.Schema{TableID: st[0].ID, Types: st[0].Types, PK: st[0].PK, PKDesc: st[0].PKDesc})
	if err != nil {
		return nil, nil, fmt.Errorf("dynamic filter: %w", err)
	}
	rt, err := actx.NewTable(state.Schema{TableID: st[1].ID, Types: st[1].Types, PK: st[1].PK})
	if err != nil {
		return nil, nil, fmt.Errorf("dynamic filter: %w", err)
	}
	e := &dynamicFilter{dynamicFilterConfig: dynamicFilterConfig{
		actx: actx, align: NewAligner(left, right), ts: ts, col: n.Col, valT: rts[0], cmp: cmp,
		ranged: ts[n.Col] == rts[0] && (len(st[0].PKDesc) == 0 || !st[0].PKDesc[0]), left: lt, right: rt,
	}}
	e.cur, e.next = types.NullDatum, types.NullDatum
	e.lenient = newLenientEval(actx)
	return e, e.align, nil
}

func (e *dynamicFilter) Schema() []types.T { return e.ts }

func (e *dynamicFilter) Next(ctx context.Context) (Message, error) {
	for {
		if m, ok := popQueued(&e.pending); ok {
			return m, nil
		}
		if e.stopped {
			return Message{}, io.EOF
		}
		if !e.loaded {
			if err := e.load(ctx); err != nil {
				return Message{}, fmt.Errorf("dynamic filter: %w", err)
			}
		}
		side, m, err := e.align.Next(ctx)
		if err != nil {
			return Message{}, fmt.Errorf("dynamic filter: %w", err)
		}
		switch {
		case m.Chunk != nil && side == Right:
			e.rightChunk(m.Chunk)
		case m.Chunk != nil:
			out, err := e.leftChunk(m.Chunk)
			if err != nil {
				return Message{}, fmt.Errorf("dynamic filter: %w", err)
			}
			if out != nil {
				return ChunkMsg(out), nil
			}
		case m.Barrier != nil:
			if err := e.barrier(ctx); err != nil {
				return Message{}, fmt.Errorf("dynamic filter: %w", err)
			}
			if m.Barrier.Stops(e.actx.ID) {
				e.stopped = true
			}
			e.pending = append(e.pending, m)
		}
	}
}

// load reads the value in force from the right state table.
func (e *dynamicFilter) load(ctx context.Context) error {
	got, found, err := e.right.Get(ctx, []types.Datum{types.DInt(0)}, nil)
	if err != nil {
		return fmt.Errorf("read the value: %w", err)
	}
	e.loaded, e.stored = true, found
	if found {
		e.cur = got[1].Copy()
	}
	e.next = e.cur
	return nil
}

// rightChunk follows the right side's row: the value is the last inserted
// one, NULL after a delete with no insert after it.
func (e *dynamicFilter) rightChunk(c *types.Chunk) {
	for i := 0; i < c.Len(); i++ {
		if !c.Visible(i) {
			continue
		}
		switch c.Op(i) {
		case types.OpInsert, types.OpUpdateInsert:
			var d types.Datum
			c.Cols[0].GetInto(i, &d)
			e.next = d.Copy()
		default:
			e.next = types.NullDatum
		}
	}
}

// pass reports whether a column value compares true with v (an error of the
// comparison counts as false and is reported).
func (e *dynamicFilter) pass(k, v *types.Datum) (bool, error) {
	if k.Null || v.Null {
		return false, nil
	}
	e.pair[0], e.pair[1] = *k, *v
	d, err := e.lenient.evalRow(&e.ectx, e.cmp, e.pair[:])
	if err != nil {
		return false, err
	}
	return !d.Null && d.Bool(), nil
}

// leftChunk stores the left changes and returns those that compare true
// with the value in force (nil when none).
func (e *dynamicFilter) leftChunk(c *types.Chunk) (*types.Chunk, error) {
	n := c.Len()
	var out *types.Chunk
	emit := func(i int, op types.Op) {
		if out == nil {
			out = types.NewChunk(e.ts, n)
		}
		appendRowAs(out, c, i, op)
	}
	// apply stores (or removes) row i and reports whether it passes.
	apply := func(i int, del bool, buf *[]types.Datum) (bool, error) {
		*buf = c.Row(i, *buf)
		k := &(*buf)[e.col]
		if k.Null {
			return false, nil
		}
		var err error
		if del {
			err = e.left.Delete(*buf)
		} else {
			err = e.left.Insert(*buf)
		}
		if err != nil {
			return false, err
		}
		return e.pass(k, &e.cur)
	}
	for i := 0; i < n; {
		r, p, op := nextChange(c, i)
		if r >= n {
			break
		}
		if p < 0 {
			i = r + 1
			ok, err := apply(r, op == types.OpDelete, &e.row)
			if err != nil {
				return nil, err
			}
			if ok {
				emit(r, op)
			}
			continue
		}
		i = p + 1
		oldIn, err := apply(r, true, &e.old)
		if err != nil {
			return nil, err
		}
		newIn, err := apply(p, false, &e.row)
		if err != nil {
			return nil, err
		}
		switch {
		case oldIn && newIn:
			emit(r, types.OpUpdateDelete)
			emit(p, types.OpUpdateInsert)
		case oldIn:
			emit(r, types.OpDelete)
		case newIn:
			emit(p, types.OpInsert)
		}
	}
	return out, nil
}

// barrier puts the right side's value in force: the left rows whose
// comparison changes are emitted, and the value is stored.
func (e *dynamicFilter) barrier(ctx context.Context) error {
	if e.next.Null == e.cur.Null && (e.cur.Null || types.Compare(e.valT, &e.next, &e.cur) == 0) {
		return nil
	}
	var rng state.KeyRange
	if e.ranged && !e.cur.Null && !e.next.Null {
		lo, hi := &e.cur, &e.next
		if types.Compare(e.valT, lo, hi) > 0 {
			lo, hi = hi, lo
		}
		rng.Start = codec.EncodeKey(nil, e.valT, lo, false)
		rng.End = codec.PrefixEnd(codec.EncodeKey(nil, e.valT, hi, false))
	}
	// Not distributed: every row is in the vnode of the empty key.
	it, err := e.left.Iter(ctx, state.IterOptions{Vnode: int(e.left.VnodeOfPK(nil)), Range: rng})
	if err != nil {
		return err
	}
	var out *types.Chunk
	for {
		if err = it.Next(); err != nil {
			break
		}
		row := it.Row()
		was, err2 := e.pass(&row[e.col], &e.cur)
		if err2 != nil {
			err = err2
			break
		}
		is, err2 := e.pass(&row[e.col], &e.next)
		if err2 != nil {
			err = err2
			break
		}
		if was == is {
			continue
		}
		op := types.OpInsert
		if was {
			op = types.OpDelete
		}
		if out == nil {
			out = types.NewChunk(e.ts, types.DefaultChunkSize)
		}
		out.AppendRowOp(op, row)
		if out.Len() >= types.DefaultChunkSize {
			e.pending = append(e.pending, ChunkMsg(out))
			out = nil
		}
	}
	if err == io.EOF {
		err = nil
	}
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("apply the value %s: %w", types.FormatText(e.valT, &e.next), err)
	}
	if out != nil {
		e.pending = append(e.pending, ChunkMsg(out))
	}
	newRow := []types.Datum{types.DInt(0), e.next}
	if e.stored {
		err = e.right.Update([]types.Datum{types.DInt(0), e.cur}, newRow)
	} else {
		err = e.right.Insert(newRow)
	}
	if err != nil {
		return fmt.Errorf("store the value: %w", err)
	}
	e.stored, e.cur = true, e.next
	return nil
}
