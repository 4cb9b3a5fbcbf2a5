package batch

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage"
	"github.com/tributary/tributary/storage/memkv"
)

// dbFixture is a memkv store with committed epochs, and statements run
// against it the way a session does: a TableSet per statement, flushed into
// a batch committed at the next epoch.
type dbFixture struct {
	t     *testing.T
	store *memkv.Store
	epoch uint64
}

func newDB(t *testing.T) *dbFixture {
	s := memkv.New()
	t.Cleanup(func() { s.Close() })
	return &dbFixture{t: t, store: s}
}

// env returns a statement environment reading at the last committed epoch.
func (db *dbFixture) env() *Env {
	return &Env{Ctx: &expr.Ctx{}, Store: db.store, Epoch: db.store.CommittedEpoch(), Tables: NewTableSet(db.store)}
}

// commit flushes a statement's writes and commits them.
func (db *dbFixture) commit(env *Env) {
	db.t.Helper()
	db.epoch = storage.NextEpoch(db.epoch)
	var b storage.Batch
	env.Tables.Flush(db.epoch, &b)
	for _, j := range env.Tables.TakeFresh(db.epoch) {
		j.Write(&b)
	}
	if err := db.store.Commit(testCtx(db.t), db.epoch, &b); err != nil {
		db.t.Fatalf("commit: %v", err)
	}
}

// exec runs a DML statement and commits it when it succeeds.
func (db *dbFixture) exec(stmt any) (rows []string, affected int64, err error) {
	db.t.Helper()
	env := db.env()
	x, n, err := BuildDML(env, stmt, nil, 0)
	if err != nil {
		db.t.Fatalf("build: %v", err)
	}
	rows, err = collect(db.t, x)
	if err != nil {
		return nil, 0, err
	}
	db.commit(env)
	return rows, n(), nil
}

func (db *dbFixture) mustExec(stmt any) []string {
	db.t.Helper()
	rows, _, err := db.exec(stmt)
	if err != nil {
		db.t.Fatalf("exec: %v", err)
	}
	return rows
}

// scan returns every row of rel at the committed epoch.
func (db *dbFixture) scan(rel *catalog.Relation, lookup ...expr.Expr) []string {
	db.t.Helper()
	return query(db.t, db.env(), scanOf(rel, lookup...))
}

func scanOf(rel *catalog.Relation, lookup ...expr.Expr) *plan.Scan {
	fs := make([]plan.Field, len(rel.Columns))
	for i, c := range rel.Columns {
		fs[i] = plan.Field{Name: c.Name, Type: c.Type, Hidden: c.Hidden}
	}
	return &plan.Scan{Table: rel, Lookup: lookup, Out: fs}
}

// testTable is t(id bigint primary key, name varchar not null, v bigint).
func testTable() *catalog.Relation {
	return &catalog.Relation{ID: catalog.FirstUserID, Schema: "public", Name: "t", Kind: catalog.KindTable, PK: []int{0},
		Columns: []catalog.Column{
			{Name: "id", Type: types.TInt64, NotNull: true},
			{Name: "name", Type: types.TVarchar, NotNull: true},
			{Name: "v", Type: types.TInt64},
		}}
}

func TestInsertScan(t *testing.T) {
	db, rel := newDB(t), testTable()
	ins := &plan.Insert{Table: rel, Input: values(t, "I T I\n2 b 20\n1 a NULL\n3 c 30")}
	if _, n, err := db.exec(ins); err != nil || n != 3 {
		t.Fatalf("insert: %d rows, %v", n, err)
	}
	expectSet(t, db.scan(rel), "1 a NULL\n2 b 20\n3 c 30")
	expectRows(t, db.scan(rel, lit(2)), "2 b 20")
	expectRows(t, db.scan(rel, lit(9)), "")
	expectRows(t, db.scan(rel, expr.Literal(types.NullDatum, types.TInt64)), "")

	// RETURNING.
	ins = &plan.Insert{Table: rel, Input: values(t, "I T I\n4 d 40"),
		Returning: []expr.Expr{call(t, "*", col(0, types.TInt64), lit(2)), col(1, types.TVarchar)},
		RetOut:    fields(types.TInt64, types.TVarchar)}
	expectRows(t, db.mustExec(ins), "8 d")
}

