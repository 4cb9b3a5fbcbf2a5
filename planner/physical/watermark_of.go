package physical

import (
	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
)

// ViewWatermark returns the watermark a materialized view of sq passes on
// to the jobs reading it, or nil: for a view whose plan only inserts, the
// first visible column that is, through projections, filters, exchanges and
// temporal joins, a column of a scan with a WATERMARK FOR clause, with that
// clause's delay. A job reading the view then takes the greatest value seen
// less the delay: never above the watermark the view's own job had when it
// wrote a row (it saw every row the view holds, and more), so no row of the
// view is late for it.
func ViewWatermark(sq *StreamQuery) *catalog.Watermark {
	if !AppendOnly(sq.Root) {
		return nil
	}
	for i, f := range sq.Columns {
		if f.Hidden {
			continue
		}
		if d, ok := watermarkDelay(sq.Root, i); ok {
			w := &catalog.Watermark{Column: f.Name}
			if d != (types.IntervalValue{}) {
				w.Delay = string(types.AppendInterval(nil, d))
			}
			return w
		}
	}
	return nil
}

// watermarkDelay follows column col of n down to the watermark filter that
// generates its watermark.
func watermarkDelay(n plan.StreamNode, col int) (types.IntervalValue, bool) {
	for {
		switch x := n.(type) {
		case *plan.StreamWatermarkFilter:
			if x.Col == col {
				return x.Delay, true
			}
			n = x.Input
		case *plan.StreamProject:
			c, ok := x.Exprs[col].(*expr.ColumnRef)
			if !ok {
				return types.IntervalValue{}, false
			}
			n, col = x.Input, c.Index
		case *plan.StreamFilter, *plan.StreamExchange:
			n = x.Inputs()[0]
		case *plan.StreamTemporalJoin:
			if col >= len(x.Left.Schema()) {
				return types.IntervalValue{}, false
			}
			n = x.Left
		default:
			return types.IntervalValue{}, false
		}
	}
}
