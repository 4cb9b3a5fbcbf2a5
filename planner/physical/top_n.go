package physical

import (
	"slices"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
)

// rankLimit recognises "rn <= N" (also <, = 1 and the mirrored forms) where
// rn is, through projections and filters, the row_number/rank/dense_rank
// column of a single-function Window: the group top-N pattern.
func rankLimit(in plan.Node, c expr.Expr) (*plan.Window, int64, bool) {
	f, ok := c.(*expr.FuncExpr)
	if !ok || len(f.Args) != 2 {
		return nil, 0, false
	}
	op := f.Name
	colSide, kSide := f.Args[0], f.Args[1]
	if _, ok := columnIndex(colSide); !ok {
		colSide, kSide = kSide, colSide
		op = map[string]string{"<=": ">=", "<": ">", ">=": "<=", ">": "<", "=": "="}[op]
	}
	col, ok := columnIndex(colSide)
	if !ok || !expr.IsConst(kSide) || !kSide.Type().IsInteger() {
		return nil, 0, false
	}
	kd, err := kSide.EvalRow(nil, nil)
	if err != nil || kd.Null {
		return nil, 0, false
	}
	var limit int64
	switch {
	case op == "<=":
		limit = kd.I
	case op == "<":
		limit = kd.I - 1
	case op == "=" && kd.I == 1:
		limit = 1
	default:
		return nil, 0, false
	}
	if limit < 1 {
		return nil, 0, false
	}
	for {
		switch x := in.(type) {
		case *plan.Project:
			if col, ok = columnIndex(x.Exprs[col]); !ok {
				return nil, 0, false
			}
			in = x.Input
		case *plan.Filter:
			in = x.Input
		case *plan.Window:
			w := len(x.Input.Schema())
			if len(x.Funcs) != 1 || col != w {
				return nil, 0, false
			}
			switch x.Funcs[0].Name {
			case "row_number", "rank", "dense_rank":
				return x, limit, true
			}
			return nil, 0, false
		default:
			return nil, 0, false
		}
	}
}

// limit plans ORDER BY .. LIMIT (or LIMIT alone, ordered by the stream key)
// as a top-N on one actor.
func (p *planner) limit(n *plan.Limit) (plan.StreamNode, error) {
	count, hasCount, err := constInt(n.Count, "LIMIT")
	if err != nil {
		return nil, err
	}
	offset, hasOffset, err := constInt(n.Offset, "OFFSET")
	if err != nil {
		return nil, err
	}
	if !hasCount {
		if hasOffset && offset > 0 {
			return nil, unsupported("OFFSET without LIMIT is not supported in materialized views")
		}
		return p.convert(n.Input)
	}
	input := n.Input
	var order []plan.SortKey
	if s, ok := input.(*plan.Sort); ok {
		order, input = slices.Clone(s.Keys), s.Input
	}
	if n.Ties != nil {
		// FETCH FIRST n ROWS WITH TIES keeps the rows whose rank is at most n.
		if !slices.Equal(order, n.Ties) {
			return nil, unsupported("WITH TIES over DISTINCT ON is not supported in materialized views")
		}
		if offset > 0 {
			return nil, unsupported("OFFSET with FETCH ... WITH TIES is not supported in materialized views")
		}
		in, err := p.convert(input)
		if err != nil {
			return nil, err
		}
		in = exchange(in, plan.DistSingle, nil)
		fields := in.Schema()
		topn := &plan.StreamTopN{Input: in, OrderBy: order, Limit: count, Rank: "rank",
			Out: append(slices.Clone(fields), plan.Field{Name: "rank", Type: types.TInt64, Hidden: true})}
		exprs := make([]expr.Expr, len(fields))
		for i, f := range fields {
			exprs[i] = expr.Column(i, f.Type)
		}
		return p.project(topn, exprs, slices.Clone(fields)), nil
	}
	in, err := p.convert(input)
	if err != nil {
		return nil, err
	}
	if order == nil {
		for _, k := range in.StreamKey() {
			order = append(order, plan.SortKey{Col: k})
		}
	}
	in = exchange(in, plan.DistSingle, nil)
	return &plan.StreamTopN{Input: in, OrderBy: order, Limit: count, Offset: offset, Out: slices.Clone(in.Schema())}, nil
}

// constInt evaluates a LIMIT or OFFSET expression, which must be constant.
func constInt(e expr.Expr, what string) (int64, bool, error) {
	if e == nil {
		return 0, false, nil
	}
	if !expr.IsConst(e) {
		return 0, false, unsupported("%s in a materialized view must be a constant", what)
	}
	d, err := e.EvalRow(nil, nil)
	if err != nil {
		return 0, false, err
	}
	if d.Null {
		return 0, false, nil
	}
	if d.I < 0 {
		kind := types.ErrInvalidLimit
		if what == "OFFSET" {
			kind = types.ErrInvalidOffset
		}
		return 0, false, types.Errorf(kind, "%s must not be negative", what)
	}
	return d.I, true, nil
}

// window plans a ranking window limited by a parent filter as a group top-N
// with a rank column; any other window as over-window operators.
func (p *planner) window(n *plan.Window) (plan.StreamNode, error) {
	limit, ok := p.ranks[n]
	if !ok {
		return p.overWindow(n)
	}
	f := n.Funcs[0]
	in, err := p.convert(n.Input)
	if err != nil {
		return nil, err
	}
	in = exchange(in, plan.DistHash, f.PartitionBy)
	fields := in.Schema()
	w, w2 := len(n.Input.Schema()), len(fields)
	out := append(slices.Clone(fields), plan.Field{Name: f.Name, Type: f.Type})
	topn := &plan.StreamTopN{Input: in, OrderBy: slices.Clone(f.OrderBy), Limit: limit,
		GroupBy: slices.Clone(f.PartitionBy), Rank: f.Name, Out: out}
	if w2 == w {
		return topn, nil
	}
	// The rank column goes where the bound plan expects it, before the hidden keys.
	return p.reorder(topn, append(append(span(nil, 0, w), w2), span(nil, w, w2)...)), nil
}

// distinctOn plans DISTINCT ON (k) ... ORDER BY k, o as a group top-1:
// hashed by k, each group keeps its first row in the order of the ORDER BY
// keys after k (the stream key when there are none; ties too are broken
// by the stream key, so the row kept does not depend on arrival order).
func (p *planner) distinctOn(n *plan.Distinct) (plan.StreamNode, error) {
	input := n.Input
	var order []plan.SortKey
	if s, ok := input.(*plan.Sort); ok {
		input = s.Input
		for _, k := range s.Keys {
			if !slices.Contains(n.On, k.Col) {
				order = append(order, k)
			}
		}
	}
	in, err := p.convert(input)
	if err != nil {
		return nil, err
	}
	for _, k := range in.StreamKey() {
		if !slices.ContainsFunc(order, func(o plan.SortKey) bool { return o.Col == k }) && !slices.Contains(n.On, k) {
			order = append(order, plan.SortKey{Col: k})
		}
	}
	in = exchange(in, plan.DistHash, n.On)
	return &plan.StreamTopN{Input: in, OrderBy: order, Limit: 1, GroupBy: slices.Clone(n.On), Out: slices.Clone(in.Schema())}, nil
}
