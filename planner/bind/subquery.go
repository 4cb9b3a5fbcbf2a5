package bind

import (
	"slices"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/opcode"
	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
)

// applySite is where the correlated subqueries of a clause attach their
// joins: the clause's input, which each of them extends (its columns stay
// first, so expressions bound earlier keep their meaning).
type applySite struct {
	node plan.Node
	// base is the clause's input before any join: its rows' outer values
	// (a superset of node's) are the domain of correlations (correlate.go).
	base plan.Node
	// bound holds the value of each correlated subquery joined here, by
	// its syntax node: an expression bound twice (an aggregate's arguments
	// are) joins once.
	bound map[ast.Node]expr.Expr
}

func newSite(n plan.Node) *applySite {
	return &applySite{node: n, base: n, bound: map[ast.Node]expr.Expr{}}
}

// boundBefore returns the value a correlated subquery n already has at c's site.
func (c *exprCtx) boundBefore(n ast.Node) (expr.Expr, bool) {
	if c.site == nil {
		return nil, false
	}
	e, ok := c.site.bound[n]
	return e, ok
}

// remember notes the value of correlated subquery n at c's site.
func (c *exprCtx) remember(n ast.Node, e expr.Expr, err error) (expr.Expr, error) {
	if err == nil && c.site != nil {
		c.site.bound[n] = e
	}
	return e, err
}

// bindWhere plans a WHERE clause: [NOT] IN and [NOT] EXISTS subqueries among
// its top-level conjuncts become semi/anti joins, a full primary-key
// equality on a table scan becomes a point lookup, and the rest a Filter.
func (b *Binder) bindWhere(input plan.Node, sc *scope, where ast.ExprNode) (plan.Node, error) {
	site := newSite(input)
	c := &exprCtx{scope: sc, clause: "WHERE", site: site}
	width := len(sc.fields)
	var conds []expr.Expr
	for _, conj := range splitAndAST(where) {
		var e expr.Expr
		var err error
		handled := false
		switch x := conj.(type) {
		case *ast.PatternInExpr:
			if x.Sel != nil {
				handled = true
				e, err = b.semiJoin(site, c, x)
			}
		case *ast.ExistsSubqueryExpr:
			handled = true
			e, err = b.existsJoin(site, c, x.Sel, x.Not)
		case *ast.UnaryOperationExpr:
			if ex, ok := unparen(x.V).(*ast.ExistsSubqueryExpr); ok && (x.Op == opcode.Not || x.Op == opcode.Not2) {
				handled = true
				e, err = b.existsJoin(site, c, ex.Sel, !ex.Not)
			}
		}
		if !handled {
			e, err = b.bindExpr(c, conj)
		}
		if err != nil {
			return nil, err
		}
		if e == nil {
			continue
		}
		if e, err = b.boolCond(e, "WHERE"); err != nil {
			return nil, err
		}
		conds = append(conds, expr.Conjuncts(e)...)
	}
	input = site.node
	if scan, ok := input.(*plan.Scan); ok {
		conds = pointLookup(scan, conds)
		if scan.Lookup == nil {
			conds = b.indexLookup(scan, conds)
		}
	}
	if len(conds) > 0 {
		cond, err := expr.AndAll(conds)
		if err != nil {
			return nil, err
		}
		input = &plan.Filter{Input: input, Cond: cond}
	}
	if len(input.Schema()) > width {
		input = trimColumns(input, width)
	}
	return input, nil
}

func unparen(n ast.ExprNode) ast.ExprNode {
	for {
		p, ok := n.(*ast.ParenthesesExpr)
		if !ok {
			return n
		}
		n = p.Expr
	}
}

func splitAndAST(n ast.ExprNode) []ast.ExprNode {
	switch e := n.(type) {
	case *ast.BinaryOperationExpr:
		if e.Op == opcode.LogicAnd {
			return append(splitAndAST(e.L), splitAndAST(e.R)...)
		}
	case *ast.ParenthesesExpr:
		return splitAndAST(e.Expr)
	}
	return []ast.ExprNode{n}
}

