package physical

import (
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
)

// AppendOnlyAggs marks the aggregations under n that compute a min or max
// over an input that only inserts (AppendOnly): those keep just the current
// extreme in their state row instead of every input row in a table
// (plan.AggInputOf). Run after EmitOnWindowClose, which makes aggregations
// append-only.
func AppendOnlyAggs(n plan.StreamNode) {
	for _, in := range n.Inputs() {
		AppendOnlyAggs(in)
	}
	a, ok := n.(*plan.StreamAgg)
	if !ok || a.Merge || !AppendOnly(a.Input) {
		return
	}
	for i := range a.Aggs {
		if k := a.Aggs[i].Agg.Kind; k == expr.AggMin || k == expr.AggMax {
			a.AppendOnlyInput = true
			return
		}
	}
}
