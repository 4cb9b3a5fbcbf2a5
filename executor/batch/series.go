package batch

import (
	"context"
	"io"
	"math"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/types"
)

// seriesExec generates generate_series rows chunk by chunk, so a large series
// costs no memory up front and a cancel stops it.
type seriesExec struct {
	env     *Env
	node    *plan.Series
	ts      []types.T
	out     *types.Chunk
	started bool
	done    bool
	cur     types.Datum
	stop    types.Datum
	step    types.Datum
	forward bool
	pair    []types.Datum
}

func newSeries(env *Env, n *plan.Series) *seriesExec {
	return &seriesExec{env: env, node: n, ts: plan.Types(n.Out), pair: make([]types.Datum, 2)}
}

func (e *seriesExec) Schema() []types.T { return e.ts }

func (e *seriesExec) start() error {
	e.started = true
	var err error
	if e.cur, err = e.node.Start.EvalRow(e.env.Ctx, nil); err != nil {
		return err
	}
	if e.stop, err = e.node.Stop.EvalRow(e.env.Ctx, nil); err != nil {
		return err
	}
	if e.step, err = e.node.Step.EvalRow(e.env.Ctx, nil); err != nil {
		return err
	}
	if e.cur.Null || e.stop.Null || e.step.Null {
		e.done = true
		return nil
	}
	if e.node.Add != nil {
		key := types.IntervalKey(e.step.Iv)
		if key == 0 {
			return types.Errorf(types.ErrInvalidParameter, "step size cannot equal zero")
		}
		e.forward = key > 0
		return nil
	}
	if e.step.I == 0 {
		return types.Errorf(types.ErrInvalidParameter, "step size cannot equal zero")
	}
	e.forward = e.step.I > 0
	return nil
}

func (e *seriesExec) Next(ctx context.Context) (*types.Chunk, error) {
	if err := checkCtx(ctx); err != nil {
		return nil, err
	}
	if !e.started {
		if err := e.start(); err != nil {
			return nil, err
		}
	}
	if e.done {
		return nil, io.EOF
	}
	if e.out == nil {
		e.out = types.NewChunk(e.ts, types.DefaultChunkSize)
	}
	e.out.Reset()
	col := &e.out.Cols[0]
	for e.out.Len() < types.DefaultChunkSize {
		if (e.forward && e.cur.I > e.stop.I) || (!e.forward && e.cur.I < e.stop.I) {
			e.done = true
			break
		}
		col.I64 = append(col.I64, e.cur.I)
		col.Nulls = append(col.Nulls, false)
		e.out.SetLen(e.out.Len() + 1)
		if e.node.Add != nil {
			e.pair[0], e.pair[1] = e.cur, e.step
			next, err := e.node.Add.EvalRow(e.env.Ctx, e.pair)
			if err != nil {
				return nil, err
			}
			e.cur = next
			continue
		}
		next := e.cur.I + e.step.I
		overflow := (e.step.I > 0 && next < e.cur.I) || (e.step.I < 0 && next > e.cur.I) ||
			(e.ts[0].ID == types.Int32 && (next > math.MaxInt32 || next < math.MinInt32))
		if overflow {
			e.done = true
			break
		}
		e.cur.I = next
	}
	if e.out.Len() == 0 {
		return nil, io.EOF
	}
	return e.out, nil
}

func (e *seriesExec) Close() error { return nil }
