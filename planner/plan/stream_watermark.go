package plan

import (
	"fmt"
	"slices"

	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
)

// StreamWatermarkFilter generates watermarks on column Col of a source's or
// append-only table's rows (its WATERMARK FOR clause), per source split (a
// table's or a view's rows are one split): at each barrier a split's
// watermark becomes the greatest Col seen in it less Delay (never lower than
// before), and an inserted row whose Col is below its own split's watermark
// is dropped as late. The watermark sent on is the least of the splits'
// that have sent a row, never lower than before. While the backfill of the
// scan below runs, no watermark rises (its rows are in key order, not in
// time order). It runs in its scan's one actor, which reads every split.
type StreamWatermarkFilter struct {
	StateInfo
	Input StreamNode
	Col   int
	Delay types.IntervalValue
}

func (n *StreamWatermarkFilter) Schema() []Field      { return n.Input.Schema() }
func (n *StreamWatermarkFilter) StreamKey() []int     { return n.Input.StreamKey() }
func (n *StreamWatermarkFilter) Inputs() []StreamNode { return []StreamNode{n.Input} }
func (n *StreamWatermarkFilter) Describe() string {
	return fmt.Sprintf("StreamWatermarkFilter $%d - %s", n.Col, types.AppendInterval(nil, n.Delay))
}

// StateLayouts implements StatefulNode: one row per split (a hash of its
// name, its watermark) and one for the watermark sent on, not distributed,
// so whichever actor reads a split next finds its row.
func (n *StreamWatermarkFilter) StateLayouts() []StateTable {
	return []StateTable{{Name: "watermark", Types: []types.T{types.TInt64, n.Input.Schema()[n.Col].Type}, PK: []int{0}}}
}

// WatermarkCols returns the output columns of n that carry watermarks
// (ascending): a watermark filter's column, and what survives of its
// input's through projections (a column passed unchanged), filters,
// exchanges, hop windows (window_start and window_end follow the time
// column), aggregations (group columns), inner joins (key columns with a
// watermark on both sides) and unions (columns every input has).
func WatermarkCols(n StreamNode) []int {
	var out []int
	switch n := n.(type) {
	case *StreamWatermarkFilter:
		out = append(WatermarkCols(n.Input), n.Col)
	case *StreamFilter, *StreamExchange, *StreamTemporalFilter, *StreamMaterialize, *StreamSink, *StreamTemporalJoin:
		out = WatermarkCols(n.Inputs()[0])
	case *StreamProject:
		in := WatermarkCols(n.Input)
		for j, e := range n.Exprs {
			if c, ok := e.(*expr.ColumnRef); ok && slices.Contains(in, c.Index) {
				out = append(out, j)
			}
		}
	case *StreamHopWindow:
		out = WatermarkCols(n.Input)
		if slices.Contains(out, n.TimeCol) {
			w := len(n.Input.Schema())
			out = append(out, w, w+1)
		}
	case *StreamLocalAgg:
		in := WatermarkCols(n.Input)
		for k, c := range n.GroupBy {
			if slices.Contains(in, c) {
				out = append(out, k)
			}
		}
	case *StreamAgg:
		in := WatermarkCols(n.Input)
		for k, c := range n.GroupBy {
			if slices.Contains(in, c) {
				out = append(out, k)
			}
		}
	case *StreamHashJoin:
		// An inner join's key column: the lesser of both sides' watermarks.
		if n.Kind != InnerJoin {
			break
		}
		l, r := WatermarkCols(n.Left), WatermarkCols(n.Right)
		nl := len(n.Left.Schema())
		for i := range n.EqLeft {
			if slices.Contains(l, n.EqLeft[i]) && slices.Contains(r, n.EqRight[i]) {
				out = append(out, n.EqLeft[i], nl+n.EqRight[i])
			}
		}
	case *StreamUnion:
		out = WatermarkCols(n.Ins[0])
		for _, in := range n.Ins[1:] {
			ws := WatermarkCols(in)
			out = slices.DeleteFunc(out, func(c int) bool { return !slices.Contains(ws, c) })
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// WatermarkSource follows column col of n down, through nodes that pass
// rows and the column on unchanged (projections of the column, filters,
// exchanges, the left side of temporal joins, a view's materialize), to the
// watermark filter that generates its watermark; nil when there is none.
// A materialized view passes that filter's watermark on (ViewWatermark).
func WatermarkSource(n StreamNode, col int) *StreamWatermarkFilter {
	for {
		switch x := n.(type) {
		case *StreamWatermarkFilter:
			if x.Col == col {
				return x
			}
			n = x.Input
		case *StreamProject:
			if col < 0 || col >= len(x.Exprs) {
				return nil
			}
			c, ok := x.Exprs[col].(*expr.ColumnRef)
			if !ok {
				return nil
			}
			n, col = x.Input, c.Index
		case *StreamFilter, *StreamExchange, *StreamMaterialize:
			n = x.Inputs()[0]
		case *StreamTemporalJoin:
			if col >= len(x.Left.Schema()) {
				return nil
			}
			n = x.Left
		default:
			return nil
		}
	}
}
