package physical

import (
	"slices"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
)

// pushIntoPreserved moves a filter's conjuncts that read only the left
// input of a left, semi or anti join below it, onto the left input (whose
// rows the join passes on unchanged, matched or not): a decorrelated
// subquery's join then sits over the FROM list's joins with their WHERE
// equalities. It returns the new join (nil when nothing moved) and the
// conjuncts that stay above.
func pushIntoPreserved(j *plan.Join, conds []expr.Expr) (plan.Node, []expr.Expr, error) {
	switch j.Kind {
	case plan.LeftJoin, plan.SemiJoin, plan.AntiJoin:
	default:
		return nil, conds, nil
	}
	nl := len(j.Left.Schema())
	var left, rest []expr.Expr
	for _, c := range conds {
		cols, ok := plan.ColumnsOf(c)
		if !ok || len(cols) == 0 || hasTimeFunc(c) || slices.ContainsFunc(cols, func(i int) bool { return i >= nl }) {
			rest = append(rest, c)
			continue
		}
		left = append(left, c)
	}
	if len(left) == 0 {
		return nil, conds, nil
	}
	cond, err := expr.AndAll(left)
	if err != nil {
		return nil, nil, err
	}
	nj := *j
	nj.Left = &plan.Filter{Input: j.Left, Cond: cond}
	return &nj, rest, nil
}

// pushIntoJoin moves a filter's conjuncts over an inner join into it:
// left-only and right-only conditions into filters on each side, and
// column equalities across the sides into equi-join keys. It returns a new
// join (nil when nothing moved) and the conjuncts that stay above.
func pushIntoJoin(j *plan.Join, conds []expr.Expr) (plan.Node, []expr.Expr, error) {
	nl := len(j.Left.Schema())
	var left, right, rest, bands, cross []expr.Expr
	eqL, eqR := slices.Clone(j.EqLeft), slices.Clone(j.EqRight)
	moved := false
	for _, c := range conds {
		cols, ok := plan.ColumnsOf(c)
		if !ok {
			rest = append(rest, c)
			continue
		}
		allLeft, allRight := true, true
		for _, i := range cols {
			if i < nl {
				allRight = false
			} else {
				allLeft = false
			}
		}
		switch {
		case allLeft && len(cols) > 0:
			left = append(left, c)
			moved = true
		case allRight && len(cols) > 0:
			r, ok := plan.RewriteCols(c, func(ref *expr.ColumnRef) expr.Expr { return expr.Column(ref.Index-nl, ref.Typ) })
			if !ok {
				rest = append(rest, c)
				continue
			}
			right = append(right, r)
			moved = true
		default:
			l, r, ok := equiKey(c, nl)
			if ok && j.Left.Schema()[l].Type.Base() == j.Right.Schema()[r].Type.Base() {
				eqL, eqR = append(eqL, l), append(eqR, r)
				moved = true
				continue
			}
			if len(plan.BandsOf(c, j.Left.Schema(), j.Right.Schema())) > 0 && !hasTimeFunc(c) {
				// A time band between the sides (an interval join): in the join's
				// condition, where watermarks let the join clean its state.
				bands = append(bands, c)
				moved = true
				continue
			}
			if hasTimeFunc(c) {
				rest = append(rest, c)
				continue
			}
			cross = append(cross, c)
		}
	}
	if len(eqL) == 0 && len(cross) > 0 {
		// No equality: the join compares every pair of rows, with these
		// conditions (a nested-loop join).
		bands = append(bands, cross...)
		moved = true
	} else {
		rest = append(rest, cross...)
	}
	if !moved {
		return nil, conds, nil
	}
	nj := *j
	nj.EqLeft, nj.EqRight = eqL, eqR
	if len(bands) > 0 {
		if j.Cond != nil {
			bands = append([]expr.Expr{j.Cond}, bands...)
		}
		cond, err := expr.AndAll(bands)
		if err != nil {
			return nil, nil, err
		}
		nj.Cond = cond
	}
	if len(left) > 0 {
		cond, err := expr.AndAll(left)
		if err != nil {
			return nil, nil, err
		}
		nj.Left = &plan.Filter{Input: j.Left, Cond: cond}
	}
	if len(right) > 0 {
		cond, err := expr.AndAll(right)
		if err != nil {
			return nil, nil, err
		}
		nj.Right = &plan.Filter{Input: j.Right, Cond: cond}
	}
	return &nj, rest, nil
}

// equiKey recognises "$l = $r" with l on the left side and r on the right.
func equiKey(e expr.Expr, nl int) (int, int, bool) {
	call, ok := e.(*expr.FuncExpr)
	if !ok || call.Name != "=" || len(call.Args) != 2 {
		return 0, 0, false
	}
	a, ok1 := call.Args[0].(*expr.ColumnRef)
	c, ok2 := call.Args[1].(*expr.ColumnRef)
	if !ok1 || !ok2 {
		return 0, 0, false
	}
	switch {
	case a.Index < nl && c.Index >= nl:
		return a.Index, c.Index - nl, true
	case c.Index < nl && a.Index >= nl:
		return c.Index, a.Index - nl, true
	}
	return 0, 0, false
}

