package stream

import (
	"context"
	"io"
	"testing"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage"
	"github.com/tributary/tributary/storage/memkv"
	"github.com/tributary/tributary/storage/state"
)

// stSteps is an Executor whose i-th Next runs steps[i] (which may change
// the store first) and returns its message; io.EOF after the last.
type stSteps struct {
	ts    []types.T
	steps []func() Message
}

func (s *stSteps) Schema() []types.T { return s.ts }

func (s *stSteps) Next(ctx context.Context) (Message, error) {
	if len(s.steps) == 0 {
		return Message{}, io.EOF
	}
	f := s.steps[0]
	s.steps = s.steps[1:]
	return f(), nil
}

func stMsg(m Message) func() Message { return func() Message { return m } }

// stPrices is the temporal join's right relation: prices (pid int8 primary
// key, price int8), stored as a table's rows are.
func stPrices() *catalog.Relation {
	return &catalog.Relation{ID: 100, Schema: "public", Name: "prices", Kind: catalog.KindTable, PK: []int{0},
		Columns: []catalog.Column{{Name: "pid", Type: types.TInt64}, {Name: "price", Type: types.TInt64}}}
}

// stWriteRel commits changes of rel's rows at epoch: each row is inserted,
// or deleted when del is set.
func stWriteRel(t testing.TB, kv storage.KV, rel *catalog.Relation, epoch uint64, del bool, rows ...[]types.Datum) {
	t.Helper()
	tab, err := state.New(kv, state.Schema{TableID: rel.ID, Types: rel.ColumnTypes(), PK: rel.PK, DistKey: rel.DistKey()})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if del {
			err = tab.Delete(r)
		} else {
			err = tab.Insert(r)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	var b storage.Batch
	tab.Flush(epoch, &b)
	if err := kv.Commit(context.Background(), epoch, &b); err != nil {
		t.Fatal(err)
	}
}

func stRow(vals ...int64) []types.Datum {
	out := make([]types.Datum, len(vals))
	for i, v := range vals {
		out[i] = types.DInt(v)
	}
	return out
}

// TestTemporalJoin drives a left temporal join of a retracting stream
// (id, pid, qty) with prices on pid = pid and price > qty: a row is joined
// with the price committed when it arrives, later price changes touch no
// output, a retraction removes what the row's insert produced (from the
// memo, also after a restart), and NULL keys and failed conditions pad.
func TestTemporalJoin(t *testing.T) {
	rel := stPrices()
	lt := []types.T{types.TInt64, types.TInt64, types.TInt64}
	cond := stCall(t, ">", expr.Column(4, types.TInt64), expr.Column(2, types.TInt64))
	n := &plan.StreamTemporalJoin{Kind: plan.LeftJoin, Left: &plan.StreamValues{Out: stFields(lt...), Key: []int{0}},
		Table: rel, Lookup: rel, RightCols: []int{0, 1}, RightOut: stFields(types.TInt64, types.TInt64), KeyLeft: []int{1}, Cond: cond}
	layouts := n.StateLayouts()
	if len(layouts) != 1 {
		t.Fatalf("layouts %v, want the memo", layouts)
	}
	layouts[0].ID = 200
	n.SetState(layouts)

	kv := memkv.New()
	stWriteRel(t, kv, rel, 5, false, stRow(10, 5))
	src := &stSteps{ts: lt, steps: []func() Message{
		stMsg(stBarrier(5, 10)),
		stMsg(ChunkMsg(stChunk(t, `
			I I I
			+ 1 10 1
			+ 2 20 1
			+ 3 . 1
			+ 4 10 5`))),
		stMsg(stBarrier(10, 20)),
		func() Message {
			stWriteRel(t, kv, rel, 15, false, stRow(10, 7), stRow(20, 9))
			return ChunkMsg(stChunk(t, `
				 I I I
				 - 1 10 1
				U- 2 20 1
				U+ 2 20 2
				 - 3 . 1
				 + 5 20 9`))
		},
		stMsg(stBarrier(20, 30)),
		stMsg(stStop(30, 40, 1)),
	}}
	actx := stActx(kv)
	e, err := NewTemporalJoin(actx, n, src)
	if err != nil {
		t.Fatal(err)
	}
	set := NewRowSet(n.StreamKey())
	stWant(t, stDrive(t, e, actx, set),
		"",
		"1 10 1 10 5\n2 20 1 . .\n3 . 1 . .\n4 10 5 . .",
		"2 20 2 20 9\n4 10 5 . .\n5 20 9 . .",
		"2 20 2 20 9\n4 10 5 . .\n5 20 9 . .")
	if got, want := stTableRows(t, kv, n.State()[0]), "20 2 20 9"; got != want {
		t.Fatalf("memo holds\n%s\nwant\n%s", got, want)
	}

	// After a restart, with prices changed again, retractions still remove
	// exactly what was output.
	stWriteRel(t, kv, rel, 45, true, stRow(20, 9))
	src = &stSteps{ts: lt, steps: []func() Message{
		stMsg(stBarrier(45, 50)),
		stMsg(ChunkMsg(stChunk(t, `
			I I I
			- 2 20 2
			- 4 10 5
			- 5 20 9
			+ 6 10 1`))),
		stMsg(stStop(50, 60, 1)),
	}}
	actx = stActx(kv)
	if e, err = NewTemporalJoin(actx, n, src); err != nil {
		t.Fatal(err)
	}
	stWant(t, stDrive(t, e, actx, set), "2 20 2 20 9\n4 10 5 . .\n5 20 9 . .", "6 10 1 10 7")
	if got, want := stTableRows(t, kv, n.State()[0]), "10 6 10 7"; got != want {
		t.Fatalf("memo holds\n%s\nwant\n%s", got, want)
	}
}

// TestTemporalJoinNestedLoop joins an append-only stream with every price
// above its qty (no lookup key, no memo), inner.
func TestTemporalJoinNestedLoop(t *testing.T) {
	rel := stPrices()
	lt := []types.T{types.TInt64, types.TInt64}
	cond := stCall(t, ">", expr.Column(2, types.TInt64), expr.Column(1, types.TInt64))
	n := &plan.StreamTemporalJoin{Kind: plan.InnerJoin, Left: &plan.StreamValues{Out: stFields(lt...), Key: []int{0}},
		Table: rel, Lookup: rel, RightCols: []int{1, 0}, RightOut: stFields(types.TInt64, types.TInt64), Cond: cond, AppendOnly: true}
	if l := n.StateLayouts(); len(l) != 0 {
		t.Fatalf("an append-only stream side needs no state: %v", l)
	}
	kv := memkv.New()
	stWriteRel(t, kv, rel, 5, false, stRow(10, 5), stRow(20, 9), stRow(30, 2))
	src := NewMockSource(lt,
		stBarrier(5, 10),
		ChunkMsg(stChunk(t, " I I\n + 1 4\n + 2 9\n + 3 1")),
		stStop(10, 20, 1))
	actx := stActx(kv)
	e, err := NewTemporalJoin(actx, n, src)
	if err != nil {
		t.Fatal(err)
	}
	stWant(t, stDrive(t, e, actx, NewRowSet(n.StreamKey())),
		"",
		"1 4 5 10\n1 4 9 20\n3 1 2 30\n3 1 5 10\n3 1 9 20")
	// A retraction reaching a join planned append-only is an error, not a silent drop.
	src = NewMockSource(lt, stBarrier(20, 30), ChunkMsg(stChunk(t, " I I\n - 1 4")), stStop(30, 40, 1))
	if e, err = NewTemporalJoin(stActx(kv), n, src); err != nil {
		t.Fatal(err)
	}
	if _, err := Collect(stCtx(t), e, 2); err == nil {
		t.Fatal("a delete on an append-only temporal join passed")
	}
}
