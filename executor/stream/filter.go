package stream

import (
	"context"
	"fmt"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
)

// filterExec keeps the rows whose condition is true (not false, not NULL,
// not failing: see lenientEval), evaluated vectorised per chunk. An update pair with one passing half
// becomes that half's Delete or Insert. A chunk whose rows all pass is
// forwarded as is; otherwise the passing rows are copied into a new chunk.
type filterExec struct {
	in   Executor
	cond expr.Expr
	ts   []types.T

	ectx    expr.Ctx
	lenient lenientEval
	res     types.Vector
}

// NewFilter returns the executor of a StreamFilter.
func NewFilter(actx *ActorContext, n *plan.StreamFilter, in Executor) (Executor, error) {
	if t := n.Cond.Type(); t.ID != types.Bool && t.ID != types.Unknown {
		return nil, fmt.Errorf("filter: condition %s has type %s, not boolean", n.Cond, t)
	}
	return &filterExec{in: in, cond: n.Cond, ts: in.Schema(), lenient: newLenientEval(actx)}, nil
}

func (e *filterExec) Schema() []types.T { return e.ts }

func (e *filterExec) Next(ctx context.Context) (Message, error) {
	for {
		m, err := e.in.Next(ctx)
		if err != nil || m.Chunk == nil {
			return m, err
		}
		out, err := e.filter(m.Chunk)
		if err != nil {
			return Message{}, fmt.Errorf("filter: %w", err)
		}
		if out != nil {
			return ChunkMsg(out), nil
		}
	}
}

// filter returns the passing changes of c (nil when none).
func (e *filterExec) filter(c *types.Chunk) (*types.Chunk, error) {
	c = compactChanges(c) // never evaluate over rows that are not in the stream
	n := c.Len()
	if n == 0 {
		return nil, nil
	}
	e.res.Init(e.cond.Type(), n)
	if err := e.lenient.eval(&e.ectx, e.cond, c, &e.res); err != nil {
		return nil, err
	}
	if e.res.Type.ID != types.Bool { // an untyped NULL
		return nil, nil
	}
	pass := 0
	for i := 0; i < n; i++ {
		if e.passes(i) {
			pass++
		}
	}
	if pass == 0 {
		return nil, nil
	}
	if pass == n && !hasLoneUpdateHalf(c) {
		return c, nil
	}
	out := types.NewChunk(e.ts, pass)
	for i := 0; i < n; {
		r, p, op := nextChange(c, i)
		if r >= n {
			break
		}
		if p < 0 {
			if e.passes(r) {
				appendRowAs(out, c, r, op)
			}
			i = r + 1
			continue
		}
		switch a, b := e.passes(r), e.passes(p); {
		case a && b:
			out.AppendFrom(c, r)
			out.AppendFrom(c, p)
		case a:
			appendRowAs(out, c, r, types.OpDelete)
		case b:
			appendRowAs(out, c, p, types.OpInsert)
		}
		i = p + 1
	}
	if out.Len() == 0 {
		return nil, nil
	}
	return out, nil
}

func (e *filterExec) passes(i int) bool { return !e.res.Nulls[i] && e.res.I64[i] != 0 }

// hasLoneUpdateHalf reports whether c (all visible) has an update half
// without its partner.
func hasLoneUpdateHalf(c *types.Chunk) bool {
	ops := c.Ops
	for i := 0; i < len(ops); i++ {
		switch ops[i] {
		case types.OpUpdateDelete:
			if i+1 >= len(ops) || ops[i+1] != types.OpUpdateInsert {
				return true
			}
			i++
		case types.OpUpdateInsert:
			return true
		}
	}
	return false
}
