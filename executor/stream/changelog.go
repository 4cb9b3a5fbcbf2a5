package stream

import (
	"context"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
)

// changelogExec turns each change of its input into an insert of the changed
// row with its op code (changelog_op) and a fresh, increasing row id
// (_changelog_row_id, the stream key). It keeps no state: the row ids come
// from the process's row id clock, which a restart moves forward.
type changelogExec struct {
	in  Executor
	ts  []types.T
	nIn int // the input columns kept (the input may carry hidden key columns after them)
	row []types.Datum
}

// NewChangelog returns the executor of a StreamChangelog.
func NewChangelog(n *plan.StreamChangelog, in Executor) Executor {
	return &changelogExec{in: in, ts: plan.Types(n.Out), nIn: len(n.Out) - 2}
}

func (e *changelogExec) Schema() []types.T { return e.ts }

func (e *changelogExec) Next(ctx context.Context) (Message, error) {
	for {
		m, err := e.in.Next(ctx)
		if err != nil || m.Chunk == nil {
			return m, err
		}
		c := m.Chunk
		out := types.NewChunk(e.ts, c.NumVisible())
		for i := 0; i < c.Len(); i++ {
			if !c.Visible(i) {
				continue
			}
			e.row = append(c.Row(i, e.row[:0])[:e.nIn], types.DInt(changelogOp(c.Op(i))), types.DInt(expr.NextRowID()))
			out.AppendRowOp(types.OpInsert, e.row)
		}
		if out.Len() > 0 {
			return ChunkMsg(out), nil
		}
	}
}

// changelogOp is RisingWave's number for op.
func changelogOp(op types.Op) int64 {
	switch op {
	case types.OpDelete:
		return plan.ChangelogDelete
	case types.OpUpdateInsert:
		return plan.ChangelogUpdateInsert
	case types.OpUpdateDelete:
		return plan.ChangelogUpdateDelete
	}
	return plan.ChangelogInsert
}