// bindSubquery binds a subquery's plan with c's scope enclosing it.
func (b *Binder) bindSubquery(c *exprCtx, sel ast.ExprNode) (plan.Node, error) {
	sub, ok := sel.(*ast.SubqueryExpr)
	if !ok {
		return nil, types.Errorf(types.ErrUnsupported, "unsupported subquery form")
	}
	defer b.enter(c.scope)()
	return b.bindResultSet(sub.Query)
}

// existsJoin plans a WHERE conjunct "[NOT] EXISTS (subquery)": correlated,
// as a semi (anti) join on the correlation; otherwise as an init plan
// (the returned condition).
func (b *Binder) existsJoin(site *applySite, c *exprCtx, sel ast.ExprNode, not bool) (expr.Expr, error) {
	node, err := b.bindSubquery(c, sel)
	if err != nil {
		return nil, err
	}
	if !hasOuter(node) {
		e := b.existsInit(node)
		if not {
			return expr.Call("not", []expr.Expr{e})
		}
		return e, nil
	}
	core := peelSet(node, true)
	if a, ok := core.(*plan.Agg); ok && len(a.GroupBy) == 0 {
		// An aggregate without GROUP BY returns one row whatever its input.
		return expr.Literal(types.DBool(!not), types.TBool), nil
	}
	a, err := b.apply(core, site.node, site.base)
	if err != nil {
		return nil, err
	}
	j := &plan.Join{Kind: plan.SemiJoin, Left: a.left, Right: a.right}
	if not {
		j.Kind = plan.AntiJoin
	}
	if site.node, err = b.finishJoin(j, a.conds); err != nil {
		return nil, err
	}
	return nil, nil
}

// semiJoin plans "x [NOT] IN (subquery)" as a semi (anti) join, on the
// correlation too when the subquery is correlated; a correlated subquery
// that aggregates without GROUP BY (one value per row) becomes a comparison
// with that value, returned as the condition.
func (b *Binder) semiJoin(site *applySite, c *exprCtx, in *ast.PatternInExpr) (expr.Expr, error) {
	right, err := b.bindSubquery(c, in.Sel)
	if err != nil {
		return nil, err
	}
	rf := visible(right.Schema())
	if row, ok := in.Expr.(*ast.RowExpr); ok && len(rf) > 1 && len(rf) == len(row.Values) && !hasOuter(right) {
		// (a, b) IN (SELECT x, y ...): compare rows, ROW(a, b) with ROW(x, y).
		if right, err = rowOfColumns(right); err != nil {
			return nil, err
		}
		rf = visible(right.Schema())
	}
	if len(rf) != 1 {
		return nil, types.Errorf(types.ErrSyntax, "subquery has too many columns")
	}
	left, err := b.bindExpr(c, in.Expr)
	if err != nil {
		return nil, err
	}
	left = b.coerceParam(left, rf[0].Type)
	t, err := expr.CommonType([]types.T{left.Type(), rf[0].Type})
	if err != nil {
		return nil, types.Errorf(types.ErrDatatypeMismatch, "operator does not exist: %s = %s", left.Type(), rf[0].Type)
	}
	if t.ID == types.Unknown {
		t = types.TVarchar
	}
	if left.Type() != t {
		if left, err = expr.ImplicitCast(left, t); err != nil {
			return nil, err
		}
	}
	if right, err = castColumns(right, []types.T{t}); err != nil {
		return nil, err
	}
	if hasOuter(right) {
		return b.correlatedIn(site, left, right, in.Not)
	}
	input := site.node
	// The left key must be a column: append it to the input when computed.
	fields := input.Schema()
	lcol := -1
	if cr, ok := left.(*expr.ColumnRef); ok {
		lcol = cr.Index
	} else {
		exprs := make([]expr.Expr, 0, len(fields)+1)
		out := append([]plan.Field(nil), fields...)
		for i, f := range fields {
			exprs = append(exprs, expr.Column(i, f.Type))
		}
		exprs = append(exprs, left)
		out = append(out, plan.Field{Name: "?in?", Type: t, Hidden: true})
		input = &plan.Project{Input: input, Exprs: exprs, Out: out}
		lcol = len(fields)
	}
	j := &plan.Join{Kind: plan.SemiJoin, Left: input, Right: right, EqLeft: []int{lcol}, EqRight: []int{0}}
	if in.Not {
		j.Kind, j.NullAware = plan.AntiJoin, true
	}
	site.node = j
	return nil, nil
}

