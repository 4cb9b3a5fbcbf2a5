package stream

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/tributary/tributary/e2e/testseed"
	"github.com/tributary/tributary/executor/window"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage/badger"
	"github.com/tributary/tributary/storage/memkv"
)

// owNode is an over-window over (id, k, t, x) keyed by id, partitioned by k
// and ordered by t: lag(x), sum(x) ROWS 1 PRECEDING .. CURRENT ROW and
// row_number().
func owNode(t testing.TB) *plan.StreamOverWindow {
	t.Helper()
	in := stFields(types.TInt64, types.TInt64, types.TInt64, types.TInt64)
	sum, err := expr.LookupAgg("sum", []types.T{types.TInt64}, false)
	if err != nil {
		t.Fatal(err)
	}
	part, order := []int{1}, []plan.SortKey{{Col: 2}}
	rows1 := plan.Frame{Mode: plan.FrameRows, Start: plan.FrameBound{Kind: plan.OffsetPreceding, Offset: 1}, End: plan.FrameBound{Kind: plan.CurrentRow}}
	n := &plan.StreamOverWindow{
		Input: &plan.StreamValues{Out: in, Key: []int{0}},
		Funcs: []plan.WindowFunc{
			{Name: "lag", Args: []int{3}, PartitionBy: part, OrderBy: order, Type: types.TInt64},
			{Name: "sum", Agg: sum, Args: []int{3}, PartitionBy: part, OrderBy: order, Frame: rows1, Type: sum.Result},
			{Name: "row_number", PartitionBy: part, OrderBy: order, Type: types.TInt64},
		},
	}
	n.Out = append(slices.Clone(in), stFields(types.TInt64, sum.Result, types.TInt64)...)
	st := n.StateLayouts()
	st[0].ID = 100
	n.SetState(st)
	return n
}

func owRun(t testing.TB, actx *ActorContext, set *RowSet, msgs ...Message) []string {
	t.Helper()
	n := owNode(t)
	e, err := NewOverWindow(actx, n, NewMockSource(plan.Types(n.Input.Schema()), msgs...))
	if err != nil {
		t.Fatal(err)
	}
	return stDrive(t, e, actx, set)
}

func TestOverWindow(t *testing.T) {
	kv := memkv.New()
	actx := stActx(kv)
	set := NewRowSet([]int{0, 1})
	snaps := owRun(t, actx, set,
		stBarrier(1, 2),
		ChunkMsg(stChunk(t, `
			I I I I
			+ 1 1 10 100
			+ 2 1 20 200
			+ 3 2 5 7
			+ 9 2 6 9 D`)),
		stBarrier(2, 3),
		// A row in the middle of a partition; a partition emptied.
		ChunkMsg(stChunk(t, `
			I I I I
			+ 4 1 15 150
			- 3 2 5 7`)),
		stBarrier(3, 4),
		// A row moving to another partition; changes that cancel out.
		ChunkMsg(stChunk(t, `
			 I I I I
			U- 1 1 10 100
			U+ 1 2 10 100
			 + 5 1 1 1`)),
		ChunkMsg(stChunk(t, `
			I I I I
			- 5 1 1 1`)),
		stStop(4, 5, 1))
	stWant(t, snaps, "", `
		1 1 10 100 . 100 1
		2 1 20 200 100 300 2
		3 2 5 7 . 7 1`, `
		1 1 10 100 . 100 1
		2 1 20 200 150 350 3
		4 1 15 150 100 250 2`, `
		1 2 10 100 . 100 1
		2 1 20 200 150 350 2
		4 1 15 150 . 150 1`)

	// A new executor on the same store (a restart) finds the partitions in
	// state: inserting before row 4 changes rows 4 and 2 only.
	var out []string
	n := owNode(t)
	e, err := NewOverWindow(stActx(kv), n, NewMockSource(plan.Types(n.Input.Schema()),
		ChunkMsg(stChunk(t, "I I I I\n+ 6 1 12 10")), stStop(5, 6, 1)))
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := Collect(stCtx(t), e, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if m.Chunk != nil {
			out = append(out, strings.TrimSpace(FormatChunk(m.Chunk)))
		}
	}
	want := "+ 6 1 12 10 . 10 1\nU- 4 1 15 150 . 150 1\nU+ 4 1 15 150 10 160 2\nU- 2 1 20 200 150 350 2\nU+ 2 1 20 200 150 350 3"
	if got := strings.Join(out, "\n"); got != want {
		t.Errorf("after restart:\n%s\nwant:\n%s", got, want)
	}
}

