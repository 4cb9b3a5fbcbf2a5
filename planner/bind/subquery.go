package bind

import (
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/opcode"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
)

// bindWhere plans a WHERE clause: IN/NOT IN subqueries among its top-level
// conjuncts become semi/anti joins, a full primary-key equality on a table
// scan becomes a point lookup, and the rest a Filter.
func (b *Binder) bindWhere(input plan.Node, sc *scope, where ast.ExprNode) (plan.Node, error) {
	c := &exprCtx{scope: sc, clause: "WHERE"}
	width := len(sc.fields)
	var conds []expr.Expr
	for _, conj := range splitAndAST(where) {
		if in, ok := conj.(*ast.PatternInExpr); ok && in.Sel != nil {
			var err error
			if input, err = b.semiJoin(input, c, in); err != nil {
				return nil, err
			}
			continue
		}
		e, err := b.bindExpr(c, conj)
		if err != nil {
			return nil, err
		}
		if e, err = b.boolCond(e, "WHERE"); err != nil {
			return nil, err
		}
		conds = append(conds, splitAnd(e)...)
	}
	if scan, ok := input.(*plan.Scan); ok {
		conds = pointLookup(scan, conds)
	}
	if len(conds) > 0 {
		cond, err := andAll(conds)
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

// semiJoin plans "x [NOT] IN (subquery)" as a semi (anti) join.
func (b *Binder) semiJoin(input plan.Node, c *exprCtx, in *ast.PatternInExpr) (plan.Node, error) {
	defer b.enter(c.scope)()
	sub, ok := in.Sel.(*ast.SubqueryExpr)
	if !ok {
		return nil, types.Errorf(types.ErrUnsupported, "unsupported IN form")
	}
	right, err := b.bindResultSet(sub.Query)
	if err != nil {
		return nil, err
	}
	rf := visible(right.Schema())
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
	return j, nil
}

// pointLookup moves "pk = constant" conjuncts covering the whole primary key into the scan.
func pointLookup(scan *plan.Scan, conds []expr.Expr) []expr.Expr {
	pk := scan.Table.PK
	if len(pk) == 0 {
		return conds
	}
	vals := make([]expr.Expr, len(pk))
	used := make([]int, len(pk))
	for k, col := range pk {
		used[k] = -1
		for i, c := range conds {
			call, ok := c.(*expr.FuncExpr)
			if !ok || call.Name != "=" || len(call.Args) != 2 {
				continue
			}
			for side := 0; side < 2; side++ {
				cr, ok := call.Args[side].(*expr.ColumnRef)
				other := call.Args[1-side]
				if !ok || cr.Index != col || !(expr.IsConst(other) || isParam(other)) {
					continue
				}
				t := scan.Table.Columns[col].Type
				if other.Type().Base() != t.Base() {
					cast, err := expr.ImplicitCast(other, t)
					if err != nil {
						continue
					}
					other = cast
				}
				vals[k], used[k] = other, i
			}
			if used[k] >= 0 {
				break
			}
		}
		if used[k] < 0 {
			return conds
		}
	}
	scan.Lookup = vals
	var rest []expr.Expr
	for i, c := range conds {
		drop := false
		for _, u := range used {
			if u == i {
				drop = true
			}
		}
		if !drop {
			rest = append(rest, c)
		}
	}
	return rest
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
func (r *initRef) String() string   { return r.param().String() }
func (r *initRef) Eval(ctx *expr.Ctx, in *types.Chunk, out *types.Vector) error {
	return r.param().Eval(ctx, in, out)
}
func (r *initRef) EvalRow(ctx *expr.Ctx, row []types.Datum) (types.Datum, error) {
	return r.param().EvalRow(ctx, row)
}

func (b *Binder) bindScalarSubquery(n *ast.SubqueryExpr) (expr.Expr, error) {
	node, err := b.bindResultSet(n.Query)
	if err != nil {
		return nil, err
	}
	fields := visible(node.Schema())
	if len(fields) != 1 {
		return nil, types.Errorf(types.ErrSyntax, "subquery must return only one column")
	}
	node = finalizeOutput(node)
	b.initPlans = append(b.initPlans, plan.InitPlan{Kind: plan.ScalarSubquery, Plan: node})
	return &initRef{b: b, i: len(b.initPlans) - 1, typ: node.Schema()[0].Type}, nil
}

func (b *Binder) bindExistsSubquery(n *ast.SubqueryExpr) (expr.Expr, error) {
	node, err := b.bindResultSet(n.Query)
	if err != nil {
		return nil, err
	}
	b.initPlans = append(b.initPlans, plan.InitPlan{Kind: plan.ExistsSubquery, Plan: node})
	return &initRef{b: b, i: len(b.initPlans) - 1, typ: types.TBool}, nil
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
	left, err := b.bindExpr(c, leftAST)
	if err != nil {
		return nil, err
	}
	node, err := b.bindResultSet(sub.Query)
	if err != nil {
		return nil, err
	}
	if len(visible(node.Schema())) != 1 {
		return nil, types.Errorf(types.ErrSyntax, "subquery has too many columns")
	}
	node = finalizeOutput(node)
	elem := node.Schema()[0].Type
	left = b.coerceParam(left, elem)
	b.initPlans = append(b.initPlans, plan.InitPlan{Kind: plan.ListSubquery, Plan: node})
	return expr.NewQuantified(left, op, all, len(b.initPlans)-1, elem)
}
