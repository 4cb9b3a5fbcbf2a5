package stream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage"
	"github.com/tributary/tributary/storage/codec"
	"github.com/tributary/tributary/storage/memkv"
)

// chanSource is an upstream whose messages the test sends while it runs.
type chanSource struct {
	ts []types.T
	ch chan Message
}

func (s *chanSource) Schema() []types.T { return s.ts }

func (s *chanSource) Next(ctx context.Context) (Message, error) {
	select {
	case m, ok := <-s.ch:
		if !ok {
			return Message{}, io.EOF
		}
		return m, nil
	case <-ctx.Done():
		return Message{}, ctx.Err()
	}
}

// sbHarness runs snapshot backfills of one relation over a memkv store,
// standing in for the coordinator: it sends barriers and commits each epoch
// with the actor's writes once its barrier came out.
type sbHarness struct {
	t     *testing.T
	kv    *memkv.Store
	rel   *catalog.Relation
	state []plan.StateTable
	epoch uint64 // the last committed epoch
	snap  bool   // snapshot backfill (else arrangement)
	rate  int64  // backfill rows per second (0: unlimited)
	// watermarks, when set, sends an upstream watermark on v before every
	// barrier after the first (its value the epoch it goes into) and
	// collects the watermarks that come out.
	watermarks bool
	out        []wmOut
	after      int // barriers to run after the backfill reports done
	maxChunk   int // the most rows of a chunk run emitted
	// wrap, when set, puts operators over the backfill (run reads their
	// output); rows then collects every row of the committed epochs.
	wrap func(Executor) Executor
	rows [][]types.Datum
	busy bool // the actor's Foreground says writers are busy (small chunks)
	// atEnd, when set, runs at the last barrier, before the backfill closes.
	atEnd func()
}

// wmOut is a watermark a backfill emitted, and whether its backfill had
// finished (by its last report) when it did.
type wmOut struct {
	val  int64
	done bool
}

// newSBHarness stores n rows (id, id*10) of relation 500, committed at epoch 1.
func newSBHarness(t *testing.T, n int, snapshot bool) *sbHarness {
	return newSBHarnessPadded(t, n, snapshot, 0)
}

// newSBHarnessPadded is newSBHarness with a third column, text of pad bytes.
func newSBHarnessPadded(t *testing.T, n int, snapshot bool, pad int) *sbHarness {
	return newSBHarnessRows(t, n, snapshot, pad, func(i int64) int64 { return i * 10 })
}

// newSBHarnessRows stores n rows (id, v(id)) of relation 500, and a third
// column of pad bytes when pad > 0.
func newSBHarnessRows(t *testing.T, n int, snapshot bool, pad int, v func(int64) int64) *sbHarness {
	ts := []types.T{types.TInt64, types.TInt64}
	rel := &catalog.Relation{ID: 500, Schema: "public", Name: "t", Kind: catalog.KindTable, PK: []int{0},
		Columns: []catalog.Column{{Name: "id", Type: ts[0]}, {Name: "v", Type: ts[1]}}}
	if pad > 0 {
		ts = append(ts, types.TVarchar)
		rel.Columns = append(rel.Columns, catalog.Column{Name: "pad", Type: types.TVarchar})
	}
	kv := memkv.New()
	var b storage.Batch
	for i := 1; i <= n; i++ {
		row := []types.Datum{types.DInt(int64(i)), types.DInt(v(int64(i)))}
		if pad > 0 {
			row = append(row, types.DString(strings.Repeat("x", pad)))
		}
		key := codec.AppendTablePrefix(nil, rel.ID, codec.VnodeOf(codec.HashRow(ts, row, rel.PK)))
		key = codec.AppendKey(key, ts, row, rel.PK, nil)
		b.Put(key, codec.EncodeRow(nil, ts, row))
	}
	if err := kv.Commit(context.Background(), 1, &b); err != nil {
		t.Fatal(err)
	}
	src := &plan.StreamSource{Relation: rel, Backfill: true, Snapshot: snapshot}
	state := src.StateLayouts()
	state[0].ID = 900
	return &sbHarness{t: t, kv: kv, rel: rel, state: state, epoch: 1, snap: snapshot}
}

