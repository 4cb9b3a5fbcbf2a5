package batch

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tributary/tributary/e2e/testseed"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/types"
)

// tsChunk builds an (int8, timestamp) chunk from "id time" lines, time as
// "2024-01-01T00:00:05" or NULL.
func tsChunk(t *testing.T, text string) *types.Chunk {
	t.Helper()
	ts := []types.T{types.TInt64, types.TTimestamp}
	c := types.NewChunk(ts, 8)
	for _, line := range splitLines(text) {
		f := strings.Fields(line)
		row := make([]types.Datum, 2)
		for i := range f {
			if f[i] == "NULL" {
				row[i] = types.NullDatum
				continue
			}
			d, err := types.ParseText(ts[i], strings.ReplaceAll(f[i], "T", " "))
			if err != nil {
				t.Fatal(err)
			}
			row[i] = d
		}
		c.AppendRow(row)
	}
	return c
}

func hopNode(slide, size int64) *plan.HopWindow {
	return &plan.HopWindow{TimeCol: 1,
		Slide: types.IntervalValue{Micros: slide}, Size: types.IntervalValue{Micros: size},
		Out: fields(types.TInt64, types.TTimestamp, types.TTimestamp, types.TTimestamp)}
}

func TestHopWindow(t *testing.T) {
	const sec = int64(1_000_000)
	c := tsChunk(t, `
1 2024-01-01T00:00:05
2 2024-01-01T00:00:10
3 NULL
4 1969-12-31T23:59:59
5 2024-01-01T00:00:14.999999`)
	c.Vis = []bool{true, true, true, true, true}
	tumble := newHopWindow(hopNode(10*sec, 10*sec), &chunkSource{ts: c.Types(), chunks: []*types.Chunk{c}})
	got, err := collect(t, tumble)
	if err != nil {
		t.Fatal(err)
	}
	expectRows(t, got, `
1 2024-01-01 00:00:05 2024-01-01 00:00:00 2024-01-01 00:00:10
2 2024-01-01 00:00:10 2024-01-01 00:00:10 2024-01-01 00:00:20
4 1969-12-31 23:59:59 1969-12-31 23:59:50 1970-01-01 00:00:00
5 2024-01-01 00:00:14.999999 2024-01-01 00:00:10 2024-01-01 00:00:20`)

	c.Vis = []bool{false, true, true, true, true}
	hop := newHopWindow(hopNode(5*sec, 15*sec), &chunkSource{ts: c.Types(), chunks: []*types.Chunk{c}})
	got, err = collect(t, hop)
	if err != nil {
		t.Fatal(err)
	}
	expectRows(t, got, `
2 2024-01-01 00:00:10 2024-01-01 00:00:00 2024-01-01 00:00:15
2 2024-01-01 00:00:10 2024-01-01 00:00:05 2024-01-01 00:00:20
2 2024-01-01 00:00:10 2024-01-01 00:00:10 2024-01-01 00:00:25
4 1969-12-31 23:59:59 1969-12-31 23:59:45 1970-01-01 00:00:00
4 1969-12-31 23:59:59 1969-12-31 23:59:50 1970-01-01 00:00:05
4 1969-12-31 23:59:59 1969-12-31 23:59:55 1970-01-01 00:00:10
5 2024-01-01 00:00:14.999999 2024-01-01 00:00:00 2024-01-01 00:00:15
5 2024-01-01 00:00:14.999999 2024-01-01 00:00:05 2024-01-01 00:00:20
5 2024-01-01 00:00:14.999999 2024-01-01 00:00:10 2024-01-01 00:00:25`)
}

// TestHopWindowManyChunks checks expansion across output chunk boundaries
// against a direct count: every row lands in size/slide windows, each
// containing its time.
func TestHopWindowManyChunks(t *testing.T) {
	seed := testseed.For(t)
	rng := rand.New(rand.NewPCG(seed, 0))
	var chunks []*types.Chunk
	rows := 0
	for range 5 {
		c := types.NewChunk([]types.T{types.TInt64, types.TTimestamp}, 700)
		for range 700 {
			c.AppendRow([]types.Datum{types.DInt(int64(rows)), types.DInt(rng.Int64N(1e12) - 5e11)})
			rows++
		}
		chunks = append(chunks, c)
	}
	const slide, size = 7_000, 49_000
	x := newHopWindow(hopNode(slide, size), &chunkSource{ts: chunks[0].Types(), chunks: chunks})
	ctx := testCtx(t)
	seen := map[string]bool{}
	perRow := map[int64]int{}
	for {
		c, err := x.Next(ctx)
		if err != nil {
			break
		}
		if c.Len() > types.DefaultChunkSize {
			t.Fatalf("chunk of %d rows", c.Len())
		}
		for i := 0; i < c.Len(); i++ {
			id, ts, start, end := c.Cols[0].I64[i], c.Cols[1].I64[i], c.Cols[2].I64[i], c.Cols[3].I64[i]
			if start%slide != 0 || end-start != size || ts < start || ts >= end {
				t.Fatalf("row %d time %d in window [%d, %d)", id, ts, start, end)
			}
			k := fmt.Sprint(id, start)
			if seen[k] {
				t.Fatalf("row %d window %d twice", id, start)
			}
			seen[k] = true
			perRow[id]++
		}
	}
	x.Close()
	for id := range int64(rows) {
		if perRow[id] != size/slide {
			t.Fatalf("row %d in %d windows, want %d", id, perRow[id], size/slide)
		}
	}
}