// correlatedIn joins the correlated subquery right of "left [NOT] IN (right)".
func (b *Binder) correlatedIn(site *applySite, left expr.Expr, right plan.Node, not bool) (expr.Expr, error) {
	a, err := b.apply(peelSet(right, false), site.node, site.base)
	if err != nil {
		return nil, err
	}
	eq, err := expr.Call("=", []expr.Expr{left, a.values[0]})
	if err != nil {
		return nil, err
	}
	if a.scalarAgg {
		// One value per row: "x IN (v)" is "x = v" and "x NOT IN (v)" "x <> v".
		j := &plan.Join{Kind: plan.LeftJoin, Left: a.left, Right: a.right}
		if site.node, err = b.finishJoin(j, a.conds); err != nil {
			return nil, err
		}
		if not {
			return expr.Call("not", []expr.Expr{eq})
		}
		return eq, nil
	}
	kind := plan.SemiJoin
	if not {
		// NOT IN rejects a row when some value equals it or either is NULL.
		kind = plan.AntiJoin
		if eq, err = expr.Call("is_not_false", []expr.Expr{eq}); err != nil {
			return nil, err
		}
	}
	j := &plan.Join{Kind: kind, Left: a.left, Right: a.right}
	if site.node, err = b.finishJoin(j, append(a.conds, eq)); err != nil {
		return nil, err
	}
	return nil, nil
}

// correlatedValue joins a correlated subquery producing one value per row
// (a scalar subquery) to c's input and returns the value.
func (b *Binder) correlatedValue(c *exprCtx, node plan.Node) (expr.Expr, error) {
	if c.site == nil {
		return nil, errCorrelated("subqueries reading outer columns are not supported in %s", c.clauseName())
	}
	a, err := b.apply(node, c.site.node, c.site.base)
	if err != nil {
		return nil, err
	}
	j := &plan.Join{Kind: plan.LeftJoin, Left: a.left, Right: a.right, MaxOneRow: !a.atMostOne}
	if c.site.node, err = b.finishJoin(j, a.conds); err != nil {
		return nil, err
	}
	for i, f := range node.Schema() {
		if !f.Hidden {
			return a.values[i], nil
		}
	}
	return a.values[0], nil
}

// pointLookup moves "pk = constant" conjuncts covering the whole primary key into the scan.
func pointLookup(scan *plan.Scan, conds []expr.Expr) []expr.Expr {
	vals, rest := keyLookup(scan.Table, scan.Table.PK, conds, len(scan.Table.PK))
	if vals != nil {
		scan.Lookup = vals
		return rest
	}
	return conds
}

// indexLookup makes the scan read an index of its table when "column =
// constant" conjuncts cover the index's leading columns (its distribution key
// at least; the longest match wins): the scan then reads the index's rows
// with those values, and the conjuncts are dropped.
func (b *Binder) indexLookup(scan *plan.Scan, conds []expr.Expr) []expr.Expr {
	if scan.Table.Kind != catalog.KindTable && scan.Table.Kind != catalog.KindMaterializedView {
		return conds
	}
	var best *catalog.Relation
	var bestVals []expr.Expr
	var bestRest []expr.Expr
	for _, idx := range catalog.IndexesOf(b.cat.Relations(), scan.Table.ID) {
		if !sameColumns(idx, scan.Table) {
			continue // its table changed columns since (ALTER TABLE): not used
		}
		vals, rest := keyLookup(scan.Table, idx.Index.Columns, conds, idx.Index.DistLen)
		if vals != nil && len(vals) > len(bestVals) {
			best, bestVals, bestRest = idx, vals, rest
		}
	}
	if best == nil {
		return conds
	}
	scan.Index, scan.Lookup = best, bestVals
	return bestRest
}

