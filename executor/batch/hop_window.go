package batch

import (
	"context"
	"io"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/types"
)

// hopWindowExec expands each input row into the TUMBLE/HOP windows that
// contain its time column (plan.HopWindow): the row's columns, then
// window_start and window_end. A row in several windows may span output
// chunks, so the executor remembers its place in the current input chunk.
type hopWindowExec struct {
	node        *plan.HopWindow
	in          Executor
	ts          []types.T
	slide, size int64
	out         *types.Chunk
	cur         *types.Chunk // input chunk being expanded (valid until in.Next)
	row, win    int          // next row of cur, next window of that row
	done        bool
}

func newHopWindow(n *plan.HopWindow, in Executor) *hopWindowExec {
	return &hopWindowExec{node: n, in: in, ts: plan.Types(n.Out),
		slide: plan.WindowMicros(n.Slide), size: plan.WindowMicros(n.Size)}
}

func (e *hopWindowExec) Schema() []types.T { return e.ts }

func (e *hopWindowExec) Next(ctx context.Context) (*types.Chunk, error) {
	if err := checkCtx(ctx); err != nil {
		return nil, err
	}
	if e.done {
		return nil, io.EOF
	}
	if e.out == nil {
		e.out = types.NewChunk(e.ts, types.DefaultChunkSize)
	}
	out := e.out
	out.Reset()
	nIn := len(e.ts) - 2
	startCol, endCol := &out.Cols[nIn], &out.Cols[nIn+1]
	for out.Len() < types.DefaultChunkSize {
		if e.cur == nil || e.row >= e.cur.Len() {
			c, err := e.in.Next(ctx)
			if err == io.EOF {
				e.done, e.cur = true, nil
				if out.Len() > 0 {
					return out, nil
				}
				return nil, io.EOF
			}
			if err != nil {
				return nil, err
			}
			e.cur, e.row, e.win = c, 0, 0
			continue
		}
		c, i := e.cur, e.row
		tv := &c.Cols[e.node.TimeCol]
		if !c.Visible(i) || tv.Nulls[i] {
			e.row++
			continue
		}
		first, n := plan.FirstWindow(tv.I64[i], e.slide, e.size)
		for ; e.win < n && out.Len() < types.DefaultChunkSize; e.win++ {
			start := first + int64(e.win)*e.slide
			end := start + e.size
			if start > tv.I64[i] || end <= tv.I64[i] {
				return nil, types.Errorf(types.ErrDatetimeOverflow, "timestamp out of range")
			}
			for j := 0; j < nIn; j++ {
				out.Cols[j].AppendFrom(&c.Cols[j], i)
			}
			startCol.I64 = append(startCol.I64, start)
			startCol.Nulls = append(startCol.Nulls, false)
			endCol.I64 = append(endCol.I64, end)
			endCol.Nulls = append(endCol.Nulls, false)
			out.SetLen(out.Len() + 1)
		}
		if e.win == n {
			e.row, e.win = e.row+1, 0
		}
	}
	return out, nil
}

func (e *hopWindowExec) Close() error { return e.in.Close() }
