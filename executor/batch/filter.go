package batch

import (
	"context"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/types"
)

// filterExec keeps the rows whose condition is true (not false, not NULL).
// A chunk whose rows all pass goes through untouched; otherwise the passing
// rows are copied into one reused output chunk, so consumers never evaluate
// expressions over rows the condition rejected.
type filterExec struct {
	env     *Env
	node    *plan.Filter
	in      Executor
	cond    types.Vector
	out     *types.Chunk
	scratch *types.Chunk
}

func newFilter(env *Env, n *plan.Filter, in Executor) *filterExec {
	return &filterExec{env: env, node: n, in: in}
}

func (e *filterExec) Schema() []types.T { return e.in.Schema() }

func (e *filterExec) Next(ctx context.Context) (*types.Chunk, error) {
	for {
		if err := checkCtx(ctx); err != nil {
			return nil, err
		}
		c, err := e.in.Next(ctx)
		if err != nil {
			return nil, err
		}
		c = visibleRows(c, &e.scratch)
		n := c.Len()
		if n == 0 {
			continue
		}
		if err := evalInto(e.env, e.node.Cond, c, &e.cond); err != nil {
			return nil, err
		}
		pass := 0
		for i := 0; i < n; i++ {
			if !e.cond.Nulls[i] && e.cond.I64[i] != 0 {
				pass++
			}
		}
		switch pass {
		case 0:
			continue
		case n:
			return c, nil
		}
		if e.out == nil {
			e.out = types.NewChunk(e.in.Schema(), types.DefaultChunkSize)
		}
		e.out.Reset()
		for i := 0; i < n; i++ {
			if !e.cond.Nulls[i] && e.cond.I64[i] != 0 {
				e.out.AppendFrom(c, i)
			}
		}
		return e.out, nil
	}
}

func (e *filterExec) Close() error { return e.in.Close() }