// sameColumns reports whether an index's rows have its table's columns.
func sameColumns(idx, table *catalog.Relation) bool {
	if len(idx.Columns) != len(table.Columns) {
		return false
	}
	for i, c := range idx.Columns {
		if c.Type != table.Columns[i].Type {
			return false
		}
	}
	return true
}

// keyLookup finds "column = constant" (or parameter) conjuncts for the
// leading columns of key, at least min of them: their values, cast to the
// columns' types, and the other conjuncts; nil values when fewer match.
func keyLookup(rel *catalog.Relation, key []int, conds []expr.Expr, min int) ([]expr.Expr, []expr.Expr) {
	if len(key) == 0 || min <= 0 {
		return nil, conds
	}
	var vals []expr.Expr
	var used []int
	for _, col := range key {
		found := -1
		var val expr.Expr
		for i, c := range conds {
			if slices.Contains(used, i) {
				continue
			}
			call, ok := c.(*expr.FuncExpr)
			if !ok || call.Name != "=" || len(call.Args) != 2 {
				continue
			}
			for side := 0; side < 2 && found < 0; side++ {
				cr, ok := call.Args[side].(*expr.ColumnRef)
				other := call.Args[1-side]
				if !ok || cr.Index != col || !(expr.IsConst(other) || isParam(other)) {
					continue
				}
				t := rel.Columns[col].Type
				if other.Type().Base() != t.Base() {
					cast, err := expr.ImplicitCast(other, t)
					if err != nil {
						continue
					}
					other = cast
				}
				found, val = i, other
			}
			if found >= 0 {
				break
			}
		}
		if found < 0 {
			break
		}
		vals, used = append(vals, val), append(used, found)
	}
	if len(vals) < min {
		return nil, conds
	}
	var rest []expr.Expr
	for i, c := range conds {
		if !slices.Contains(used, i) {
			rest = append(rest, c)
		}
	}
	return vals, rest
}

func isParam(e expr.Expr) bool {
	_, ok := e.(*expr.ParamRef)
	return ok
}

// initRef reads an init plan's result from the parameter slots after the
// user parameters; the base is fixed once binding ends.
type initRef struct {
	b   *Binder
	i   int
	typ types.T
}

func (r *initRef) param() expr.Expr { return expr.Param(len(r.b.params)+r.i, r.typ) }
func (r *initRef) Type() types.T    { return r.typ }

// InitPlan returns the index of the init plan whose value r reads (the
// stream planner turns a scalar subquery into a one-row input).
func (r *initRef) InitPlan() int  { return r.i }
func (r *initRef) String() string { return r.param().String() }
func (r *initRef) Eval(ctx *expr.Ctx, in *types.Chunk, out *types.Vector) error {
	return r.param().Eval(ctx, in, out)
}
func (r *initRef) EvalRow(ctx *expr.Ctx, row []types.Datum) (types.Datum, error) {
	return r.param().EvalRow(ctx, row)
}

func (b *Binder) bindScalarSubquery(c *exprCtx, n *ast.SubqueryExpr) (expr.Expr, error) {
	if e, ok := c.boundBefore(n); ok {
		return e, nil
	}
	node, err := b.bindSubquery(c, n)
	if err != nil {
		return nil, err
	}
	fields := visible(node.Schema())
	if len(fields) != 1 {
		return nil, types.Errorf(types.ErrSyntax, "subquery must return only one column")
	}
	node = finalizeOutput(node)
	if hasOuter(node) {
		e, err := b.correlatedValue(c, node)
		return c.remember(n, e, err)
	}
	b.initPlans = append(b.initPlans, plan.InitPlan{Kind: plan.ScalarSubquery, Plan: node})
	return &initRef{b: b, i: len(b.initPlans) - 1, typ: node.Schema()[0].Type}, nil
}

