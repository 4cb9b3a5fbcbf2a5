package stream

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage/memkv"
)

func stHop(t testing.TB, slide, size string, msgs ...Message) Executor {
	t.Helper()
	ts := []types.T{types.TInt64, types.TTimestamp}
	sl, err := types.ParseInterval(slide)
	if err != nil {
		t.Fatal(err)
	}
	sz, err := types.ParseInterval(size)
	if err != nil {
		t.Fatal(err)
	}
	n := &plan.StreamHopWindow{TimeCol: 1, Slide: sl, Size: sz,
		Out: stFields(types.TInt64, types.TTimestamp, types.TTimestamp, types.TTimestamp)}
	e, err := NewHopWindow(stActx(memkv.New()), n, NewMockSource(ts, msgs...))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestHopWindow(t *testing.T) {
	e := stHop(t, "5 minutes", "10 minutes",
		stBarrier(1, 2),
		ChunkMsg(stChunk(t, `
			 I TS
			 + 1 2024-01-01T10:03:00
			 + 2 2024-01-01T10:05:00
			 + 3 .
			 + 4 2024-01-01T10:00:00 D
			 + 5 1969-12-31T23:58:00`)),
		stBarrier(2, 3),
		ChunkMsg(stChunk(t, `
			 I TS
			U- 1 2024-01-01T10:03:00
			U+ 1 2024-01-01T10:07:00
			U- 2 2024-01-01T10:05:00
			U+ 2 2024-01-01T10:06:00
			 - 5 1969-12-31T23:58:00`)),
		stStop(3, 4, 1))
	snaps := stDrive(t, e, stActx(memkv.New()), NewRowSet([]int{0, 2}))
	stWant(t, snaps, "", `
		1 2024-01-01 10:03:00 2024-01-01 09:55:00 2024-01-01 10:05:00
		1 2024-01-01 10:03:00 2024-01-01 10:00:00 2024-01-01 10:10:00
		2 2024-01-01 10:05:00 2024-01-01 10:00:00 2024-01-01 10:10:00
		2 2024-01-01 10:05:00 2024-01-01 10:05:00 2024-01-01 10:15:00
		5 1969-12-31 23:58:00 1969-12-31 23:50:00 1970-01-01 00:00:00
		5 1969-12-31 23:58:00 1969-12-31 23:55:00 1970-01-01 00:05:00`, `
		1 2024-01-01 10:07:00 2024-01-01 10:00:00 2024-01-01 10:10:00
		1 2024-01-01 10:07:00 2024-01-01 10:05:00 2024-01-01 10:15:00
		2 2024-01-01 10:06:00 2024-01-01 10:00:00 2024-01-01 10:10:00
		2 2024-01-01 10:06:00 2024-01-01 10:05:00 2024-01-01 10:15:00`)
}

func TestHopWindowUpdateOps(t *testing.T) {
	e := stHop(t, "5 minutes", "10 minutes", ChunkMsg(stChunk(t, `
		 I TS
		U- 1 2024-01-01T10:03:00
		U+ 1 2024-01-01T10:07:00`)))
	m, err := e.Next(stCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	want := "- 1 2024-01-01 10:03:00 2024-01-01 09:55:00 2024-01-01 10:05:00\n" +
		"U- 1 2024-01-01 10:03:00 2024-01-01 10:00:00 2024-01-01 10:10:00\n" +
		"U+ 1 2024-01-01 10:07:00 2024-01-01 10:00:00 2024-01-01 10:10:00\n" +
		"+ 1 2024-01-01 10:07:00 2024-01-01 10:05:00 2024-01-01 10:15:00\n"
	if got := FormatChunk(m.Chunk); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

func TestTumbleAndGaps(t *testing.T) {
	// TUMBLE: slide = size.
	e := stHop(t, "10 minutes", "10 minutes", ChunkMsg(stChunk(t, " I TS\n + 1 2024-01-01T10:10:00\n + 2 2024-01-01T10:19:59.999999")))
	m, err := e.Next(stCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	want := "+ 1 2024-01-01 10:10:00 2024-01-01 10:10:00 2024-01-01 10:20:00\n" +
		"+ 2 2024-01-01 10:19:59.999999 2024-01-01 10:10:00 2024-01-01 10:20:00\n"
	if got := FormatChunk(m.Chunk); got != want {
		t.Fatalf("tumble: got\n%s\nwant\n%s", got, want)
	}
	// Slide above size leaves gaps: 10:07 is in no window.
	e = stHop(t, "10 minutes", "5 minutes", ChunkMsg(stChunk(t, " I TS\n + 1 2024-01-01T10:07:00\n + 2 2024-01-01T10:03:00")))
	if m, err = e.Next(stCtx(t)); err != nil {
		t.Fatal(err)
	}
	want = "+ 2 2024-01-01 10:03:00 2024-01-01 10:00:00 2024-01-01 10:05:00\n"
	if got := FormatChunk(m.Chunk); got != want {
		t.Fatalf("gaps: got\n%s\nwant\n%s", got, want)
	}
}

func TestHopWindowLargeChunkSplits(t *testing.T) {
	c := types.NewChunk([]types.T{types.TInt64, types.TTimestamp}, 1000)
	for i := range 1000 {
		c.AppendRowOp(types.OpInsert, []types.Datum{types.DInt(int64(i)), types.DInt(int64(i) * 60e6)})
	}
	e := stHop(t, "1 minute", "10 minutes", ChunkMsg(c), stStop(1, 2, 1))
	set := NewRowSet([]int{0, 2})
	stDrive(t, e, stActx(memkv.New()), set)
	if got := len(set.rows); got != 10000 {
		t.Fatalf("%d windowed rows, want 10000", got)
	}
}

func TestHopWindowRefusesBadIntervals(t *testing.T) {
	ts := []types.T{types.TInt64, types.TTimestamp}
	out := stFields(types.TInt64, types.TTimestamp, types.TTimestamp, types.TTimestamp)
	for _, iv := range []types.IntervalValue{{Months: 1}, {}, {Micros: -5}} {
		n := &plan.StreamHopWindow{TimeCol: 1, Slide: iv, Size: types.IntervalValue{Days: 1}, Out: out}
		if _, err := NewHopWindow(stActx(memkv.New()), n, NewMockSource(ts)); err == nil {
			t.Errorf("slide %+v accepted", iv)
		}
	}
	n := &plan.StreamHopWindow{TimeCol: 1, Slide: types.IntervalValue{Micros: 1}, Size: types.IntervalValue{Days: 1}, Out: out}
	if _, err := NewHopWindow(stActx(memkv.New()), n, NewMockSource(ts)); err == nil {
		t.Error("a row in 86e9 windows accepted")
	}
}

// TestHopWindowWatermarks: a watermark on the time column passes on and
// gives window_start the start of the earliest window a later row can be
// in, and window_end that plus the size.
func TestHopWindowWatermarks(t *testing.T) {
	ts := func(s string) types.Datum {
		d, err := types.ParseText(types.TTimestamp, s)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	for _, c := range []struct {
		slide, size, wm string
		want            []string
	}{
		{"1 minute", "1 minute", "2024-01-01 10:00:30", []string{"$1 2024-01-01 10:00:30", "$2 2024-01-01 10:00:00", "$3 2024-01-01 10:01:00"}},
		{"1 minute", "1 minute", "2024-01-01 10:01:00", []string{"$1 2024-01-01 10:01:00", "$2 2024-01-01 10:01:00", "$3 2024-01-01 10:02:00"}},
		{"1 minute", "5 minutes", "2024-01-01 10:02:30", []string{"$1 2024-01-01 10:02:30", "$2 2024-01-01 09:58:00", "$3 2024-01-01 10:03:00"}},
		// Slide above size: 10:03 is between windows; the next starts at 10:05.
		{"5 minutes", "2 minutes", "2024-01-01 10:03:00", []string{"$1 2024-01-01 10:03:00", "$2 2024-01-01 10:05:00", "$3 2024-01-01 10:07:00"}},
		{"1 minute", "5 minutes", "infinity", []string{"$1 infinity", "$2 infinity", "$3 infinity"}},
	} {
		e := stHop(t, c.slide, c.size, WatermarkMsg(&Watermark{Col: 1, Val: ts(c.wm)}), WatermarkMsg(&Watermark{Col: 0, Val: types.DInt(3)}))
		msgs, err := Collect(context.Background(), e, 1)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range msgs {
			if m.Watermark != nil && m.Watermark.Col > 0 {
				got = append(got, fmt.Sprintf("$%d %s", m.Watermark.Col, types.AppendText(nil, types.TTimestamp, &m.Watermark.Val)))
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("hop(%s, %s) watermark %s: got %v, want %v", c.slide, c.size, c.wm, got, c.want)
		}
		if len(msgs) != 4 || msgs[3].Watermark == nil || msgs[3].Watermark.Col != 0 {
			t.Errorf("the watermark on column 0 did not pass through: %d messages", len(msgs))
		}
	}
}
