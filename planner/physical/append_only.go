package physical

import (
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
)

// AppendOnlyInputs marks the operators under n whose input only inserts
// (AppendOnly) and whose state can then be smaller: aggregations computing
// a min or max keep just the current extreme in their state row instead of
// every input row in a table (plan.AggInputOf), DISTINCT aggregates write a
// value's count once, and top-N keeps only each group's top. Run after EmitOnWindowClose, which makes aggregations
// append-only.
func AppendOnlyInputs(n plan.StreamNode) {
	for _, in := range n.Inputs() {
		AppendOnlyInputs(in)
	}
	if t, ok := n.(*plan.StreamTopN); ok {
		t.AppendOnlyInput = AppendOnly(t.Input)
		return
	}
	a, ok := n.(*plan.StreamAgg)
	if !ok || a.Merge || !AppendOnly(a.Input) {
		return
	}
	for i := range a.Aggs {
		if k := a.Aggs[i].Agg.Kind; k == expr.AggMin || k == expr.AggMax || plan.AggInputOf(&a.Aggs[i], false) == plan.AggInputDistinct {
			a.AppendOnlyInput = true
			return
		}
	}
}