// bindArraySubquery plans ARRAY(subquery): array_agg of the subquery's
// one column, in its ORDER BY order, '{}' when it has no rows; then as a
// scalar subquery (an init plan, or a join when correlated).
func (b *Binder) bindArraySubquery(c *exprCtx, n *ast.SubqueryExpr) (expr.Expr, error) {
	if c.win != nil && c.win.dry {
		e, err := b.dryScalarSubquery(c, n)
		if err != nil {
			return nil, err
		}
		return expr.Literal(types.NullDatum, types.ArrayOf(e.Type())), nil
	}
	node, err := b.bindSubquery(c, n)
	if err != nil {
		return nil, err
	}
	node = finalizeOutput(node)
	col := -1
	for i, f := range node.Schema() {
		if f.Hidden {
			continue
		}
		if col >= 0 {
			return nil, types.Errorf(types.ErrSyntax, "subquery must return only one column")
		}
		col = i
	}
	if col < 0 {
		return nil, types.Errorf(types.ErrSyntax, "subquery must return only one column")
	}
	// The subquery's ORDER BY becomes the aggregate's.
	var order []plan.SortKey
	switch x := node.(type) {
	case *plan.Sort:
		node, order = x.Input, x.Keys
	case *plan.Project:
		if s, ok := x.Input.(*plan.Sort); ok {
			if cr, ok := x.Exprs[col].(*expr.ColumnRef); ok {
				node, order, col = s.Input, s.Keys, cr.Index
			}
		}
	}
	elem := node.Schema()[col].Type
	agg, err := expr.LookupAgg("array_agg", []types.T{elem}, false)
	if err != nil {
		return nil, err
	}
	out := []plan.Field{{Name: "array", Type: agg.Result}}
	aggNode := &plan.Agg{Input: node, Aggs: []plan.AggCall{{Agg: agg, Args: []int{col}, Filter: -1, Name: "array", OrderBy: order}}, Out: out}
	empty := expr.Literal(types.DString(types.EncodeArray(elem, nil)), agg.Result)
	co, err := expr.Call("coalesce", []expr.Expr{expr.Column(0, agg.Result), empty})
	if err != nil {
		return nil, err
	}
	var wrapped plan.Node = &plan.Project{Input: aggNode, Exprs: []expr.Expr{co}, Out: out}
	if hasOuter(wrapped) {
		e, err := b.correlatedValue(c, wrapped)
		return c.remember(n, e, err)
	}
	b.initPlans = append(b.initPlans, plan.InitPlan{Kind: plan.ScalarSubquery, Plan: wrapped})
	return &initRef{b: b, i: len(b.initPlans) - 1, typ: agg.Result}, nil
}

// dryScalarSubquery stands for a scalar subquery in the dry run that
// registers an aggregation's calls: a NULL of its type. The subquery binds
// over the aggregation's input (its grouped columns have the same types)
// and its init plans are dropped: it binds again over the real scope.
func (b *Binder) dryScalarSubquery(c *exprCtx, n *ast.SubqueryExpr) (expr.Expr, error) {
	if c.agg == nil {
		return nil, types.Errorf(types.ErrInternal, "dry run without an aggregation")
	}
	inits := len(b.initPlans)
	node, err := b.bindSubquery(&exprCtx{scope: c.agg.inScope}, n)
	b.initPlans = b.initPlans[:inits]
	if err != nil {
		return nil, err
	}
	fields := visible(node.Schema())
	if len(fields) != 1 {
		return nil, types.Errorf(types.ErrSyntax, "subquery must return only one column")
	}
	t := fields[0].Type
	if t.ID == types.Unknown {
		t = types.TVarchar
	}
	return expr.Literal(types.NullDatum, t), nil
}

