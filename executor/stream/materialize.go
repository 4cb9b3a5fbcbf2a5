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
//
// A row that moves between parallel upstream actors (a group top-N row
// changing group, say) may arrive as an Insert of its new version before the
// Delete of its old one, since the two come from different actors. So a
// Delete removes the stored row only if it is the row being deleted; a stale
// Delete of an overwritten version is ignored.
type materializeExec struct {
	in    Executor
	table *state.Table
	name  string
	pk    []int
	types []types.T

	row, old, cur, key []types.Datum
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
	// Shared: an aggregation below may keep its groups in it (plan.StreamAgg.ViewState).
	t, err := actx.SharedTable(state.Schema{TableID: st.ID, Types: st.Types, PK: st.PK, PKDesc: st.PKDesc, DistKey: st.Dist})
	if err != nil {
		return nil, fmt.Errorf("materialize %s: %w", name, err)
	}
	return &materializeExec{in: in, table: t, name: name, pk: st.PK, types: st.Types, key: make([]types.Datum, len(st.PK))}, nil
}

func (e *materializeExec) Schema() []types.T { return e.in.Schema() }

func (e *materializeExec) Next(ctx context.Context) (Message, error) {
	m, err := e.in.Next(ctx)
	if err != nil || m.Chunk == nil {
		return m, err
	}
	if err := e.write(ctx, m.Chunk); err != nil {
		return Message{}, fmt.Errorf("materialize %s: %w", e.name, err)
	}
	return m, nil
}

// deleteIfCurrent deletes row if it is the version stored under its key.
func (e *materializeExec) deleteIfCurrent(ctx context.Context, row []types.Datum) error {
	for i, c := range e.pk {
		e.key[i] = row[c]
	}
	cur, found, err := e.table.Get(ctx, e.key, e.cur)
	e.cur = cur
	if err != nil || !found {
		return err
	}
	for i, t := range e.types {
		if types.Compare(t, &cur[i], &row[i]) != 0 {
			return nil // a newer version overwrote it
		}
	}
	return e.table.Delete(row)
}

func (e *materializeExec) sameKey(a, b []types.Datum) bool {
	for _, c := range e.pk {
		if types.Compare(e.types[c], &a[c], &b[c]) != 0 {
			return false
		}
	}
	return true
}

func (e *materializeExec) write(ctx context.Context, c *types.Chunk) error {
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
			if !e.sameKey(e.old, e.row) {
				err = e.deleteIfCurrent(ctx, e.old)
			}
			if err == nil {
				err = e.table.Insert(e.row)
			}
			i = p + 1
		case op == types.OpDelete:
			err = e.deleteIfCurrent(ctx, e.row)
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
