package physical

import (
	"slices"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
)

// initPlanRef is the binder's reference to an uncorrelated scalar
// subquery's value (an init plan of the query).
type initPlanRef interface {
	expr.Expr
	InitPlan() int
}

// dynCond is a conjunct "x op f(subquery)": x over the filter's input
// columns, f over the value of init plan init.
type dynCond struct {
	x, f expr.Expr
	op   string
	init int
}

// flipped maps a comparison to the one with its arguments swapped.
var flipped = map[string]string{"=": "=", "<>": "<>", "<": ">", "<=": ">=", ">": "<", ">=": "<="}

// initRefs lists the init plans e reads.
func initRefs(e expr.Expr) []int {
	var out []int
	expr.Walk(e, func(x expr.Expr) bool {
		if r, ok := x.(initPlanRef); ok && !slices.Contains(out, r.InitPlan()) {
			out = append(out, r.InitPlan())
		}
		return true
	})
	return out
}

// readsColumns reports whether e reads an input column (or an expression
// of a kind whose inputs are unknown).
func readsColumns(e expr.Expr) bool {
	found := false
	expr.Walk(e, func(x expr.Expr) bool {
		switch x.(type) {
		case initPlanRef, *expr.Const, *expr.ParamRef, *expr.CastExpr, *expr.FuncExpr:
		default:
			found = true
		}
		return !found
	})
	return found
}

// splitDynamic takes out of conds the comparisons of an expression over
// the input with one reading a single scalar subquery (and no column):
// each becomes a dynamic filter.
func (p *planner) splitDynamic(conds []expr.Expr) ([]dynCond, []expr.Expr) {
	var dyn []dynCond
	var rest []expr.Expr
	for _, c := range conds {
		f, ok := c.(*expr.FuncExpr)
		if !ok || len(f.Args) != 2 || !plan.DynamicFilterOps[f.Name] {
			rest = append(rest, c)
			continue
		}
		a, b, op := f.Args[0], f.Args[1], f.Name
		if len(initRefs(a)) > 0 {
			a, b, op = b, a, flipped[op]
		}
		refs := initRefs(b)
		if len(initRefs(a)) > 0 || len(refs) != 1 || readsColumns(b) || refs[0] >= len(p.inits) ||
			p.inits[refs[0]].Kind != plan.ScalarSubquery {
			rest = append(rest, c)
			continue
		}
		dyn = append(dyn, dynCond{x: a, f: b, op: op, init: refs[0]})
	}
	return dyn, rest
}

// oneRow reports whether a stream has at most one row at any time: a
// simple aggregation, a top-1 without groups, a single constant row, or
// a projection or filter of one.
func oneRow(n plan.StreamNode) bool {
	for {
		switch x := n.(type) {
		case *plan.StreamProject, *plan.StreamFilter, *plan.StreamExchange:
			n = x.Inputs()[0]
		case *plan.StreamAgg:
			return len(x.GroupBy) == 0
		case *plan.StreamTopN:
			return len(x.GroupBy) == 0 && x.Limit <= 1 && x.Rank == ""
		case *plan.StreamValues:
			return len(x.Rows) <= 1
		default:
			return false
		}
	}
}

// mayBeOneRow reports whether a bound node can plan as a stream of at most
// one row (oneRow decides on the stream plan): an aggregation without
// GROUP BY, a LIMIT of at most 1 without ties, one constant row, or a
// projection, filter or sort of one. It saves planning a subtree twice.
func mayBeOneRow(n plan.Node) bool {
	for {
		switch x := n.(type) {
		case *plan.Project:
			n = x.Input
		case *plan.Filter:
			n = x.Input
		case *plan.Sort:
			n = x.Input
		case *plan.Agg:
			return len(x.GroupBy) == 0
		case *plan.Limit:
			c, ok, err := constInt(x.Count, "LIMIT")
			return err == nil && ok && c <= 1 && x.Ties == nil
		case *plan.Values:
			return x.NumRows() <= 1
		default:
			return false
		}
	}
}