// bindExistsSubquery plans EXISTS (subquery) inside an expression: an init
// plan, or when correlated a count of the correlated rows joined per row.
func (b *Binder) bindExistsSubquery(c *exprCtx, n *ast.SubqueryExpr) (expr.Expr, error) {
	if e, ok := c.boundBefore(n); ok {
		return e, nil
	}
	node, err := b.bindSubquery(c, n)
	if err != nil {
		return nil, err
	}
	if !hasOuter(node) {
		return b.existsInit(node), nil
	}
	e, err := b.correlatedExists(c, node)
	return c.remember(n, e, err)
}

// correlatedExists plans EXISTS (node) for a correlated node inside an
// expression: a count of its rows per outer row (a left join), above 0.
func (b *Binder) correlatedExists(c *exprCtx, node plan.Node) (expr.Expr, error) {
	count, err := expr.LookupAgg("count", nil, false)
	if err != nil {
		return nil, err
	}
	agg := &plan.Agg{Input: peelSet(node, true), Aggs: []plan.AggCall{{Agg: count, Filter: -1, Name: "count(*)"}},
		Out: []plan.Field{{Name: "count", Type: types.TInt64}}}
	gt, err := expr.Call(">", []expr.Expr{expr.Column(0, types.TInt64), expr.Literal(types.DInt(0), types.TInt64)})
	if err != nil {
		return nil, err
	}
	return b.correlatedValue(c, &plan.Project{Input: agg, Exprs: []expr.Expr{gt}, Out: []plan.Field{{Name: "exists", Type: types.TBool}}})
}

func (b *Binder) existsInit(node plan.Node) expr.Expr {
	b.initPlans = append(b.initPlans, plan.InitPlan{Kind: plan.ExistsSubquery, Plan: node})
	return &initRef{b: b, i: len(b.initPlans) - 1, typ: types.TBool}
}

// bindInSubqueryExpr plans "x [NOT] IN (subquery)" outside a WHERE conjunct
// as "= ANY" over the subquery's values, collected once by an init plan.
func (b *Binder) bindInSubqueryExpr(c *exprCtx, n *ast.PatternInExpr) (expr.Expr, error) {
	sub, ok := n.Sel.(*ast.SubqueryExpr)
	if !ok {
		return nil, types.Errorf(types.ErrUnsupported, "unsupported IN form")
	}
	e, err := b.bindQuantified(c, n.Expr, "=", false, sub)
	if err != nil || !n.Not {
		return e, err
	}
	return expr.Call("not", []expr.Expr{e})
}

var compareOps = map[opcode.Op]string{opcode.EQ: "=", opcode.NE: "<>", opcode.LT: "<", opcode.LE: "<=", opcode.GT: ">", opcode.GE: ">="}

// bindCompareSubquery plans "x op ANY|SOME|ALL (subquery)".
func (b *Binder) bindCompareSubquery(c *exprCtx, n *ast.CompareSubqueryExpr) (expr.Expr, error) {
	op, ok := compareOps[n.Op]
	if !ok {
		return nil, types.Errorf(types.ErrUnsupported, "operator %s with ANY/ALL is not supported", n.Op)
	}
	sub, ok := n.R.(*ast.SubqueryExpr)
	if !ok {
		return nil, types.Errorf(types.ErrUnsupported, "ANY/ALL needs a subquery")
	}
	return b.bindQuantified(c, n.L, op, n.All, sub)
}

