package stream

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/e2e/testseed"
	"github.com/tributary/tributary/executor/window"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage/memkv"
)

// gfNode is GAP_FILL over (id, part, ts, v) keyed by id: one-minute steps,
// v interpolated, partitioned by part.
func gfNode() *plan.StreamGapFill {
	ts := []types.T{types.TInt64, types.TInt64, types.TTimestamp, types.TFloat64}
	in := &plan.StreamValues{Out: stFields(ts...), Key: []int{0}}
	fill := &plan.GapFill{TimeCol: 2, Step: types.IntervalValue{Micros: 60_000_000},
		Fills: []plan.FillKind{plan.FillNull, plan.FillNull, plan.FillNull, plan.FillInterpolate}, PartitionBy: []int{1}}
	n := &plan.StreamGapFill{Input: in, Fill: fill, Out: stFields(ts...)}
	layouts := n.StateLayouts()
	layouts[0].ID = 300
	n.SetState(layouts)
	return n
}

// TestGapFillRandom applies random inserts, deletes and updates, with a
// restart halfway, and checks the output after each run against GAP_FILL
// computed from the live rows.
func TestGapFillRandom(t *testing.T) {
	seed := testseed.For(t)
	rng := rand.New(rand.NewPCG(seed, 7))
	n := gfNode()
	ts := plan.Types(n.Out)
	base := time.Date(2024, 1, 1, 10, 0, 0, 0, time.UTC).UnixMicro()
	live := map[int64][]types.Datum{}
	nextID := int64(1)
	newRow := func(id int64) []types.Datum {
		micros := base + rng.Int64N(20)*60_000_000
		if rng.IntN(5) == 0 {
			micros += 30_000_000 // off the grid
		}
		return []types.Datum{types.DInt(id), types.DInt(rng.Int64N(3)), {I: micros}, types.DFloat(float64(rng.IntN(100)))}
	}
	epochs := func(from uint64, count int) []Message {
		msgs := []Message{stBarrier(from-1, from)}
		for ep := from; ep < from+uint64(count); ep++ {
			c := types.NewChunk(ts, 16)
			for range 1 + rng.IntN(6) {
				var ids []int64
				for id := range live {
					ids = append(ids, id)
				}
				slices.Sort(ids)
				switch k := rng.IntN(4); {
				case k < 2 || len(ids) == 0:
					r := newRow(nextID)
					live[nextID] = r
					nextID++
					c.AppendRowOp(types.OpInsert, r)
				case k == 2:
					id := ids[rng.IntN(len(ids))]
					c.AppendRowOp(types.OpDelete, live[id])
					delete(live, id)
				default:
					id := ids[rng.IntN(len(ids))]
					r := newRow(id)
					c.AppendRowOp(types.OpUpdateDelete, live[id])
					c.AppendRowOp(types.OpUpdateInsert, r)
					live[id] = r
				}
			}
			msgs = append(msgs, ChunkMsg(c), stBarrier(ep, ep+1))
		}
		return msgs
	}
	want := func() string {
		parts := map[int64][][]types.Datum{}
		for _, r := range live {
			parts[r[1].I] = append(parts[r[1].I], r)
		}
		c := types.NewChunk(ts, 64)
		for _, rows := range parts {
			slices.SortFunc(rows, func(a, b []types.Datum) int {
				if a[2].I != b[2].I {
					return int(a[2].I - b[2].I)
				}
				return int(a[0].I - b[0].I)
			})
			for i, r := range rows {
				c.AppendRowOp(types.OpInsert, r)
				if i+1 < len(rows) {
					gap, err := window.AppendGapRows(nil, n.Fill, ts, r, rows[i+1], 60_000_000)
					if err != nil {
						t.Fatal(err)
					}
					for _, g := range gap {
						c.AppendRowOp(types.OpInsert, g)
					}
				}
			}
		}
		s := NewRowSet(n.StreamKey())
		if err := s.Apply(c); err != nil {
			t.Fatal(err)
		}
		return s.String()
	}
	kv := memkv.New()
	out := NewRowSet(n.StreamKey())
	ep := uint64(10)
	for run := range 2 {
		actx := stActx(kv)
		e, err := NewGapFill(actx, n, NewMockSource(ts, epochs(ep, 50)...))
		if err != nil {
			t.Fatal(err)
		}
		stDrive(t, e, actx, out)
		ep += 60
		if got, w := out.String(), want(); got != w {
			t.Fatalf("run %d (seed %d): got\n%s\nwant\n%s", run, seed, got, w)
		}
	}
}

// TestGapFillEOWC checks emission on window close: rows appear with the
// filled rows before them once the watermark passes, late rows are dropped,
// and the last emitted row survives a restart.
func TestGapFillEOWC(t *testing.T) {
	n := gfNode()
	n.Fill.Fills[3] = plan.FillLOCF
	n.EmitOnWindowClose = true
	layouts := n.StateLayouts()
	layouts[0].ID, layouts[1].ID = 300, 301
	n.SetState(layouts)
	ts := plan.Types(n.Out)
	wm := func(clock string) Message {
		tm, err := time.Parse("15:04", clock)
		if err != nil {
			t.Fatal(err)
		}
		micros := time.Date(2024, 1, 1, tm.Hour(), tm.Minute(), 0, 0, time.UTC).UnixMicro()
		return WatermarkMsg(&Watermark{Col: 2, Val: types.Datum{I: micros}})
	}
	kv := memkv.New()
	out := NewRowSet(n.StreamKey())
	actx := stActx(kv)
	e, err := NewGapFill(actx, n, NewMockSource(ts,
		stBarrier(1, 2),
		ChunkMsg(stChunk(t, `
			 I I TS F
			 + 1 0 2024-01-01T10:00:00 1
			 + 2 0 2024-01-01T10:03:00 3
			 + 3 1 2024-01-01T10:01:00 7`)),
		wm("10:02"),
		stBarrier(2, 3)))
	if err != nil {
		t.Fatal(err)
	}
	stDrive(t, e, actx, out)
	want := "1 0 2024-01-01 10:00:00 1\n3 1 2024-01-01 10:01:00 7\n"
	if got := strings.TrimSpace(out.String()); got != strings.TrimSpace(want) {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	actx = stActx(kv)
	e, err = NewGapFill(actx, n, NewMockSource(ts,
		stBarrier(3, 4),
		ChunkMsg(stChunk(t, `
			 I I TS F
			 + 4 0 2024-01-01T09:59:00 9
			 + 5 1 2024-01-01T10:03:00 8`)),
		wm("10:05"),
		stBarrier(4, 5)))
	if err != nil {
		t.Fatal(err)
	}
	stDrive(t, e, actx, out)
	want += ". 0 2024-01-01 10:01:00 1\n. 0 2024-01-01 10:02:00 1\n2 0 2024-01-01 10:03:00 3\n" +
		". 1 2024-01-01 10:02:00 7\n5 1 2024-01-01 10:03:00 8\n"
	if got := strings.TrimSpace(out.String()); got != strings.TrimSpace(sortLines(want)) {
		t.Fatalf("got\n%s\nwant\n%s", got, sortLines(want))
	}
}

// sortLines returns s's lines sorted, as RowSet.String orders them.
func sortLines(s string) string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	slices.Sort(lines)
	return strings.Join(lines, "\n") + "\n"
}
