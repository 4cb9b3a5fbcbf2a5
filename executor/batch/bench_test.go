package batch

import (
	"context"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage"
	"github.com/tributary/tributary/storage/memkv"
)

// benchChunks returns n rows (key in [0, keys), value) as chunks of the default size.
func benchChunks(n, keys int, seed uint64) []*types.Chunk {
	rng := rand.New(rand.NewPCG(seed, 0))
	ts := []types.T{types.TInt64, types.TInt64}
	var cs []*types.Chunk
	for i := 0; i < n; i += types.DefaultChunkSize {
		c := types.NewChunk(ts, types.DefaultChunkSize)
		for j := i; j < min(n, i+types.DefaultChunkSize); j++ {
			c.AppendRow([]types.Datum{types.DInt(int64(rng.IntN(keys))), types.DInt(int64(j))})
		}
		cs = append(cs, c)
	}
	return cs
}

func source(cs []*types.Chunk) *chunkSource {
	return &chunkSource{ts: []types.T{types.TInt64, types.TInt64}, chunks: cs}
}

// drainCount runs x to the end and returns the number of rows.
func drainCount(b *testing.B, x Executor) int {
	ctx := context.Background()
	n := 0
	for {
		c, err := x.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
		n += c.NumVisible()
	}
	if err := x.Close(); err != nil {
		b.Fatal(err)
	}
	return n
}

func reportRows(b *testing.B, rowsPerOp int) {
	b.ReportMetric(float64(rowsPerOp)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

func BenchmarkHashAgg(b *testing.B) {
	const rows = 1 << 20
	cs := benchChunks(rows, 10000, 1)
	count := agg(b, "count", false)
	sum := agg(b, "sum", false, types.TInt64)
	n := &plan.Agg{GroupBy: []int{0}, Aggs: []plan.AggCall{
		{Agg: count, Filter: -1}, {Agg: sum, Args: []int{1}, Filter: -1},
	}, Out: fields(types.TInt64, count.Result, sum.Result)}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if got := drainCount(b, newHashAgg(newEnv(), n, source(cs))); got != 10000 {
			b.Fatalf("%d groups", got)
		}
	}
	reportRows(b, rows)
}

func BenchmarkHashJoin(b *testing.B) {
	const probe, build = 1 << 20, 1 << 16
	left := benchChunks(probe, build, 2)
	right := benchChunks(build, 1<<30, 3) // key column 0 of right is mostly unique...
	for _, c := range right {             // ...use the row number as key instead: one match per probe row.
		copy(c.Cols[0].I64, c.Cols[1].I64)
	}
	n := &plan.Join{Kind: plan.InnerJoin, EqLeft: []int{0}, EqRight: []int{0}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		j, err := newHashJoin(newEnv(), n, source(left), source(right))
		if err != nil {
			b.Fatal(err)
		}
		if got := drainCount(b, j); got != probe {
			b.Fatalf("%d rows", got)
		}
	}
	reportRows(b, probe+build)
}

func BenchmarkSort(b *testing.B) {
	const rows = 1 << 20
	cs := benchChunks(rows, 1<<30, 4)
	n := &plan.Sort{Keys: []plan.SortKey{{Col: 0}, {Col: 1, Desc: true}}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if got := drainCount(b, newSort(n, source(cs))); got != rows {
			b.Fatalf("%d rows", got)
		}
	}
	reportRows(b, rows)
}

func BenchmarkScan(b *testing.B) {
	const rows = 1 << 18
	s := memkv.New()
	defer s.Close()
	rel := &catalog.Relation{ID: catalog.FirstUserID, Schema: "public", Name: "t", Kind: catalog.KindTable, PK: []int{0},
		Columns: []catalog.Column{{Name: "id", Type: types.TInt64}, {Name: "v", Type: types.TInt64}}}
	ts := NewTableSet(s)
	tbl, err := ts.Table(rel)
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < rows; i++ {
		if err := tbl.Insert([]types.Datum{types.DInt(int64(i)), types.DInt(int64(i) * 7)}); err != nil {
			b.Fatal(err)
		}
	}
	var batch storage.Batch
	ts.Flush(1, &batch)
	if err := s.Commit(context.Background(), 1, &batch); err != nil {
		b.Fatal(err)
	}
	n := &plan.Scan{Table: rel, Out: fields(types.TInt64, types.TInt64)}
	env := &Env{Ctx: &expr.Ctx{}, Store: s, Epoch: 1}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		x, err := newScan(env, n)
		if err != nil {
			b.Fatal(err)
		}
		if got := drainCount(b, x); got != rows {
			b.Fatalf("%d rows", got)
		}
	}
	reportRows(b, rows)
}