// run starts a backfill and drives it until stop says so (or it is done),
// returning the ids emitted up to the last committed epoch and whether it
// finished. The backfill is closed before run returns.
func (h *sbHarness) run(stop func(emitted int) bool) (ids []int64, done bool) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	src := &plan.StreamSource{Relation: h.rel, Backfill: true, Snapshot: h.snap}
	src.SetState(h.state)
	up := &chanSource{ts: h.rel.ColumnTypes(), ch: make(chan Message, 4)}
	actx := &ActorContext{ID: 1, Store: h.kv}
	if h.busy {
		actx.Foreground = func() bool { return true }
	}
	var last BackfillReport
	newBackfill := NewBackfill
	if h.snap {
		newBackfill = NewSnapshotBackfill
	}
	rate := h.rate
	if rate == 0 {
		rate = -1
	}
	exec, closer, err := newBackfill(actx, src, up, func(r BackfillReport) { last = r }, rate)
	if err != nil {
		h.t.Fatal(err)
	}
	defer closer()
	if h.wrap != nil {
		exec = h.wrap(exec)
	}
	var pendingRows [][]types.Datum
	barrier := func() {
		up.ch <- BarrierMsg(&Barrier{Epoch: Epoch{Prev: h.epoch, Curr: h.epoch + 1}, Checkpoint: true})
	}
	barrier()
	var pending []int64 // emitted in the open epoch
	doneBarriers := 0   // barriers sent after the backfill reported done
	for {
		m, err := exec.Next(ctx)
		if err != nil {
			h.t.Fatalf("backfill: %v", err)
		}
		switch {
		case m.Chunk != nil:
			h.maxChunk = max(h.maxChunk, m.Chunk.Len())
			for i := 0; i < m.Chunk.Len(); i++ {
				if m.Chunk.Op(i) != types.OpInsert {
					h.t.Fatalf("snapshot row with op %v", m.Chunk.Op(i))
				}
				pending = append(pending, m.Chunk.Row(i, nil)[0].I)
				if h.wrap != nil {
					pendingRows = append(pendingRows, m.Chunk.Row(i, nil))
				}
			}
		case m.Watermark != nil:
			h.out = append(h.out, wmOut{val: m.Watermark.Val.I, done: last.Done})
		case m.Barrier != nil:
			// The epoch the barrier seals commits with the actor's writes.
			actx.Flush(m.Barrier.Epoch.Curr)
			if err := h.kv.Commit(ctx, m.Barrier.Epoch.Curr, actx.TakeWrites()); err != nil {
				h.t.Fatal(err)
			}
			h.epoch = m.Barrier.Epoch.Curr
			ids, pending = append(ids, pending...), nil
			h.rows, pendingRows = append(h.rows, pendingRows...), nil
			if last.Done && doneBarriers == h.after || !last.Done && stop(len(ids)) {
				if h.atEnd != nil {
					h.atEnd()
				}
				return ids, last.Done
			}
			if last.Done {
				doneBarriers++
			}
			if h.watermarks {
				up.ch <- WatermarkMsg(&Watermark{Col: 1, Val: types.DInt(int64(h.epoch))})
			}
			barrier()
		}
	}
}

// TestBackfillDropsUpstreamWatermarks: while a backfill runs, the upstream's
// watermarks are dropped, not passed on (its snapshot rows may lie below
// them, and an operator downstream would clean state they still need);
// once it is done they pass through. Both kinds, rate-limited so that the
// backfill spans several epochs.
func TestBackfillDropsUpstreamWatermarks(t *testing.T) {
	defer goleak.VerifyNone(t)
	const n = 1000
	for _, snapshot := range []bool{true, false} {
		t.Run(fmt.Sprintf("snapshot=%t", snapshot), func(t *testing.T) {
			h := newSBHarness(t, n, snapshot)
			h.rate, h.watermarks, h.after = 4*n, true, 3 // about a quarter of a second
			ids, done := h.run(func(int) bool { return false })
			if !done || len(ids) != n {
				t.Fatalf("backfill emitted %d of %d rows (done %v)", len(ids), n, done)
			}
			sent := int(h.epoch) - 2 // one before every barrier after the first
			if sent < h.after+2 {
				t.Fatalf("only %d watermarks were sent: the backfill took too few epochs", sent)
			}
			after := 0
			for _, w := range h.out {
				if !w.done {
					t.Fatalf("watermark %d came out while backfilling (%d sent, %d out)", w.val, sent, len(h.out))
				}
				after++
			}
			// The watermarks sent after the done report pass (the last one
			// before it may go either way).
			if after < h.after {
				t.Fatalf("%d watermarks came out after the backfill; want at least %d", after, h.after)
			}
		})
	}
}

// checkEveryRowOnce fails unless ids holds each of n distinct ids once.
func checkEveryRowOnce(t *testing.T, ids []int64, n int) {
	t.Helper()
	seen := make(map[int64]bool, n)
	for _, id := range ids {
		if seen[id] {
			t.Fatalf("row %d emitted twice", id)
		}
		seen[id] = true
	}
	if len(seen) != n {
		t.Fatalf("%d distinct rows emitted, want %d", len(seen), n)
	}
}

