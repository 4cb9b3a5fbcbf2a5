package stream

import (
	"context"
	"fmt"
	"io"
	"math"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage"
	"github.com/tributary/tributary/storage/codec"
	"github.com/tributary/tributary/storage/state"
)

// temporalFilterExec keeps the rows with col > now() - interval (>= when not
// strict), where now() is the time of the epoch the data belongs to:
// arriving rows are compared with the bound of the current epoch (rows
// already out of the window are dropped), and at each barrier every live row
// the sealed epoch's bound has passed is retracted with a Delete. Live rows
// are kept in a state table keyed by (col, input stream key), so a restart
// still retracts them.
//
// Whether a Delete (or an update's old half) refers to a row downstream
// holds follows from the bounds: a row within the current bound is live; one
// the previous barrier's bound had passed was retracted then (or never
// admitted); only a row between the two bounds needs a state lookup.
type temporalFilterExec struct {
	temporalFilterConfig
	temporalFilterVars
}

// temporalFilterConfig is the fixed configuration.
type temporalFilterConfig struct {
	actx    *ActorContext
	in      Executor
	ts      []types.T
	col     int
	date    bool // col is a date (days), else a timestamp (µs)
	strict  bool
	bound   expr.Expr // $0 - interval, over a timestamptz
	table   *state.Table
	pkCols  []int    // the state table's pk, as input columns
	vnodes  []uint16 // the vnodes whose rows this actor owns
	epochUS func(epoch uint64) int64
}

// temporalFilterVars is the per-run state.
type temporalFilterVars struct {
	started   bool           // a barrier has been seen
	early     []*types.Chunk // chunks before the first barrier
	cur       int64          // the bound of the epoch in progress
	prev      int64          // the bound the last barrier retracted up to
	prevKnown bool           // prev is meaningful (a barrier passed in this run)
	minCol    []int64        // per vnode, a lower bound of the live rows' col (math.MaxInt64: none)
	minKnown  []bool         // per vnode, minCol is valid
	pending   []Message      // output waiting to be returned
	done      bool           // the stopping barrier was returned

	ectx     expr.Ctx
	nowRow   [1]types.Datum
	row, old []types.Datum // scratch rows
	pk, got  []types.Datum // scratch for state lookups
}

// NewTemporalFilter returns the executor of a StreamTemporalFilter; its
// state table is the node's first.
func NewTemporalFilter(actx *ActorContext, n *plan.StreamTemporalFilter, in Executor) (Executor, error) {
	ts := in.Schema()
	if n.Col < 0 || n.Col >= len(ts) {
		return nil, fmt.Errorf("temporal filter: column %d out of %d", n.Col, len(ts))
	}
	var date bool
	switch ts[n.Col].ID {
	case types.Date:
		date = true
	case types.Timestamp, types.Timestamptz:
	default:
		return nil, fmt.Errorf("temporal filter: column has type %s, want a timestamp or date", ts[n.Col])
	}
	bound, err := expr.Call("-", []expr.Expr{expr.Column(0, types.TTimestamptz), expr.Literal(types.DInterval(n.Interval), types.TInterval)})
	if err != nil {
		return nil, fmt.Errorf("temporal filter: now() - interval: %w", err)
	}
	if len(n.State()) == 0 {
		return nil, fmt.Errorf("temporal filter: no state table assigned")
	}
	st := n.State()[0]
	if len(st.Types) != len(ts) {
		return nil, fmt.Errorf("temporal filter: state table has %d columns, input %d", len(st.Types), len(ts))
	}
	t, err := actx.NewTable(state.Schema{TableID: st.ID, Types: st.Types, PK: st.PK, PKDesc: st.PKDesc, DistKey: st.Dist})
	if err != nil {
		return nil, fmt.Errorf("temporal filter: %w", err)
	}
	if len(st.PK) == 0 || st.PK[0] != n.Col || (len(st.PKDesc) > 0 && st.PKDesc[0]) {
		return nil, fmt.Errorf("temporal filter: state table pk %v must start with column %d ascending", st.PK, n.Col)
	}
	e := &temporalFilterExec{temporalFilterConfig: temporalFilterConfig{
		actx: actx, in: in, ts: ts, col: n.Col, date: date, strict: n.Strict, bound: bound, table: t,
		pkCols: st.PK, epochUS: func(ep uint64) int64 { return storage.EpochTime(ep).UnixMicro() },
	}}
	switch {
	case len(st.Dist) == 0:
		// Not distributed: every row is in the vnode of the empty key.
		e.vnodes = []uint16{t.VnodeOfPK(nil)}
	case actx.Vnodes != nil:
		e.vnodes = actx.Vnodes
	default:
		e.vnodes = make([]uint16, codec.VnodeCount)
		for i := range e.vnodes {
			e.vnodes[i] = uint16(i)
		}
	}
	e.minCol = make([]int64, codec.VnodeCount)
	e.minKnown = make([]bool, codec.VnodeCount)
	e.pk = make([]types.Datum, len(st.PK))
	return e, nil
}