// dynamicFilter puts a StreamDynamicFilter for d over in: the subquery's
// stream, projected to f's value, is its right side; x is compared as a
// column of in (computed into a hidden column when it is not one, dropped
// after the filter).
func (p *planner) dynamicFilter(in plan.StreamNode, d dynCond) (plan.StreamNode, error) {
	sub := p.inits[d.init].Plan
	right, err := p.convert(sub)
	if err != nil {
		return nil, err
	}
	if !oneRow(right) {
		return nil, errScalarRows()
	}
	vt := sub.Schema()[0].Type
	val, ok := mapInit(d.f, func(int) expr.Expr { return expr.Column(0, vt) })
	if !ok {
		return nil, unsupported("comparison with %s is not supported in materialized views", d.f)
	}
	return p.dynamicFilterOver(in, right, d.x, d.op, val)
}

// dynamicFilterOver puts a StreamDynamicFilter over in keeping the rows
// where "x op val" holds, val an expression over right, a stream of at most
// one row.
func (p *planner) dynamicFilterOver(in, right plan.StreamNode, x expr.Expr, op string, val expr.Expr) (plan.StreamNode, error) {
	if err := checkExpr(x); err != nil {
		return nil, err
	}
	if err := checkExpr(val); err != nil {
		return nil, err
	}
	right = p.project(right, []expr.Expr{val}, []plan.Field{{Name: "value", Type: val.Type()}})
	fields := in.Schema()
	w := len(fields)
	left, col := in, -1
	if c, ok := x.(*expr.ColumnRef); ok {
		col = c.Index
	} else {
		exprs := make([]expr.Expr, 0, w+1)
		for i, f := range fields {
			exprs = append(exprs, expr.Column(i, f.Type))
		}
		exprs = append(exprs, x)
		out := append(slices.Clone(fields), plan.Field{Name: "_dynamic_filter_key", Type: x.Type(), Hidden: true})
		left, col = p.project(in, exprs, out), w
	}
	if _, err := expr.Call(op, []expr.Expr{expr.Column(0, x.Type()), expr.Column(1, val.Type())}); err != nil {
		return nil, err
	}
	df := &plan.StreamDynamicFilter{Left: exchange(left, plan.DistSingle, nil), Right: exchange(right, plan.DistSingle, nil), Col: col, Op: op}
	if col < w {
		return df, nil
	}
	exprs := make([]expr.Expr, w)
	for i, f := range fields {
		exprs[i] = expr.Column(i, f.Type)
	}
	return p.project(df, exprs, slices.Clone(fields)), nil
}

func errScalarRows() error {
	return unsupported("a scalar subquery in a materialized view must return at most one row by construction (an aggregate without GROUP BY, or LIMIT 1)")
}

// mapInit rebuilds e with every init plan reference replaced by f's result.
func mapInit(e expr.Expr, f func(int) expr.Expr) (expr.Expr, bool) {
	return plan.RewriteLeaves(e, func(x expr.Expr) (expr.Expr, bool) {
		if r, ok := x.(initPlanRef); ok {
			return f(r.InitPlan()), true
		}
		return nil, false
	})
}

