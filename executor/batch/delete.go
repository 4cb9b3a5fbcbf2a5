package batch

import (
	"context"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage/state"
)

// deleteWriter removes each input row (the table's full columns) by its primary key.
type deleteWriter struct{}

func (w *deleteWriter) write(ctx context.Context, env *Env, tbl *state.Table, rel *catalog.Relation, rows *types.Chunk) (*types.Chunk, error) {
	nc := len(rel.Columns)
	var row []types.Datum
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
		if err := tbl.Delete(row); err != nil {
			return nil, errorf("delete from %s: %w", rel.QualifiedName(), err)
		}
		env.Tables.record(rel, types.OpDelete, row)
	}
	return rows, nil
}
