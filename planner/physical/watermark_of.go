package physical

import (
	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/types"
)

// ViewWatermark returns the watermark a materialized view of sq passes on
// to the jobs reading it, or nil: for a view whose plan only inserts, the
// first visible column that is, through projections, filters, exchanges and
// temporal joins, a column of a scan with a WATERMARK FOR clause, with that
// clause's delay. A job reading the view then takes the greatest value seen
// less the delay, capped by the watermark the view's own job has committed
// (its filter's, plan.WatermarkSource): the view's job keeps a watermark
// per split and passes on the least, so a row of a split behind the others
// may be below the greatest seen less the delay, but is never below the
// watermark the view's job had before it wrote the row.
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

// watermarkDelay is the delay of the watermark filter that generates the
// watermark of column col of n.
func watermarkDelay(n plan.StreamNode, col int) (types.IntervalValue, bool) {
	if f := plan.WatermarkSource(n, col); f != nil {
		return f.Delay, true
	}
	return types.IntervalValue{}, false
}