// TestBackfillReadsEveryRowOnce backfills a relation and then resumes an
// interrupted backfill from its committed per-vnode positions, for both
// kinds: every row comes out exactly once over both runs, and the second run
// does not start over.
func TestBackfillReadsEveryRowOnce(t *testing.T) {
	defer goleak.VerifyNone(t)
	const n = 20000
	check := func(t *testing.T, ids []int64) { checkEveryRowOnce(t, ids, n) }
	for _, snapshot := range []bool{true, false} {
		t.Run(fmt.Sprintf("snapshot=%t/whole", snapshot), func(t *testing.T) {
			h := newSBHarness(t, n, snapshot)
			ids, done := h.run(func(int) bool { return false })
			if !done {
				t.Fatal("backfill did not finish")
			}
			check(t, ids)
		})
		t.Run(fmt.Sprintf("snapshot=%t/resumed", snapshot), func(t *testing.T) {
			h := newSBHarness(t, n, snapshot)
			// Rate-limited, so that the first run cannot read everything in
			// one epoch whatever the scheduling (barriers take milliseconds).
			h.rate = n
			first, done := h.run(func(emitted int) bool { return emitted >= n/3 })
			h.rate = 0
			if done || len(first) >= n {
				t.Fatalf("first run emitted %d rows (done %v): nothing left to resume", len(first), done)
			}
			second, done := h.run(func(int) bool { return false })
			if !done {
				t.Fatal("resumed backfill did not finish")
			}
			if len(second) > n-len(first) {
				t.Fatalf("resumed run emitted %d rows after %d committed: it re-read committed rows", len(second), len(first))
			}
			check(t, append(first, second...))
		})
	}
}

// TestSnapshotBackfillReleasesPins: a snapshot backfill pins its snapshot's
// epoch while it reads; once it is done and live, the pins go within a few
// barriers, so the store may discard old versions again (held on, they kept
// every version of every key written since from compaction for as long as
// the job ran). Rate-limited over several epochs, so the backfill moves its
// pin through catch-up ranges before it finishes.
func TestSnapshotBackfillReleasesPins(t *testing.T) {
	defer goleak.VerifyNone(t)
	const n = 1000
	h := newSBHarness(t, n, true)
	h.rate, h.after = 4*n, 3
	h.atEnd = func() {
		if err := h.kv.SetDiscardEpoch(h.epoch); err != nil {
			t.Fatal(err)
		}
		if got := h.kv.DiscardEpoch(); got != h.epoch {
			t.Fatalf("discard epoch %d after the backfill finished, want the committed %d: a pin is still held", got, h.epoch)
		}
	}
	ids, done := h.run(func(int) bool { return false })
	if !done {
		t.Fatal("backfill did not finish")
	}
	checkEveryRowOnce(t, ids, n)
}

// TestSnapshotBackfillChunkBytes: a snapshot backfill of wide rows reads
// chunks of at most snapshotChunkBytes of encoded rows (the readers' queue
// holds many chunks), and still emits every row once.
func TestSnapshotBackfillChunkBytes(t *testing.T) {
	defer goleak.VerifyNone(t)
	// 400 rows over 256 vnodes: some vnode holds 3 or more, which one chunk
	// would take without the bound; with it, 256 KiB is two 128 KiB rows.
	const n, pad = 400, 128 << 10
	h := newSBHarnessPadded(t, n, true, pad)
	ids, done := h.run(func(int) bool { return false })
	if !done {
		t.Fatal("backfill did not finish")
	}
	checkEveryRowOnce(t, ids, n)
	if h.maxChunk != 2 {
		t.Fatalf("largest chunk %d rows of %d bytes, want 2", h.maxChunk, pad)
	}
}

