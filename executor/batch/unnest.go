package batch

import (
	"context"
	"io"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/types"
)

// unnestExec returns the elements of an array, a chunk at a time, with
// their 1-based positions when the node asks for ordinality.
type unnestExec struct {
	env     *Env
	node    *plan.Unnest
	ts      []types.T
	out     *types.Chunk
	started bool
	vals    []types.Datum
	next    int
}

func newUnnest(env *Env, n *plan.Unnest) *unnestExec {
	return &unnestExec{env: env, node: n, ts: plan.Types(n.Out)}
}

func (e *unnestExec) Schema() []types.T { return e.ts }

func (e *unnestExec) Next(ctx context.Context) (*types.Chunk, error) {
	if err := checkCtx(ctx); err != nil {
		return nil, err
	}
	if !e.started {
		e.started = true
		arr, err := e.node.Array.EvalRow(e.env.Ctx, nil)
		if err != nil {
			return nil, err
		}
		if !arr.Null {
			if e.vals, err = types.DecodeArray(e.ts[0], arr.S); err != nil {
				return nil, err
			}
		}
	}
	if e.next >= len(e.vals) {
		return nil, io.EOF
	}
	if e.out == nil {
		e.out = types.NewChunk(e.ts, min(len(e.vals), types.DefaultChunkSize))
	}
	e.out.Reset()
	for ; e.next < len(e.vals) && e.out.Len() < types.DefaultChunkSize; e.next++ {
		e.out.Cols[0].Append(&e.vals[e.next])
		if e.node.Ordinality {
			e.out.Cols[1].Append(&types.Datum{I: int64(e.next + 1)})
		}
		e.out.SetLen(e.out.Len() + 1)
	}
	return e.out, nil
}

func (e *unnestExec) Close() error { return nil }
