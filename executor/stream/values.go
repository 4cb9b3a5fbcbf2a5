package stream

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage/state"
)

// valuesExec is the root of a job with no upstream: it forwards the barriers
// the coordinator feeds it and, right after the first one, emits its rows
// once as Insert chunks, unless the actor's state already holds data (a
// restart: the rows were emitted and committed before). It ends after a
// stopping barrier.
type valuesExec struct {
	actx     *ActorContext
	rows     [][]expr.Expr
	ts       []types.T
	barriers <-chan *Barrier

	started bool
	pending []*types.Chunk
	done    bool
}

// NewValues returns the executor of a StreamValues fed by barriers.
func NewValues(actx *ActorContext, n *plan.StreamValues, barriers <-chan *Barrier) (Executor, error) {
	ts := plan.Types(n.Out)
	for i, r := range n.Rows {
		if len(r) != len(ts) {
			return nil, fmt.Errorf("values: row %d has %d values for %d columns", i, len(r), len(ts))
		}
	}
	return &valuesExec{actx: actx, rows: n.Rows, ts: ts, barriers: barriers}, nil
}

func (e *valuesExec) Schema() []types.T { return e.ts }

func (e *valuesExec) Next(ctx context.Context) (Message, error) {
	if len(e.pending) > 0 {
		c := e.pending[0]
		e.pending = e.pending[1:]
		return ChunkMsg(c), nil
	}
	if e.done {
		return Message{}, io.EOF
	}
	var b *Barrier
	waitStart := time.Now()
	select {
	case b = <-e.barriers:
		e.actx.waitedFor(time.Since(waitStart))
		if b == nil {
			return Message{}, fmt.Errorf("values: barrier channel closed without a stop barrier")
		}
	case <-ctx.Done():
		return Message{}, ctx.Err()
	}
	if b.Stops(e.actx.ID) {
		e.done = true
		return BarrierMsg(b), nil
	}
	if !e.started {
		e.started = true
		has, err := e.actx.anyStateRows(ctx)
		if err != nil {
			return Message{}, fmt.Errorf("values: %w", err)
		}
		if !has {
			if e.pending, err = e.build(); err != nil {
				return Message{}, fmt.Errorf("values: %w", err)
			}
		}
	}
	return BarrierMsg(b), nil
}

// build evaluates the rows into chunks of at most DefaultChunkSize rows.
func (e *valuesExec) build() ([]*types.Chunk, error) {
	var out []*types.Chunk
	var ectx expr.Ctx
	row := make([]types.Datum, len(e.ts))
	for i, r := range e.rows {
		if i%types.DefaultChunkSize == 0 {
			out = append(out, types.NewChunk(e.ts, min(len(e.rows)-i, types.DefaultChunkSize)))
		}
		for j, x := range r {
			d, err := x.EvalRow(&ectx, nil)
			if err != nil {
				return nil, fmt.Errorf("row %d: %w", i, err)
			}
			if err := conformDatum(&d, x.Type(), e.ts[j]); err != nil {
				return nil, fmt.Errorf("row %d: %w", i, err)
			}
			row[j] = d
		}
		out[len(out)-1].AppendRow(row)
	}
	return out, nil
}

// anyStateRows reports whether any state table opened by the actor's
// executors holds a row (committed, or pending in this actor).
func (a *ActorContext) anyStateRows(ctx context.Context) (bool, error) {
	a.mu.Lock()
	tables := slices.Clone(a.tables)
	a.mu.Unlock()
	for _, t := range tables {
		it, err := t.Iter(ctx, state.IterOptions{Vnode: state.AllVnodes})
		if err != nil {
			return false, err
		}
		err = it.Next()
		found := err == nil
		if err == io.EOF {
			err = nil
		}
		if cerr := it.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return false, fmt.Errorf("state table %d: %w", t.Schema().TableID, err)
		}
		if found {
			return true, nil
		}
	}
	return false, nil
}
