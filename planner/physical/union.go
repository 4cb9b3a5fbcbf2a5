package physical

import (
	"slices"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
)

// setOp plans UNION ALL as a stream union whose inputs carry a hidden
// constant input number in their key, and UNION as that plus a distinct.
func (p *planner) setOp(n *plan.SetOp) (plan.StreamNode, error) {
	if n.Kind != plan.Union {
		return p.intersectExcept(n)
	}
	var u plan.StreamNode
	if rows, ok := unionRows(n); ok {
		var err error
		if u, err = p.values(&plan.Values{}, rows, n.Out); err != nil {
			return nil, err
		}
	} else {
		var err error
		if u, err = p.unionAll(n); err != nil {
			return nil, err
		}
	}
	if n.All {
		return u, nil
	}
	return distinct(u, n.Out), nil
}

func (p *planner) unionAll(n *plan.SetOp) (plan.StreamNode, error) {
	w := len(n.Out)
	ins := make([]plan.StreamNode, len(n.Inputs))
	for i, c := range n.Inputs {
		s, err := p.convert(c)
		if err != nil {
			return nil, err
		}
		ins[i] = s
	}
	// Layout of every input: the union's columns, then one slot per input's
	// hidden key columns (NULL in the other inputs), then the input number.
	slot := make([]int, len(ins)) // where input i's hidden columns start
	next := w
	var extras []plan.Field
	for i, s := range ins {
		slot[i] = next
		fs := s.Schema()[w:]
		extras = append(extras, hidden(fs)...)
		next += len(fs)
	}
	src := next
	var key []int
	for i, s := range ins {
		for _, k := range s.StreamKey() {
			if k >= w {
				k = slot[i] + k - w
			}
			if !slices.Contains(key, k) {
				key = append(key, k)
			}
		}
	}
	key = append(key, src)
	slices.Sort(key)
	out := append(append(slices.Clone(n.Out), extras...), plan.Field{Name: "_union_input", Type: types.TInt32, Hidden: true})
	projected := make([]plan.StreamNode, len(ins))
	for i, s := range ins {
		fs := s.Schema()
		exprs := make([]expr.Expr, 0, len(out))
		for j := 0; j < w; j++ {
			var e expr.Expr = expr.Column(j, fs[j].Type)
			if fs[j].Type != n.Out[j].Type {
				c, err := expr.Cast(e, n.Out[j].Type)
				if err != nil {
					return nil, err
				}
				e = c
			}
			exprs = append(exprs, e)
		}
		for k, s2 := range ins {
			for j := w; j < len(s2.Schema()); j++ {
				if k == i {
					exprs = append(exprs, expr.Column(j, fs[j].Type))
				} else {
					exprs = append(exprs, expr.Literal(types.NullDatum, s2.Schema()[j].Type))
				}
			}
		}
		exprs = append(exprs, expr.Literal(types.DInt(int64(i)), types.TInt32))
		if ip, ok := s.(*plan.StreamProject); ok {
			if merged, ok := composeProject(ip, exprs); ok {
				s, exprs = ip.Input, merged
			}
		}
		proj := &plan.StreamProject{Input: s, Exprs: exprs, Out: out, Key: key}
		projected[i] = exchange(proj, plan.DistHash, key)
	}
	return &plan.StreamUnion{Ins: projected, Key: key}, nil
}

// unionRows returns the rows of a UNION whose inputs are all constant rows
// (the binder's form of a multi-row VALUES), so they make one StreamValues.
func unionRows(n *plan.SetOp) ([][]expr.Expr, bool) {
	var rows [][]expr.Expr
	for _, in := range n.Inputs {
		r, ok := constRows(in)
		if !ok {
			return nil, false
		}
		rows = append(rows, r...)
	}
	return rows, true
}