func TestInsertConflicts(t *testing.T) {
	db, rel := newDB(t), testTable()
	db.mustExec(&plan.Insert{Table: rel, Input: values(t, "I T I\n1 a 10")})

	_, _, err := db.exec(&plan.Insert{Table: rel, Input: values(t, "I T I\n2 b 20\n1 x 0")})
	expectKind(t, err, types.ErrUniqueViolation)
	var te *types.Error
	if errors.As(err, &te); te == nil || te.Detail != "Key (id)=(1) already exists." || te.Msg != `duplicate key value violates unique constraint "t_pkey"` {
		t.Errorf("error %q detail %q", err, te.Detail)
	}
	// Within one statement.
	_, _, err = db.exec(&plan.Insert{Table: rel, Input: values(t, "I T I\n5 b 20\n5 c 0")})
	expectKind(t, err, types.ErrUniqueViolation)
	// NOT NULL, and the primary key.
	_, _, err = db.exec(&plan.Insert{Table: rel, Input: values(t, "I T I\n6 NULL 1")})
	expectKind(t, err, types.ErrNotNullViolation)
	if errors.As(err, &te); te.Msg != `null value in column "name" of relation "t" violates not-null constraint` {
		t.Errorf("message %q", te.Msg)
	}
	_, _, err = db.exec(&plan.Insert{Table: rel, Input: values(t, "I T I\nNULL a 1")})
	expectKind(t, err, types.ErrNotNullViolation)
	// Nothing of the failed statements was committed.
	expectSet(t, db.scan(rel), "1 a 10")
}

func TestUpdate(t *testing.T) {
	db, rel := newDB(t), testTable()
	db.mustExec(&plan.Insert{Table: rel, Input: values(t, "I T I\n1 a 10\n2 b 20\n3 c 30")})

	// SET v = v + 1 WHERE id >= 2 RETURNING id, v.
	where := &plan.Filter{Input: scanOf(rel), Cond: call(t, ">=", col(0, types.TInt64), lit(2))}
	upd := &plan.Update{Table: rel, Input: where, Cols: []int{2}, Set: []expr.Expr{call(t, "+", col(2, types.TInt64), lit(1))},
		Returning: []expr.Expr{col(0, types.TInt64), col(2, types.TInt64)}, RetOut: fields(types.TInt64, types.TInt64)}
	rows, n, err := db.exec(upd)
	if err != nil || n != 2 {
		t.Fatalf("update: %d rows, %v", n, err)
	}
	expectSet(t, rows, "2 21\n3 31")
	expectSet(t, db.scan(rel), "1 a 10\n2 b 21\n3 c 31")

	// Changing the key of every row: id = id + 1 must not collide with rows about to move.
	bump := &plan.Update{Table: rel, Input: scanOf(rel), Cols: []int{0}, Set: []expr.Expr{call(t, "+", col(0, types.TInt64), lit(1))}}
	db.mustExec(bump)
	expectSet(t, db.scan(rel), "2 a 10\n3 b 21\n4 c 31")
	expectRows(t, db.scan(rel, lit(1)), "")
	expectRows(t, db.scan(rel, lit(4)), "4 c 31")

	// A new key that collides with a row left in place.
	one := &plan.Filter{Input: scanOf(rel), Cond: call(t, "=", col(0, types.TInt64), lit(2))}
	_, _, err = db.exec(&plan.Update{Table: rel, Input: one, Cols: []int{0}, Set: []expr.Expr{lit(3)}})
	expectKind(t, err, types.ErrUniqueViolation)
	// Two rows moving to the same key.
	_, _, err = db.exec(&plan.Update{Table: rel, Input: scanOf(rel), Cols: []int{0}, Set: []expr.Expr{lit(100)}})
	expectKind(t, err, types.ErrUniqueViolation)
	// NOT NULL.
	_, _, err = db.exec(&plan.Update{Table: rel, Input: scanOf(rel), Cols: []int{1}, Set: []expr.Expr{expr.Literal(types.NullDatum, types.TVarchar)}})
	expectKind(t, err, types.ErrNotNullViolation)
	expectSet(t, db.scan(rel), "2 a 10\n3 b 21\n4 c 31")
	// An untyped NULL and an untyped string literal.
	db.mustExec(&plan.Update{Table: rel, Input: scanOf(rel), Cols: []int{2, 1},
		Set: []expr.Expr{expr.Literal(types.NullDatum, types.TUnknown), expr.Literal(types.DString("z"), types.TUnknown)}})
	expectSet(t, db.scan(rel), "2 z NULL\n3 z NULL\n4 z NULL")
}

