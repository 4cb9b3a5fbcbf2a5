package batch

import (
	"context"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
)

// changelogExec reads a Changelog in a batch query: the input's rows, each an
// insert (changelog_op 1) with a fresh _changelog_row_id.
type changelogExec struct {
	in  Executor
	ts  []types.T
	row []types.Datum
}

func newChangelog(n *plan.Changelog, in Executor) *changelogExec {
	return &changelogExec{in: in, ts: plan.Types(n.Out)}
}

func (e *changelogExec) Schema() []types.T { return e.ts }

func (e *changelogExec) Next(ctx context.Context) (*types.Chunk, error) {
	c, err := e.in.Next(ctx)
	if err != nil {
		return nil, err
	}
	out := types.NewChunk(e.ts, c.NumVisible())
	for i := 0; i < c.Len(); i++ {
		if !c.Visible(i) {
			continue
		}
		e.row = append(c.Row(i, e.row[:0]), types.DInt(plan.ChangelogInsert), types.DInt(expr.NextRowID()))
		out.AppendRow(e.row)
	}
	return out, nil
}

func (e *changelogExec) Close() error { return e.in.Close() }
