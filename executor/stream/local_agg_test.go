package stream

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/types"
)

// localRun feeds msgs and a barrier to a local aggregation and returns what
// it sends before the barrier, one line per row or watermark.
func localRun(t *testing.T, e Executor, src *agSource, msgs ...Message) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b := &Barrier{Epoch: Epoch{Prev: 1, Curr: 2}}
	src.msgs = append(append(src.msgs, msgs...), BarrierMsg(b))
	var lines []string
	for {
		m, err := e.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case m.Barrier != nil:
			return strings.Join(lines, "\n")
		case m.Watermark != nil:
			lines = append(lines, "watermark $"+string(rune('0'+m.Watermark.Col))+" "+agDatumText(types.TInt64, &m.Watermark.Val))
		case m.Chunk != nil:
			for i := 0; i < m.Chunk.Len(); i++ {
				if m.Chunk.Op(i) != types.OpInsert {
					t.Fatalf("a partial row with op %v", m.Chunk.Op(i))
				}
				lines = append(lines, agRowText(m.Chunk, i))
			}
		}
	}
}

func newLocal(t *testing.T, in []types.T, groupBy []int, calls ...plan.AggCall) (*localAggExec, *agSource) {
	t.Helper()
	n := agNode(in, []int{0}, groupBy, calls...)
	local, _ := agTwoPhase(t, n)
	src := &agSource{ts: in}
	e, err := NewLocalAgg(local, src)
	if err != nil {
		t.Fatal(err)
	}
	return e.(*localAggExec), src
}

// TestLocalAggPartials: changes fold into one row per group (group, count,
// count(x), sum(x) as non-NULL count and sum, weight); a group whose changes
// cancel sends nothing; watermarks on a group column are renumbered and
// follow the partials; others are dropped.
func TestLocalAggPartials(t *testing.T) {
	in := []types.T{types.TInt64, types.TInt64, types.TInt32}
	e, src := newLocal(t, in, []int{1}, agCall(t, in, "count", false, -1), agCall(t, in, "sum", false, -1, 2))
	got := localRun(t, e, src, ChunkMsg(agParse(t, in, `
		+ 1 10 5
		+ 2 10 NULL
		+ 3 20 7
		- 3 20 7
		U- 4 30 1
		U+ 4 10 2
		+ 6 NULL 4
		!+ 9 10 100`)), WatermarkMsg(&Watermark{Col: 0, Val: types.DInt(5)}),
		ChunkMsg(agParse(t, in, "+ 5 40 3")), WatermarkMsg(&Watermark{Col: 1, Val: types.DInt(35)}))
	want := strings.Join([]string{
		"10 3 2 7 3", // rows 1, 2 and 4's new half: 3 rows, 2 non-NULL x summing 7
		"30 -1 -1 -1 -1",
		"NULL 1 1 4 1", // the NULL group
		"40 1 1 3 1",
		"watermark $0 35",
	}, "\n")
	if got != want {
		t.Fatalf("sent:\n%s\nwant:\n%s", got, want)
	}
	if got := localRun(t, e, src); got != "" {
		t.Fatalf("an empty epoch sent:\n%s", got)
	}
}

// TestLocalAggSumOverflow: a partial sum that would overflow is sent first
// and the row starts the group's partials again.
func TestLocalAggSumOverflow(t *testing.T) {
	in := []types.T{types.TInt64, types.TInt32}
	e, src := newLocal(t, in, nil, agCall(t, in, "sum", false, -1, 1))
	e.simple.used, e.simple.weight = true, 1
	e.simple.parts[0], e.simple.parts[1] = 1, math.MaxInt64-5
	got := localRun(t, e, src, ChunkMsg(agParse(t, in, "+ 1 10\n+ 2 -3")))
	want := "1 9223372036854775802 1\n2 7 2"
	if got != want {
		t.Fatalf("sent:\n%s\nwant:\n%s", got, want)
	}
}