func (b *Binder) bindQuantified(c *exprCtx, leftAST ast.ExprNode, op string, all bool, sub *ast.SubqueryExpr) (expr.Expr, error) {
	if e, ok := c.boundBefore(sub); ok {
		return e, nil
	}
	left, err := b.bindExpr(c, leftAST)
	if err != nil {
		return nil, err
	}
	node, err := b.bindSubquery(c, sub)
	if err != nil {
		return nil, err
	}
	if len(visible(node.Schema())) != 1 {
		return nil, types.Errorf(types.ErrSyntax, "subquery has too many columns")
	}
	node = finalizeOutput(node)
	elem := node.Schema()[0].Type
	left = b.coerceParam(left, elem)
	if hasOuter(node) {
		e, err := b.correlatedQuantified(c, left, op, all, node)
		return c.remember(sub, e, err)
	}
	b.initPlans = append(b.initPlans, plan.InitPlan{Kind: plan.ListSubquery, Plan: node})
	return expr.NewQuantified(left, op, all, len(b.initPlans)-1, elem)
}

// negatedOps maps a comparison to its negation (x op ALL (s) is
// NOT (x negated-op ANY (s)), NULLs included).
var negatedOps = map[string]string{"=": "<>", "<>": "=", "<": ">=", ">=": "<", ">": "<=", "<=": ">"}

// correlatedQuantified plans "left op ANY|ALL (node)" (IN is = ANY) for a
// correlated node inside an expression, with SQL's three-valued answer from
// three correlated existence tests: a row with left op value true; any
// row; a row whose value is NULL. ANY is true with the first, NULL when
// some comparison is NULL (rows exist and left is NULL, or a value is
// NULL), false otherwise.
func (b *Binder) correlatedQuantified(c *exprCtx, left expr.Expr, op string, all bool, node plan.Node) (expr.Expr, error) {
	if c.site == nil {
		return nil, errCorrelated("subqueries reading outer columns are not supported in %s", c.clauseName())
	}
	if all {
		op = negatedOps[op]
	}
	node = peelSet(node, false)
	value := expr.Column(0, node.Schema()[0].Type)
	// left, seen from inside the subquery: one level further out.
	inner, err := mapExpr(left, func(e expr.Expr) expr.Expr {
		switch x := e.(type) {
		case *expr.ColumnRef:
			return &outerRef{depth: 1, index: x.Index, typ: x.Typ}
		case *outerRef:
			return &outerRef{depth: x.depth + 1, index: x.index, typ: x.typ}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	cmp, err := expr.Call(op, []expr.Expr{inner, value})
	if err != nil {
		return nil, err
	}
	isNull, err := expr.Call("is_null", []expr.Expr{value})
	if err != nil {
		return nil, err
	}
	match, err := b.correlatedExists(c, &plan.Filter{Input: node, Cond: cmp})
	if err != nil {
		return nil, err
	}
	rows, err := b.correlatedExists(c, node)
	if err != nil {
		return nil, err
	}
	nulls, err := b.correlatedExists(c, &plan.Filter{Input: node, Cond: isNull})
	if err != nil {
		return nil, err
	}
	leftNull, err := expr.Call("is_null", []expr.Expr{left})
	if err != nil {
		return nil, err
	}
	someNull, err := expr.Call("or", []expr.Expr{leftNull, nulls})
	if err != nil {
		return nil, err
	}
	unknown, err := expr.Call("and", []expr.Expr{rows, someNull})
	if err != nil {
		return nil, err
	}
	any, err := expr.Case(nil, []expr.Expr{match, unknown},
		[]expr.Expr{expr.Literal(types.DBool(true), types.TBool), expr.Literal(types.NullDatum, types.TBool)},
		expr.Literal(types.DBool(false), types.TBool))
	if err != nil || !all {
		return any, err
	}
	return expr.Call("not", []expr.Expr{any})
}

// rowOfColumns projects n's visible columns into one struct column (a row
// constructor of them).
func rowOfColumns(n plan.Node) (plan.Node, error) {
	var cols []expr.Expr
	for i, f := range n.Schema() {
		if !f.Hidden {
			cols = append(cols, expr.Column(i, f.Type))
		}
	}
	row, err := expr.Call("pg__row", cols)
	if err != nil {
		return nil, err
	}
	return &plan.Project{Input: n, Exprs: []expr.Expr{row}, Out: []plan.Field{{Name: "row", Type: row.Type()}}}, nil
}
