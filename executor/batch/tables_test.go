package batch

import (
	"io"
	"testing"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage/codec"
)

// TestDeleteAllInBatches: DeleteAll removes every row of a table larger
// than one batch (spread over all vnodes, with pending writes of the same
// statement among them), records one delete per row and lets the owner
// spill between batches.
func TestDeleteAllInBatches(t *testing.T) {
	db := newDB(t)
	rel := testTable()
	const committed, pending = 9000, 500
	env := db.env()
	tbl, err := env.Tables.Table(rel)
	if err != nil {
		t.Fatal(err)
	}
	for i := range committed {
		if err := tbl.Insert([]types.Datum{types.DInt(int64(i)), types.DString("n"), types.DInt(1)}); err != nil {
			t.Fatal(err)
		}
	}
	db.commit(env)

	env = db.env()
	env.Tables.CaptureChanges()
	tbl, err = env.Tables.Table(rel)
	if err != nil {
		t.Fatal(err)
	}
	for i := range pending {
		if err := tbl.Insert([]types.Datum{types.DInt(int64(committed + i)), types.DString("p"), types.DInt(2)}); err != nil {
			t.Fatal(err)
		}
	}
	env.Tables.TakeChanges() // the inserts' changes are not what is checked
	spills := 0
	env.Tables.SetSpill(deleteAllBatch, func() error { spills++; return nil })
	if err := env.Tables.DeleteAll(testCtx(t), rel, db.store.CommittedEpoch(), nil); err != nil {
		t.Fatal(err)
	}
	if spills < 2 {
		t.Errorf("spill offered %d times, want at least 2", spills)
	}
	changes := env.Tables.TakeChanges()[rel.ID]
	deletes := 0
	for i := 0; changes != nil && i < changes.Len(); i++ {
		if changes.Visible(i) && changes.Op(i) == types.OpDelete {
			deletes++
		}
	}
	if deletes != committed+pending {
		t.Errorf("%d deletes recorded, want %d", deletes, committed+pending)
	}
	db.commit(env)
	if rows := db.scan(rel); len(rows) != 0 {
		t.Fatalf("%d rows left, e.g. %v", len(rows), rows[0])
	}
}

// TestCaptureChangesFor: rows of a relation the filter says nobody reads are
// not recorded, yet the relation is listed (with a nil chunk), so the owner
// knows it was written; a relation with a reader gets its rows.
func TestCaptureChangesFor(t *testing.T) {
	db := newDB(t)
	read, unread := testTable(), testTable()
	unread.ID, unread.Name = read.ID+1, "u"
	env := db.env()
	asked := map[uint32]int{}
	env.Tables.CaptureChangesFor(func(id uint32) bool { asked[id]++; return id == read.ID })
	rows := types.NewChunk(read.ColumnTypes(), 4)
	for i := range 3 {
		rows.AppendRow([]types.Datum{types.DInt(int64(i)), types.DString("n"), types.DInt(1)})
	}
	for _, rel := range []*catalog.Relation{read, unread} {
		if err := env.Tables.InsertNew(testCtx(t), rel, "", rows); err != nil {
			t.Fatal(err)
		}
	}
	changes := env.Tables.TakeChanges()
	if c, ok := changes[read.ID]; !ok || c == nil || c.Len() != 3 {
		t.Errorf("the read relation's changes: %v (listed %v), want 3 rows", c, ok)
	}
	if c, ok := changes[unread.ID]; !ok || c != nil {
		t.Errorf("the unread relation's changes: %v (listed %v), want listed with no chunk", c, ok)
	}
	if asked[read.ID] != 1 || asked[unread.ID] != 1 {
		t.Errorf("the filter was asked %v, want once per relation", asked)
	}
	db.commit(env)
	if got := len(db.scan(unread)); got != 3 {
		t.Errorf("the unread relation holds %d rows, want 3", got)
	}
}

// TestDeleteAllBlocks: DeleteAll of a table whose rows are in blocks (a CDC
// table's copy) leaves none, over more rows than one read batch.
func TestDeleteAllBlocks(t *testing.T) {
	db := newDB(t)
	rel := testTable()
	rel.Connector = &catalog.Connector{ReadOnly: true}
	if !rel.StoresBlocks() {
		t.Fatal("a read-only connector table does not store blocks")
	}
	const n = 9000
	for lo := 0; lo < n; lo += 3000 {
		env := db.env()
		rows := types.NewChunk(rel.ColumnTypes(), 3000)
		for i := lo; i < lo+3000; i++ {
			rows.AppendRow([]types.Datum{types.DInt(int64(i)), types.DString("n"), types.DInt(1)})
		}
		if err := env.Tables.InsertNew(testCtx(t), rel, "", rows); err != nil {
			t.Fatal(err)
		}
		db.commit(env)
	}
	if rows := db.scan(rel); len(rows) != n {
		t.Fatalf("%d rows after the inserts, want %d", len(rows), n)
	}
	env := db.env()
	if err := env.Tables.DeleteAll(testCtx(t), rel, db.store.CommittedEpoch(), nil); err != nil {
		t.Fatal(err)
	}
	db.commit(env)
	if rows := db.scan(rel); len(rows) != 0 {
		t.Fatalf("%d rows left, e.g. %v", len(rows), rows[0])
	}
	// Nothing is left stored either: the blocks went, and the rows' deletes
	// are plain deletes, not tombstones.
	lo, hi := codec.TableSpan(rel.ID)
	it, err := db.store.Scan(testCtx(t), lo, hi, db.store.CommittedEpoch())
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	if err := it.Next(); err != io.EOF {
		t.Fatalf("a key %x is left (%v)", it.Key(), err)
	}
}
