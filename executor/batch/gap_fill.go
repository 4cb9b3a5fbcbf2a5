package batch

import (
	"context"
	"io"
	"slices"

	"github.com/tributary/tributary/executor/window"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/types"
)

// gapFillExec reads all of its input, orders it by partition and time, and
// returns the rows with the gaps filled (plan.GapFill).
type gapFillExec struct {
	node *plan.GapFill
	in   Executor
	ts   []types.T
	rows [][]types.Datum // the result, once read
	pos  int
	read bool
}

func newGapFill(n *plan.GapFill, in Executor) *gapFillExec {
	return &gapFillExec{node: n, in: in, ts: plan.Types(n.Out)}
}

func (e *gapFillExec) Schema() []types.T { return e.ts }

func (e *gapFillExec) Next(ctx context.Context) (*types.Chunk, error) {
	if !e.read {
		if err := e.load(ctx); err != nil {
			return nil, err
		}
		e.read = true
	}
	if e.pos >= len(e.rows) {
		return nil, io.EOF
	}
	end := min(e.pos+1024, len(e.rows))
	out := types.NewChunk(e.ts, end-e.pos)
	for _, r := range e.rows[e.pos:end] {
		out.AppendRow(r)
	}
	e.pos = end
	return out, nil
}

func (e *gapFillExec) load(ctx context.Context) error {
	var in [][]types.Datum
	for {
		c, err := e.in.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		for i := 0; i < c.Len(); i++ {
			if c.Visible(i) {
				in = append(in, c.Row(i, nil))
			}
		}
	}
	n := e.node
	tc := n.TimeCol
	samePartition := func(a, b []types.Datum) bool {
		for _, p := range n.PartitionBy {
			if types.Compare(e.ts[p], &a[p], &b[p]) != 0 {
				return false
			}
		}
		return true
	}
	slices.SortStableFunc(in, func(a, b []types.Datum) int {
		for _, p := range n.PartitionBy {
			if c := types.Compare(e.ts[p], &a[p], &b[p]); c != 0 {
				return c
			}
		}
		return types.Compare(e.ts[tc], &a[tc], &b[tc])
	})
	step := plan.WindowMicros(n.Step)
	for i, r := range in {
		e.rows = append(e.rows, r)
		if i+1 < len(in) && samePartition(r, in[i+1]) {
			var err error
			if e.rows, err = window.AppendGapRows(e.rows, n, e.ts, r, in[i+1], step); err != nil {
				return err
			}
		}
	}
	return nil
}

func (e *gapFillExec) Close() error { return e.in.Close() }
