package batch

import (
	"context"
	"fmt"
	"slices"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage/codec"
	"github.com/tributary/tributary/storage/state"
)

// insertWriter writes each input row (already in the table's column order and
// types) after checking NOT NULL and that no row with its primary key exists.
type insertWriter struct {
	rel      *catalog.Relation
	conflict *plan.InsertConflict // ON CONFLICT, nil when absent
	// touched are the keys this statement wrote (ON CONFLICT DO UPDATE may
	// not write a row twice).
	touched map[string]bool
}

func (w *insertWriter) write(ctx context.Context, env *Env, tbl *state.Table, rel *catalog.Relation, rows *types.Chunk) (*types.Chunk, error) {
	if w.conflict != nil {
		return w.writeOnConflict(ctx, env, tbl, rel, rows)
	}
	nc := len(rel.Columns)
	var (
		row     []types.Datum
		pk      = make([]types.Datum, len(rel.PK))
		scratch []types.Datum
		err     error
		vis     []bool // set when a row is skipped
	)
	for i := 0; i < rows.Len(); i++ {
		if i%types.DefaultChunkSize == 0 {
			if err := checkCtx(ctx); err != nil {
				return nil, err
			}
			// The input is all read (or never reads this table): what
			// this statement wrote may move to storage (TableSet.MaybeSpill).
			if err := env.Tables.MaybeSpill(); err != nil {
				return nil, err
			}
		}
		row = rows.Row(i, row)[:nc]
		if err := checkNotNull(rel, row); err != nil {
			return nil, err
		}
		var inserted bool
		if inserted, scratch, err = insertRow(ctx, env, tbl, rel, row, pk, scratch); err != nil {
			return nil, err
		}
		if !inserted { // ON CONFLICT IGNORE: not written, not counted
			if vis == nil {
				vis = make([]bool, rows.Len())
				for k := range vis {
					vis[k] = rows.Visible(k)
				}
			}
			vis[i] = false
		}
	}
	if vis != nil { // only the rows written are the statement's (count, RETURNING)
		out := types.NewChunk(rows.Types(), rows.Len())
		for i := 0; i < rows.Len(); i++ {
			if vis[i] {
				out.AppendFrom(rows, i)
			}
		}
		return out, nil
	}
	return rows, nil
}

// writeOnConflict is write under INSERT ... ON CONFLICT: a row whose key
// the table holds is skipped (DO NOTHING) or updates the stored row (DO
// UPDATE, when its WHERE holds); the rows written, inserted or updated, are
// the statement's (count, RETURNING).
func (w *insertWriter) writeOnConflict(ctx context.Context, env *Env, tbl *state.Table, rel *catalog.Relation, rows *types.Chunk) (*types.Chunk, error) {
	nc := len(rel.Columns)
	ts := rel.ColumnTypes()
	oc := w.conflict
	if w.touched == nil {
		w.touched = map[string]bool{}
	}
	out := types.NewChunk(rows.Types(), rows.Len())
	var (
		row, scratch, both []types.Datum
		pk                 = make([]types.Datum, len(rel.PK))
		key                []byte
		err                error
	)
	for i := 0; i < rows.Len(); i++ {
		if !rows.Visible(i) {
			continue
		}
		if i%types.DefaultChunkSize == 0 {
			if err := checkCtx(ctx); err != nil {
				return nil, err
			}
		}
		row = rows.Row(i, row)
		if err := checkNotNull(rel, row[:nc]); err != nil {
			return nil, err
		}
		for k, c := range rel.PK {
			pk[k] = row[c]
		}
		key = codec.AppendKey(key[:0], ts, row, rel.PK, nil)
		var found bool
		if scratch, found, err = tbl.GetAt(ctx, env.Epoch, pk, scratch); err != nil {
			return nil, fmt.Errorf("%s: check primary key: %w", rel.QualifiedName(), err)
		}
		if !found {
			if err := tbl.Insert(row[:nc]); err != nil {
				return nil, errorf("insert into %s: %w", rel.QualifiedName(), err)
			}
			env.Tables.record(rel, types.OpInsert, row[:nc])
			w.touched[string(key)] = true
			out.AppendRow(row)
			continue
		}
		if oc.DoNothing {
			continue
		}
		if w.touched[string(key)] {
			return nil, &types.Error{Kind: types.ErrCardinality, Msg: "ON CONFLICT DO UPDATE command cannot affect row a second time",
				Hint: "Ensure that no rows proposed for insertion within the same command have duplicate constrained values."}
		}
		old := slices.Clone(scratch[:nc])
		both = append(append(both[:0], old...), row[:nc]...)
		if oc.Where != nil {
			ok, err := oc.Where.EvalRow(env.Ctx, both)
			if err != nil {
				return nil, err
			}
			if ok.Null || ok.I == 0 {
				continue // not updated, not counted
			}
		}
		upd := slices.Clone(old)
		for k, c := range oc.Cols {
			if upd[c], err = oc.Set[k].EvalRow(env.Ctx, both); err != nil {
				return nil, err
			}
		}
		for c, g := range oc.Generated {
			if g == nil {
				continue
			}
			if upd[c], err = g.EvalRow(env.Ctx, upd); err != nil {
				return nil, err
			}
		}
		if err := checkNotNull(rel, upd); err != nil {
			return nil, err
		}
		if err := tbl.Update(old, upd); err != nil {
			return nil, errorf("insert into %s: %w", rel.QualifiedName(), err)
		}
		env.Tables.record(rel, types.OpUpdateDelete, old)
		env.Tables.record(rel, types.OpUpdateInsert, upd)
		w.touched[string(key)] = true
		out.AppendRow(append(upd, row[nc:]...))
	}
	return out, nil
}
