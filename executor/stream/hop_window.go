package stream

import (
	"context"
	"fmt"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/types"
)

// MaxHopWindows bounds how many windows one row may fall in (size / slide).
const MaxHopWindows = 4096

// hopWindowExec expands each row into one row per window containing its time
// column: HOP(t, col, slide, size) windows start at multiples of slide (from
// the Unix epoch) and last size; TUMBLE is slide = size. Output: the input
// columns, window_start, window_end. A row whose time is NULL or infinite is
// in no window. An update pair becomes an update pair per window both halves
// are in, a Delete per window only the old half is in and an Insert per
// window only the new half is in.
type hopWindowExec struct {
	in          Executor
	ts          []types.T
	nin         int
	timeCol     int
	slide, size int64 // µs

	pending    []*types.Chunk
	wms        []Message // derived watermarks to send next
	oldW, newW []int64
}

// firstStart returns the start of the earliest window a row at time t or
// later can be in.
func (e *hopWindowExec) firstStart(t int64) int64 {
	last := t - ((t%e.slide)+e.slide)%e.slide // the latest start at or before t
	if t-last >= e.size {
		return last + e.slide // t is between windows
	}
	return last - (e.size-(t-last)-1)/e.slide*e.slide
}

// NewHopWindow returns the executor of a StreamHopWindow.
func NewHopWindow(actx *ActorContext, n *plan.StreamHopWindow, in Executor) (Executor, error) {
	nin := len(in.Schema())
	ts := plan.Types(n.Out)
	if len(ts) != nin+2 {
		return nil, fmt.Errorf("hop window: %d output columns for %d input columns", len(ts), nin)
	}
	if n.TimeCol < 0 || n.TimeCol >= nin {
		return nil, fmt.Errorf("hop window: time column %d out of %d", n.TimeCol, nin)
	}
	if id := in.Schema()[n.TimeCol].ID; id != types.Timestamp && id != types.Timestamptz {
		return nil, fmt.Errorf("hop window: time column has type %s, want a timestamp", in.Schema()[n.TimeCol])
	}
	if ts[nin].Physical() != types.PhysI64 || ts[nin+1].Physical() != types.PhysI64 {
		return nil, fmt.Errorf("hop window: window columns have types %s, %s", ts[nin], ts[nin+1])
	}
	slide, err := fixedMicros(n.Slide)
	if err != nil {
		return nil, fmt.Errorf("hop window: slide: %w", err)
	}
	size, err := fixedMicros(n.Size)
	if err != nil {
		return nil, fmt.Errorf("hop window: size: %w", err)
	}
	if size/slide > MaxHopWindows {
		return nil, fmt.Errorf("hop window: a row would be in %d windows (size / slide), at most %d", size/slide, MaxHopWindows)
	}
	return &hopWindowExec{in: in, ts: ts, nin: nin, timeCol: n.TimeCol, slide: slide, size: size}, nil
}

// fixedMicros converts a positive interval of days and microseconds to µs.
func fixedMicros(iv types.IntervalValue) (int64, error) {
	if iv.Months != 0 {
		return 0, fmt.Errorf("interval %s has months", types.AppendInterval(nil, iv))
	}
	us := int64(iv.Days)*86_400_000_000 + iv.Micros
	if us <= 0 {
		return 0, fmt.Errorf("interval %s is not positive", types.AppendInterval(nil, iv))
	}
	return us, nil
}

func (e *hopWindowExec) Schema() []types.T { return e.ts }

