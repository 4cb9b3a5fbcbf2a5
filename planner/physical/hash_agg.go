package physical

import (
	"slices"

	"github.com/tributary/tributary/sql/types"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
)

// agg plans hash aggregation (hashed by the group) or simple aggregation (one actor).
func (p *planner) agg(n *plan.Agg) (plan.StreamNode, error) {
	for i := range n.Aggs {
		c := &n.Aggs[i]
		if c.Agg.Distinct && (c.Agg.Kind == expr.AggFirstValue || c.Agg.Kind == expr.AggLastValue) {
			return nil, unsupported("%s(DISTINCT ...) is not supported in materialized views", c.Agg.Name)
		}
		if !c.Agg.Distinct || len(c.OrderBy) == 0 || c.Agg.Kind == expr.AggMin || c.Agg.Kind == expr.AggMax {
			continue
		}
		// string_agg(DISTINCT x, ... ORDER BY x) and array_agg(DISTINCT x [ORDER BY x]) read their distinct table, in x order.
		if (c.Agg.Kind != expr.AggStringAgg && c.Agg.Kind != expr.AggArrayAgg) || len(c.OrderBy) != 1 || c.OrderBy[0].Col != c.Args[0] || c.OrderBy[0].Desc {
			return nil, unsupported("%s with both DISTINCT and ORDER BY (other than ascending by its argument) is not supported in materialized views", c.Agg.Name)
		}
	}
	in, err := p.convert(n.Input)
	if err != nil {
		return nil, err
	}
	if local := localAgg(in, n.GroupBy, n.Aggs); local != nil {
		return &plan.StreamAgg{Input: exchange(local, plan.DistHash, span(nil, 0, len(n.GroupBy))),
			GroupBy: span(nil, 0, len(n.GroupBy)), Aggs: slices.Clone(n.Aggs), Out: slices.Clone(n.Out), Merge: true}, nil
	}
	return &plan.StreamAgg{Input: exchange(in, plan.DistHash, n.GroupBy), GroupBy: slices.Clone(n.GroupBy),
		Aggs: slices.Clone(n.Aggs), Out: slices.Clone(n.Out)}, nil
}

// distinct groups by the first len(fields) columns with no aggregates.
func distinct(in plan.StreamNode, fields []plan.Field) plan.StreamNode {
	group := span(nil, 0, len(fields))
	if local := localAgg(in, group, nil); local != nil {
		return &plan.StreamAgg{Input: exchange(local, plan.DistHash, group), GroupBy: group, Out: slices.Clone(fields), Merge: true}
	}
	return &plan.StreamAgg{Input: exchange(in, plan.DistHash, group), GroupBy: group, Out: slices.Clone(fields)}
}

// expand plans GROUPING SETS, ROLLUP and CUBE's Expand as a UNION ALL of one
// projection of the input per grouping set (the keys the set lacks NULL,
// the set's index in column GID), each reading the input on its own; the
// aggregation above groups by the keys and GID. Unlike a batch query, an
// empty grouping set gives no row while the input has none.
func (p *planner) expand(n *plan.Expand) (plan.StreamNode, error) {
	fields := n.Input.Schema()
	ins := make([]plan.Node, len(n.Sets))
	for i, set := range n.Sets {
		exprs := make([]expr.Expr, len(fields))
		for c, f := range fields {
			switch {
			case c == n.GID:
				exprs[c] = expr.Literal(types.DInt(int64(i)), f.Type)
			case c < n.Keys && !slices.Contains(set, c):
				exprs[c] = expr.Literal(types.NullDatum, f.Type)
			default:
				exprs[c] = expr.Column(c, f.Type)
			}
		}
		ins[i] = &plan.Project{Input: n.Input, Exprs: exprs, Out: slices.Clone(fields)}
	}
	return p.convert(&plan.SetOp{Kind: plan.Union, All: true, Inputs: ins, Out: slices.Clone(fields)})
}

// ShareDistinct lets the DISTINCT aggregates of every aggregation under n
// over the same arguments share one table (plan.StreamAgg.ShareDistinct;
// jobs planned with state version 3 or later).
func ShareDistinct(n plan.StreamNode) {
	for _, in := range n.Inputs() {
		ShareDistinct(in)
	}
	if a, ok := n.(*plan.StreamAgg); ok && !a.Merge {
		a.ShareDistinct = true
	}
}