func (e *temporalFilterExec) Schema() []types.T { return e.ts }

func (e *temporalFilterExec) Next(ctx context.Context) (Message, error) {
	for {
		if m, ok := popQueued(&e.pending); ok {
			return m, nil
		}
		if e.done {
			return Message{}, io.EOF
		}
		m, err := e.in.Next(ctx)
		if err != nil {
			return m, err
		}
		switch {
		case m.Chunk != nil:
			if !e.started {
				// Its epoch's time is known only from the barrier that seals it.
				e.early = append(e.early, m.Chunk)
				continue
			}
			out, err := e.process(ctx, m.Chunk)
			if err != nil {
				return Message{}, fmt.Errorf("temporal filter: %w", err)
			}
			if out != nil {
				return ChunkMsg(out), nil
			}
		case m.Barrier != nil:
			if err := e.barrier(ctx, m.Barrier); err != nil {
				return Message{}, fmt.Errorf("temporal filter: %w", err)
			}
		default:
			return m, nil
		}
	}
}

// boundAt returns now() - interval at the time of epoch, in µs.
func (e *temporalFilterExec) boundAt(epoch uint64) (int64, error) {
	e.nowRow[0] = types.DInt(e.epochUS(epoch))
	d, err := e.bound.EvalRow(&e.ectx, e.nowRow[:])
	if err != nil {
		return 0, fmt.Errorf("now() - interval at epoch %d: %w", epoch, err)
	}
	return d.I, nil
}

// colAt returns row i's column in µs (ok false for NULL).
func (e *temporalFilterExec) colAt(c *types.Chunk, i int) (int64, bool) {
	v := &c.Cols[e.col]
	if v.Nulls[i] {
		return 0, false
	}
	return e.toMicros(v.I64[i]), true
}

func (e *temporalFilterExec) toMicros(x int64) int64 {
	if !e.date {
		return x
	}
	switch x {
	case math.MaxInt32, math.MinInt32, math.MaxInt64, math.MinInt64: // ±infinity dates
		if x > 0 {
			return math.MaxInt64
		}
		return math.MinInt64
	}
	return x * 86_400_000_000
}

// expired reports whether a row with col us is out of the window at bound.
func (e *temporalFilterExec) expired(us, bound int64) bool {
	if e.strict {
		return us <= bound
	}
	return us < bound
}

// barrier retracts what the sealed epoch's bound passed and queues the
// retractions, then the barrier.
func (e *temporalFilterExec) barrier(ctx context.Context, b *Barrier) error {
	bound, err := e.boundAt(b.Epoch.Prev)
	if err != nil {
		return err
	}
	if !e.started {
		e.started, e.cur = true, bound
		for _, c := range e.early {
			out, err := e.process(ctx, c)
			if err != nil {
				return err
			}
			if out != nil {
				e.pending = append(e.pending, ChunkMsg(out))
			}
		}
		e.early = nil
	}
	bound = max(bound, e.cur)
	if err := e.retract(ctx, bound); err != nil {
		return err
	}
	e.prev, e.prevKnown = bound, true
	if e.cur, err = e.boundAt(b.Epoch.Curr); err != nil {
		return err
	}
	e.cur = max(e.cur, bound)
	e.pending = append(e.pending, BarrierMsg(b))
	if b.Stops(e.actx.ID) {
		e.done = true
	}
	return nil
}

