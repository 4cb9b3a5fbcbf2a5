package batch

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage"
)

// idRows is VALUES of rows (id, 'r<id>', id) for ids [from, to) and extra.
func idRows(t *testing.T, from, to int, extra ...int) *plan.Values {
	var b strings.Builder
	b.WriteString("I T I")
	for _, id := range append(rangeInts(from, to), extra...) {
		fmt.Fprintf(&b, "\n%d r%d %d", id, id, id)
	}
	return values(t, b.String())
}

func rangeInts(from, to int) []int {
	var out []int
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// probe runs ProbeInsert at the committed epoch.
func (db *dbFixture) probe(ins *plan.Insert) *KeyHints {
	db.t.Helper()
	env := &Env{Ctx: &expr.Ctx{}, Store: db.store, Epoch: db.store.CommittedEpoch()}
	h, err := ProbeInsert(testCtx(db.t), env, ins)
	if err != nil {
		db.t.Fatalf("probe: %v", err)
	}
	return h
}

// execWith runs stmt with hints on env (whose epoch and pending writes it
// reads) and commits it when it succeeds.
func (db *dbFixture) execWith(env *Env, h *KeyHints, stmt any) error {
	db.t.Helper()
	env.KeyHints = h
	x, _, err := BuildDML(env, stmt, nil, 0)
	if err != nil {
		db.t.Fatalf("build: %v", err)
	}
	if _, err := collect(db.t, x); err != nil {
		return err
	}
	db.commit(env)
	return nil
}

// TestKeyHints checks that an insert with hints read ahead answers its
// primary-key checks exactly as without them: a key stored at the hints'
// epoch, a key committed after it (stale hints), and a key only in the
// pending writes each fail it; hints of another statement are not used.
func TestKeyHints(t *testing.T) {
	db, rel := newDB(t), testTable()
	db.mustExec(&plan.Insert{Table: rel, Input: idRows(t, 0, 100)})

	// A key stored at the hints' epoch.
	ins := &plan.Insert{Table: rel, Input: idRows(t, 100, 140, 50)}
	h := db.probe(ins)
	if h == nil {
		t.Fatal("no hints for a VALUES insert")
	}
	expectKind(t, db.execWith(db.env(), h, ins), types.ErrUniqueViolation)

	// A key committed after the hints' epoch.
	ins = &plan.Insert{Table: rel, Input: idRows(t, 200, 240)}
	h = db.probe(ins)
	db.mustExec(&plan.Insert{Table: rel, Input: idRows(t, 210, 211)})
	expectKind(t, db.execWith(db.env(), h, ins), types.ErrUniqueViolation)

	// A key in the statement's pending writes, at the hints' epoch (an
	// earlier statement of the open epoch wrote it).
	ins = &plan.Insert{Table: rel, Input: idRows(t, 300, 340)}
	h = db.probe(ins)
	env := db.env()
	if err := db.execWith(env, nil, &plan.Insert{Table: rel, Input: idRows(t, 320, 321)}); err != nil {
		t.Fatal(err)
	}
	env = &Env{Ctx: &expr.Ctx{}, Store: db.store, Epoch: h.epoch, Tables: NewTableSet(db.store)}
	tbl, err := env.Tables.Table(rel)
	if err != nil {
		t.Fatal(err)
	}
	if err := tbl.Insert([]types.Datum{types.DInt(330), types.DString("x"), types.DInt(0)}); err != nil {
		t.Fatal(err)
	}
	var b storage.Batch
	env.Tables.Flush(storage.NextEpoch(db.store.MaxVersion()), &b) // a flushed layer, not committed
	expectKind(t, db.execWith(env, h, ins), types.ErrUniqueViolation)

	// Hints at the statement's epoch answer for the store (here one that
	// lies: key 600 is not stored), stale ones do not.
	ins = &plan.Insert{Table: rel, Input: idRows(t, 600, 620)}
	h = db.probe(ins)
	h.found[0] = true
	expectKind(t, db.execWith(db.env(), h, ins), types.ErrUniqueViolation)
	h.epoch--
	if err := db.execWith(db.env(), h, ins); err != nil {
		t.Fatalf("stale hints were used: %v", err)
	}

	// The hints' rows are what the insert writes; another statement's hints
	// are not used (its own rows are).
	ins = &plan.Insert{Table: rel, Input: idRows(t, 400, 420)}
	other := &plan.Insert{Table: rel, Input: idRows(t, 500, 520)}
	if err := db.execWith(db.env(), db.probe(other), ins); err != nil {
		t.Fatal(err)
	}
	if err := db.execWith(db.env(), db.probe(other), other); err != nil {
		t.Fatal(err)
	}
	got := db.scan(rel)
	if len(got) != 100+1+1+20+20+20 {
		t.Fatalf("%d rows", len(got))
	}
	for _, id := range []int{400, 419, 500, 519} {
		expectRows(t, db.scan(rel, lit(int64(id))), fmt.Sprintf("%d r%d %d", id, id, id))
	}
}

// TestProbeInsertQualifies checks that only an input with no side effects
// is evaluated ahead.
func TestProbeInsertQualifies(t *testing.T) {
	db, rel := newDB(t), testTable()
	in := idRows(t, 0, 20)
	in.Rows[3][2] = call(t, "random") // volatile: evaluated once, by the insert
	if h := db.probe(&plan.Insert{Table: rel, Input: in}); h != nil {
		t.Fatal("hints for an input calling a volatile function")
	}
	if h := db.probe(&plan.Insert{Table: rel, Input: idRows(t, 0, 3)}); h != nil {
		t.Fatal("hints for a few rows")
	}
	if h := db.probe(&plan.Insert{Table: rel, Input: &plan.Scan{Table: rel}}); h != nil {
		t.Fatal("hints for an input reading a table")
	}
}
