package stream

import (
	"context"
	"fmt"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
)

// unnestExec expands each change into one change per element of the row's
// array, with the element and its position appended. An insert (or the
// new half of an update) inserts the rows, a delete (or the old half)
// deletes them: the same array gives the same rows, so no state is kept.
type unnestExec struct {
	in    Executor
	node  *plan.StreamUnnest
	ts    []types.T
	nIn   int
	elem  types.T
	outer bool

	ectx    expr.Ctx
	lenient lenientEval
	arrs    types.Vector
	vals    []types.Datum
}

// NewUnnest returns the executor of a StreamUnnest.
func NewUnnest(actx *ActorContext, n *plan.StreamUnnest, in Executor) Executor {
	nIn := len(n.Input.Schema())
	return &unnestExec{in: in, node: n, ts: plan.Types(n.Out), nIn: nIn, elem: n.Array.Type().ElemType(),
		outer: n.Outer, lenient: newLenientEval(actx)}
}

func (e *unnestExec) Schema() []types.T { return e.ts }

func (e *unnestExec) Next(ctx context.Context) (Message, error) {
	for {
		m, err := e.in.Next(ctx)
		if err != nil || m.Chunk == nil {
			return m, err
		}
		out, err := e.expand(m.Chunk)
		if err != nil {
			return Message{}, fmt.Errorf("unnest: %w", err)
		}
		if out != nil {
			return ChunkMsg(out), nil
		}
	}
}

// expand returns the rows of c's changes (nil when there are none).
func (e *unnestExec) expand(c *types.Chunk) (*types.Chunk, error) {
	c = compactChanges(c)
	n := c.Len()
	if n == 0 {
		return nil, nil
	}
	e.arrs.Init(e.node.Array.Type(), n)
	if err := e.lenient.eval(&e.ectx, e.node.Array, c, &e.arrs); err != nil {
		return nil, err
	}
	out := types.NewChunk(e.ts, n)
	for i := 0; i < n; i++ {
		op := types.OpInsert
		if !c.Op(i).IsInsert() {
			op = types.OpDelete
		}
		e.vals = e.vals[:0]
		if !e.arrs.Nulls[i] {
			var err error
			if e.vals, err = types.AppendDecodedArray(e.vals, e.elem, e.arrs.Str[i]); err != nil {
				return nil, err
			}
		}
		if len(e.vals) == 0 && e.outer {
			e.emit(out, c, i, op, &types.NullDatum, 0)
		}
		for k := range e.vals {
			e.emit(out, c, i, op, &e.vals[k], k+1)
		}
	}
	if out.Len() == 0 {
		return nil, nil
	}
	return out, nil
}

func (e *unnestExec) emit(out, c *types.Chunk, i int, op types.Op, v *types.Datum, k int) {
	row := make([]types.Datum, 0, len(e.ts))
	row = c.Row(i, row)
	row = append(row, *v)
	if k == 0 {
		row = append(row, types.NullDatum)
	} else {
		row = append(row, types.Datum{I: int64(k)})
	}
	out.AppendRowOp(op, row)
}
