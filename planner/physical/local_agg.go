package physical

import (
	"slices"

	"github.com/tributary/tributary/planner/plan"
)

// localAgg returns the first phase of a two-phase aggregation of in (a
// StreamLocalAgg, in in's actors), or nil when in is already distributed by
// the group (no exchange to save) or an aggregate has no partial form.
func localAgg(in plan.StreamNode, groupBy []int, aggs []plan.AggCall) plan.StreamNode {
	dist := plan.DistHash
	if len(groupBy) == 0 {
		dist = plan.DistSingle
	}
	if d, ks, ok := distOf(in); ok && d == dist && (dist != plan.DistHash || slices.Equal(ks, groupBy)) {
		return nil
	}
	out, ok := plan.LocalAggOut(in.Schema(), groupBy, aggs)
	if !ok {
		return nil
	}
	if e, isEx := in.(*plan.StreamExchange); isEx {
		in = e.Input
	}
	skipStatelessExchange(in) // the exchange after the local phase redistributes
	return &plan.StreamLocalAgg{Input: in, GroupBy: slices.Clone(groupBy), Aggs: slices.Clone(aggs), Out: out}
}
