package stream

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage/state"
)

// lateRows counts the rows every watermark filter dropped as late.
var lateRows atomic.Int64

// LateRows returns how many rows watermark filters have dropped as late
// since the process started.
func LateRows() int64 { return lateRows.Load() }

// watermarkFilterExec generates the watermarks of a WATERMARK FOR clause
// (plan.StreamWatermarkFilter): it tracks the greatest value of its column
// and at each barrier raises the watermark to that less the delay, records
// it in its state row, takes the greatest watermark any actor of the
// fragment has committed, and sends the watermark (when it rose) before the
// barrier. Inserted rows below the current watermark are dropped as late.
// The watermark never falls, across restarts too.
type watermarkFilterExec struct {
	watermarkFilterConfig
	watermarkFilterVars
}

// watermarkFilterConfig is the fixed configuration.
type watermarkFilterConfig struct {
	actx  *ActorContext
	in    Executor
	ts    []types.T
	col   int
	minus expr.Expr // $0 - delay
	table *state.Table
	key   types.Datum // this actor's state row key
}

// watermarkFilterVars is the per-run state.
type watermarkFilterVars struct {
	loaded       bool
	wm           types.Datum // the current watermark (when hasWM)
	hasWM        bool
	sent         bool // wm was sent downstream
	max          types.Datum
	hasMax       bool
	stored       types.Datum // the watermark in this actor's state row (when hasStored)
	hasStored    bool
	late         int64
	outQ         []Message
	done         bool
	ectx         expr.Ctx
	wmRow        [2]types.Datum
	candidateBuf [1]types.Datum
}

// NewWatermarkFilter returns the executor of a StreamWatermarkFilter; its
// state table is the node's first.
func NewWatermarkFilter(actx *ActorContext, n *plan.StreamWatermarkFilter, in Executor) (Executor, error) {
	ts := in.Schema()
	if n.Col < 0 || n.Col >= len(ts) {
		return nil, fmt.Errorf("watermark filter: column %d out of %d", n.Col, len(ts))
	}
	if id := ts[n.Col].ID; id != types.Timestamp && id != types.Timestamptz {
		return nil, fmt.Errorf("watermark filter: column has type %s, want a timestamp", ts[n.Col])
	}
	minus, err := expr.Call("-", []expr.Expr{expr.Column(0, ts[n.Col]), expr.Literal(types.DInterval(n.Delay), types.TInterval)})
	if err != nil {
		return nil, fmt.Errorf("watermark filter: column - delay: %w", err)
	}
	if len(n.State()) == 0 {
		return nil, fmt.Errorf("watermark filter: no state table assigned")
	}
	st := n.State()[0]
	if len(st.Types) != 2 || st.Types[1] != ts[n.Col] {
		return nil, fmt.Errorf("watermark filter: state table has types %v, want (int8, %s)", st.Types, ts[n.Col])
	}
	t, err := actx.NewTable(state.Schema{TableID: st.ID, Types: st.Types, PK: st.PK, PKDesc: st.PKDesc, DistKey: st.Dist})
	if err != nil {
		return nil, fmt.Errorf("watermark filter: %w", err)
	}
	return &watermarkFilterExec{watermarkFilterConfig: watermarkFilterConfig{
		actx: actx, in: in, ts: ts, col: n.Col, minus: minus, table: t, key: types.DInt(int64(actx.ID)),
	}}, nil
}

func (e *watermarkFilterExec) Schema() []types.T { return e.ts }

// Late returns how many rows this executor dropped as late.
func (e *watermarkFilterExec) Late() int64 { return e.late }