// TestOverWindowRandom applies random inserts, updates and deletes over a
// few partitions, with a cache of a few rows (partitions are evicted and
// read back), and checks the view after every barrier against the window
// functions computed directly.
func TestOverWindowRandom(t *testing.T) {
	seed := testseed.For(t)
	rng := rand.New(rand.NewPCG(seed, 0))
	kv := memkv.New()
	actx := stActx(kv)
	actx.CacheRows = 6
	type row struct{ k, t, x int64 }
	cur := map[int64]row{}
	var msgs []Message
	var wants []string
	epoch := uint64(1)
	msgs = append(msgs, stBarrier(epoch, epoch+1))
	for step := 0; step < 40; step++ {
		var b strings.Builder
		b.WriteString("I I I I\n")
		for range 1 + rng.IntN(6) {
			id := int64(rng.IntN(20))
			nr := row{k: int64(rng.IntN(4)), t: int64(rng.IntN(8)), x: int64(rng.IntN(100))}
			old, ok := cur[id]
			switch {
			case !ok:
				fmt.Fprintf(&b, "+ %d %d %d %d\n", id, nr.k, nr.t, nr.x)
				cur[id] = nr
			case rng.IntN(2) == 0:
				fmt.Fprintf(&b, "- %d %d %d %d\n", id, old.k, old.t, old.x)
				delete(cur, id)
			default:
				fmt.Fprintf(&b, "U- %d %d %d %d\nU+ %d %d %d %d\n", id, old.k, old.t, old.x, id, nr.k, nr.t, nr.x)
				cur[id] = nr
			}
		}
		msgs = append(msgs, ChunkMsg(stChunk(t, b.String())))
		epoch++
		if step == 39 {
			msgs = append(msgs, stStop(epoch, epoch+1, 1))
		} else {
			msgs = append(msgs, stBarrier(epoch, epoch+1))
		}
		// The expected view: per partition in (t, id) order.
		ids := make([]int64, 0, len(cur))
		for id := range cur {
			ids = append(ids, id)
		}
		slices.SortFunc(ids, func(a, b int64) int {
			ra, rb := cur[a], cur[b]
			if ra.k != rb.k {
				return int(ra.k - rb.k)
			}
			if ra.t != rb.t {
				return int(ra.t - rb.t)
			}
			return int(a - b)
		})
		var lines []string
		for i, id := range ids {
			r := cur[id]
			first := i == 0 || cur[ids[i-1]].k != r.k
			rn := 1
			for j := i - 1; j >= 0 && cur[ids[j]].k == r.k; j-- {
				rn++
			}
			lag, sum := ".", fmt.Sprint(r.x)
			if !first {
				p := cur[ids[i-1]]
				lag, sum = fmt.Sprint(p.x), fmt.Sprint(p.x+r.x)
			}
			lines = append(lines, fmt.Sprintf("%d %d %d %d %s %s %d", id, r.k, r.t, r.x, lag, sum, rn))
		}
		slices.Sort(lines)
		wants = append(wants, strings.Join(lines, "\n"))
	}
	snaps := owRun(t, actx, NewRowSet([]int{0, 1}), msgs...)
	stWant(t, snaps, append([]string{""}, wants...)...)
}

// BenchmarkStreamOverWindow: lag(x) and sum(x) ROWS 1 PRECEDING over
// partitions of (id, g, x) ordered by id, b.N inserted rows spread over
// 1000 partitions, a barrier (flush and Badger commit) every 4096 rows;
// reports input rows/s, with the default cache (65,536 rows) and one holding
// every row. Appends recompute only the partitions' tails, but a partition
// read back from state is computed whole, so beyond the cache the cost per
// row grows with the partition size (b.N / 1000).
func BenchmarkStreamOverWindow(b *testing.B) {
	for _, cache := range []int{0, 1 << 21} {
		b.Run(fmt.Sprintf("cache=%d", cache), func(b *testing.B) { owBench(b, cache) })
	}
}