// attachInits joins in (a left join, each subquery having at most one row)
// the scalar subqueries exprs read other than as dynamic filters, and
// rewrites exprs to read their values as columns after in's. It returns in
// unchanged when exprs read none.
func (p *planner) attachInits(in plan.Node, exprs []expr.Expr) (plan.Node, []expr.Expr, error) {
	var refs []int
	for _, e := range exprs {
		for _, i := range initRefs(e) {
			if !slices.Contains(refs, i) {
				refs = append(refs, i)
			}
		}
	}
	if len(refs) == 0 {
		return in, exprs, nil
	}
	pos := map[int]int{}
	for _, i := range refs {
		if i >= len(p.inits) || p.inits[i].Kind != plan.ScalarSubquery {
			return nil, nil, unsupported("this subquery is not supported in materialized views")
		}
		sub := p.inits[i].Plan
		if !mayBeOneRow(sub) {
			return nil, nil, errScalarRows()
		}
		if s, err := p.convert(sub); err != nil {
			return nil, nil, err
		} else if !oneRow(s) {
			return nil, nil, errScalarRows()
		}
		pos[i] = len(in.Schema())
		in = &plan.Join{Kind: plan.LeftJoin, Left: in, Right: sub}
	}
	out := make([]expr.Expr, len(exprs))
	for k, e := range exprs {
		r, ok := mapInit(e, func(i int) expr.Expr { return expr.Column(pos[i], p.inits[i].Plan.Schema()[0].Type) })
		if !ok {
			return nil, nil, unsupported("expression %s is not supported in materialized views", e)
		}
		out[k] = r
	}
	return in, out, nil
}

// crossDynamicFilter plans a projection reading only the left side of a
// filtered cross join whose right side has at most one row, with a
// conjunct comparing an expression over the left side with one over the
// right ("FROM t1, (SELECT max(v) m FROM t2) x WHERE t1.v > x.m"), as a
// dynamic filter: the other conjuncts read only the left side. It returns
// nil when the shape does not fit.
func (p *planner) crossDynamicFilter(n *plan.Project) (plan.StreamNode, error) {
	f, ok := n.Input.(*plan.Filter)
	if !ok {
		return nil, nil
	}
	j, ok := f.Input.(*plan.Join)
	if !ok || j.Kind != plan.InnerJoin || len(j.EqLeft) > 0 || j.Cond != nil || j.MaxOneRow {
		return nil, nil
	}
	nl := len(j.Left.Schema())
	leftOnly := func(e expr.Expr) bool {
		cols, ok := plan.ColumnsOf(e)
		return ok && !slices.ContainsFunc(cols, func(c int) bool { return c >= nl }) && len(initRefs(e)) == 0
	}
	for _, e := range n.Exprs {
		if !leftOnly(e) {
			return nil, nil
		}
	}
	var x, y expr.Expr
	var op string
	var rest []expr.Expr
	for _, c := range expr.Conjuncts(f.Cond) {
		if leftOnly(c) {
			rest = append(rest, c)
			continue
		}
		call, ok := c.(*expr.FuncExpr)
		if x != nil || !ok || len(call.Args) != 2 || !plan.DynamicFilterOps[call.Name] {
			return nil, nil
		}
		a, b, o := call.Args[0], call.Args[1], call.Name
		if !leftOnly(a) {
			a, b, o = b, a, flipped[o]
		}
		cols, ok := plan.ColumnsOf(b)
		if !leftOnly(a) || !ok || len(cols) == 0 || slices.ContainsFunc(cols, func(c int) bool { return c < nl }) {
			return nil, nil
		}
		rb, ok := plan.RewriteCols(b, func(r *expr.ColumnRef) expr.Expr { return expr.Column(r.Index-nl, r.Typ) })
		if !ok {
			return nil, nil
		}
		x, y, op = a, rb, o
	}
	if x == nil || !mayBeOneRow(j.Right) {
		return nil, nil
	}
	right, err := p.convert(j.Right)
	if err != nil || !oneRow(right) {
		return nil, err
	}
	var left plan.Node = j.Left
	if len(rest) > 0 {
		cond, err := expr.AndAll(rest)
		if err != nil {
			return nil, err
		}
		left = &plan.Filter{Input: j.Left, Cond: cond}
	}
	in, err := p.convert(left)
	if err != nil {
		return nil, err
	}
	df, err := p.dynamicFilterOver(in, right, x, op, y)
	if err != nil {
		return nil, err
	}
	for _, e := range n.Exprs {
		if err := checkExpr(e); err != nil {
			return nil, err
		}
	}
	return p.project(df, n.Exprs, n.Out), nil
}
