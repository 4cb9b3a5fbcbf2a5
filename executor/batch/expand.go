package batch

import (
	"context"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/types"
)

// expandExec emits each input chunk once per grouping set: the key columns
// outside the set NULL, the GID column the set's index.
type expandExec struct {
	node    *plan.Expand
	in      Executor
	nulled  [][]bool // per set: which key columns it sets to NULL
	cur     *types.Chunk
	set     int // the next set to emit for cur
	out     *types.Chunk
	scratch *types.Chunk
}

func newExpand(n *plan.Expand, in Executor) *expandExec {
	e := &expandExec{node: n, in: in, nulled: make([][]bool, len(n.Sets))}
	for s, keys := range n.Sets {
		e.nulled[s] = make([]bool, n.Keys)
		for k := range e.nulled[s] {
			e.nulled[s][k] = true
		}
		for _, k := range keys {
			e.nulled[s][k] = false
		}
	}
	return e
}

func (e *expandExec) Schema() []types.T { return e.in.Schema() }

func (e *expandExec) Next(ctx context.Context) (*types.Chunk, error) {
	if err := checkCtx(ctx); err != nil {
		return nil, err
	}
	for e.cur == nil || e.set >= len(e.node.Sets) {
		c, err := e.in.Next(ctx)
		if err != nil {
			return nil, err
		}
		if c = visibleRows(c, &e.scratch); c.Len() > 0 {
			e.cur, e.set = c, 0
		}
	}
	c, s := e.cur, e.set
	e.set++
	if e.out == nil {
		e.out = types.NewChunk(e.in.Schema(), types.DefaultChunkSize)
	}
	e.out.Reset()
	n := c.Len()
	gid := types.DInt(int64(s))
	for j := range c.Cols {
		dst, src := &e.out.Cols[j], &c.Cols[j]
		switch {
		case j == e.node.GID:
			for i := 0; i < n; i++ {
				dst.Append(&gid)
			}
		case j < e.node.Keys && e.nulled[s][j]:
			for i := 0; i < n; i++ {
				dst.AppendNull()
			}
		default:
			for i := 0; i < n; i++ {
				dst.AppendFrom(src, i)
			}
		}
	}
	e.out.SetLen(n)
	return e.out, nil
}

func (e *expandExec) Close() error { return e.in.Close() }
