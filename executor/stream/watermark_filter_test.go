package stream

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage"
	"github.com/tributary/tributary/storage/memkv"
	"github.com/tributary/tributary/storage/state"
)

// wfNode is a watermark filter over (id int8, ts timestamp, split
// varchar) on ts with a delay, state table id 300.
func wfNode(t testing.TB, delay string) *plan.StreamWatermarkFilter {
	t.Helper()
	iv, err := types.ParseInterval(delay)
	if err != nil {
		t.Fatal(err)
	}
	in := &plan.StreamValues{Out: []plan.Field{{Name: "id", Type: types.TInt64}, {Name: "ts", Type: types.TTimestamp},
		{Name: "split", Type: types.TVarchar, Hidden: true}}, Key: []int{0}}
	n := &plan.StreamWatermarkFilter{Input: in, Col: 1, Delay: iv}
	st := n.StateLayouts()
	st[0].ID = 300
	n.SetState(st)
	return n
}

// wfBackfill is a backfill that is done when told.
type wfBackfill struct{ done bool }

func (b *wfBackfill) BackfillDone() bool { return b.done }

// wfHarness drives a watermark filter over a store, committing an epoch
// after every step.
type wfHarness struct {
	t     *testing.T
	ctx   context.Context
	kv    *memkv.Store
	node  *plan.StreamWatermarkFilter
	env   WatermarkEnv
	src   *agSource
	actx  *ActorContext
	exec  Executor
	epoch uint64
}

func newWFHarness(t *testing.T, delay string, env WatermarkEnv) *wfHarness {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	h := &wfHarness{t: t, ctx: ctx, kv: memkv.New(), node: wfNode(t, delay), env: env, epoch: 1 << 16}
	t.Cleanup(func() { h.kv.Close() })
	h.restart()
	return h
}

// restart rebuilds the filter over the committed store (as another actor).
func (h *wfHarness) restart() {
	h.src = &agSource{ts: []types.T{types.TInt64, types.TTimestamp, types.TVarchar}}
	id := ActorID(1)
	if h.actx != nil {
		id = h.actx.ID + 1
	}
	h.actx = &ActorContext{ID: id, Store: h.kv}
	e, err := NewWatermarkFilter(h.actx, h.node, h.src, h.env)
	if err != nil {
		h.t.Fatal(err)
	}
	h.exec = e
}

// rows queues a chunk of split (its message's Split) from "id ts [split]"
// lines (a row without a split names split).
func (h *wfHarness) rows(split, rows string) {
	h.t.Helper()
	text := " I TS T\n"
	for _, l := range strings.Split(strings.TrimSpace(rows), "\n") {
		f := strings.Fields(l)
		if len(f) == 2 && split == "" {
			f = append(f, ".") // a NULL split column: split ""
		} else if len(f) == 2 {
			f = append(f, split)
		}
		text += " + " + strings.Join(f, " ") + "\n"
	}
	h.src.msgs = append(h.src.msgs, Message{Chunk: stChunk(h.t, text), Split: split})
}

