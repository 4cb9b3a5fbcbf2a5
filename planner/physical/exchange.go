package physical

import (
	"slices"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
)

// exchange redistributes n's rows (Hash on keys; Single for no keys),
// unless n is already distributed that way. An exchange directly over
// another replaces it.
func exchange(n plan.StreamNode, dist plan.DistKind, keys []int) plan.StreamNode {
	if dist == plan.DistHash && len(keys) == 0 {
		dist = plan.DistSingle
	}
	if d, ks, ok := distOf(n); ok && d == dist && (dist != plan.DistHash || slices.Equal(ks, keys)) {
		return n
	}
	if e, ok := n.(*plan.StreamExchange); ok {
		n = e.Input
	}
	skipStatelessExchange(n)
	return &plan.StreamExchange{Input: n, Dist: dist, Keys: slices.Clone(keys)}
}

// skipStatelessExchange removes the exchange under a chain of projections and
// filters that a new exchange is about to redistribute: stateless operators
// run as well below it, and every row then crosses one exchange, not two.
func skipStatelessExchange(n plan.StreamNode) {
	for {
		var in *plan.StreamNode
		switch m := n.(type) {
		case *plan.StreamProject:
			in = &m.Input
		case *plan.StreamFilter:
			in = &m.Input
		default:
			return
		}
		if e, ok := (*in).(*plan.StreamExchange); ok {
			*in = e.Input
			return
		}
		n = *in
	}
}

// distOf reports how n's output is distributed over actors, when known.
func distOf(n plan.StreamNode) (plan.DistKind, []int, bool) {
	switch n := n.(type) {
	case *plan.StreamExchange:
		return n.Dist, n.Keys, true
	case *plan.StreamValues:
		return plan.DistSingle, nil, true
	case *plan.StreamAgg:
		if len(n.GroupBy) == 0 {
			return plan.DistSingle, nil, true
		}
		return plan.DistHash, span(nil, 0, len(n.GroupBy)), true
	case *plan.StreamTopN:
		if len(n.GroupBy) == 0 {
			return plan.DistSingle, nil, true
		}
		return distOf(n.Input)
	case *plan.StreamOverWindow:
		if len(n.PartitionBy()) == 0 {
			return plan.DistSingle, nil, true
		}
		return distOf(n.Input)
	case *plan.StreamFilter:
		return distOf(n.Input)
	case *plan.StreamUnnest:
		return distOf(n.Input) // the input's columns keep their positions
	case *plan.StreamGapFill:
		return plan.DistSingle, nil, true
	case *plan.StreamChangelog:
		// The input's columns keep their positions, but its hidden key columns
		// after them are dropped.
		d, ks, ok := distOf(n.Input)
		for _, k := range ks {
			if k >= len(n.Out)-2 {
				return 0, nil, false
			}
		}
		return d, ks, ok
	case *plan.StreamTemporalFilter:
		return distOf(n.Input)
	case *plan.StreamWatermarkFilter:
		return distOf(n.Input)
	case *plan.StreamHopWindow:
		return distOf(n.Input)
	case *plan.StreamMaterialize:
		return distOf(n.Input)
	case *plan.StreamTemporalJoin:
		return distOf(n.Left) // the left columns keep their positions
	case *plan.StreamSink:
		return distOf(n.Input)
	case *plan.StreamSourceScan:
		return plan.DistSingle, nil, true
	case *plan.StreamProject:
		d, ks, ok := distOf(n.Input)
		if !ok || d != plan.DistHash {
			return d, ks, ok
		}
		mapped := make([]int, len(ks))
		for i, k := range ks {
			mapped[i] = -1
			for j, e := range n.Exprs {
				if c, ok := e.(*expr.ColumnRef); ok && c.Index == k {
					mapped[i] = j
					break
				}
			}
			if mapped[i] < 0 {
				return 0, nil, false
			}
		}
		return d, mapped, true
	}
	return 0, nil, false
}
