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

// unnestRowsExec evaluates the array per input row and returns the row once
// per element, followed by the element (and its position); an Outer node
// keeps a row without elements once, with a NULL element.
type unnestRowsExec struct {
	env  *Env
	node *plan.Unnest
	in   Executor
	ts   []types.T
	nIn  int
	out  *types.Chunk

	cur  *types.Chunk // the input chunk being expanded
	arrs types.Vector // its arrays
	row  int          // the next input row of cur
	vals []types.Datum
	pos  int // the next element of vals (row-1's array)
	src  int // the input row vals belong to
}

func newUnnestRows(env *Env, n *plan.Unnest, in Executor) *unnestRowsExec {
	return &unnestRowsExec{env: env, node: n, in: in, ts: plan.Types(n.Out), nIn: len(n.Input.Schema())}
}

func (e *unnestRowsExec) Schema() []types.T { return e.ts }

func (e *unnestRowsExec) Next(ctx context.Context) (*types.Chunk, error) {
	if err := checkCtx(ctx); err != nil {
		return nil, err
	}
	if e.out == nil {
		e.out = types.NewChunk(e.ts, types.DefaultChunkSize)
	}
	e.out.Reset()
	for e.out.Len() < types.DefaultChunkSize {
		if e.pos < len(e.vals) {
			e.emit(&e.vals[e.pos], e.pos+1)
			e.pos++
			continue
		}
		if e.cur == nil || e.row >= e.cur.Len() {
			c, err := e.in.Next(ctx)
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, err
			}
			e.cur, e.row = c.Compact(), 0
			e.arrs.Init(e.node.Array.Type(), e.cur.Len())
			if err := e.node.Array.Eval(e.env.Ctx, e.cur, &e.arrs); err != nil {
				return nil, err
			}
			continue
		}
		e.src, e.pos, e.vals = e.row, 0, e.vals[:0]
		e.row++
		if !e.arrs.Nulls[e.src] {
			var err error
			if e.vals, err = types.AppendDecodedArray(e.vals, e.ts[e.nIn], e.arrs.Str[e.src]); err != nil {
				return nil, err
			}
		}
		if len(e.vals) == 0 && e.node.Outer {
			e.emit(&types.NullDatum, 0)
		}
	}
	if e.out.Len() == 0 {
		return nil, io.EOF
	}
	return e.out, nil
}

// emit appends input row e.src with element v at position k (0: none).
func (e *unnestRowsExec) emit(v *types.Datum, k int) {
	for j := 0; j < e.nIn; j++ {
		e.out.Cols[j].AppendFrom(&e.cur.Cols[j], e.src)
	}
	e.out.Cols[e.nIn].Append(v)
	if e.node.Ordinality {
		if k == 0 {
			e.out.Cols[e.nIn+1].AppendNull()
		} else {
			e.out.Cols[e.nIn+1].Append(&types.Datum{I: int64(k)})
		}
	}
	e.out.SetLen(e.out.Len() + 1)
}

func (e *unnestRowsExec) Close() error { return e.in.Close() }
