package stream

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/tributary/tributary/e2e/testseed"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage"
	"github.com/tributary/tributary/storage/memkv"
)

// stEp is the epoch generated at clock time hh:mm on 2024-01-01 UTC.
func stEp(t testing.TB, clock string) uint64 {
	t.Helper()
	tm, err := time.Parse("2006-01-02 15:04:05", "2024-01-01 "+clock)
	if err != nil {
		t.Fatal(err)
	}
	return uint64(tm.UnixMilli()) << 16
}

func stTemporalNode(t testing.TB, colType types.T, interval string, strict bool) *plan.StreamTemporalFilter {
	t.Helper()
	iv, err := types.ParseInterval(interval)
	if err != nil {
		t.Fatal(err)
	}
	in := &plan.StreamValues{Out: stFields(types.TInt64, colType), Key: []int{0}}
	n := &plan.StreamTemporalFilter{Input: in, Col: 1, Interval: iv, Strict: strict}
	layouts := n.StateLayouts()
	layouts[0].ID = 200
	n.SetState(layouts)
	return n
}

func TestTemporalFilter(t *testing.T) {
	n := stTemporalNode(t, types.TTimestamp, "10 minutes", true)
	ts := []types.T{types.TInt64, types.TTimestamp}
	ep := func(c string) uint64 { return stEp(t, c) }
	src := NewMockSource(ts,
		stBarrier(ep("09:59:00"), ep("10:00:00")),
		// Bound 09:50: 2 is out of the window already, NULL never in it.
		ChunkMsg(stChunk(t, `
			 I TS
			 + 1 2024-01-01T09:55:00
			 + 2 2024-01-01T09:45:00
			 + 3 2024-01-01T10:05:00
			 + 4 .
			 + 5 2024-01-01T09:51:00
			 + 8 2024-01-01T09:58:00 D`)),
		stBarrier(ep("10:00:00"), ep("10:02:00")),
		// Bound 09:52: 5 is past it but not retracted yet (its delete must pass).
		ChunkMsg(stChunk(t, `
			 I TS
			 - 5 2024-01-01T09:51:00
			U- 1 2024-01-01T09:55:00
			U+ 1 2024-01-01T09:56:00
			 + 6 2024-01-01T09:53:00
			 - 2 2024-01-01T09:45:00`)),
		stBarrier(ep("10:02:00"), ep("10:05:00")),
		// The barrier sealing 10:05 retracts 6 (bound 09:55).
		stBarrier(ep("10:05:00"), ep("10:06:00")),
		// Bound 09:56: 6 was retracted (its delete is dropped); 1's old half
		// is past the bound but still held, so the update stays a pair.
		ChunkMsg(stChunk(t, `
			 I TS
			 - 6 2024-01-01T09:53:00
			U- 1 2024-01-01T09:56:00
			U+ 1 2024-01-01T10:30:00
			 + 7 2024-01-01T10:20:00
			U- 7 2024-01-01T10:20:00
			U+ 7 2024-01-01T09:00:00`)),
		stStop(ep("10:06:00"), ep("10:07:00"), 1))
	kv := memkv.New()
	actx := stActx(kv)
	e, err := NewTemporalFilter(actx, n, src)
	if err != nil {
		t.Fatal(err)
	}
	set := NewRowSet([]int{0})
	snaps := stDrive(t, e, actx, set)
	stWant(t, snaps,
		"",
		"1 2024-01-01 09:55:00\n3 2024-01-01 10:05:00\n5 2024-01-01 09:51:00",
		"1 2024-01-01 09:56:00\n3 2024-01-01 10:05:00\n6 2024-01-01 09:53:00",
		"1 2024-01-01 09:56:00\n3 2024-01-01 10:05:00",
		"1 2024-01-01 10:30:00\n3 2024-01-01 10:05:00")
	if got, want := stTableRows(t, kv, n.State()[0]), set.String(); got != want {
		t.Fatalf("state table holds\n%s\nwant the live rows\n%s", got, want)
	}

	// Restart over the committed state: a delete before the first barrier
	// (its epoch's bound unknown until the barrier), then retractions of
	// rows stored before the restart.
	src = NewMockSource(ts,
		ChunkMsg(stChunk(t, " I TS\n - 3 2024-01-01T10:05:00")),
		stBarrier(ep("10:15:00"), ep("10:16:00")),
		ChunkMsg(stChunk(t, " I TS\n + 9 2024-01-01T10:20:00")),
		stBarrier(ep("10:16:00"), ep("10:40:00")),
		stStop(ep("10:40:00"), ep("10:41:00"), 1))
	actx = stActx(kv)
	if e, err = NewTemporalFilter(actx, n, src); err != nil {
		t.Fatal(err)
	}
	snaps = stDrive(t, e, actx, set)
	stWant(t, snaps,
		"1 2024-01-01 10:30:00",
		"1 2024-01-01 10:30:00\n9 2024-01-01 10:20:00",
		"")
	if got := stTableRows(t, kv, n.State()[0]); got != "" {
		t.Fatalf("state table after everything expired:\n%s", got)
	}
}