// TestSnapshotBackfillFoldsLocalAgg: under a projection of bare columns and a
// local aggregation, a snapshot backfill's readers fold the rows into
// partial groups themselves; the partials of the committed epochs sum to
// every group's count and sum exactly once, whole and after a resume, and
// with groups past the aggregation's bound (each reader then sends as its
// groups outgrow it).
func TestSnapshotBackfillFoldsLocalAgg(t *testing.T) {
	defer goleak.VerifyNone(t)
	// 390 rows a vnode: more than a busy chunk, so a resume starts inside vnodes.
	const n = 100000
	for _, groups := range []int64{7, 3 * LocalAggGroups} {
		for _, resumed := range []bool{false, true} {
			t.Run(fmt.Sprintf("groups=%d/resumed=%t", groups, resumed), func(t *testing.T) {
				h := newSBHarnessRows(t, n, true, 0, func(id int64) int64 { return id % groups })
				var sb *snapshotBackfillExec
				h.wrap = func(bf Executor) Executor {
					sb = bf.(*snapshotBackfillExec)
					in := []types.T{types.TInt64, types.TInt64} // (v, id)
					proj, err := NewProject(&ActorContext{ID: 1}, &plan.StreamProject{
						Exprs: []expr.Expr{&expr.ColumnRef{Index: 1, Typ: types.TInt64}, &expr.ColumnRef{Index: 0, Typ: types.TInt64}},
						Out:   []plan.Field{{Name: "v", Type: types.TInt64}, {Name: "id", Type: types.TInt64}}, Key: []int{1}}, bf)
					if err != nil {
						t.Fatal(err)
					}
					local, _ := agTwoPhase(t, agNode(in, []int{1}, []int{0}, agCall(t, in, "count", false, -1), agCall(t, in, "sum", false, -1, 1)))
					e, err := NewLocalAgg(local, proj)
					if err != nil {
						t.Fatal(err)
					}
					return e
				}
				if resumed {
					// Busy: chunks smaller than a vnode's rows, so the resume
					// starts inside vnodes, at the positions the partials covered.
					h.rate, h.busy = n, true
					if _, done := h.run(func(emitted int) bool { return emitted >= 1 }); done {
						t.Fatal("the first run finished: nothing left to resume")
					}
					h.rate, h.busy = 0, false
				}
				if _, done := h.run(func(int) bool { return false }); !done {
					t.Fatal("backfill did not finish")
				}
				if sb.fold == nil {
					t.Fatal("the backfill's readers did not fold for the local aggregation")
				}
				// Partial rows: v, count(*), count(id), sum(id), weight.
				count, sum := map[int64]int64{}, map[int64]int64{}
				for _, r := range h.rows {
					count[r[0].I] += r[1].I
					sum[r[0].I] += r[3].I
				}
				if len(h.rows) >= n {
					t.Fatalf("%d partial rows for %d rows: nothing was folded", len(h.rows), n)
				}
				wantCount, wantSum := map[int64]int64{}, map[int64]int64{}
				for id := int64(1); id <= n; id++ {
					wantCount[id%groups]++
					wantSum[id%groups] += id
				}
				for g := range groups {
					if count[g] != wantCount[g] || sum[g] != wantSum[g] {
						t.Fatalf("group %d: count %d sum %d, want %d and %d", g, count[g], sum[g], wantCount[g], wantSum[g])
					}
				}
			})
		}
	}
}

func TestRateLimiterReadyAndCharge(t *testing.T) {
	defer goleak.VerifyNone(t)
	wait := func(r *rateLimiter, d time.Duration) error {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		return r.ready(ctx)
	}
	if err := wait(newRateLimiter(-1), time.Second); err != nil {
		t.Fatalf("unlimited: %v", err)
	}
	if err := wait(newRateLimiter(0), 50*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("paused: ready returned %v, want to wait", err)
	}
	// 1000 rows/s: a charge of 5000 rows is about four seconds of debt.
	r := newRateLimiter(1000)
	if err := wait(r, time.Second); err != nil {
		t.Fatalf("limited, no debt: %v", err)
	}
	r.charge(5000)
	if err := wait(r, 200*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("in debt: ready returned %v, want to wait", err)
	}
	// Lifting the limit releases a waiting reader.
	done := make(chan error, 1)
	go func() { done <- wait(r, 10*time.Second) }()
	r.Set(-1)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("after lifting the limit: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ready still waiting 5 s after the limit was lifted")
	}
}

// TestRateLimiterGrant: a rate below a chunk's rows grants a few rows as
// they accrue (it granted nothing until a whole chunk had); paused grants
// none, unlimited all.
func TestRateLimiterGrant(t *testing.T) {
	if got := newRateLimiter(-1).grant(1024); got != 1024 {
		t.Fatalf("unlimited: granted %d", got)
	}
	if got := newRateLimiter(0).grant(1024); got != 0 {
		t.Fatalf("paused: granted %d", got)
	}
	r := newRateLimiter(100) // a row every 10 ms
	deadline := time.Now().Add(5 * time.Second)
	total := 0
	for total == 0 || total >= 1024 {
		if time.Now().After(deadline) {
			t.Fatalf("granted %d rows in 5 s at 100 rows/s", total)
		}
		total += r.grant(1024)
		time.Sleep(5 * time.Millisecond)
	}
	if total > 100 {
		t.Fatalf("granted %d rows at once at 100 rows/s", total)
	}
}
