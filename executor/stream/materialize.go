package stream

import (
	"context"
	"fmt"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage/state"
)

// materializeExec writes its input into the materialized view's table with
// upsert semantics (Insert writes or overwrites the row of its key, Delete
// removes the row of its key, an update pair moves the row, deleting the old
// key when it changed) and forwards every message unchanged: the chunks are
// the view's change stream for downstream jobs.
type materializeExec struct {
	in    Executor
	table *state.Table
	name  string

	row, old []types.Datum
}

// NewMaterialize returns the executor of a StreamMaterialize; it opens the
// view's table (the node's first state table).
func NewMaterialize(actx *ActorContext, n *plan.StreamMaterialize, in Executor) (Executor, error) {
	name := n.Relation.QualifiedName()
	if len(n.State()) == 0 {
		return nil, fmt.Errorf("materialize %s: no state table assigned", name)
	}
	st := n.State()[0]
	if len(st.Types) != len(in.Schema()) {
		return nil, fmt.Errorf("materialize %s: input has %d columns, the table %d", name, len(in.Schema()), len(st.Types))
	}
	t, err := actx.NewTable(state.Schema{TableID: st.ID, Types: st.Types, PK: st.PK, PKDesc: st.PKDesc, DistKey: st.Dist})
	if err != nil {
		return nil, fmt.Errorf("materialize %s: %w", name, err)
	}
	return &materializeExec{in: in, table: t, name: name}, nil
}

func (e *materializeExec) Schema() []types.T { return e.in.Schema() }

func (e *materializeExec) Next(ctx context.Context) (Message, error) {
	m, err := e.in.Next(ctx)
	if err != nil || m.Chunk == nil {
		return m, err
	}
	if err := e.write(m.Chunk); err != nil {
		return Message{}, fmt.Errorf("materialize %s: %w", e.name, err)
	}
	return m, nil
}

func (e *materializeExec) write(c *types.Chunk) error {
	n := c.Len()
	for i := 0; i < n; {
		r, p, op := nextChange(c, i)
		if r >= n {
			break
		}
		e.row = c.Row(r, e.row)
		var err error
		switch {
		case p >= 0:
			e.old, e.row = e.row, c.Row(p, e.old)
			err = e.table.Update(e.old, e.row)
			i = p + 1
		case op == types.OpDelete:
			err = e.table.Delete(e.row)
			i = r + 1
		default:
			err = e.table.Insert(e.row)
			i = r + 1
		}
		if err != nil {
			return err
		}
	}
	return nil
}
