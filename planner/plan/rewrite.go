package plan

import "github.com/tributary/tributary/sql/expr"

// RewriteCols rebuilds e with every column reference replaced by f's result.
// It fails (false) on expression kinds it cannot rebuild or when f returns nil.
func RewriteCols(e expr.Expr, f func(*expr.ColumnRef) expr.Expr) (expr.Expr, bool) {
	return RewriteLeaves(e, func(x expr.Expr) (expr.Expr, bool) {
		if c, ok := x.(*expr.ColumnRef); ok {
			return f(c), true
		}
		return nil, false
	})
}

// RewriteLeaves rebuilds e (constants, parameters, column references, casts,
// function calls and CASE), replacing each node leaf takes (its second
// result true) by leaf's result. It fails (false) on expression kinds it
// cannot rebuild or when a replacement is nil.
func RewriteLeaves(e expr.Expr, leaf func(expr.Expr) (expr.Expr, bool)) (expr.Expr, bool) {
	if r, ok := leaf(e); ok {
		return r, r != nil
	}
	switch x := e.(type) {
	case *expr.ColumnRef, *expr.Const, *expr.ParamRef:
		return e, true
	case *expr.CastExpr:
		in, ok := RewriteLeaves(x.Input, leaf)
		if !ok {
			return nil, false
		}
		c := *x
		c.Input = in
		return &c, true
	case *expr.FuncExpr:
		args, ok := rewriteAll(x.Args, leaf)
		if !ok {
			return nil, false
		}
		c := *x
		c.Args = args
		return &c, true
	case *expr.CaseExpr:
		c := *x
		var ok bool
		if c.Operand != nil {
			if c.Operand, ok = RewriteLeaves(c.Operand, leaf); !ok {
				return nil, false
			}
		}
		if c.Whens, ok = rewriteAll(c.Whens, leaf); !ok {
			return nil, false
		}
		if c.Thens, ok = rewriteAll(c.Thens, leaf); !ok {
			return nil, false
		}
		if c.Else != nil {
			if c.Else, ok = RewriteLeaves(c.Else, leaf); !ok {
				return nil, false
			}
		}
		return &c, true
	}
	return nil, false
}

func rewriteAll(es []expr.Expr, leaf func(expr.Expr) (expr.Expr, bool)) ([]expr.Expr, bool) {
	out := make([]expr.Expr, len(es))
	for i, e := range es {
		r, ok := RewriteLeaves(e, leaf)
		if !ok {
			return nil, false
		}
		out[i] = r
	}
	return out, true
}

// ColumnsOf lists the columns e reads; false when e holds an expression
// kind whose inputs are unknown.
func ColumnsOf(e expr.Expr) ([]int, bool) {
	var cols []int
	ok := true
	expr.Walk(e, func(x expr.Expr) bool {
		switch y := x.(type) {
		case *expr.ColumnRef:
			cols = append(cols, y.Index)
		case *expr.Const, *expr.ParamRef, *expr.CastExpr, *expr.FuncExpr, *expr.CaseExpr:
		default:
			ok = false
		}
		return ok
	})
	return cols, ok
}