func (e *hopWindowExec) Next(ctx context.Context) (Message, error) {
	for {
		if len(e.wms) > 0 {
			m := e.wms[0]
			e.wms = e.wms[1:]
			return m, nil
		}
		if len(e.pending) > 0 {
			c := e.pending[0]
			e.pending[0] = nil
			e.pending = e.pending[1:]
			return ChunkMsg(c), nil
		}
		m, err := e.in.Next(ctx)
		if err == nil && m.Watermark != nil && m.Watermark.Col == e.timeCol && !m.Watermark.Val.Null &&
			m.Watermark.Val.I != types.NegInfinityTS {
			// A watermark w on the time column bounds the windows of later
			// rows: none starts before the first window containing w.
			start, end := int64(types.InfinityTS), int64(types.InfinityTS)
			if t := m.Watermark.Val.I; t != types.InfinityTS {
				start = e.firstStart(t)
				end = start + e.size
			}
			e.wms = append(e.wms[:0],
				WatermarkMsg(&Watermark{Col: e.nin, Val: types.Datum{I: start}}),
				WatermarkMsg(&Watermark{Col: e.nin + 1, Val: types.Datum{I: end}}))
			return m, nil
		}
		if err != nil || m.Chunk == nil {
			// Watermarks keep their column: the input columns come first.
			return m, err
		}
		e.expand(m.Chunk)
	}
}

// windows appends to dst the ascending starts of the windows containing t.
func (e *hopWindowExec) windows(dst []int64, v *types.Vector, i int) []int64 {
	dst = dst[:0]
	t := v.I64[i]
	if v.Nulls[i] || t == types.InfinityTS || t == types.NegInfinityTS {
		return dst
	}
	last := t - ((t%e.slide)+e.slide)%e.slide // the latest start at or before t
	if t-last >= e.size {
		return dst // between windows (slide > size)
	}
	// Starts s on the grid with t - size < s <= last.
	k := (e.size-(t-last)-1)/e.slide + 1
	for s := last - (k-1)*e.slide; s <= last; s += e.slide {
		dst = append(dst, s)
	}
	return dst
}

// expand queues the windowed rows of c as chunks of about DefaultChunkSize
// rows (an update pair never split).
func (e *hopWindowExec) expand(c *types.Chunk) {
	var out *types.Chunk
	tv := &c.Cols[e.timeCol]
	n := c.Len()
	for i := 0; i < n; {
		r, p, op := nextChange(c, i)
		if r >= n {
			break
		}
		if out == nil {
			out = types.NewChunk(e.ts, types.DefaultChunkSize)
			out.Ops = make([]types.Op, 0, types.DefaultChunkSize)
		}
		if p < 0 {
			e.newW = e.windows(e.newW, tv, r)
			for _, s := range e.newW {
				e.appendWindow(out, c, r, op, s)
			}
			i = r + 1
		} else {
			e.oldW = e.windows(e.oldW, tv, r)
			e.newW = e.windows(e.newW, tv, p)
			a, b := e.oldW, e.newW
			for len(a) > 0 || len(b) > 0 {
				switch {
				case len(b) == 0 || len(a) > 0 && a[0] < b[0]:
					e.appendWindow(out, c, r, types.OpDelete, a[0])
					a = a[1:]
				case len(a) == 0 || b[0] < a[0]:
					e.appendWindow(out, c, p, types.OpInsert, b[0])
					b = b[1:]
				default:
					e.appendWindow(out, c, r, types.OpUpdateDelete, a[0])
					e.appendWindow(out, c, p, types.OpUpdateInsert, b[0])
					a, b = a[1:], b[1:]
				}
			}
			i = p + 1
		}
		if out.Len() >= types.DefaultChunkSize {
			e.pending = append(e.pending, out)
			out = nil
		}
	}
	if out != nil && out.Len() > 0 {
		e.pending = append(e.pending, out)
	}
}

// appendWindow appends row i of c with op and the window starting at start.
func (e *hopWindowExec) appendWindow(out, c *types.Chunk, i int, op types.Op, start int64) {
	for j := 0; j < e.nin; j++ {
		out.Cols[j].AppendFrom(&c.Cols[j], i)
	}
	ws, we := &out.Cols[e.nin], &out.Cols[e.nin+1]
	ws.Nulls = append(ws.Nulls, false)
	ws.I64 = append(ws.I64, start)
	we.Nulls = append(we.Nulls, false)
	we.I64 = append(we.I64, start+e.size)
	out.Ops = append(out.Ops, op)
	out.SetLen(out.Len() + 1)
}
