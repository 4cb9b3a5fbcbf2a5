package batch

import (
	"fmt"
	"testing"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage"
)

// copyPlan is COPY t (id, name, v) FROM STDIN over testTable.
func copyPlan() *plan.CopyFrom {
	rel := testTable()
	return &plan.CopyFrom{Table: rel, Columns: []int{0, 1, 2},
		Exprs: []expr.Expr{col(0, types.TInt64), col(1, types.TVarchar), col(2, types.TInt64)},
		Out:   fields(types.TInt64, types.TVarchar, types.TInt64)}
}

// copyChunk holds rows (id, 'n<id>', id*10) for ids.
func copyChunk(ids ...int64) *types.Chunk {
	c := types.NewChunk([]types.T{types.TInt64, types.TVarchar, types.TInt64}, len(ids))
	for _, id := range ids {
		c.AppendRow([]types.Datum{types.DInt(id), types.DString(fmt.Sprintf("n%d", id)), types.DInt(id * 10)})
	}
	return c
}

// TestCopyWriterKeyChecks: a COPY into an empty table skips the storage
// lookups of its keys, yet still finds a key it wrote twice, also after the
// first was staged into the store; into a table with rows it checks each key.
func TestCopyWriterKeyChecks(t *testing.T) {
	ctx := testCtx(t)
	for _, spill := range []int{0, 100} {
		db := newDB(t)
		n := copyPlan()
		env := db.env()
		epoch := storage.NextEpoch(db.store.CommittedEpoch())
		if spill > 0 {
			env.Tables.SetSpill(spill, func() error {
				var b storage.Batch
				env.Tables.Stage(epoch, &b)
				return db.store.Stage(ctx, epoch, &b)
			})
		}
		w, err := NewCopyWriter(env, n)
		if err != nil {
			t.Fatal(err)
		}
		var ids []int64
		for id := int64(1); id <= 1000; id++ {
			ids = append(ids, id)
		}
		for k := 0; k < len(ids); k += 250 {
			if i, err := w.Write(ctx, copyChunk(ids[k:k+250]...)); err != nil {
				t.Fatalf("spill %d: write: row %d: %v", spill, i, err)
			}
		}
		if !w.fresh {
			t.Fatalf("spill %d: an empty table was not seen empty", spill)
		}
		if spill > 0 && env.Tables.PendingRows() >= 250 {
			t.Fatalf("spill %d: %d rows pending: nothing was staged", spill, env.Tables.PendingRows())
		}
		i, err := w.Write(ctx, copyChunk(2001, 2002, 7, 2003))
		expectKind(t, err, types.ErrUniqueViolation)
		if i != 2 {
			t.Errorf("spill %d: duplicate reported at row %d, want 2", spill, i)
		}
		if w.Rows() != 1002 {
			t.Errorf("spill %d: %d rows written, want 1002", spill, w.Rows())
		}
	}

	// A table with rows: a key committed before clashes.
	db := newDB(t)
	n := copyPlan()
	env := db.env()
	w, err := NewCopyWriter(env, n)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(ctx, copyChunk(5, 6)); err != nil {
		t.Fatal(err)
	}
	db.commit(env)
	env = db.env()
	if w, err = NewCopyWriter(env, n); err != nil {
		t.Fatal(err)
	}
	i, err := w.Write(ctx, copyChunk(1, 2, 6))
	expectKind(t, err, types.ErrUniqueViolation)
	if i != 2 || w.fresh {
		t.Errorf("duplicate of a stored key reported at row %d (want 2), fresh %v", i, w.fresh)
	}
}