func owBench(b *testing.B, cacheRows int) {
	total := max(b.N, 1)
	kv, err := badger.Open(badger.Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer kv.Close()
	sum, err := expr.LookupAgg("sum", []types.T{types.TInt64}, false)
	if err != nil {
		b.Fatal(err)
	}
	part, order := []int{1}, []plan.SortKey{{Col: 0}}
	rows1 := plan.Frame{Mode: plan.FrameRows, Start: plan.FrameBound{Kind: plan.OffsetPreceding, Offset: 1}, End: plan.FrameBound{Kind: plan.CurrentRow}}
	in := stFields(agGenTypes...)
	n := &plan.StreamOverWindow{
		Input: &plan.StreamValues{Out: in, Key: []int{0}},
		Funcs: []plan.WindowFunc{
			{Name: "lag", Args: []int{2}, PartitionBy: part, OrderBy: order, Type: types.TInt64},
			{Name: "sum", Agg: sum, Args: []int{2}, PartitionBy: part, OrderBy: order, Frame: rows1, Type: sum.Result},
		},
		Out: append(slices.Clone(in), stFields(types.TInt64, sum.Result)...),
	}
	st := n.StateLayouts()
	st[0].ID = 100
	n.SetState(st)
	actx := &ActorContext{ID: 1, Store: kv, CacheRows: cacheRows}
	src := &agGenSource{total: total, perEpoch: 4096, groups: 1000, epoch: kv.CommittedEpoch() + 1, stop: actx.ID}
	b.ReportAllocs()
	b.ResetTimer()
	e, err := NewOverWindow(actx, n, src)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	out := 0
	for {
		m, err := e.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
		if m.Chunk != nil {
			out += m.Chunk.Len()
		}
		if m.Barrier != nil {
			actx.Flush(m.Barrier.Epoch.Prev)
			if err := kv.Commit(ctx, m.Barrier.Epoch.Prev, actx.TakeWrites()); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	if out != total {
		b.Fatalf("%d output rows, want %d (appends change no earlier row)", out, total)
	}
	b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "rows/s")
}

// TestOverWindowRandomFrames is TestOverWindowRandom over functions whose
// outputs reach after the current row (lead, a peer-group frame, a ROWS
// frame ending after the row; not ntile, which reads the whole partition and
// so always recomputes it), checked
// against window.Func over each whole partition: the incremental recompute
// (from the first row that can change) must agree with a full one.
func TestOverWindowRandomFrames(t *testing.T) {
	seed := testseed.For(t)
	rng := rand.New(rand.NewPCG(seed, 1))
	sum, err := expr.LookupAgg("sum", []types.T{types.TInt64}, false)
	if err != nil {
		t.Fatal(err)
	}
	count, err := expr.LookupAgg("count", nil, false)
	if err != nil {
		t.Fatal(err)
	}
	// Input (id, k, t, x, two): lead's offset is the constant column two.
	in := stFields(types.TInt64, types.TInt64, types.TInt64, types.TInt64, types.TInt64)
	part, order := []int{1}, []plan.SortKey{{Col: 2}}
	next1 := plan.Frame{Mode: plan.FrameRows, Start: plan.FrameBound{Kind: plan.CurrentRow}, End: plan.FrameBound{Kind: plan.OffsetFollowing, Offset: 1}}
	funcs := []plan.WindowFunc{
		{Name: "sum", Agg: sum, Args: []int{3}, PartitionBy: part, OrderBy: order, Frame: plan.DefaultFrame(), Type: sum.Result},
		{Name: "lead", Args: []int{3, 4}, PartitionBy: part, OrderBy: order, Type: types.TInt64},
		{Name: "count", Agg: count, PartitionBy: part, OrderBy: order, Frame: next1, Type: count.Result},
		{Name: "rank", PartitionBy: part, OrderBy: order, Type: types.TInt64},
	}
	n := &plan.StreamOverWindow{Input: &plan.StreamValues{Out: in, Key: []int{0}}, Funcs: funcs, Out: slices.Clone(in)}
	var fns []*window.Func
	for _, f := range funcs {
		n.Out = append(n.Out, plan.Field{Name: f.Name, Type: f.Type})
		fn, err := window.New(f, plan.Types(in))
		if err != nil {
			t.Fatal(err)
		}
		fns = append(fns, fn)
	}
	st := n.StateLayouts()
	st[0].ID = 100
	n.SetState(st)

	type row struct{ k, t, x int64 }
	cur := map[int64]row{}
	msgs := []Message{stBarrier(1, 2)}
	var wants []string
	for step := 0; step < 60; step++ {
		var b strings.Builder
		b.WriteString("I I I I I\n")
		for range 1 + rng.IntN(4) {
			id := int64(rng.IntN(24))
			// Mostly appends at a partition's end (t grows with step), some anywhere.
			nr := row{k: int64(rng.IntN(2)), t: int64(step / 4), x: int64(rng.IntN(50))}
			if rng.IntN(4) == 0 {
				nr.t = int64(rng.IntN(step + 1))
			}
			old, ok := cur[id]
			switch {
			case !ok:
				fmt.Fprintf(&b, "+ %d %d %d %d 2\n", id, nr.k, nr.t, nr.x)
				cur[id] = nr
			case rng.IntN(3) == 0:
				fmt.Fprintf(&b, "- %d %d %d %d 2\n", id, old.k, old.t, old.x)
				delete(cur, id)
			default:
				fmt.Fprintf(&b, "U- %d %d %d %d 2\nU+ %d %d %d %d 2\n", id, old.k, old.t, old.x, id, nr.k, nr.t, nr.x)
				cur[id] = nr
			}
		}
		msgs = append(msgs, ChunkMsg(stChunk(t, b.String())))
		if step == 59 {
			msgs = append(msgs, stStop(uint64(step+2), uint64(step+3), 1))
		} else {
			msgs = append(msgs, stBarrier(uint64(step+2), uint64(step+3)))
		}
		// Expected: each partition in (t, id) order, computed whole.
		byPart := map[int64][][]types.Datum{}
		ids := make([]int64, 0, len(cur))
		for id := range cur {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		for _, id := range ids {
			r := cur[id]
			byPart[r.k] = append(byPart[r.k], []types.Datum{types.DInt(id), types.DInt(r.k), types.DInt(r.t), types.DInt(r.x), types.DInt(2)})
		}
		var lines []string
		for _, p := range byPart {
			slices.SortStableFunc(p, func(a, b []types.Datum) int { return int(a[2].I - b[2].I) })
			outs := make([][]types.Datum, len(fns))
			for f, fn := range fns {
				outs[f] = make([]types.Datum, len(p))
				if err := fn.Eval(p, outs[f]); err != nil {
					t.Fatal(err)
				}
			}
			for i, r := range p {
				c := types.NewChunk(plan.Types(n.Out), 1)
				c.AppendRowOp(types.OpInsert, append(slices.Clone(r), outs[0][i], outs[1][i], outs[2][i], outs[3][i]))
				lines = append(lines, FormatRow(c, 0))
			}
		}
		slices.Sort(lines)
		wants = append(wants, strings.Join(lines, "\n"))
	}
	actx := stActx(memkv.New())
	actx.CacheRows = 20 // partitions are evicted and read back now and then
	e, err := NewOverWindow(actx, n, NewMockSource(plan.Types(in), msgs...))
	if err != nil {
		t.Fatal(err)
	}
	snaps := stDrive(t, e, actx, NewRowSet([]int{0, 1}))
	stWant(t, snaps, append([]string{""}, wants...)...)
}

// TestOverWindowEmitOnWindowClose: rows are emitted once, when the rows
// their functions read (lead: the next one) are below the watermark, and a
// new executor on the same store (a restart) goes on from the progress kept.
func TestOverWindowEmitOnWindowClose(t *testing.T) {
	in := stFields(types.TInt64, types.TInt64, types.TInt64) // id, t, x
	order := []plan.SortKey{{Col: 1}}
	n := &plan.StreamOverWindow{
		Input: &plan.StreamValues{Out: in, Key: []int{0}},
		Funcs: []plan.WindowFunc{
			{Name: "lag", Args: []int{2}, OrderBy: order, Type: types.TInt64},
			{Name: "lead", Args: []int{2}, OrderBy: order, Type: types.TInt64},
		},
		Out:               append(slices.Clone(in), stFields(types.TInt64, types.TInt64)...),
		EmitOnWindowClose: true,
	}
	st := n.StateLayouts()
	if len(st) != 2 {
		t.Fatalf("%d state tables, want 2", len(st))
	}
	st[0].ID, st[1].ID = 100, 101
	n.SetState(st)
	wm := func(v int64) Message { return WatermarkMsg(&Watermark{Col: 1, Val: types.DInt(v)}) }
	run := func(kv *memkv.Store, msgs ...Message) string {
		t.Helper()
		actx := stActx(kv)
		e, err := NewOverWindow(actx, n, NewMockSource(plan.Types(in), msgs...))
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		ctx := stCtx(t)
		for {
			m, err := e.Next(ctx)
			if err == io.EOF {
				return strings.Join(out, "")
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.Chunk != nil {
				out = append(out, FormatChunk(m.Chunk))
			}
			if m.Barrier != nil {
				actx.Flush(m.Barrier.Epoch.Prev)
				if err := kv.Commit(ctx, m.Barrier.Epoch.Prev, actx.TakeWrites()); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	kv := memkv.New()
	got := run(kv, stBarrier(1, 2),
		ChunkMsg(stChunk(t, "I I I\n+ 1 1 10\n+ 2 2 20\n+ 3 3 30")), wm(3), stBarrier(2, 3),
		stStop(3, 4, 1))
	if want := "+ 1 1 10 . 20\n"; got != want {
		t.Errorf("first run:\n%swant:\n%s", got, want)
	}
	got = run(kv, ChunkMsg(stChunk(t, "I I I\n+ 4 4 40")), wm(5), stStop(4, 5, 1))
	if want := "+ 2 2 20 10 30\n+ 3 3 30 20 40\n"; got != want {
		t.Errorf("after restart:\n%swant:\n%s", got, want)
	}
	// A delete cannot reach it (its input is append-only): an error.
	actx := stActx(memkv.New())
	e, err := NewOverWindow(actx, n, NewMockSource(plan.Types(in), ChunkMsg(stChunk(t, "I I I\n- 1 1 10"))))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Next(stCtx(t)); err == nil {
		t.Error("a delete was accepted")
	}
}