// step queues split's rows (see rows; none when rows is "") and a barrier,
// runs the filter to the barrier and commits its writes; it returns what it
// emitted: "+ id ts split" rows and "watermark ts" lines.
func (h *wfHarness) step(split, rows string) string {
	h.t.Helper()
	if rows != "" {
		h.rows(split, rows)
	}
	b := &Barrier{Epoch: Epoch{Prev: h.epoch, Curr: h.epoch + 1}, Checkpoint: true}
	h.epoch++
	h.src.msgs = append(h.src.msgs, BarrierMsg(b))
	var lines []string
	for {
		m, err := h.exec.Next(h.ctx)
		if err != nil {
			h.t.Fatal(err)
		}
		if m.Barrier != nil {
			break
		}
		if m.Watermark != nil {
			if m.Watermark.Col != 1 {
				h.t.Fatalf("watermark on column %d", m.Watermark.Col)
			}
			lines = append(lines, "watermark "+string(types.AppendText(nil, types.TTimestamp, &m.Watermark.Val)))
		}
		if m.Chunk != nil {
			for r := 0; r < m.Chunk.Len(); r++ {
				if m.Chunk.Visible(r) {
					lines = append(lines, "+ "+FormatRow(m.Chunk, r))
				}
			}
		}
	}
	h.actx.Flush(b.Epoch.Prev)
	var all storage.Batch
	if w := h.actx.TakeWrites(); w != nil {
		for j := 0; j < w.Len(); j++ {
			k, v, del := w.Entry(j)
			if del {
				all.Delete(k)
			} else {
				all.Put(k, v)
			}
		}
	}
	if err := h.kv.Commit(h.ctx, b.Epoch.Prev, &all); err != nil {
		h.t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// late is how many rows the filter dropped as late.
func (h *wfHarness) late() int64 { return h.exec.(*watermarkFilterExec).Late() }

// stored lists the committed state rows as "key ts" lines, keys named:
// "actor", "split <name>" for the names given, or the number.
func (h *wfHarness) stored(names ...string) string {
	h.t.Helper()
	st := h.node.State()[0]
	tab, err := state.New(h.kv, state.Schema{TableID: st.ID, Types: st.Types, PK: st.PK})
	if err != nil {
		h.t.Fatal(err)
	}
	var lines []string
	if err := eachRow(h.ctx, tab, func(row []types.Datum) {
		k := fmt.Sprint(row[0].I)
		switch {
		case row[0].I == actorKey:
			k = "actor"
		default:
			for _, n := range names {
				if splitKey(n) == row[0].I {
					k = "split " + n
				}
			}
		}
		lines = append(lines, k+" "+string(types.AppendText(nil, types.TTimestamp, &row[1])))
	}); err != nil {
		h.t.Fatal(err)
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

func wfWant(t *testing.T, what string, got, want string) {
	t.Helper()
	if got != strings.TrimSpace(want) {
		t.Errorf("%s:\ngot:\n%s\nwant:\n%s", what, got, want)
	}
}

// TestWatermarkFilter: one split's watermark is the greatest value seen
// less the delay, sent before the barrier when it rose, never falls; rows
// below it are dropped and counted; a restart resumes from the committed
// watermark.
func TestWatermarkFilter(t *testing.T) {
	h := newWFHarness(t, "5 seconds", WatermarkEnv{SplitCol: -1})
	wfWant(t, "first epoch", h.step("", `
		1 2024-01-01T10:00:10
		2 2024-01-01T10:00:03`), `
+ 1 2024-01-01 10:00:10 .
+ 2 2024-01-01 10:00:03 .
watermark 2024-01-01 10:00:05`)
	// 3 is late (below 10:00:05); 4 is at the watermark; the max stays
	// 10:00:10 so the watermark does not move.
	wfWant(t, "late row", h.step("", `
		3 2024-01-01T10:00:04
		4 2024-01-01T10:00:05`), `
+ 4 2024-01-01 10:00:05 .`)
	if got := h.late(); got != 1 {
		t.Errorf("late rows: got %d, want 1", got)
	}
	wfWant(t, "rise", h.step("", `5 2024-01-01T10:00:20`), `
+ 5 2024-01-01 10:00:20 .
watermark 2024-01-01 10:00:15`)
	wfWant(t, "no rows", h.step("", ""), "")
	// After a restart the committed watermark holds: 6 is late, and the
	// watermark is sent again at the first barrier.
	h.restart()
	wfWant(t, "after restart", h.step("", `
		6 2024-01-01T10:00:14
		7 2024-01-01T10:00:16`), `
+ 7 2024-01-01 10:00:16 .
watermark 2024-01-01 10:00:15`)
	if got := h.late(); got != 1 {
		t.Errorf("late rows after restart: got %d, want 1", got)
	}
	wfWant(t, "state", h.stored(""), `
actor 2024-01-01 10:00:15
split  2024-01-01 10:00:15`)
}

// TestWatermarkFilterSplits: each split (here its chunk's message's Split)
// has its own watermark, against which alone its rows are late; the
// actor's is the least of the splits that have sent a row, never falling;
// a restart (another actor: the splits' rows move with them) resumes every
// split's.
func TestWatermarkFilterSplits(t *testing.T) {
	h := newWFHarness(t, "5 seconds", WatermarkEnv{SplitCol: -1})
	wfWant(t, "split a", h.step("a", "1 2024-01-01T10:00:10"), `
+ 1 2024-01-01 10:00:10 a
watermark 2024-01-01 10:00:05`)
	// b starts behind a: its first rows are not late, and its watermark
	// (09:59:57) does not pull the actor's back.
	wfWant(t, "split b behind", h.step("b", "2 2024-01-01T10:00:02"), `
+ 2 2024-01-01 10:00:02 b`)
	h.rows("a", "3 2024-01-01T10:00:30")
	wfWant(t, "a runs ahead", h.step("b", "4 2024-01-01T10:00:01"), `
+ 3 2024-01-01 10:00:30 a
+ 4 2024-01-01 10:00:01 b`)
	// A single watermark over both splits (10:00:25) would have dropped 5:
	// only b's own (09:59:57) counts for it. 6 is late in a.
	h.rows("a", "6 2024-01-01T10:00:20")
	wfWant(t, "late per split", h.step("b", "5 2024-01-01T10:00:00"), `
+ 5 2024-01-01 10:00:00 b`)
	if got := h.late(); got != 1 {
		t.Errorf("late rows: got %d, want 1 (row 6)", got)
	}
	// b catches up past a: the actor's watermark is a's.
	wfWant(t, "b catches up", h.step("b", "7 2024-01-01T10:00:40"), `
+ 7 2024-01-01 10:00:40 b
watermark 2024-01-01 10:00:25`)
	wfWant(t, "state", h.stored("a", "b"), `
actor 2024-01-01 10:00:25
split a 2024-01-01 10:00:25
split b 2024-01-01 10:00:35`)
	h.restart()
	h.rows("a", "8 2024-01-01T10:00:26")
	wfWant(t, "after restart", h.step("b", "9 2024-01-01T10:00:30"), `
+ 8 2024-01-01 10:00:26 a
watermark 2024-01-01 10:00:25`)
	if got := h.late(); got != 1 {
		t.Errorf("late rows after restart: got %d, want 1 (row 9)", got)
	}
}

// TestWatermarkFilterSplitColumn: with a split column (a shared source's),
// each row's split is its own, whatever the chunk mixes.
func TestWatermarkFilterSplitColumn(t *testing.T) {
	h := newWFHarness(t, "1 second", WatermarkEnv{SplitCol: 2})
	wfWant(t, "two splits", h.step("", `
		1 2024-01-01T10:00:10 p0
		2 2024-01-01T10:00:05 p1
		3 2024-01-01T10:00:11 p0`), `
+ 1 2024-01-01 10:00:10 p0
+ 2 2024-01-01 10:00:05 p1
+ 3 2024-01-01 10:00:11 p0
watermark 2024-01-01 10:00:04`)
	wfWant(t, "late in p0 only", h.step("", `
		4 2024-01-01T10:00:06 p0
		5 2024-01-01T10:00:06 p1
		6 2024-01-01T10:00:03 p1`), `
+ 5 2024-01-01 10:00:06 p1
watermark 2024-01-01 10:00:05`)
	if got := h.late(); got != 2 {
		t.Errorf("late rows: got %d, want 2 (rows 4 and 6)", got)
	}
}

// TestWatermarkFilterBackfill: while the backfill below runs (rows in key
// order, not time order) no row is late and no watermark is sent; once it
// is done the watermark covers every row seen.
func TestWatermarkFilterBackfill(t *testing.T) {
	bf := &wfBackfill{}
	h := newWFHarness(t, "10 seconds", WatermarkEnv{SplitCol: -1, Backfill: bf})
	wfWant(t, "snapshot 1", h.step("", `
		1 2024-01-01T10:05:00
		2 2024-01-01T10:00:00`), `
+ 1 2024-01-01 10:05:00 .
+ 2 2024-01-01 10:00:00 .`)
	wfWant(t, "snapshot 2", h.step("", `
		3 2024-01-01T10:01:00
		4 2024-01-01T10:03:00`), `
+ 3 2024-01-01 10:01:00 .
+ 4 2024-01-01 10:03:00 .`)
	wfWant(t, "nothing recorded", h.stored(""), "")
	h.rows("", "5 2024-01-01T10:00:30")
	bf.done = true
	wfWant(t, "done", h.step("", "6 2024-01-01T10:04:00"), `
+ 5 2024-01-01 10:00:30 .
+ 6 2024-01-01 10:04:00 .
watermark 2024-01-01 10:04:50`)
	wfWant(t, "live", h.step("", "7 2024-01-01T10:04:49\n8 2024-01-01T10:05:10"), `
+ 8 2024-01-01 10:05:10 .
watermark 2024-01-01 10:05:00`)
	if got := h.late(); got != 1 {
		t.Errorf("late rows: got %d, want 1 (row 7)", got)
	}
}

// TestWatermarkFilterOldLayout: a state row of the layout before per-split
// watermarks (keyed by actor id) is the actor's watermark after an
// upgrade, sent at the first barrier, and is replaced by the actor's row.
func TestWatermarkFilterOldLayout(t *testing.T) {
	h := newWFHarness(t, "5 seconds", WatermarkEnv{SplitCol: -1})
	h.put(h.node.State()[0], 7, "2024-01-01 10:00:15")
	h.restart()
	wfWant(t, "upgraded", h.step("a", "1 2024-01-01T10:00:12"), `
+ 1 2024-01-01 10:00:12 a
watermark 2024-01-01 10:00:15`)
	wfWant(t, "state", h.stored("a"), `
actor 2024-01-01 10:00:15
split a 2024-01-01 10:00:07`)
}

// put commits a row (key, ts) of state table st in the next epoch.
func (h *wfHarness) put(st plan.StateTable, key int64, ts string) {
	h.t.Helper()
	tab, err := state.New(h.kv, state.Schema{TableID: st.ID, Types: st.Types, PK: st.PK})
	if err != nil {
		h.t.Fatal(err)
	}
	d, err := types.ParseText(types.TTimestamp, ts)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := tab.Insert([]types.Datum{types.DInt(key), d}); err != nil {
		h.t.Fatal(err)
	}
	var b storage.Batch
	tab.Flush(h.epoch, &b)
	if err := h.kv.Commit(h.ctx, h.epoch, &b); err != nil {
		h.t.Fatal(err)
	}
	h.epoch++
}

// TestWatermarkFilterCap: over a view, the watermark never rises above the
// one the view's job has committed as sent on (none before it has one), so
// a view row of a split behind the others is not late.
func TestWatermarkFilterCap(t *testing.T) {
	up := wfNode(t, "5 seconds").State()[0]
	up.ID = 301
	h := newWFHarness(t, "5 seconds", WatermarkEnv{SplitCol: -1, Cap: &up})
	wfWant(t, "no cap yet", h.step("", "1 2024-01-01T10:00:30"), `
+ 1 2024-01-01 10:00:30 .`)
	h.put(up, actorKey, "2024-01-01 10:00:10")
	wfWant(t, "capped", h.step("", "2 2024-01-01T10:00:12"), `
+ 2 2024-01-01 10:00:12 .
watermark 2024-01-01 10:00:10`)
	h.put(up, actorKey, "2024-01-01 10:01:00")
	wfWant(t, "own below the cap", h.step("", "3 2024-01-01T10:00:11"), `
+ 3 2024-01-01 10:00:11 .
watermark 2024-01-01 10:00:25`)
	if got := h.late(); got != 0 {
		t.Errorf("late rows: got %d, want 0", got)
	}
}

// TestMergeWatermarkMin: a merge emits a column's watermark as the least of
// its inputs' latest, once every input has one, and only when it rises.
func TestMergeWatermarkMin(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a, b := make(chan Message, 8), make(chan Message, 8)
	m := NewMerge([]types.T{types.TInt64}, []chan Message{a, b})
	wm := func(v int64) Message { return WatermarkMsg(&Watermark{Col: 0, Val: types.DInt(v)}) }
	bar := &Barrier{Epoch: Epoch{Prev: 1, Curr: 2}}
	a <- wm(10)
	a <- wm(20)
	b <- wm(15)
	b <- wm(12) // lower than its own last: ignored
	b <- wm(30)
	a <- BarrierMsg(bar)
	b <- BarrierMsg(bar)
	var got []string
	for {
		msg, err := m.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if msg.Barrier != nil {
			break
		}
		if msg.Watermark != nil {
			got = append(got, string(types.AppendText(nil, types.TInt64, &msg.Watermark.Val)))
		}
	}
	// Inputs are read in any order, but the emitted values only rise and
	// end at min(20, 30).
	if len(got) == 0 || got[len(got)-1] != "20" {
		t.Fatalf("watermarks %v: want a rising sequence ending at 20", got)
	}
	for i := 1; i < len(got); i++ {
		if got[i] <= got[i-1] && len(got[i]) == len(got[i-1]) {
			t.Fatalf("watermarks %v do not rise", got)
		}
	}
	for _, v := range got {
		if v == "30" {
			t.Fatalf("watermarks %v: %s is not a least of both inputs", got, v)
		}
	}
}

// BenchmarkWatermarkFilter measures the per-row path over 1,024-row chunks
// of four splits: named by the chunk's message, or by a split column with
// the rows of the splits interleaved (the worst case for the split cache).
func BenchmarkWatermarkFilter(b *testing.B) {
	for _, byCol := range []bool{false, true} {
		name := "message-split"
		if byCol {
			name = "split-column"
		}
		b.Run(name, func(b *testing.B) {
			env := WatermarkEnv{SplitCol: -1}
			if byCol {
				env.SplitCol = 2
			}
			n := wfNode(b, "5 seconds")
			kv := memkv.New()
			defer kv.Close()
			src := &agSource{ts: []types.T{types.TInt64, types.TTimestamp, types.TVarchar}}
			e, err := NewWatermarkFilter(&ActorContext{ID: 1, Store: kv}, n, src, env)
			if err != nil {
				b.Fatal(err)
			}
			wf := e.(*watermarkFilterExec)
			c := types.NewChunk(src.ts, 1024)
			base, _ := types.ParseText(types.TTimestamp, "2024-01-01 10:00:00")
			splits := []string{"0", "1", "2", "3"}
			for i := 0; i < 1024; i++ {
				c.AppendRowOp(types.OpInsert, []types.Datum{types.DInt(int64(i)), {I: base.I + int64(i)*1000}, types.DString(splits[i%4])})
			}
			for _, s := range splits {
				sp := wf.split(s)
				sp.wm, sp.hasWM = base, true
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if wf.filter(c, splits[i%4]) == nil {
					b.Fatal("every row was dropped")
				}
			}
			b.ReportMetric(float64(b.N)*1024/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
