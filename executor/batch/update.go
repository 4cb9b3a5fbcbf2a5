package batch

import (
	"context"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage/state"
)

// updateWriter computes each input row's new values (Set, evaluated over the
// old row) and writes them. Rows whose primary key changes are deleted first,
// all of them, and then inserted with the conflict check, so that
// `SET id = id + 1` works whatever order the rows come in, and a new key that
// collides with a row left in place (or with another new row) fails.
type updateWriter struct {
	env  *Env
	node *plan.Update
	set  []types.Vector
}

func newUpdateWriter(env *Env, n *plan.Update) *updateWriter {
	return &updateWriter{env: env, node: n, set: make([]types.Vector, len(n.Set))}
}

func (w *updateWriter) write(ctx context.Context, env *Env, tbl *state.Table, rel *catalog.Relation, old *types.Chunk) (*types.Chunk, error) {
	n, nc := old.Len(), len(rel.Columns)
	if len(w.node.Cols) != len(w.node.Set) {
		return nil, types.Errorf(types.ErrInternal, "update %s: %d columns but %d values", rel.Name, len(w.node.Cols), len(w.node.Set))
	}
	for k, x := range w.node.Set {
		if err := evalInto(env, x, old, &w.set[k]); err != nil {
			return nil, err
		}
	}
	// New rows: old columns, with the SET ones replaced.
	src := make([]*types.Vector, nc)
	for j := range src {
		src[j] = &old.Cols[j]
	}
	for k, c := range w.node.Cols {
		src[c] = &w.set[k]
	}
	ts := rel.ColumnTypes()
	upd := types.NewChunk(ts, n)
	for j := range ts {
		if src[j].Type.Physical() != ts[j].Physical() {
			if err := conformVector(&upd.Cols[j], src[j], n); err != nil {
				return nil, err
			}
			continue
		}
		for i := 0; i < n; i++ {
			upd.Cols[j].AppendFrom(src[j], i)
		}
	}
	upd.SetLen(n)
	if err := applyGenerated(env, w.node.Generated, upd); err != nil {
		return nil, err
	}

	var (
		oldRow, newRow []types.Datum
		moved          []int // rows whose primary key changes
	)
	for i := 0; i < n; i++ {
		if i%types.DefaultChunkSize == 0 {
			if err := checkCtx(ctx); err != nil {
				return nil, err
			}
		}
		newRow = upd.Row(i, newRow)
		if err := checkNotNull(rel, newRow); err != nil {
			return nil, err
		}
		oldRow = old.Row(i, oldRow)[:nc]
		if eqCols(old, rel.PK, i, upd, rel.PK, i) {
			if err := tbl.Update(oldRow, newRow); err != nil {
				return nil, errorf("update %s: %w", rel.QualifiedName(), err)
			}
			env.Tables.record(rel, types.OpUpdateDelete, oldRow)
			env.Tables.record(rel, types.OpUpdateInsert, newRow)
			continue
		}
		if err := tbl.Delete(oldRow); err != nil {
			return nil, errorf("update %s: %w", rel.QualifiedName(), err)
		}
		env.Tables.record(rel, types.OpDelete, oldRow)
		moved = append(moved, i)
	}
	pk := make([]types.Datum, len(rel.PK))
	var scratch []types.Datum
	var err error
	for _, i := range moved {
		newRow = upd.Row(i, newRow)
		if scratch, err = checkNoConflict(ctx, env, tbl, rel, newRow, pk, scratch); err != nil {
			return nil, err
		}
		if err := tbl.Insert(newRow); err != nil {
			return nil, errorf("update %s: %w", rel.QualifiedName(), err)
		}
		env.Tables.record(rel, types.OpInsert, newRow)
	}
	// The input's columns after the table's (UPDATE ... FROM's relations)
	// stay with the new rows for RETURNING.
	upd.Cols = append(upd.Cols, old.Cols[nc:]...)
	return upd, nil
}