// retract deletes (and queues Deletes for) every live row expired at bound,
// scanning only the vnodes whose lowest live col may have expired.
func (e *temporalFilterExec) retract(ctx context.Context, bound int64) error {
	var out *types.Chunk
	for _, v := range e.vnodes {
		if e.minKnown[v] && !e.expired(e.minCol[v], bound) {
			continue
		}
		it, err := e.table.Iter(ctx, state.IterOptions{Vnode: int(v)})
		if err != nil {
			return err
		}
		e.minCol[v], e.minKnown[v] = math.MaxInt64, true
		for {
			if err = it.Next(); err != nil {
				break
			}
			row := it.Row()
			if row[e.col].Null { // never stored; keep the scan total
				continue
			}
			us := e.toMicros(row[e.col].I)
			if !e.expired(us, bound) {
				e.minCol[v] = us
				break
			}
			if out == nil {
				out = types.NewChunk(e.ts, types.DefaultChunkSize)
			}
			out.AppendRowOp(types.OpDelete, row)
			if err = e.table.Delete(row); err != nil {
				break
			}
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
			e.minKnown[v] = false
			return fmt.Errorf("retract vnode %d: %w", v, err)
		}
	}
	if out != nil {
		e.pending = append(e.pending, ChunkMsg(out))
	}
	return nil
}

// process applies one input chunk at the current bound and returns its
// output (nil when empty).
func (e *temporalFilterExec) process(ctx context.Context, c *types.Chunk) (*types.Chunk, error) {
	n := c.Len()
	var out *types.Chunk
	emit := func(i int, op types.Op) {
		if out == nil {
			out = types.NewChunk(e.ts, n)
		}
		appendRowAs(out, c, i, op)
	}
	for i := 0; i < n; {
		r, p, op := nextChange(c, i)
		if r >= n {
			break
		}
		if p < 0 {
			i = r + 1
			if op == types.OpDelete {
				in, err := e.held(ctx, c, r)
				if err != nil {
					return nil, err
				}
				if in {
					e.row = c.Row(r, e.row)
					if err := e.table.Delete(e.row); err != nil {
						return nil, err
					}
					emit(r, types.OpDelete)
				}
				continue
			}
			if e.live(c, r) {
				e.row = c.Row(r, e.row)
				if err := e.insert(e.row, c, r); err != nil {
					return nil, err
				}
				emit(r, types.OpInsert)
			}
			continue
		}
		i = p + 1
		oldIn, err := e.held(ctx, c, r)
		if err != nil {
			return nil, err
		}
		newLive := e.live(c, p)
		e.old = c.Row(r, e.old)
		e.row = c.Row(p, e.row)
		switch {
		case oldIn && newLive:
			if err := e.table.Update(e.old, e.row); err != nil {
				return nil, err
			}
			e.noteMin(e.row, c, p)
			emit(r, types.OpUpdateDelete)
			emit(p, types.OpUpdateInsert)
		case oldIn:
			if err := e.table.Delete(e.old); err != nil {
				return nil, err
			}
			emit(r, types.OpDelete)
		case newLive:
			if err := e.insert(e.row, c, p); err != nil {
				return nil, err
			}
			emit(p, types.OpInsert)
		}
	}
	return out, nil
}

// live reports whether row i is within the current window.
func (e *temporalFilterExec) live(c *types.Chunk, i int) bool {
	us, ok := e.colAt(c, i)
	return ok && !e.expired(us, e.cur)
}

// held reports whether row i (an old row: a delete or an update's old half)
// is live downstream: admitted and not yet retracted.
func (e *temporalFilterExec) held(ctx context.Context, c *types.Chunk, i int) (bool, error) {
	us, ok := e.colAt(c, i)
	switch {
	case !ok:
		return false, nil
	case !e.expired(us, e.cur):
		return true, nil
	case e.prevKnown && e.expired(us, e.prev):
		return false, nil
	}
	for k, col := range e.pkCols {
		c.Cols[col].GetInto(i, &e.pk[k])
	}
	var found bool
	var err error
	e.got, found, err = e.table.Get(ctx, e.pk, e.got)
	return found, err
}

func (e *temporalFilterExec) insert(row []types.Datum, c *types.Chunk, i int) error {
	if err := e.table.Insert(row); err != nil {
		return err
	}
	e.noteMin(row, c, i)
	return nil
}

// noteMin lowers the vnode's known minimum col for a newly stored row.
func (e *temporalFilterExec) noteMin(row []types.Datum, c *types.Chunk, i int) {
	v := e.table.VnodeOfRow(row)
	if us, ok := e.colAt(c, i); ok && e.minKnown[v] && us < e.minCol[v] {
		e.minCol[v] = us
	}
}
