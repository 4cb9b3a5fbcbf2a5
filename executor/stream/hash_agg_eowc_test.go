package stream

import (
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage/state"
)

// eowcNode: (w int8, k int8, v int8) grouped by (w, k) with count(*) and
// max(v) (which keeps an extra table), emitting on window close of w.
func eowcHarness(t *testing.T) *agHarness {
	in := []types.T{types.TInt64, types.TInt64, types.TInt64}
	n := agNode(in, nil, []int{0, 1}, agCall(t, in, "count", false, -1), agCall(t, in, "max", false, -1, 2))
	n.EmitOnWindowClose, n.WindowCol = true, 0
	return newAGHarness(t, n, 2)
}

// stateRows counts the rows of every state table of h's aggregation.
func (h *agHarness) stateRows() int {
	h.t.Helper()
	x := h.exec.(*aggExec)
	n := 0
	for _, tb := range append([]*state.Table{x.run.state}, x.run.tables...) {
		it, err := tb.Iter(h.ctx, state.IterOptions{Vnode: state.AllVnodes})
		if err != nil {
			h.t.Fatal(err)
		}
		for {
			err := it.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				h.t.Fatal(err)
			}
			n++
		}
		if err := it.Close(); err != nil {
			h.t.Fatal(err)
		}
	}
	return n
}

func eowcWM(v int64) Message { return WatermarkMsg(&Watermark{Col: 0, Val: types.DInt(v)}) }

// TestAggEmitOnWindowClose: nothing is emitted until the watermark on the
// window column passes a group; then its result is inserted once and its
// state (the agg state row and its max input rows) deleted; later rows of
// a closed window are dropped.
func TestAggEmitOnWindowClose(t *testing.T) {
	h := eowcHarness(t)
	h.expect(h.step(`
		+ 10 1 5
		+ 10 1 7
		+ 10 2 1
		+ 20 1 3`), "")
	if got := h.stateRows(); got != 3+4 {
		t.Fatalf("state rows: got %d, want 7 (3 groups, 4 max inputs)", got)
	}
	// A watermark below every window closes nothing.
	h.expect(h.stepMsgs(true, eowcWM(10)), "")
	// Watermark 20: the groups of window 10 close.
	h.src.msgs = append(h.src.msgs, ChunkMsg(agParse(t, h.in, "+ 20 1 9")))
	h.expect(h.stepMsgs(true, eowcWM(20)), `
		10 1 2 7
		10 2 1 1`)
	if h.outRows != 2 {
		t.Fatalf("emitted %d rows, want 2", h.outRows)
	}
	if got := h.stateRows(); got != 1+2 {
		t.Fatalf("state rows after closing window 10: got %d, want 3", got)
	}
	// A late row of window 10 is dropped: nothing emitted, no state.
	h.expect(h.step("+ 10 1 100"), `
		10 1 2 7
		10 2 1 1`)
	if h.outRows != 0 || h.stateRows() != 3 {
		t.Fatalf("late row: emitted %d rows, %d state rows", h.outRows, h.stateRows())
	}
	if x := h.exec.(*aggExec); x.run.late != 1 {
		t.Fatalf("late rows: %d, want 1", x.run.late)
	}
	h.expect(h.stepMsgs(true, eowcWM(30)), `
		10 1 2 7
		10 2 1 1
		20 1 2 9`)
	if got := h.stateRows(); got != 0 {
		t.Fatalf("state rows after every window closed: %d", got)
	}
}

// TestAggEmitOnWindowCloseRecovery: a crash after a window's rows and its
// closing watermark were processed but before the epoch committed, then a
// replay of that epoch's input: each window is emitted exactly once.
func TestAggEmitOnWindowCloseRecovery(t *testing.T) {
	h := eowcHarness(t)
	h.expect(h.step("+ 10 1 5\n+ 20 1 6"), "")
	// Not committed: the crash loses the close of window 10 and row 11.
	h.src.msgs = append(h.src.msgs, ChunkMsg(agParse(t, h.in, "+ 10 1 8")))
	h.expect(h.stepMsgs(false, eowcWM(20)), "10 1 2 8")
	h.restart()
	if got := h.content(); got != "" {
		t.Fatalf("after the crash the view holds %q", got)
	}
	// Replay, mid-window 20.
	h.src.msgs = append(h.src.msgs, ChunkMsg(agParse(t, h.in, "+ 10 1 8")))
	h.expect(h.stepMsgs(true, eowcWM(20)), "10 1 2 8")
	h.restart()
	h.expect(h.step("+ 20 1 1"), "10 1 2 8")
	// The first watermark after a restart closes window 20 once.
	h.expect(h.stepMsgs(true, eowcWM(25)), "10 1 2 8\n20 1 2 6")
	h.restart()
	h.expect(h.stepMsgs(true, eowcWM(25)), "10 1 2 8\n20 1 2 6")
	if h.outRows != 0 || h.stateRows() != 0 {
		t.Fatalf("after the last restart: emitted %d rows, %d state rows", h.outRows, h.stateRows())
	}
}