func (e *watermarkFilterExec) Next(ctx context.Context) (Message, error) {
	for {
		if m, ok := popQueued(&e.outQ); ok {
			return m, nil
		}
		if e.done {
			return Message{}, io.EOF
		}
		m, err := e.in.Next(ctx)
		if err != nil {
			return m, err
		}
		if !e.loaded {
			// Resume from the greatest watermark committed by any actor.
			if err := e.raiseToCommitted(ctx); err != nil {
				return Message{}, fmt.Errorf("watermark filter: %w", err)
			}
			e.loaded = true
		}
		switch {
		case m.Chunk != nil:
			if c := e.filter(m.Chunk); c != nil {
				return ChunkMsg(c), nil
			}
		case m.Barrier != nil:
			if err := e.barrier(ctx); err != nil {
				return Message{}, fmt.Errorf("watermark filter: %w", err)
			}
			if e.hasWM && !e.sent {
				e.sent = true
				e.outQ = append(e.outQ, WatermarkMsg(&Watermark{Col: e.col, Val: e.wm.Copy()}))
			}
			e.outQ = append(e.outQ, m)
			e.done = m.Barrier.Stops(e.actx.ID)
		case m.Watermark != nil:
			// A watermark of the input on another column still holds.
			if m.Watermark.Col != e.col {
				return m, nil
			}
		}
	}
}

// filter drops the late inserts of c and notes the greatest value seen;
// nil when nothing is left.
func (e *watermarkFilterExec) filter(c *types.Chunk) *types.Chunk {
	v := &c.Cols[e.col]
	t := e.ts[e.col]
	n := c.Len()
	var vis []bool
	kept := 0
	for i := 0; i < n; i++ {
		if !c.Visible(i) {
			continue
		}
		if v.Nulls[i] {
			kept++
			continue
		}
		d := types.Datum{I: v.I64[i]}
		if c.Op(i).IsInsert() && e.hasWM && types.Compare(t, &d, &e.wm) < 0 {
			if vis == nil {
				vis = e.visibility(c)
			}
			vis[i] = false
			e.late++
			lateRows.Add(1)
			continue
		}
		kept++
		if !e.hasMax || types.Compare(t, &d, &e.max) > 0 {
			e.max, e.hasMax = d, true
		}
	}
	if kept == 0 {
		return nil
	}
	if vis == nil {
		return c
	}
	out := *c
	out.Vis = vis
	return &out
}

// visibility returns a copy of c's visibility (all true when it has none).
func (e *watermarkFilterExec) visibility(c *types.Chunk) []bool {
	vis := make([]bool, c.Len())
	for i := range vis {
		vis[i] = c.Visible(i)
	}
	return vis
}

// barrier raises the watermark to the greatest value seen less the delay,
// records it in this actor's state row, then to the greatest committed by
// any actor.
func (e *watermarkFilterExec) barrier(ctx context.Context) error {
	if e.hasMax {
		e.candidateBuf[0] = e.max
		// max - delay out of the timestamp range (at its very start) leaves
		// the watermark where it is.
		if d, err := e.minus.EvalRow(&e.ectx, e.candidateBuf[:]); err == nil {
			e.raise(d)
		}
	}
	if e.hasWM && (!e.hasStored || types.Compare(e.ts[e.col], &e.wm, &e.stored) > 0) {
		e.wmRow[0], e.wmRow[1] = e.key, e.wm
		if err := e.table.Insert(e.wmRow[:]); err != nil {
			return fmt.Errorf("record watermark: %w", err)
		}
		e.stored, e.hasStored = e.wm, true
	}
	return e.raiseToCommitted(ctx)
}

// raise sets the watermark to d if d is above it.
func (e *watermarkFilterExec) raise(d types.Datum) {
	if d.Null {
		return
	}
	if !e.hasWM || types.Compare(e.ts[e.col], &d, &e.wm) > 0 {
		e.wm, e.hasWM, e.sent = d, true, false
	}
}

// raiseToCommitted raises the watermark to the greatest in the state table
// (every actor's committed rows, this actor's pending one).
func (e *watermarkFilterExec) raiseToCommitted(ctx context.Context) (err error) {
	it, err := e.table.Iter(ctx, state.IterOptions{Vnode: state.AllVnodes})
	if err != nil {
		return fmt.Errorf("read watermarks: %w", err)
	}
	defer func() {
		if cerr := it.Close(); err == nil {
			err = cerr
		}
	}()
	for {
		err := it.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read watermarks: %w", err)
		}
		row := it.Row()
		if row[0].I == e.key.I && !e.hasStored {
			e.stored, e.hasStored = row[1].Copy(), true
		}
		e.raise(row[1].Copy())
	}
}
