package stream

import (
	"context"
	"testing"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage/memkv"
)

func stCall(t testing.TB, name string, args ...expr.Expr) expr.Expr {
	t.Helper()
	x, err := expr.Call(name, args)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func stFields(ts ...types.T) []plan.Field {
	out := make([]plan.Field, len(ts))
	for i, t := range ts {
		out[i] = plan.Field{Name: "c", Type: t}
	}
	return out
}

func TestProject(t *testing.T) {
	i64 := types.TInt64
	src := NewMockSource([]types.T{i64, i64},
		stBarrier(1, 2),
		ChunkMsg(stChunk(t, `
			 I I
			 + 1 4
			 + 2 5
			 + 3 6 D
			 + 9 9`)),
		WatermarkMsg(&Watermark{Col: 1, Val: types.DInt(3)}),
		WatermarkMsg(&Watermark{Col: 0, Val: types.DInt(3)}),
		stBarrier(2, 3),
		ChunkMsg(stChunk(t, `
			 I I
			U- 1 4
			U+ 1 7
			U- 2 5
			U+ 2 5
			 - 9 9`)),
		stBarrier(3, 4),
		ChunkMsg(stChunk(t, `
			 I I
			U- 1 7 D
			U+ 1 8
			U- 2 5
			U+ 2 6 D`)),
		stStop(4, 5, 1))
	// Output: v + 10, an untyped literal read as int, and k; key (v + 10).
	n := &plan.StreamProject{
		Exprs: []expr.Expr{
			stCall(t, "+", expr.Column(1, i64), expr.Literal(types.DInt(10), i64)),
			expr.Literal(types.DString("42"), types.TUnknown),
			expr.Column(0, i64),
		},
		Out: stFields(i64, i64, i64),
		Key: []int{0},
	}
	e, err := NewProject(stActx(memkv.New()), n, src)
	if err != nil {
		t.Fatal(err)
	}
	var wms []Watermark
	rec := &wmRecorder{Executor: e, wms: &wms}
	set := NewRowSet([]int{0})
	snaps := stDrive(t, rec, stActx(memkv.New()), set)
	stWant(t, snaps,
		"",
		"14 42 1\n15 42 2\n19 42 9",
		// 1: 4 -> 7 changes the key (Delete + Insert); 2: 5 -> 5 stays a pair.
		"15 42 2\n17 42 1",
		// Lone halves: 1's U+ alone is an Insert, 2's U- alone a Delete.
		"17 42 1\n18 42 1")
	if len(wms) != 1 || wms[0].Col != 2 || wms[0].Val.I != 3 {
		t.Fatalf("watermarks %+v, want one on column 2", wms)
	}
}

// wmRecorder records the watermarks its executor returns.
type wmRecorder struct {
	Executor
	wms *[]Watermark
}

func (r *wmRecorder) Next(ctx context.Context) (Message, error) {
	m, err := r.Executor.Next(ctx)
	if m.Watermark != nil {
		*r.wms = append(*r.wms, *m.Watermark)
	}
	return m, err
}

func TestProjectKeyChangeOps(t *testing.T) {
	i64 := types.TInt64
	src := NewMockSource([]types.T{i64, i64}, ChunkMsg(stChunk(t, `
		 I I
		U- 1 4
		U+ 1 7
		U- 2 5
		U+ 2 5`)))
	n := &plan.StreamProject{Exprs: []expr.Expr{expr.Column(1, i64)}, Out: stFields(i64), Key: []int{0}}
	e, err := NewProject(stActx(memkv.New()), n, src)
	if err != nil {
		t.Fatal(err)
	}
	src.Push(ChunkMsg(stChunk(t, `
		 I I
		U- 1 4
		U+ 1 4 D
		U- 2 5 D
		U+ 2 5`)))
	for _, want := range []string{"- 4\n+ 7\nU- 5\nU+ 5\n", "- 4\n+ 5\n"} {
		m, err := e.Next(stCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		if got := FormatChunk(m.Chunk); got != want {
			t.Fatalf("got\n%s\nwant\n%s", got, want)
		}
	}
}

func TestProjectEvalError(t *testing.T) {
	i64 := types.TInt64
	// 1 / v: the invisible row with v = 0 is not evaluated; a visible one is
	// NULL (a streaming job goes on: see lenientEval).
	src := NewMockSource([]types.T{i64}, ChunkMsg(stChunk(t, " I\n + 1\n + 0 D")), ChunkMsg(stChunk(t, " I\n + 0")))
	n := &plan.StreamProject{Exprs: []expr.Expr{stCall(t, "/", expr.Literal(types.DInt(1), i64), expr.Column(0, i64))},
		Out: stFields(i64), Key: []int{0}}
	e, err := NewProject(stActx(memkv.New()), n, src)
	if err != nil {
		t.Fatal(err)
	}
	ctx := stCtx(t)
	if m, err := e.Next(ctx); err != nil || FormatChunk(m.Chunk) != "+ 1\n" {
		t.Fatalf("first chunk: %v %v", m.Chunk, err)
	}
	if m, err := e.Next(ctx); err != nil || FormatChunk(m.Chunk) != "+ .\n" {
		t.Fatalf("second chunk: %v %v, want a NULL", m.Chunk, err)
	}
}