// TestLocalAggInt8Sum: sums of int8 have partials too; a partial that would
// overflow is sent first, and a retraction of math.MinInt64 (whose negation
// is not an int8) goes as math.MaxInt64 and then a row adding 1, with no
// rows or counts. The partials add up to the exact sum and counts.
func TestLocalAggInt8Sum(t *testing.T) {
	in := []types.T{types.TInt64, types.TInt64}
	e, src := newLocal(t, in, nil, agCall(t, in, "count", false, -1), agCall(t, in, "sum", false, -1, 1))
	got := localRun(t, e, src, ChunkMsg(agParse(t, in, `
		+ 1 9223372036854775807
		+ 2 9223372036854775807
		- 3 -9223372036854775808
		+ 4 -9223372036854775808
		+ 5 3`)))
	want := strings.Join([]string{
		"1 1 9223372036854775807 1",    // row 1; row 2 would overflow it
		"1 1 9223372036854775807 1",    // row 2; row 3 would overflow it
		"-1 -1 9223372036854775807 -1", // row 3's -MinInt64 less 1
		"0 0 1 0",                      // and its last 1
		"2 2 -9223372036854775805 2",   // rows 4 and 5
	}, "\n")
	if got != want {
		t.Fatalf("sent:\n%s\nwant:\n%s", got, want)
	}
}

// TestLocalAggGroupBound: past maxGroups groups the partials go at the end
// of the chunk, not at the barrier only.
func TestLocalAggGroupBound(t *testing.T) {
	in := []types.T{types.TInt64, types.TInt64}
	e, src := newLocal(t, in, []int{1}, agCall(t, in, "count", false, -1))
	e.maxGroups = 2
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	src.msgs = append(src.msgs, ChunkMsg(agParse(t, in, "+ 1 1\n+ 2 2\n+ 3 3")), ChunkMsg(agParse(t, in, "+ 4 1")))
	m, err := e.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if m.Chunk == nil || m.Chunk.Len() != 3 || len(src.msgs) != 1 {
		t.Fatalf("after a chunk of 3 groups (bound 2): %+v, %d messages left", m, len(src.msgs))
	}
	if got := localRun(t, e, src); got != "1 1 1" {
		t.Fatalf("at the barrier: %q", got)
	}
}

// TestLocalAggPassThrough: once a send finds about as many groups as rows
// folded, chunks go out as one partial row each, with the partials fold
// would give that row alone (a retraction, a NULL argument, an invisible row
// skipped); every spreadSample-th chunk is folded again, and when its groups
// repeat folding goes on.
func TestLocalAggPassThrough(t *testing.T) {
	in := []types.T{types.TInt64, types.TInt64, types.TInt32}
	e, src := newLocal(t, in, []int{1}, agCall(t, in, "count", false, -1), agCall(t, in, "sum", false, -1, 2))
	rows := func(from, n int, group func(i int) int) string {
		var b strings.Builder
		for i := from; i < from+n; i++ {
			fmt.Fprintf(&b, "+ %d %d %d\n", i, group(i), i%7)
		}
		return b.String()
	}
	distinct := func(i int) int { return i }
	// 300 rows, 300 groups: the groups do not repeat.
	if got := localRun(t, e, src, ChunkMsg(agParse(t, in, rows(0, 300, distinct)))); strings.Count(got, "\n")+1 != 300 {
		t.Fatalf("the first epoch sent %d partial rows, want 300", strings.Count(got, "\n")+1)
	}
	if !e.spread {
		t.Fatal("300 groups of 300 rows: not spread")
	}
	got := localRun(t, e, src, ChunkMsg(agParse(t, in, `
		+ 1 10 5
		- 2 10 3
		+ 3 10 NULL
		!+ 4 10 9
		U- 5 20 4
		U+ 5 20 6`)))
	want := strings.Join([]string{
		"10 1 1 5 1",
		"10 -1 -1 -3 -1",
		"10 1 0 0 1",
		"20 -1 -1 -4 -1",
		"20 1 1 6 1",
	}, "\n")
	if got != want {
		t.Fatalf("passed through:\n%s\nwant:\n%s", got, want)
	}
	if e.passed != 1 {
		t.Fatalf("%d chunks passed through, want 1", e.passed)
	}
	// Chunks of ten groups repeating: the sampled chunk folds them, and the
	// next send ends the pass-through.
	var msgs []Message
	for k := range spreadSample {
		msgs = append(msgs, ChunkMsg(agParse(t, in, rows(1000+k*300, 300, func(i int) int { return i % 10 }))))
	}
	got = localRun(t, e, src, msgs...)
	if n := strings.Count(got, "\n") + 1; n != (spreadSample-1)*300+10 {
		t.Fatalf("sent %d partial rows, want %d passed through and 10 folded", n, (spreadSample-1)*300)
	}
	if e.spread {
		t.Fatal("300 rows of 10 groups folded: still spread")
	}
	got = localRun(t, e, src, ChunkMsg(agParse(t, in, rows(9000, 300, func(i int) int { return i % 10 }))))
	if n := strings.Count(got, "\n") + 1; n != 10 {
		t.Fatalf("after the pass-through ended: %d partial rows, want 10", n)
	}
}