// TestAggEmitOnWindowCloseSecondColumn: the window column second in the
// group (GROUP BY k, window_start): closing scans every group.
func TestAggEmitOnWindowCloseSecondColumn(t *testing.T) {
	in := []types.T{types.TInt64, types.TInt64, types.TInt64}
	n := agNode(in, nil, []int{1, 0}, agCall(t, in, "count", false, -1))
	n.EmitOnWindowClose, n.WindowCol = true, 1
	h := newAGHarness(t, n, 0)
	h.expect(h.step("+ 10 1 5\n+ 20 1 6\n+ 10 2 7\n+ 30 0 1"), "")
	h.expect(h.stepMsgs(true, eowcWM(20)), "1 10 1\n2 10 1")
	if got := h.stateRows(); got != 2 {
		t.Fatalf("state rows: got %d, want 2", got)
	}
	h.expect(h.stepMsgs(true, eowcWM(31)), "1 10 1\n2 10 1\n1 20 1\n0 30 1")
	if got := h.stateRows(); got != 0 {
		t.Fatalf("state rows: got %d, want 0", got)
	}
}

// TestAggEmitOnWindowCloseRandom: random rows (some late) and rising
// watermarks over windows, with crashes before a commit and replays of the
// lost epoch, against an oracle: the view holds exactly the closed windows'
// results, each inserted once, and the state only open windows. Seeds are
// logged.
func TestAggEmitOnWindowCloseRandom(t *testing.T) {
	for i := 0; i < 20; i++ {
		seed := uint64(3000 + i)
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Logf("seed %d", seed)
			eowcRandom(t, rand.New(rand.NewPCG(seed, seed)))
		})
	}
}

func eowcRandom(t *testing.T, rng *rand.Rand) {
	in := []types.T{types.TInt64, types.TInt64, types.TInt64}
	n := agNode(in, nil, []int{0, 1}, agCall(t, in, "count", false, -1), agCall(t, in, "max", false, -1, 2))
	n.EmitOnWindowClose, n.WindowCol = true, 0
	h := newAGHarness(t, n, 1+rng.IntN(8))
	type epoch struct {
		rows string
		wm   int64 // 0: none
	}
	// The epochs, and the oracle: per open window and key, count and max.
	type acc struct {
		n, hi int64
		vals  map[int64]bool // the max input rows: by value (the input has no stream key)
	}
	open := map[[2]int64]*acc{}
	want := map[string]bool{}
	var epochs []epoch
	// Windows below closed are emitted (once a watermark came: hasClosed);
	// hi is the greatest window seen.
	closed, hi, hasClosed := int64(0), int64(0), false
	for e := 0; e < 30; e++ {
		var ep epoch
		for r := rng.IntN(6); r > 0; r-- {
			w := closed + rng.Int64N(5) - 1 // sometimes below the closed ones: late
			k, v := rng.Int64N(3), rng.Int64N(100)
			ep.rows += fmt.Sprintf("+ %d %d %d\n", w, k, v)
			if hasClosed && w < closed {
				continue
			}
			hi = max(hi, w)
			a := open[[2]int64{w, k}]
			if a == nil {
				a = &acc{hi: v, vals: map[int64]bool{}}
				open[[2]int64{w, k}] = a
			}
			a.n++
			a.hi = max(a.hi, v)
			a.vals[v] = true
		}
		if rng.IntN(3) == 0 {
			ep.wm = max(closed, 1) + rng.Int64N(2) // at times not rising
			if ep.wm > closed || !hasClosed {
				closed, hasClosed = ep.wm, true
				for key, a := range open {
					if key[0] < closed {
						want[fmt.Sprintf("%d %d %d %d", key[0], key[1], a.n, a.hi)] = true
						delete(open, key)
					}
				}
			}
		}
		epochs = append(epochs, ep)
	}
	feed := func(ep epoch, commit bool) string {
		if ep.rows != "" {
			h.src.msgs = append(h.src.msgs, ChunkMsg(agParse(t, h.in, ep.rows)))
		}
		var msgs []Message
		if ep.wm > 0 {
			msgs = append(msgs, eowcWM(ep.wm))
		}
		return h.stepMsgs(commit, msgs...)
	}
	lastWM := int64(0)
	for _, ep := range epochs {
		if rng.IntN(5) == 0 {
			// A crash before the commit: the epoch is replayed after the restart,
			// after the watermark last committed (as a watermark filter resends it).
			feed(ep, false)
			h.restart()
			if lastWM > 0 {
				h.stepMsgs(true, eowcWM(lastWM))
			}
		}
		feed(ep, true)
		if ep.wm > lastWM {
			lastWM = ep.wm
		}
	}
	var wantRows []string
	for r := range want {
		wantRows = append(wantRows, r)
	}
	slices.Sort(wantRows)
	h.expect(h.content(), strings.Join(wantRows, "\n"))
	// The state holds the open groups only: one agg state row each, plus
	// their max input rows.
	wantState := 0
	for _, a := range open {
		wantState += 1 + len(a.vals)
	}
	if got := h.stateRows(); got != wantState {
		t.Fatalf("state rows %d, want %d (%d open groups), windows below %d closed, greatest %d", got, wantState, len(open), closed, hi)
	}
}