// constRows returns the rows of Values under projections, with the
// projections substituted and folded.
func constRows(n plan.Node) ([][]expr.Expr, bool) {
	switch n := n.(type) {
	case *plan.Values:
		if n.Lit != nil {
			return nil, false
		}
		for _, f := range n.Out {
			if f.Rel != 0 {
				return nil, false
			}
		}
		return n.Rows, true
	case *plan.Project:
		rows, ok := constRows(n.Input)
		if !ok {
			return nil, false
		}
		out := make([][]expr.Expr, len(rows))
		for i, r := range rows {
			out[i] = make([]expr.Expr, len(n.Exprs))
			for j, e := range n.Exprs {
				s, ok := plan.RewriteCols(e, func(c *expr.ColumnRef) expr.Expr {
					if c.Index >= len(r) {
						return nil
					}
					return r[c.Index]
				})
				if !ok {
					return nil, false
				}
				if f, err := expr.Fold(s); err == nil {
					s = f
				}
				out[i][j] = s
			}
		}
		return out, true
	}
	return nil, false
}

// intersectExcept plans INTERSECT and EXCEPT (their distinct forms) as an
// aggregation: both inputs, each row marked with the side it came from, are
// grouped by all their columns (NULLs equal, as set operations compare
// them), counting the rows of each side; INTERSECT keeps the groups both
// sides have rows in, EXCEPT those only the left side has. The ALL forms
// (a row as many times as the counts say) are refused.
func (p *planner) intersectExcept(n *plan.SetOp) (plan.StreamNode, error) {
	if n.All {
		return nil, unsupported("INTERSECT ALL and EXCEPT ALL are not supported in materialized views")
	}
	if len(n.Inputs) != 2 {
		return nil, unsupported("INTERSECT and EXCEPT of %d inputs are not supported in materialized views", len(n.Inputs))
	}
	w := len(n.Out)
	marked := make([]plan.Node, 2)
	out := append(slices.Clone(n.Out), plan.Field{Name: "left", Type: types.TBool, Hidden: true},
		plan.Field{Name: "right", Type: types.TBool, Hidden: true})
	for i, in := range n.Inputs {
		exprs := make([]expr.Expr, 0, w+2)
		for c := 0; c < w; c++ {
			exprs = append(exprs, expr.Column(c, n.Out[c].Type))
		}
		exprs = append(exprs, expr.Literal(types.DBool(i == 0), types.TBool), expr.Literal(types.DBool(i == 1), types.TBool))
		marked[i] = &plan.Project{Input: in, Exprs: exprs, Out: slices.Clone(out)}
	}
	count, err := expr.LookupAgg("count", nil, false)
	if err != nil {
		return nil, err
	}
	groupBy := make([]int, w)
	for c := range groupBy {
		groupBy[c] = c
	}
	agg := &plan.Agg{Input: &plan.SetOp{Kind: plan.Union, All: true, Inputs: marked, Out: out}, GroupBy: groupBy,
		Aggs: []plan.AggCall{{Agg: count, Filter: w, Name: "count"}, {Agg: count, Filter: w + 1, Name: "count"}},
		Out:  append(slices.Clone(n.Out), plan.Field{Name: "left", Type: types.TInt64, Hidden: true}, plan.Field{Name: "right", Type: types.TInt64, Hidden: true})}
	positive := func(col int) (expr.Expr, error) {
		return expr.Call(">", []expr.Expr{expr.Column(col, types.TInt64), expr.Literal(types.DInt(0), types.TInt64)})
	}
	left, err := positive(w)
	if err != nil {
		return nil, err
	}
	right, err := positive(w + 1)
	if err != nil {
		return nil, err
	}
	if n.Kind == plan.Except {
		if right, err = expr.Call("not", []expr.Expr{right}); err != nil {
			return nil, err
		}
	}
	cond, err := expr.Call("and", []expr.Expr{left, right})
	if err != nil {
		return nil, err
	}
	exprs := make([]expr.Expr, w)
	for c := range exprs {
		exprs[c] = expr.Column(c, n.Out[c].Type)
	}
	return p.convert(&plan.Project{Input: &plan.Filter{Input: agg, Cond: cond}, Exprs: exprs, Out: slices.Clone(n.Out)})
}