func TestTemporalFilterDateStrictness(t *testing.T) {
	// At 2024-01-03 10:00, now() - '1 day 10 hours' is 2024-01-02 00:00: the
	// date 01-02 is at the bound, kept by >= until the bound passes it, and
	// dropped by > at once.
	ep := func(c string) uint64 { return stEp(t, c) + uint64(48*time.Hour/time.Millisecond)<<16 }
	for _, strict := range []bool{false, true} {
		n := stTemporalNode(t, types.TDate, "1 day 10 hours", strict)
		src := NewMockSource([]types.T{types.TInt64, types.TDate},
			stBarrier(ep("09:00:00"), ep("10:00:00")),
			ChunkMsg(stChunk(t, " I D\n + 1 2024-01-02\n + 2 2024-01-03\n + 3 2024-01-01")),
			stBarrier(ep("10:00:00"), ep("10:00:01")),
			stStop(ep("10:00:01"), ep("10:00:02"), 1))
		actx := stActx(memkv.New())
		e, err := NewTemporalFilter(actx, n, src)
		if err != nil {
			t.Fatal(err)
		}
		want := "1 2024-01-02\n2 2024-01-03"
		if strict {
			want = "2 2024-01-03"
		}
		stWant(t, stDrive(t, e, actx, NewRowSet([]int{0})), "", want, "2 2024-01-03")
	}
}

// TestTemporalFilterRandom checks, after every barrier, that the output
// stream holds exactly the upstream rows within the window of the sealed
// epoch, over random inserts, deletes and updates, with restarts.
func TestTemporalFilterRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(testseed.For(t), 0))
	for _, strict := range []bool{true, false} {
		n := stTemporalNode(t, types.TTimestamp, "10 minutes", strict)
		ts := []types.T{types.TInt64, types.TTimestamp}
		kv := memkv.New()
		ctx := stCtx(t)
		var src *MockSource
		var actx *ActorContext
		var e Executor
		restart := func() {
			src, actx = NewMockSource(ts), stActx(kv)
			var err error
			if e, err = NewTemporalFilter(actx, n, src); err != nil {
				t.Fatal(err)
			}
		}
		restart()
		up := map[int64]int64{} // upstream rows: id -> µs
		set := NewRowSet([]int{0})
		now := time.Date(2024, 1, 1, 10, 0, 0, 0, time.UTC)
		nextID := int64(0)
		epoch := uint64(now.UnixMilli()) << 16
		for round := range 300 {
			prev := epoch
			c := types.NewChunk(ts, 16)
			row := make([]types.Datum, 2)
			randTS := func() int64 {
				return now.Add(time.Duration(rng.IntN(25*60)-20*60) * time.Second).UnixMicro()
			}
			for range rng.IntN(8) {
				var id int64 = -1
				for k := range up { // a random existing row (map order)
					if rng.IntN(3) == 0 {
						id = k
						break
					}
				}
				switch {
				case id < 0 || rng.IntN(3) == 0:
					nextID++
					up[nextID] = randTS()
					row[0], row[1] = types.DInt(nextID), types.DInt(up[nextID])
					c.AppendRowOp(types.OpInsert, row)
				case rng.IntN(2) == 0:
					row[0], row[1] = types.DInt(id), types.DInt(up[id])
					c.AppendRowOp(types.OpDelete, row)
					delete(up, id)
				default:
					row[0], row[1] = types.DInt(id), types.DInt(up[id])
					c.AppendRowOp(types.OpUpdateDelete, row)
					up[id] = randTS()
					row[1] = types.DInt(up[id])
					c.AppendRowOp(types.OpUpdateInsert, row)
				}
			}
			now = now.Add(time.Duration(rng.IntN(180)) * time.Second)
			curr := max(uint64(now.UnixMilli())<<16, prev+1)
			epoch = curr
			src.Push(ChunkMsg(c), BarrierMsg(&Barrier{Epoch: Epoch{Prev: prev, Curr: curr}}))
			for {
				m, err := e.Next(ctx)
				if err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
				if m.Chunk != nil {
					if err := set.Apply(m.Chunk); err != nil {
						t.Fatalf("round %d: %v\n%s", round, err, FormatChunk(m.Chunk))
					}
				}
				if m.Barrier != nil {
					break
				}
			}
			actx.Flush(prev)
			if err := kv.Commit(ctx, prev, actx.TakeWrites()); err != nil {
				t.Fatal(err)
			}
			bound := storage.EpochTime(prev).Add(-10 * time.Minute).UnixMicro()
			want := NewRowSet(nil)
			for id, us := range up {
				if us > bound || !strict && us == bound {
					row[0], row[1] = types.DInt(id), types.DInt(us)
					w := types.NewChunk(ts, 1)
					w.AppendRow(row)
					_ = want.Apply(w)
				}
			}
			if got, w := set.String(), want.String(); got != w {
				t.Fatalf("round %d (strict %v): got\n%s\nwant\n%s", round, strict, got, w)
			}
			if rng.IntN(10) == 0 {
				restart()
			}
		}
	}
}

// TestTemporalFilterNoKey retracts the row of an input without a stream
// key (a simple aggregation's one row), whose state is not distributed.
func TestTemporalFilterNoKey(t *testing.T) {
	iv, err := types.ParseInterval("10 minutes")
	if err != nil {
		t.Fatal(err)
	}
	n := &plan.StreamTemporalFilter{Input: &plan.StreamValues{Out: stFields(types.TTimestamp)}, Col: 0, Interval: iv}
	layouts := n.StateLayouts()
	layouts[0].ID = 200
	n.SetState(layouts)
	ep := func(c string) uint64 { return stEp(t, c) }
	src := NewMockSource([]types.T{types.TTimestamp},
		stBarrier(ep("09:59:00"), ep("10:00:00")),
		ChunkMsg(stChunk(t, " TS\n + 2024-01-01T09:55:00")),
		stBarrier(ep("10:00:00"), ep("10:03:00")),
		stBarrier(ep("10:03:00"), ep("10:06:00")),
		stStop(ep("10:06:00"), ep("10:07:00"), 1))
	actx := stActx(memkv.New())
	e, err := NewTemporalFilter(actx, n, src)
	if err != nil {
		t.Fatal(err)
	}
	stWant(t, stDrive(t, e, actx, NewRowSet(nil)), "", "2024-01-01 09:55:00", "2024-01-01 09:55:00", "")
}
