package stream

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage"
	"github.com/tributary/tributary/storage/memkv"
)

// wfNode is a watermark filter over (id int8, ts timestamp) on ts with a
// delay, state table id 300.
func wfNode(t testing.TB, delay string) *plan.StreamWatermarkFilter {
	t.Helper()
	iv, err := types.ParseInterval(delay)
	if err != nil {
		t.Fatal(err)
	}
	in := &plan.StreamValues{Out: []plan.Field{{Name: "id", Type: types.TInt64}, {Name: "ts", Type: types.TTimestamp}}, Key: []int{0}}
	n := &plan.StreamWatermarkFilter{Input: in, Col: 1, Delay: iv}
	st := n.StateLayouts()
	st[0].ID = 300
	n.SetState(st)
	return n
}

// wfHarness drives watermark filters (one per actor) over one store,
// committing an epoch after every step.
type wfHarness struct {
	t     *testing.T
	ctx   context.Context
	kv    *memkv.Store
	node  *plan.StreamWatermarkFilter
	srcs  []*agSource
	actxs []*ActorContext
	execs []Executor
	epoch uint64
}

func newWFHarness(t *testing.T, delay string, actors int) *wfHarness {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	h := &wfHarness{t: t, ctx: ctx, kv: memkv.New(), node: wfNode(t, delay), epoch: 1 << 16}
	t.Cleanup(func() { h.kv.Close() })
	h.srcs = make([]*agSource, actors)
	h.actxs = make([]*ActorContext, actors)
	h.execs = make([]Executor, actors)
	h.restart()
	return h
}

// restart rebuilds every actor's filter over the committed store.
func (h *wfHarness) restart() {
	for i := range h.execs {
		h.srcs[i] = &agSource{ts: []types.T{types.TInt64, types.TTimestamp}}
		h.actxs[i] = &ActorContext{ID: ActorID(i + 1), Store: h.kv}
		e, err := NewWatermarkFilter(h.actxs[i], h.node, h.srcs[i])
		if err != nil {
			h.t.Fatal(err)
		}
		h.execs[i] = e
	}
}

// step feeds actor a the rows ("id ts" lines) and then every actor a
// barrier; it returns what each actor emitted: "+ id ts" rows and
// "watermark ts" lines.
func (h *wfHarness) step(a int, rows string) []string {
	h.t.Helper()
	if rows != "" {
		text := " I TS\n"
		for _, l := range strings.Split(strings.TrimSpace(rows), "\n") {
			text += " + " + strings.TrimSpace(l) + "\n"
		}
		h.srcs[a].msgs = append(h.srcs[a].msgs, ChunkMsg(stChunk(h.t, text)))
	}
	b := &Barrier{Epoch: Epoch{Prev: h.epoch, Curr: h.epoch + 1}, Checkpoint: true}
	h.epoch++
	out := make([]string, len(h.execs))
	for i, e := range h.execs {
		h.srcs[i].msgs = append(h.srcs[i].msgs, BarrierMsg(b))
		var lines []string
		for {
			m, err := e.Next(h.ctx)
			if err != nil {
				h.t.Fatalf("actor %d: %v", i, err)
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
		out[i] = strings.Join(lines, "\n")
		h.actxs[i].Flush(b.Epoch.Prev)
	}
	// Every actor's writes commit together, as the coordinator commits an epoch.
	var all storage.Batch
	for _, actx := range h.actxs {
		w := actx.TakeWrites()
		if w == nil {
			continue
		}
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
	return out
}

func wfWant(t *testing.T, what string, got, want string) {
	t.Helper()
	if got != strings.TrimSpace(want) {
		t.Errorf("%s:\ngot:\n%s\nwant:\n%s", what, got, want)
	}
}

// TestWatermarkFilter: the watermark is the greatest value seen less the
// delay, sent before the barrier when it rose, never falls; rows below it
// are dropped and counted; a restart resumes from the committed watermark.
func TestWatermarkFilter(t *testing.T) {
	h := newWFHarness(t, "5 seconds", 1)
	wfWant(t, "first epoch", h.step(0, `
		1 2024-01-01T10:00:10
		2 2024-01-01T10:00:03`)[0], `
+ 1 2024-01-01 10:00:10
+ 2 2024-01-01 10:00:03
watermark 2024-01-01 10:00:05`)
	// 3 is late (below 10:00:05); 4 is at the watermark; the max stays
	// 10:00:10 so the watermark does not move.
	wfWant(t, "late row", h.step(0, `
		3 2024-01-01T10:00:04
		4 2024-01-01T10:00:05`)[0], `
+ 4 2024-01-01 10:00:05`)
	if got := h.execs[0].(*watermarkFilterExec).Late(); got != 1 {
		t.Errorf("late rows: got %d, want 1", got)
	}
	wfWant(t, "rise", h.step(0, `5 2024-01-01T10:00:20`)[0], `
+ 5 2024-01-01 10:00:20
watermark 2024-01-01 10:00:15`)
	wfWant(t, "no rows", h.step(0, "")[0], "")
	// After a restart the committed watermark holds: 6 is late, and the
	// watermark is sent again at the first barrier.
	h.restart()
	wfWant(t, "after restart", h.step(0, `
		6 2024-01-01T10:00:14
		7 2024-01-01T10:00:16`)[0], `
+ 7 2024-01-01 10:00:16
watermark 2024-01-01 10:00:15`)
	if got := h.execs[0].(*watermarkFilterExec).Late(); got != 1 {
		t.Errorf("late rows after restart: got %d, want 1", got)
	}
}

// TestWatermarkFilterActors: every actor takes the greatest watermark any
// actor has committed, so an idle actor's watermark follows the busy one's
// (one epoch behind) and its own late rows are dropped against it.
func TestWatermarkFilterActors(t *testing.T) {
	h := newWFHarness(t, "1 second", 2)
	out := h.step(0, "1 2024-01-01T10:00:10")
	wfWant(t, "actor 0", out[0], "+ 1 2024-01-01 10:00:10\nwatermark 2024-01-01 10:00:09")
	// Actor 1 sees actor 0's watermark once it is committed: at the next barrier.
	wfWant(t, "actor 1", out[1], "")
	out = h.step(1, "2 2024-01-01T10:00:08")
	wfWant(t, "actor 1 follows", out[1], "+ 2 2024-01-01 10:00:08\nwatermark 2024-01-01 10:00:09")
	out = h.step(1, "3 2024-01-01T10:00:08\n4 2024-01-01T10:00:09")
	wfWant(t, "actor 1 late", out[1], "+ 4 2024-01-01 10:00:09")
	wfWant(t, "actor 0 idle", out[0], "")
	if got := h.execs[1].(*watermarkFilterExec).Late(); got != 1 {
		t.Errorf("actor 1 late rows: got %d, want 1", got)
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
