package stream

import (
	"context"
	"testing"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage/memkv"
)

func TestFilter(t *testing.T) {
	i64 := types.TInt64
	src := NewMockSource([]types.T{i64, i64},
		stBarrier(1, 2),
		// v > 4: 1 fails, 3 (invisible) and NULL are dropped.
		ChunkMsg(stChunk(t, `
			 I I
			 + 1 4
			 + 2 5
			 + 3 6 D
			 + 4 .
			 + 5 9`)),
		stBarrier(2, 3),
		// Update pairs: both pass, only the old half, only the new half, neither.
		ChunkMsg(stChunk(t, `
			 I I
			U- 2 5
			U+ 2 6
			U- 5 9
			U+ 5 1
			U- 1 4
			U+ 1 8
			U- 4 .
			U+ 4 3`)),
		stBarrier(3, 4),
		// Lone halves (their partners invisible) and a delete.
		ChunkMsg(stChunk(t, `
			 I I
			U- 2 6
			U+ 2 1 D
			U- 3 2 D
			U+ 3 9
			 - 7 7 D
			 + 6 0`)),
		stStop(4, 5, 1))
	n := &plan.StreamFilter{Cond: stCall(t, ">", expr.Column(1, i64), expr.Literal(types.DInt(4), i64))}
	e, err := NewFilter(stActx(memkv.New()), n, src)
	if err != nil {
		t.Fatal(err)
	}
	snaps := stDrive(t, e, stActx(memkv.New()), NewRowSet([]int{0}))
	stWant(t, snaps, "", "2 5\n5 9", "1 8\n2 6", "1 8\n3 9")
}

func TestFilterPassThrough(t *testing.T) {
	i64 := types.TInt64
	in := stChunk(t, " I\n + 5\nU- 6\nU+ 7")
	src := NewMockSource([]types.T{i64}, ChunkMsg(in), ChunkMsg(stChunk(t, " I\n + 1\n + 2")))
	n := &plan.StreamFilter{Cond: stCall(t, ">", expr.Column(0, i64), expr.Literal(types.DInt(4), i64))}
	e, err := NewFilter(stActx(memkv.New()), n, src)
	if err != nil {
		t.Fatal(err)
	}
	ctx := stCtx(t)
	m, err := e.Next(ctx)
	if err != nil || m.Chunk != in {
		t.Fatalf("a chunk passing whole is not forwarded as is: %v", err)
	}
	// The all-failing chunk is dropped: the source's end comes next.
	if _, err := e.Next(ctx); err == nil {
		t.Fatal("want io.EOF")
	}
	bad := &plan.StreamFilter{Cond: expr.Column(0, i64)}
	if _, err := NewFilter(stActx(memkv.New()), bad, src); err == nil {
		t.Fatal("a non-boolean condition was accepted")
	}
}

// repeatSource returns the same (immutable) chunk forever.
type repeatSource struct{ c *types.Chunk }

func (s *repeatSource) Schema() []types.T { return s.c.Types() }
func (s *repeatSource) Next(ctx context.Context) (Message, error) {
	return ChunkMsg(s.c), ctx.Err()
}

// BenchmarkFilterProject measures rows/s through WHERE v % 2 = 0 and a
// projection (id, v + 1) over chunks of DefaultChunkSize inserts.
func BenchmarkFilterProject(b *testing.B) {
	i64 := types.TInt64
	c := types.NewChunk([]types.T{i64, i64}, types.DefaultChunkSize)
	for i := range types.DefaultChunkSize {
		c.AppendRowOp(types.OpInsert, []types.Datum{types.DInt(int64(i)), types.DInt(int64(i * 7))})
	}
	actx := stActx(memkv.New())
	cond := stCall(b, "=", stCall(b, "%", expr.Column(1, i64), expr.Literal(types.DInt(2), i64)), expr.Literal(types.DInt(0), i64))
	f, err := NewFilter(actx, &plan.StreamFilter{Cond: cond}, &repeatSource{c})
	if err != nil {
		b.Fatal(err)
	}
	p, err := NewProject(actx, &plan.StreamProject{
		Exprs: []expr.Expr{expr.Column(0, i64), stCall(b, "+", expr.Column(1, i64), expr.Literal(types.DInt(1), i64))},
		Out:   stFields(i64, i64), Key: []int{0},
	}, f)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Next(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*types.DefaultChunkSize)/b.Elapsed().Seconds(), "rows/s")
}
