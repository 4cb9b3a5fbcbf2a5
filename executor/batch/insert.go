package batch

import (
	"context"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage/state"
)

// insertWriter writes each input row (already in the table's column order and
// types) after checking NOT NULL and that no row with its primary key exists.
type insertWriter struct {
	rel *catalog.Relation
}

func (w *insertWriter) write(ctx context.Context, env *Env, tbl *state.Table, rel *catalog.Relation, rows *types.Chunk) (*types.Chunk, error) {
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