func TestDelete(t *testing.T) {
	db, rel := newDB(t), testTable()
	db.mustExec(&plan.Insert{Table: rel, Input: values(t, "I T I\n1 a 10\n2 b 20\n3 c 30")})
	where := &plan.Filter{Input: scanOf(rel), Cond: call(t, "<>", col(0, types.TInt64), lit(2))}
	rows, n, err := db.exec(&plan.Delete{Table: rel, Input: where,
		Returning: []expr.Expr{col(1, types.TVarchar)}, RetOut: fields(types.TVarchar)})
	if err != nil || n != 2 {
		t.Fatalf("delete: %d rows, %v", n, err)
	}
	expectSet(t, rows, "a\nc")
	expectSet(t, db.scan(rel), "2 b 20")
	// Delete then insert the same key in later statements.
	db.mustExec(&plan.Delete{Table: rel, Input: scanOf(rel)})
	expectRows(t, db.scan(rel), "")
	db.mustExec(&plan.Insert{Table: rel, Input: values(t, "I T I\n2 again NULL")})
	expectRows(t, db.scan(rel), "2 again NULL")
}

func TestStatementSeesOwnWrites(t *testing.T) {
	db, rel := newDB(t), testTable()
	env := db.env()
	x, _, err := BuildDML(env, &plan.Insert{Table: rel, Input: values(t, "I T I\n7 g 70")}, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := collect(t, x); err != nil {
		t.Fatal(err)
	}
	// Same TableSet, not committed yet: a scan sees the pending row; a fresh statement does not.
	expectRows(t, query(t, env, scanOf(rel)), "7 g 70")
	expectRows(t, db.scan(rel), "")
	db.commit(env)
	expectRows(t, db.scan(rel), "7 g 70")
}

func TestScanPrefixLookup(t *testing.T) {
	db := newDB(t)
	rel := &catalog.Relation{ID: catalog.FirstUserID + 1, Schema: "public", Name: "kv", Kind: catalog.KindTable, PK: []int{0, 1},
		Columns: []catalog.Column{{Name: "a", Type: types.TInt32}, {Name: "b", Type: types.TVarchar}, {Name: "c", Type: types.TInt64}}}
	var text = "i T I\n"
	for a := 0; a < 5; a++ {
		for _, b := range []string{"x", "y", "xy"} {
			text += fmt.Sprintf("%d %s %d\n", a, b, a*10)
		}
	}
	db.mustExec(&plan.Insert{Table: rel, Input: values(t, text)})
	if got := db.scan(rel); len(got) != 15 {
		t.Fatalf("scan: %d rows", len(got))
	}
	a3 := expr.Literal(types.DInt(3), types.TInt32)
	expectSet(t, db.scan(rel, a3), "3 x 30\n3 y 30\n3 xy 30")
	expectRows(t, db.scan(rel, a3, expr.Literal(types.DString("x"), types.TVarchar)), "3 x 30")
}

func TestHiddenRowID(t *testing.T) {
	db := newDB(t)
	rel := &catalog.Relation{ID: catalog.FirstUserID + 2, Schema: "public", Name: "h", Kind: catalog.KindTable, PK: []int{1},
		Columns: []catalog.Column{{Name: "x", Type: types.TInt64}, {Name: catalog.RowIDColumn, Type: types.TInt64, Hidden: true}}}
	db.mustExec(&plan.Insert{Table: rel, Input: values(t, "I I\n5 1\n5 2\nNULL 3")})
	expectSet(t, db.scan(rel), "5 1\n5 2\nNULL 3")
}

// TestInsertSendEarly: a large INSERT (its new keys go as blocks) hands its rows to the
// streaming jobs (TableSet.SendEarly) once every row is checked and before any is written, on
// its last chunk and only when no RETURNING follows; a statement that fails a check (a key
// stored, a key twice in one chunk or in two, NOT NULL) never hands them over and writes
// nothing.
func TestInsertSendEarly(t *testing.T) {
	db, rel := newDB(t), testTable()
	// rowsText is rows from..from+n-1, row at given as line instead (at < 0: none).
	rowsText := func(from, n, at int, line string) string {
		var b strings.Builder
		b.WriteString("I T I")
		for i := from; i < from+n; i++ {
			if i == at {
				b.WriteString("\n" + line)
				continue
			}
			fmt.Fprintf(&b, "\n%d r%d %d", i, i, i%7)
		}
		return b.String()
	}
	// run executes an INSERT of text with a SendEarly hook and returns how many times it
	// was called and, at each call, the changes handed over and the rows already written.
	run := func(text string, returning bool) (calls, sent, pending int, err error) {
		t.Helper()
		env := db.env()
		env.Tables.CaptureChanges()
		env.Tables.SetSendEarly(func() error {
			calls++
			for _, c := range env.Tables.TakeChanges() {
				sent += c.Len()
			}
			tbl, err := env.Tables.Table(rel)
			if err != nil {
				return err
			}
			pending += tbl.PendingRows()
			return nil
		})
		ins := &plan.Insert{Table: rel, Input: values(t, text)}
		if returning {
			ins.Returning, ins.RetOut = []expr.Expr{col(0, types.TInt64)}, fields(types.TInt64)
		}
		x, _, err := BuildDML(env, ins, nil, 0)
		if err != nil {
			t.Fatalf("build: %v", err)
		}
		if _, err = collect(t, x); err != nil {
			return calls, sent, pending, err
		}
		db.commit(env)
		return calls, sent, pending, nil
	}
	if calls, sent, pending, err := run(rowsText(0, 600, -1, ""), false); err != nil || calls != 1 || sent != 600 || pending != 0 {
		t.Fatalf("600 rows: %d calls, %d rows sent, %d written before, %v", calls, sent, pending, err)
	}
	// Two chunks: handed over once, after the second is checked; the first chunk's rows
	// are written by then.
	if calls, sent, pending, err := run(rowsText(1000, 2000, -1, ""), false); err != nil || calls != 1 || sent != 2000 || pending != types.DefaultChunkSize {
		t.Fatalf("2000 rows: %d calls, %d rows sent, %d written before, %v", calls, sent, pending, err)
	}
	if calls, _, _, err := run(rowsText(5000, 600, -1, ""), true); err != nil || calls != 0 {
		t.Fatalf("600 rows with RETURNING: %d calls, %v", calls, err)
	}
	for _, c := range []struct {
		name string
		text string
		kind error
	}{
		{"a stored key", rowsText(10000, 600, 10599, "599 x 1"), types.ErrUniqueViolation},
		{"a key twice in a chunk", rowsText(10000, 600, 10550, "10030 x 1"), types.ErrUniqueViolation},
		{"a key in two chunks", rowsText(10000, 2000, 11900, "10010 x 1"), types.ErrUniqueViolation},
		{"NULL in the last row", rowsText(10000, 600, 10599, "10599 NULL 1"), types.ErrNotNullViolation},
	} {
		calls, _, _, err := run(c.text, false)
		expectKind(t, err, c.kind)
		if calls != 0 {
			t.Errorf("%s: the rows were handed over", c.name)
		}
	}
	got := db.scan(rel)
	if len(got) != 600+2000+600 {
		t.Fatalf("%d rows stored, want %d", len(got), 600+2000+600)
	}
	expectRows(t, db.scan(rel, lit(1999)), "1999 r1999 4")
	expectRows(t, db.scan(rel, lit(10000)), "")
}
