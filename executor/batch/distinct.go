package batch

import (
	"context"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/types"
)

// distinctExec passes the first row of each distinct key (all columns, or the
// DISTINCT ON columns), in input order, streaming.
type distinctExec struct {
	in      Executor
	cols    []int
	seen    *keyTable
	out     *types.Chunk
	scratch *types.Chunk
}

func newDistinct(n *plan.Distinct, in Executor) *distinctExec {
	cols := n.On
	if len(cols) == 0 {
		cols = seq(len(in.Schema()))
	}
	ts := make([]types.T, len(cols))
	for i, c := range cols {
		ts[i] = in.Schema()[c]
	}
	return &distinctExec{in: in, cols: cols, seen: newKeyTable(ts)}
}

func (e *distinctExec) Schema() []types.T { return e.in.Schema() }

func (e *distinctExec) Next(ctx context.Context) (*types.Chunk, error) {
	for {
		if err := checkCtx(ctx); err != nil {
			return nil, err
		}
		c, err := e.in.Next(ctx)
		if err != nil {
			return nil, err
		}
		c = visibleRows(c, &e.scratch)
		if out := dedup(c, e.cols, e.seen, &e.out); out != nil {
			return out, nil
		}
	}
}

// dedup returns the rows of c (all visible) whose key is not in seen yet,
// adding them: c itself when all are new, a copy in *out otherwise, or nil
// when none is.
func dedup(c *types.Chunk, cols []int, seen *keyTable, out **types.Chunk) *types.Chunk {
	n := c.Len()
	if n == 0 {
		return nil
	}
	seen.hash(c, cols)
	first := -1 // first row that is not new
	for i := 0; i < n; i++ {
		if _, inserted := seen.findOrInsert(c, cols, i); !inserted {
			first = i
			break
		}
	}
	if first < 0 {
		return c
	}
	if *out == nil {
		*out = types.NewChunk(c.Types(), types.DefaultChunkSize)
	}
	o := *out
	o.Reset()
	for i := 0; i < first; i++ {
		o.AppendFrom(c, i)
	}
	for i := first + 1; i < n; i++ {
		if _, inserted := seen.findOrInsert(c, cols, i); inserted {
			o.AppendFrom(c, i)
		}
	}
	if o.Len() == 0 {
		return nil
	}
	return o
}

func (e *distinctExec) Close() error { return e.in.Close() }