// join plans an equi-join: both sides hashed by their join keys. A semi or
// anti join (EXISTS, IN and their negations, decorrelated) without an
// equality, and NOT IN's null-aware anti join, join on a constant instead:
// one actor compares every pair.
func (p *planner) join(n *plan.Join) (plan.StreamNode, error) {
	if n.MaxOneRow {
		return nil, unsupported("a correlated scalar subquery in a materialized view must return at most one row per outer row: aggregate (e.g. max(...) or count(*)), use LIMIT 1, or correlate on a primary key")
	}
	if r, ok, found := asTemporalRight(n.Right); ok {
		return p.temporalJoin(n, r)
	} else if found {
		return nil, errDanglingTemporal(r.scan.Table)
	}
	semi := n.Kind == plan.SemiJoin || n.Kind == plan.AntiJoin
	left, err := p.convert(n.Left)
	if err != nil {
		return nil, err
	}
	right, err := p.convert(n.Right)
	if err != nil {
		return nil, err
	}
	// Without an equality every pair of rows is compared (a nested-loop
	// join): refused, as RisingWave does, when there is no condition at all
	// and neither side has at most one row.
	nested := len(n.EqLeft) == 0 && !semi
	if nested && n.Cond == nil && !oneRow(left) && !oneRow(right) {
		return nil, errNestedLoop()
	}
	nl, nr := len(n.Left.Schema()), len(n.Right.Schema())
	nl2, nr2 := len(left.Schema()), len(right.Schema())
	var cond expr.Expr
	if n.Cond != nil {
		if err := checkExpr(n.Cond); err != nil {
			return nil, err
		}
		var ok bool
		cond, ok = plan.RewriteCols(n.Cond, func(c *expr.ColumnRef) expr.Expr {
			if c.Index >= nl {
				return expr.Column(c.Index-nl+nl2, c.Typ)
			}
			return c
		})
		if !ok {
			return nil, unsupported("join condition %s is not supported in materialized views", n.Cond)
		}
	}
	eqL, eqR := slices.Clone(n.EqLeft), slices.Clone(n.EqRight)
	if n.NullAware {
		// NOT IN: a right row rejects a left row when the keys are equal or either is NULL.
		var conds []expr.Expr
		for i := range eqL {
			lc, rc := left.Schema()[eqL[i]], right.Schema()[eqR[i]]
			eq, err := expr.Call("=", []expr.Expr{expr.Column(eqL[i], lc.Type), expr.Column(nl2+eqR[i], rc.Type)})
			if err != nil {
				return nil, err
			}
			if eq, err = expr.Call("is_not_false", []expr.Expr{eq}); err != nil {
				return nil, err
			}
			conds = append(conds, eq)
		}
		if cond != nil {
			conds = append(conds, cond)
		}
		if cond, err = expr.AndAll(conds); err != nil {
			return nil, err
		}
		eqL, eqR = nil, nil
	}
	if len(eqL) == 0 {
		left, right = p.withConstKey(left), p.withConstKey(right)
		eqL, eqR = []int{nl2}, []int{nr2}
		if cond != nil {
			// The right side's columns moved one to the right.
			cond, _ = plan.RewriteCols(cond, func(c *expr.ColumnRef) expr.Expr {
				if c.Index >= nl2 {
					return expr.Column(c.Index+1, c.Typ)
				}
				return c
			})
		}
	}
	j := &plan.StreamHashJoin{Kind: n.Kind,
		Left: exchange(left, plan.DistHash, eqL), Right: exchange(right, plan.DistHash, eqR),
		EqLeft: eqL, EqRight: eqR, Cond: cond, NestedLoop: nested}
	if nested {
		// Every row has the one key: one actor.
		j.Left, j.Right = exchange(left, plan.DistSingle, nil), exchange(right, plan.DistSingle, nil)
	}
	if semi {
		if len(j.Schema()) > nl2 { // drop the constant key
			exprs := make([]expr.Expr, nl2)
			fs := j.Schema()
			for i := range exprs {
				exprs[i] = expr.Column(i, fs[i].Type)
			}
			return p.project(j, exprs, slices.Clone(fs[:nl2])), nil
		}
		return j, nil
	}
	if nested {
		// Drop the constant keys; restore the bound layout.
		order := span(nil, 0, nl)
		order = span(order, nl2+1, nl2+1+nr)
		order = span(order, nl, nl2)
		order = span(order, nl2+1+nr, nl2+1+nr2)
		fs := j.Schema()
		exprs := make([]expr.Expr, len(order))
		out := make([]plan.Field, len(order))
		for i, c := range order {
			exprs[i], out[i] = expr.Column(c, fs[c].Type), fs[c]
		}
		return p.project(j, exprs, out), nil
	}
	if nl2 == nl {
		return j, nil
	}
	// Restore the bound layout: left columns, right columns, then the hidden keys of both.
	order := span(nil, 0, nl)
	order = span(order, nl2, nl2+nr)
	order = span(order, nl, nl2)
	order = span(order, nl2+nr, nl2+nr2)
	return p.reorder(j, order), nil
}

// withConstKey appends a hidden constant column to n: a join key every row shares.
func (p *planner) withConstKey(n plan.StreamNode) plan.StreamNode {
	fs := n.Schema()
	exprs := make([]expr.Expr, 0, len(fs)+1)
	for i, f := range fs {
		exprs = append(exprs, expr.Column(i, f.Type))
	}
	exprs = append(exprs, expr.Literal(types.DInt(1), types.TInt32))
	out := append(slices.Clone(fs), plan.Field{Name: "?const?", Type: types.TInt32, Hidden: true})
	return p.project(n, exprs, out)
}
