package plan

import (
	"fmt"
	"strings"

	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
)

// StreamLocalAgg is the first phase of a two-phase aggregation: it runs in
// the actors of its input, before the exchange to the StreamAgg (Merge) it
// feeds, and holds no state. It folds the changes it sees into one partial
// row per group of GroupBy: the group columns, each aggregate's partials
// (LocalAggPartials) and the net row count (the weight, last column), all
// as inserts, sent at each barrier and watermark and whenever it holds
// more groups than it may. A change stream and its partial rows give the
// StreamAgg the same state, so only partials cross the exchange: few rows
// where many changes share a group.
type StreamLocalAgg struct {
	Input   StreamNode
	GroupBy []int
	Aggs    []AggCall // as planned on Input's columns
	Out     []Field
}

// LocalAggPartials returns the partial columns a StreamLocalAgg keeps for
// an aggregate, or false when the aggregate has no exact partial form
// (min, max and string_agg under retraction; DISTINCT; sums of floats,
// numerics and intervals):
//
//	count(*), count(x)                net count (int8)
//	sum, avg of int2, int4 and int8   net count of non-NULL arguments (int8), net sum (int8)
//
// A net sum that would overflow int8 is sent before it does (the merging
// aggregation sums exactly), so the partials of one group may take several
// rows.
func LocalAggPartials(c *AggCall) ([]types.T, bool) {
	a := c.Agg
	if a.Distinct {
		return nil, false
	}
	switch a.Kind {
	case expr.AggCountStar, expr.AggCount:
		return []types.T{types.TInt64}, true
	case expr.AggSum, expr.AggAvg:
		if id := a.Args[0].ID; id == types.Int16 || id == types.Int32 || id == types.Int64 {
			return []types.T{types.TInt64, types.TInt64}, true
		}
	}
	return nil, false
}

// LocalAggOut returns a StreamLocalAgg's output fields over input fields
// in: the group columns, the partials of each aggregate in order, then the
// weight; false when an aggregate has no partial form.
func LocalAggOut(in []Field, groupBy []int, aggs []AggCall) ([]Field, bool) {
	out := make([]Field, 0, len(groupBy)+len(aggs)+1)
	for _, c := range groupBy {
		out = append(out, in[c])
	}
	for i := range aggs {
		ts, ok := LocalAggPartials(&aggs[i])
		if !ok {
			return nil, false
		}
		for j, t := range ts {
			out = append(out, Field{Name: fmt.Sprintf("%s_partial%d", aggs[i].Name, j), Type: t})
		}
	}
	return append(out, Field{Name: "_weight", Type: types.TInt64}), true
}

func (n *StreamLocalAgg) Schema() []Field { return n.Out }

// StreamKey: the group columns (a group may have several partial rows; the
// rows are weights to add up, not a keyed stream).
func (n *StreamLocalAgg) StreamKey() []int     { return identity(len(n.GroupBy)) }
func (n *StreamLocalAgg) Inputs() []StreamNode { return []StreamNode{n.Input} }
func (n *StreamLocalAgg) Describe() string {
	parts := make([]string, 0, len(n.Aggs))
	for _, a := range n.Aggs {
		parts = append(parts, a.Name)
	}
	kind := "StreamLocalHashAgg group by " + colList(n.GroupBy)
	if len(n.GroupBy) == 0 {
		kind = "StreamLocalSimpleAgg"
	}
	return fmt.Sprintf("%s aggs [%s]", kind, strings.Join(parts, ", "))
}
