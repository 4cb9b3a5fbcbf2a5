package bind

import (
	"errors"
	"math"
	"strconv"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/pingcap/tidb/pkg/parser/opcode"
	"github.com/pingcap/tidb/pkg/parser/test_driver"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/parser"
	"github.com/tributary/tributary/sql/types"
)

// exprCtx is where an expression is bound: the columns in scope and, after
// aggregation, how group keys and aggregates map to columns.
type exprCtx struct {
	scope  *scope
	agg    *aggBinding // non-nil when binding above an aggregation
	win    *winBinding // non-nil when window functions are allowed
	clause string      // for errors: "WHERE", "JOIN conditions", ...
	// site, when set, is where correlated subqueries attach their joins.
	site *applySite
	// fn is set while a user function's body binds: its arguments.
	fn *fnFrame
}

// bindExpr binds one expression; past types.MaxExprDepth levels of recursion
// it refuses with 54001.
func (b *Binder) bindExpr(c *exprCtx, n ast.ExprNode) (expr.Expr, error) {
	if b.exprDepth >= types.MaxExprDepth {
		return nil, types.StackDepthError(types.MaxExprDepth, "expressions")
	}
	b.exprDepth++
	defer func() { b.exprDepth-- }()
	return b.bindExprIn(c, n)
}

func (b *Binder) bindExprIn(c *exprCtx, n ast.ExprNode) (expr.Expr, error) {
	if c.agg != nil {
		if e, ok, err := c.agg.match(b, c, n); ok || err != nil {
			return e, err
		}
	}
	if c.win != nil && c.win.dry {
		// The dry run registering an aggregation's calls does not bind
		// subqueries: their aggregates are their own.
		switch n := n.(type) {
		case *ast.SubqueryExpr:
			return b.dryScalarSubquery(c, n)
		case *ast.ExistsSubqueryExpr, *ast.CompareSubqueryExpr:
			return expr.Literal(types.NullDatum, types.TBool), nil
		case *ast.PatternInExpr:
			if n.Sel != nil {
				return expr.Literal(types.NullDatum, types.TBool), nil
			}
		}
	}
	switch n := n.(type) {
	case *ast.ParenthesesExpr:
		return b.bindExpr(c, n.Expr)
	case *test_driver.ValueExpr:
		return literal(n)
	case *ast.ColumnNameExpr:
		if e, ok := c.fnArg(n.Name.Table.O, n.Name.Name.O); ok && n.Name.Schema.O == "" {
			return e, nil
		}
		if c.agg != nil {
			if _, err := c.agg.inScope.resolve(n.Name.Table.O, n.Name.Name.O); err != nil && !errors.Is(err, types.ErrAmbiguousColumn) {
				if e, err := b.resolveOuter(n.Name.Table.O, n.Name.Name.O); e != nil || err != nil {
					return e, err
				}
			}
			return nil, c.agg.ungrouped(n)
		}
		idx, err := c.scope.resolve(n.Name.Table.O, n.Name.Name.O)
		if err != nil {
			// SQL's parameterless functions, when no column has the name.
			if n.Name.Table.O == "" && n.Name.Schema.O == "" && sqlValueFuncs[n.Name.Name.L] {
				return expr.Call(n.Name.Name.L, nil)
			}
			if !errors.Is(err, types.ErrAmbiguousColumn) {
				if e, oerr := b.resolveOuter(n.Name.Table.O, n.Name.Name.O); e != nil || oerr != nil {
					return e, oerr
				}
			}
			return nil, err
		}
		return expr.Column(idx, c.scope.fields[idx].Type), nil
	case *ast.BinaryOperationExpr:
		return b.bindBinary(c, n)
	case *ast.UnaryOperationExpr:
		arg, err := b.bindExpr(c, n.V)
		if err != nil {
			return nil, err
		}
		switch n.Op {
		case opcode.Minus:
			if k, ok := arg.(*expr.Const); ok && k.Typ.IsNumeric() {
				return negateConst(k)
			}
			return expr.Call("neg", []expr.Expr{arg})
		case opcode.Plus:
			return arg, nil
		case opcode.BitNeg:
			return expr.Call("bitnot", []expr.Expr{arg})
		case opcode.Not, opcode.Not2:
			return expr.Call("not", []expr.Expr{b.coerceParam(arg, types.TBool)})
		}
		return nil, types.Errorf(types.ErrUnsupported, "unary operator %s is not supported", n.Op)
	case *ast.IsNullExpr:
		arg, err := b.bindExpr(c, n.Expr)
		if err != nil {
			return nil, err
		}
		if n.Not {
			return expr.Call("is_not_null", []expr.Expr{arg})
		}
		return expr.Call("is_null", []expr.Expr{arg})
	case *ast.IsTruthExpr:
		arg, err := b.bindExpr(c, n.Expr)
		if err != nil {
			return nil, err
		}
		name := map[[2]bool]string{{true, false}: "is_true", {true, true}: "is_not_true", {false, false}: "is_false", {false, true}: "is_not_false"}[[2]bool{n.True != 0, n.Not}]
		return expr.Call(name, []expr.Expr{b.coerceParam(arg, types.TBool)})
	case *ast.BetweenExpr:
		args, err := b.bindExprs(c, []ast.ExprNode{n.Expr, n.Left, n.Right})
		if err != nil {
			return nil, err
		}
		b.inferParams(args)
		e, err := expr.Call("between", args)
		if err != nil || !n.Not {
			return e, err
		}
		return expr.Call("not", []expr.Expr{e})
	case *ast.PatternLikeOrIlikeExpr:
		args, err := b.bindExprs(c, []ast.ExprNode{n.Expr, n.Pattern})
		if err != nil {
			return nil, err
		}
		for i := range args {
			args[i] = b.coerceParam(args[i], types.TVarchar)
		}
		name := "like"
		if !n.IsLike {
			name = "ilike"
		}
		if n.Escape != '\\' && n.Escape != 0 {
			args = append(args, expr.Literal(types.DString(string(n.Escape)), types.TVarchar))
		}
		e, err := expr.Call(name, args)
		if err != nil || !n.Not {
			return e, err
		}
		return expr.Call("not", []expr.Expr{e})
	case *ast.PatternRegexpExpr:
		args, err := b.bindExprs(c, []ast.ExprNode{n.Expr, n.Pattern})
		if err != nil {
			return nil, err
		}
		e, err := expr.Call("regexp", args)
		if err != nil || !n.Not {
			return e, err
		}
		return expr.Call("not", []expr.Expr{e})
	case *ast.PatternInExpr:
		if n.Sel != nil {
			return b.bindInSubqueryExpr(c, n)
		}
		args, err := b.bindExprs(c, append([]ast.ExprNode{n.Expr}, n.List...))
		if err != nil {
			return nil, err
		}
		b.inferParams(args)
		e, err := expr.Call("in", args)
		if err != nil || !n.Not {
			return e, err
		}
		return expr.Call("not", []expr.Expr{e})
	case *ast.CaseExpr:
		return b.bindCase(c, n)
	case *ast.FuncCallExpr:
		if n.FnName.L == "pg__grouping" {
			if c.agg == nil {
				return nil, types.Errorf(types.ErrGrouping, "arguments to GROUPING must be grouping expressions of the associated query level")
			}
			return c.agg.grouping(b, c, n)
		}
		return b.bindFunc(c, n)
	case *ast.AggregateFuncExpr:
		if c.agg == nil {
			return nil, types.Errorf(types.ErrGrouping, "aggregate functions are not allowed in %s", c.clauseName())
		}
		return c.agg.aggregate(b, c, n)
	case *ast.WindowFuncExpr:
		if c.win == nil {
			return nil, types.Errorf(types.ErrWindowing, "window functions are not allowed in %s", c.clauseName())
		}
		return c.win.window(b, c, n)
	case *ast.SubqueryExpr:
		return b.bindScalarSubquery(c, n)
	case *ast.ExistsSubqueryExpr:
		sub, ok := n.Sel.(*ast.SubqueryExpr)
		if !ok {
			return nil, types.Errorf(types.ErrUnsupported, "unsupported EXISTS form")
		}
		e, err := b.bindExistsSubquery(c, sub)
		if err != nil || !n.Not {
			return e, err
		}
		return expr.Call("not", []expr.Expr{e})
	case *ast.CompareSubqueryExpr:
		return b.bindCompareSubquery(c, n)
	case *ast.DefaultExpr:
		return nil, types.Errorf(types.ErrSyntax, "DEFAULT is not allowed in this context")
	case *ast.RowExpr:
		// ROW(a, b) and (a, b): an anonymous struct with fields f1, f2, ...
		args := make([]expr.Expr, len(n.Values))
		for i, v := range n.Values {
			e, err := b.bindExpr(c, v)
			if err != nil {
				return nil, err
			}
			args[i] = b.coerceParam(e, types.TVarchar)
		}
		return expr.Call("pg__row", args)
	case *ast.VariableExpr:
		return nil, types.Errorf(types.ErrSyntax, "syntax error at or near \"@\"")
	case *ast.FuncCastExpr:
		arg, err := b.bindExpr(c, n.Expr)
		if err != nil {
			return nil, err
		}
		return b.cast(arg, mysqlCastType(n))
	case *ast.TimeUnitExpr:
		return expr.Literal(types.DString(strings.ToLower(n.Unit.String())), types.TVarchar), nil
	case *ast.TrimDirectionExpr:
		return nil, types.Errorf(types.ErrInternal, "unexpected trim direction")
	case *ast.SetCollationExpr:
		return b.bindExpr(c, n.Expr)
	}
	return nil, types.Errorf(types.ErrUnsupported, "expression %T is not supported", n)
}

func (c *exprCtx) clauseName() string {
	if c.clause == "" {
		return "this context"
	}
	return c.clause
}

func (b *Binder) bindExprs(c *exprCtx, ns []ast.ExprNode) ([]expr.Expr, error) {
	out := make([]expr.Expr, len(ns))
	for i, n := range ns {
		e, err := b.bindExpr(c, n)
		if err != nil {
			return nil, err
		}
		out[i] = e
	}
	return out, nil
}

// literal types a TiDB literal the way PostgreSQL types the same text.
func literal(v *test_driver.ValueExpr) (expr.Expr, error) {
	d := v.Datum
	switch d.Kind() {
	case test_driver.KindNull:
		return expr.Literal(types.NullDatum, types.TUnknown), nil
	case test_driver.KindInt64:
		i := d.GetInt64()
		if v.Type.GetFlag()&mysql.IsBooleanFlag != 0 {
			return expr.Literal(types.DBool(i != 0), types.TBool), nil
		}
		if i >= -1<<31 && i < 1<<31 {
			return expr.Literal(types.DInt(i), types.TInt32), nil
		}
		return expr.Literal(types.DInt(i), types.TInt64), nil
	case test_driver.KindUint64:
		u := d.GetUint64()
		if u <= 1<<63-1 {
			return expr.Literal(types.DInt(int64(u)), types.TInt64), nil
		}
		var out types.Datum
		out.Dec.SetString(strconv.FormatUint(u, 10))
		return expr.Literal(out, types.TNumeric), nil
	case test_driver.KindMysqlDecimal:
		var out types.Datum
		if _, _, err := out.Dec.SetString(d.GetMysqlDecimal().String()); err != nil {
			return nil, types.Errorf(types.ErrInvalidText, "invalid numeric literal")
		}
		return expr.Literal(out, types.TNumeric), nil
	case test_driver.KindFloat64, test_driver.KindFloat32:
		var out types.Datum
		if _, err := out.Dec.SetFloat64(d.GetFloat64()); err != nil {
			return nil, types.Errorf(types.ErrNumericOutOfRange, "numeric literal out of range")
		}
		return expr.Literal(out, types.TNumeric), nil
	case test_driver.KindString:
		return expr.Literal(types.DString(d.GetString()), types.TUnknown), nil
	case test_driver.KindBytes:
		return expr.Literal(types.DString(string(d.GetBytes())), types.TUnknown), nil
	case test_driver.KindBinaryLiteral:
		return expr.Literal(types.DString(string(d.GetBytes())), types.TBytea), nil
	}
	return nil, types.Errorf(types.ErrUnsupported, "literal of kind %d is not supported", d.Kind())
}

// literalValue binds a literal of an INSERT's VALUES row the parser's fast path took (parser.
// Literal) as bindExpr binds its TiDB expression (Literal.Expr), without building that: an
// integer's constant directly, anything rarer through the expression.
func (b *Binder) literalValue(c *exprCtx, l parser.Literal) (expr.Expr, error) {
	switch l.Kind {
	case parser.LitNull:
		return expr.Literal(types.NullDatum, types.TUnknown), nil
	case parser.LitTrue, parser.LitFalse:
		return expr.Literal(types.DBool(l.Kind == parser.LitTrue), types.TBool), nil
	case parser.LitString:
		return expr.Literal(types.DString(l.Val), types.TUnknown), nil
	case parser.LitNumber:
		i, err := strconv.ParseInt(l.Val, 10, 64)
		if err != nil {
			break // a decimal, or beyond int64: as TiDB reads it
		}
		k := &expr.Const{Value: types.DInt(i), Typ: types.TInt64}
		if i >= -1<<31 && i < 1<<31 {
			k.Typ = types.TInt32
		}
		if l.Neg {
			return negateConst(k)
		}
		return k, nil
	}
	return b.bindExpr(c, l.Expr())
}

// literalConst returns the value a literal of an INSERT's VALUES row takes in
// a column of type t when that is plain: an integer that fits an integer
// column, a string in an unlimited varchar column, or NULL in either. It is
// the constant literalValue and assignCast make of it (ok false: anything
// else, and every error, goes through them).
func literalConst(l parser.Literal, t types.T) (d types.Datum, ok bool) {
	switch t.ID {
	case types.Int16, types.Int32, types.Int64:
	case types.Varchar:
		if t.Width != 0 {
			return d, false
		}
	default:
		return d, false
	}
	switch l.Kind {
	case parser.LitNull:
		return types.NullDatum, true
	case parser.LitString:
		return types.DString(l.Val), t.ID == types.Varchar
	case parser.LitNumber:
		if t.ID == types.Varchar {
			return d, false
		}
		i, err := strconv.ParseInt(l.Val, 10, 64)
		if err != nil {
			return d, false
		}
		if l.Neg {
			i = -i // ParseInt's range leaves out math.MinInt64's magnitude
		}
		switch t.ID {
		case types.Int16:
			ok = i >= math.MinInt16 && i <= math.MaxInt16
		case types.Int32:
			ok = i >= math.MinInt32 && i <= math.MaxInt32
		default:
			ok = true
		}
		return types.DInt(i), ok
	}
	return d, false
}

func negateConst(k *expr.Const) (expr.Expr, error) {
	d := k.Value.Copy()
	if d.Null {
		return k, nil
	}
	t := k.Typ
	switch t.Physical() {
	case types.PhysI64:
		v, err := expr.NegInt(t.ID, d.I)
		if err != nil {
			return nil, err
		}
		d.I = v
	case types.PhysF64:
		d.F = -d.F
	case types.PhysDec:
		d.Dec.Neg(&d.Dec)
	}
	return expr.Literal(d, t), nil
}

var binaryOps = map[opcode.Op]string{
	opcode.Plus: "+", opcode.Minus: "-", opcode.Mul: "*", opcode.Div: "/", opcode.Mod: "%",
	opcode.IntDiv: "/", opcode.EQ: "=", opcode.NE: "<>", opcode.LT: "<", opcode.LE: "<=",
	opcode.GT: ">", opcode.GE: ">=", opcode.LogicAnd: "and", opcode.LogicOr: "or",
	opcode.NullEQ: "<=>", opcode.Xor: "#", opcode.And: "&", opcode.Or: "|",
	opcode.LeftShift: "<<", opcode.RightShift: ">>",
}

func (b *Binder) bindBinary(c *exprCtx, n *ast.BinaryOperationExpr) (expr.Expr, error) {
	name, ok := binaryOps[n.Op]
	if !ok {
		return nil, types.Errorf(types.ErrUnsupported, "operator %s is not supported", n.Op)
	}
	// Concatenation arrives as a function (PIPES_AS_CONCAT); everything else here.
	l, err := b.bindExpr(c, n.L)
	if err != nil {
		return nil, err
	}
	r, err := b.bindExpr(c, n.R)
	if err != nil {
		return nil, err
	}
	args := []expr.Expr{l, r}
	if name == "and" || name == "or" {
		args[0], args[1] = b.coerceParam(l, types.TBool), b.coerceParam(r, types.TBool)
	} else {
		b.inferParams(args)
	}
	return expr.Call(name, args)
}

// coerceParam gives an untyped parameter the type its context requires.
func (b *Binder) coerceParam(e expr.Expr, t types.T) expr.Expr {
	p, ok := e.(*expr.ParamRef)
	if !ok || p.Typ.ID != types.Unknown {
		return e
	}
	if b.params[p.Index].ID == types.Unknown {
		b.params[p.Index] = t
	}
	return expr.Param(p.Index, b.params[p.Index])
}

// inferParams types untyped parameters in an operator's arguments from the
// first argument whose type is known.
func (b *Binder) inferParams(args []expr.Expr) {
	var known types.T
	for _, a := range args {
		if t := a.Type(); t.ID != types.Unknown {
			known = t.Base()
			break
		}
	}
	if known.ID == types.Unknown {
		return
	}
	for i := range args {
		args[i] = b.coerceParam(args[i], known)
	}
}

func (b *Binder) bindCase(c *exprCtx, n *ast.CaseExpr) (expr.Expr, error) {
	var operand expr.Expr
	var err error
	if n.Value != nil {
		if operand, err = b.bindExpr(c, n.Value); err != nil {
			return nil, err
		}
	}
	whens := make([]expr.Expr, len(n.WhenClauses))
	thens := make([]expr.Expr, len(n.WhenClauses))
	for i, w := range n.WhenClauses {
		if whens[i], err = b.bindExpr(c, w.Expr); err != nil {
			return nil, err
		}
		if thens[i], err = b.bindExpr(c, w.Result); err != nil {
			return nil, err
		}
	}
	var els expr.Expr
	if n.ElseClause != nil {
		if els, err = b.bindExpr(c, n.ElseClause); err != nil {
			return nil, err
		}
	}
	return expr.Case(operand, whens, thens, els)
}

func (b *Binder) cast(e expr.Expr, t types.T) (expr.Expr, error) {
	if p, ok := e.(*expr.ParamRef); ok && p.Typ.ID == types.Unknown {
		return b.coerceParam(e, t), nil
	}
	return expr.Cast(e, t)
}

func mysqlCastType(n *ast.FuncCastExpr) types.T {
	switch n.Tp.GetType() {
	case mysql.TypeLonglong:
		return types.TInt64
	case mysql.TypeDouble, mysql.TypeFloat:
		return types.TFloat64
	case mysql.TypeNewDecimal:
		return types.TNumeric
	case mysql.TypeDate:
		return types.TDate
	case mysql.TypeDatetime, mysql.TypeTimestamp:
		return types.TTimestamp
	case mysql.TypeDuration:
		return types.TTime
	case mysql.TypeJSON:
		return types.TJsonb
	}
	return types.TVarchar
}

// stringArg extracts a constant string argument (a type name, an interval).
func stringArg(n ast.ExprNode) (string, bool) {
	v, ok := n.(*test_driver.ValueExpr)
	if !ok || v.Datum.Kind() != test_driver.KindString {
		return "", false
	}
	return v.Datum.GetString(), true
}

func intArg(n ast.ExprNode) (int, bool) {
	if p, ok := n.(*ast.PositionExpr); ok && p.P == nil {
		return p.N, true
	}
	v, ok := n.(*test_driver.ValueExpr)
	if !ok {
		return 0, false
	}
	switch v.Datum.Kind() {
	case test_driver.KindInt64:
		return int(v.Datum.GetInt64()), true
	case test_driver.KindUint64:
		return int(v.Datum.GetUint64()), true
	}
	return 0, false
}

// parseTypeString resolves a canonical type string like "numeric(10,2)".
func parseTypeString(s string) (types.T, error) {
	if strings.HasPrefix(s, "struct<") {
		return types.FromName(s, nil) // struct<...> and struct<...>[]
	}
	if base, ok := strings.CutSuffix(s, "[]"); ok {
		elem, err := parseTypeString(base)
		if err != nil {
			return elem, err
		}
		return types.ArrayOf(elem), nil
	}
	name, args := s, []int(nil)
	if i := strings.IndexByte(s, '('); i >= 0 && strings.HasSuffix(s, ")") {
		name = s[:i]
		for _, a := range strings.Split(s[i+1:len(s)-1], ",") {
			v, err := strconv.Atoi(strings.TrimSpace(a))
			if err != nil {
				return types.TUnknown, types.Errorf(types.ErrSyntax, "invalid type modifier in %q", s)
			}
			args = append(args, v)
		}
	}
	return types.FromName(name, args)
}

// aggregateNames are aggregates TiDB does not know, so they arrive as plain calls.
var aggregateNames = map[string]bool{
	"bool_and": true, "bool_or": true, "every": true, "string_agg": true, "stddev": true, "array_agg": true,
	"stddev_pop": true, "stddev_samp": true, "variance": true, "var_pop": true, "var_samp": true,
	"jsonb_agg": true, "json_agg": true, "jsonb_object_agg": true, "json_object_agg": true,
}

// maxParams is the most parameters a statement can have (the wire
// protocol's count is 16 bits).
const maxParams = 65535

func (b *Binder) bindFunc(c *exprCtx, n *ast.FuncCallExpr) (expr.Expr, error) {
	name := n.FnName.L
	if aggregateNames[name] && n.Schema.L == "" {
		return b.bindExpr(c, &ast.AggregateFuncExpr{F: name, Args: n.Args})
	}
	switch name {
	case "pg__param":
		k, ok := intArg(n.Args[0])
		if !ok || k < 1 {
			return nil, types.Errorf(types.ErrUndefinedParameter, "invalid parameter reference")
		}
		if c.fn != nil {
			return c.fnParam(k)
		}
		if k > maxParams {
			// The wire protocol carries at most 65535 (and a larger
			// reference must not size the parameter list): PostgreSQL's
			// answer to such a statement at Parse.
			return nil, types.Errorf(types.ErrProgramLimit, "number of parameters must be between 0 and %d", maxParams)
		}
		for len(b.params) < k {
			b.params = append(b.params, types.TUnknown)
		}
		return expr.Param(k-1, b.params[k-1]), nil
	case "pg__cast":
		ts, ok := stringArg(n.Args[1])
		if !ok {
			return nil, types.Errorf(types.ErrInternal, "malformed cast")
		}
		t, err := parseTypeString(ts)
		if err != nil {
			return nil, err
		}
		if inner, ok := n.Args[0].(*ast.FuncCallExpr); ok && inner.FnName.L == "pg__array" && len(inner.Args) == 0 {
			// ARRAY[] takes its type from the cast.
			if t.ID != types.Array {
				return nil, types.Errorf(types.ErrCannotCoerce, "cannot cast type unknown[] to %s", t)
			}
			return expr.Literal(types.DString(types.EncodeArray(t.ElemType(), nil)), t), nil
		}
		if lit, ok := stringArg(n.Args[0]); ok {
			if oid, ok, err := b.regLiteral(strings.TrimPrefix(strings.ToLower(strings.TrimSpace(ts)), "pg_catalog."), lit); ok || err != nil {
				return oid, err
			}
		}
		arg, err := b.bindExpr(c, n.Args[0])
		if err != nil {
			return nil, err
		}
		return b.cast(arg, t)
	case "pg__interval":
		s, ok := stringArg(n.Args[0])
		if !ok {
			return nil, types.Errorf(types.ErrSyntax, "interval literal must be a string")
		}
		iv, err := types.ParseInterval(s)
		if err != nil {
			return nil, err
		}
		return expr.Literal(types.DInterval(iv), types.TInterval), nil
	case "pg__filter":
		if f, ok := n.Args[0].(*ast.FuncCallExpr); ok && aggregateNames[f.FnName.L] && c.agg != nil {
			return c.agg.aggregateWithFilter(b, c, &ast.AggregateFuncExpr{F: f.FnName.L, Args: f.Args}, n.Args[1])
		}
		if agg, ok := n.Args[0].(*ast.AggregateFuncExpr); ok && c.agg != nil {
			return c.agg.aggregateWithFilter(b, c, agg, n.Args[1])
		}
		return nil, types.Errorf(types.ErrGrouping, "FILTER specified, but %s is not an aggregate function", funcName(n.Args[0]))
	case "pg__nulls_first", "pg__nulls_last", "pg__distinct_on":
		return nil, types.Errorf(types.ErrSyntax, "NULLS FIRST/LAST and DISTINCT ON are only allowed in their clauses")
	case "pg__changelog":
		return nil, types.Errorf(types.ErrUnsupported, "changelog is only supported as a WITH query: WITH c AS changelog FROM t")
	case "pg__corresponding":
		return nil, types.Errorf(types.ErrUnsupported, "CORRESPONDING is only supported before a SELECT in a set operation")
	case "pg__regexp_i":
		name = "regexp_i"
	case "concat":
		// Only a || b reaches here as concat: the parser renames real concat() calls.
		if len(n.Args) == 2 {
			name = "||"
		}
	case "pg__concat_fn":
		name = "concat"
	case "pg__div":
		name = "div"
	case "pg__mod":
		name = "mod"
	case "pg__pow":
		name = "power" // a ^ b
	case "pg__concat_op":
		name = "||"
	case "pg__contains":
		name = "@>"
	case "pg__contained":
		name = "<@"
	case "pg__overlap":
		name = "&&"
	case "pg__any", "pg__all":
		return b.bindArrayQuantified(c, n)
	case "pg__field_star":
		return nil, types.Errorf(types.ErrUnsupported, "(composite).* is only supported as a SELECT list item")
	case "pg__array_sub":
		sub, ok := n.Args[0].(*ast.SubqueryExpr)
		if len(n.Args) != 1 || !ok {
			return nil, types.Errorf(types.ErrInternal, "malformed ARRAY(subquery)")
		}
		return b.bindArraySubquery(c, sub)
	case "pg__cardinality":
		name = "cardinality"
	case "pg__array":
		if len(n.Args) == 0 {
			return nil, &types.Error{Kind: types.ErrIndeterminateDatatype, Msg: "cannot determine type of empty array",
				Hint: "Explicitly cast to the desired type, for example ARRAY[]::integer[]."}
		}
	case "unnest":
		if e, ok := b.srfCols[n]; ok {
			return e, nil
		}
		return nil, types.Errorf(types.ErrUnsupported, "unnest is supported in FROM and as a SELECT list item of a query without aggregation, not in %s", c.clause)
	case "current_setting":
		if len(n.Args) == 1 && b.setting != nil {
			if v, ok := stringArg(n.Args[0]); ok {
				val, err := b.setting(v)
				if err != nil {
					return nil, err
				}
				return expr.Literal(types.DString(val), types.TVarchar), nil
			}
		}
	case "nextval", "currval", "setval":
		// nextval('t_id_seq'::regclass), as psql shows a serial default:
		// sequences are named by text here, so the regclass cast goes.
		if len(n.Args) > 0 {
			if inner, ok := n.Args[0].(*ast.FuncCallExpr); ok && inner.FnName.L == "pg__cast" && len(inner.Args) == 2 {
				if ts, ok := stringArg(inner.Args[1]); ok && strings.EqualFold(strings.TrimSpace(ts), "regclass") {
					args := append([]ast.ExprNode{inner.Args[0]}, n.Args[1:]...)
					n = &ast.FuncCallExpr{Tp: n.Tp, Schema: n.Schema, FnName: n.FnName, Args: args}
				}
			}
		}
	case "json_extract":
		name = "jsonb_get"
	case "json_unquote":
		if inner, ok := n.Args[0].(*ast.FuncCallExpr); ok && inner.FnName.L == "json_extract" {
			args, err := b.bindExprs(c, inner.Args)
			if err != nil {
				return nil, err
			}
			return expr.Call("jsonb_get_text", args)
		}
	case "trim":
		return b.bindTrim(c, n)
	case "extract", "date_part", "pg__extract":
		if name == "pg__extract" {
			name = "extract"
		}
		if len(n.Args) == 2 {
			unit, err := b.bindExpr(c, n.Args[0])
			if err != nil {
				return nil, err
			}
			arg, err := b.bindExpr(c, n.Args[1])
			if err != nil {
				return nil, err
			}
			return expr.Call(name, []expr.Expr{unit, arg})
		}
	case "current_timestamp", "now", "localtimestamp", "current_date", "current_time", "current_user", "session_user", "user":
		if name == "user" {
			name = "current_user"
		}
		return expr.Call(name, nil)
	case "ifnull":
		name = "coalesce"
	}
	args, err := b.bindExprs(c, n.Args)
	if err != nil {
		return nil, err
	}
	// pg_catalog comes first in the search path: a built-in function hides
	// a user function of the same name and arguments, as in PostgreSQL.
	if n.Schema.L != "" && n.Schema.L != "pg_catalog" {
		if e, ok, err := b.userFunc(n, args); ok || err != nil {
			return e, err
		}
		if b.cat.SchemaOID(n.Schema.L) == 0 {
			return nil, types.Errorf(types.ErrInvalidSchemaName, "schema \"%s\" does not exist", n.Schema.O)
		}
		if n.Schema.L != "information_schema" && n.Schema.L != "rw_catalog" {
			return nil, catalog.ErrNoFunction(n.Schema.O+"."+n.FnName.O, argTypes(args))
		}
	}
	e, err := expr.Call(name, args)
	if err != nil && errors.Is(err, types.ErrUndefinedFunction) && n.Schema.L == "" {
		if ue, ok, uerr := b.userFunc(n, args); ok || uerr != nil {
			return ue, uerr
		}
	}
	if err != nil || !b.typeParamsFromCall(args, e) {
		return e, err
	}
	return expr.Call(name, args) // again, over the typed parameters
}

// bindArrayQuantified binds pg__any(left, 'op', array) and pg__all(...),
// the parser's form of left op ANY | ALL (array). An untyped parameter
// array ($1) is typed as an array of left's type, as PostgreSQL does for
// x = ANY($1); an untyped left takes the array's element type.
func (b *Binder) bindArrayQuantified(c *exprCtx, n *ast.FuncCallExpr) (expr.Expr, error) {
	op, ok := stringArg(n.Args[1])
	if len(n.Args) != 3 || !ok {
		return nil, types.Errorf(types.ErrInternal, "malformed ANY/ALL")
	}
	left, err := b.bindExpr(c, n.Args[0])
	if err != nil {
		return nil, err
	}
	arr, err := b.bindExpr(c, n.Args[2])
	if err != nil {
		return nil, err
	}
	if lt := left.Type(); lt.ID != types.Unknown {
		arr = b.coerceParam(arr, types.ArrayOf(lt.Base()))
	}
	if at := arr.Type(); at.ID == types.Array {
		left = b.coerceParam(left, at.ElemType())
	}
	return expr.ArrayQuantified(left, op, n.FnName.L == "pg__all", arr)
}

// typeParamsFromCall gives each untyped parameter among a function call's
// arguments the type of the overload's parameter it was coerced to (as
// PostgreSQL types $1 in pg_cancel_backend($1) as integer), replacing it in
// args; it reports whether it replaced any.
func (b *Binder) typeParamsFromCall(args []expr.Expr, call expr.Expr) bool {
	fe, ok := call.(*expr.FuncExpr)
	if !ok {
		return false
	}
	changed := false
	for i, a := range args {
		p, ok := a.(*expr.ParamRef)
		if !ok || p.Typ.ID != types.Unknown || i >= len(fe.Args) {
			continue
		}
		if t := fe.Args[i].Type(); t.ID != types.Unknown {
			args[i] = b.coerceParam(a, t)
			changed = true
		}
	}
	return changed
}

func funcName(n ast.ExprNode) string {
	switch f := n.(type) {
	case *ast.FuncCallExpr:
		return f.FnName.L
	case *ast.AggregateFuncExpr:
		return f.F
	}
	return "expression"
}

func (b *Binder) bindTrim(c *exprCtx, n *ast.FuncCallExpr) (expr.Expr, error) {
	name := "btrim"
	var args []expr.Expr
	for _, a := range n.Args {
		if d, ok := a.(*ast.TrimDirectionExpr); ok {
			switch d.Direction {
			case ast.TrimLeading:
				name = "ltrim"
			case ast.TrimTrailing:
				name = "rtrim"
			}
			continue
		}
		e, err := b.bindExpr(c, a)
		if err != nil {
			return nil, err
		}
		args = append(args, e)
	}
	return expr.Call(name, args)
}

// projectFields names computed output columns the way PostgreSQL does.
func columnName(f *ast.SelectField) string {
	if f.AsName.O != "" {
		return f.AsName.O
	}
	return deriveName(f.Expr)
}

func deriveName(n ast.ExprNode) string {
	name, _ := figureName(n)
	return name
}

// figureName is PostgreSQL's FigureColname: the name of an output column
// written without AS, and how strong it is: 2 for a column's or a function's
// name, 1 for a type's name or "case" (an enclosing cast's type overrides
// them: 'x'::timestamp::date is "date", CASE ... END::text "text"), 0 for
// none ("?column?", e.g. an operator).
func figureName(n ast.ExprNode) (string, int) {
	switch e := n.(type) {
	case *ast.ColumnNameExpr:
		return e.Name.Name.O, 2
	case *ast.ParenthesesExpr:
		return figureName(e.Expr)
	case *ast.RowExpr:
		return "row", 2
	case *ast.FuncCallExpr:
		switch e.FnName.L {
		case "pg__row":
			return "row", 2
		case "pg__cast":
			if inner, strength := figureName(e.Args[0]); strength > 1 {
				return inner, strength
			}
			if ts, ok := stringArg(e.Args[1]); ok {
				t, err := parseTypeString(ts)
				if err == nil {
					return pgTypeColumnName(t), 1
				}
			}
			return "?column?", 0
		case "pg__interval":
			return "interval", 1
		case "pg__field":
			if name, ok := stringArg(e.Args[1]); ok {
				return name, 2
			}
		case "pg__param":
			return "?column?", 0
		case "pg__filter", "pg__subscript", "pg__slice":
			return figureName(e.Args[0])
		case "pg__concat_op", "jsonb_get", "jsonb_get_text", "jsonb_exists", "jsonb_exists_any", "jsonb_exists_all",
			"pg__json_path", "pg__json_path_text", "pg__json_delete_path", "pg__similar", "pg__any", "pg__all", "pg__contains", "pg__contained", "pg__overlap",
			"pg__regexp_i", "pg__pow", "json_extract", "json_unquote", "concat":
			return "?column?", 0 // operators, as the parser reads them
		case "pg__array", "pg__array_sub":
			return "array", 2
		case "pg__regexp_match_group":
			return "regexp_match", 2 // (regexp_match(s, p))[n]
		case "pg__concat_fn":
			return "concat", 2
		case "trim":
			// PostgreSQL's grammar turns TRIM into btrim, ltrim or rtrim.
			for _, a := range e.Args {
				if d, ok := a.(*ast.TrimDirectionExpr); ok {
					switch d.Direction {
					case ast.TrimLeading:
						return "ltrim", 2
					case ast.TrimTrailing:
						return "rtrim", 2
					}
				}
			}
			return "btrim", 2
		}
		// pg__extract, pg__grouping, pg__div, pg__mod, pg__cardinality:
		// the function the parser renamed.
		return strings.TrimPrefix(e.FnName.L, "pg__"), 2
	case *ast.AggregateFuncExpr:
		if strings.EqualFold(e.F, "group_concat") {
			if f, ok := e.Args[0].(*ast.FuncCallExpr); ok && (f.FnName.L == "pg__first_value" || f.FnName.L == "pg__last_value" || f.FnName.L == "pg__array_agg" ||
				f.FnName.L == "pg__percentile_cont" || f.FnName.L == "pg__percentile_disc" || f.FnName.L == "pg__mode" || f.FnName.L == "pg__approx_percentile" || jsonAggNames[strings.TrimPrefix(f.FnName.L, "pg__")]) {
				return strings.TrimPrefix(f.FnName.L, "pg__"), 2 // first_value(x ORDER BY y), mode() WITHIN GROUP (...), jsonb_agg, as the parser rewrites them
			}
			return "string_agg", 2
		}
		return strings.ToLower(e.F), 2
	case *ast.WindowFuncExpr:
		return strings.ToLower(unwrapWindowArgs(e).Name), 2 // lag(x, n + 1), array_agg(x) as the parser rewrote them
	case *ast.CaseExpr:
		return "case", 1
	case *ast.ExistsSubqueryExpr:
		return "exists", 2
	case *ast.SubqueryExpr:
		if s, ok := e.Query.(*ast.SelectStmt); ok && s.Fields != nil && len(s.Fields.Fields) == 1 && s.Fields.Fields[0].WildCard == nil {
			if f := s.Fields.Fields[0]; f.AsName.O != "" {
				return f.AsName.O, 2
			}
			return figureName(s.Fields.Fields[0].Expr)
		}
	}
	return "?column?", 0
}

func pgTypeColumnName(t types.T) string {
	switch t.ID {
	case types.Array:
		return pgTypeColumnName(t.ElemType())
	case types.Int16:
		return "int2"
	case types.Int32:
		return "int4"
	case types.Int64:
		return "int8"
	case types.Float32:
		return "float4"
	case types.Float64:
		return "float8"
	case types.Bool:
		return "bool"
	case types.Varchar:
		if t.Width > 0 {
			return "varchar"
		}
		return "text"
	case types.Timestamptz:
		return "timestamptz"
	case types.Timestamp:
		return "timestamp"
	}
	return t.SQLName()
}

// fieldFor returns the output field for an expression bound over in.
func fieldFor(name string, e expr.Expr, in []plan.Field) plan.Field {
	f := plan.Field{Name: name, Type: e.Type()}
	if col, ok := e.(*expr.ColumnRef); ok {
		src := in[col.Index]
		f.Rel, f.Col, f.Hidden = src.Rel, src.Col, false
	}
	return f
}

// enter makes sc an enclosing scope while a subquery binds; the returned
// function leaves it.
func (b *Binder) enter(sc *scope) func() {
	b.outer = append(b.outer, sc)
	return func() { b.outer = b.outer[:len(b.outer)-1] }
}

// sqlValueFuncs are the functions SQL writes without parentheses that
// TiDB's grammar does not know as such (it reads them as column names).
var sqlValueFuncs = map[string]bool{"session_user": true, "current_role": true, "current_catalog": true, "current_schema": true}

// regLiteral resolves 'name'::regclass to the relation's oid and
// 'type'::regtype to the type's (ok false for other types), as PostgreSQL
// reads a reg* literal; the value is an oid (Tributary's reg* types are
// integers).
func (b *Binder) regLiteral(typ, lit string) (expr.Expr, bool, error) {
	switch typ {
	case "regclass":
		schema, name := "", strings.TrimSpace(lit)
		if i := strings.LastIndexByte(name, '.'); i > 0 && !strings.HasPrefix(name, "\"") {
			schema, name = name[:i], name[i+1:]
		}
		if strings.HasPrefix(name, "\"") && strings.HasSuffix(name, "\"") && len(name) >= 2 {
			name = strings.ReplaceAll(name[1:len(name)-1], "\"\"", "\"")
		} else {
			name = strings.ToLower(name)
		}
		if _, err := strconv.ParseInt(name, 10, 64); err == nil && schema == "" {
			return nil, false, nil // an oid as text: the integer cast
		}
		rel, err := b.cat.Lookup(schema, name)
		if err != nil {
			return nil, true, err
		}
		return expr.Literal(types.DInt(int64(rel.ID)), types.TInt32), true, nil
	case "regtype":
		if _, err := strconv.ParseInt(strings.TrimSpace(lit), 10, 64); err == nil {
			return nil, false, nil
		}
		t, err := parseTypeString(lit)
		if err != nil {
			return nil, true, err
		}
		return expr.Literal(types.DInt(int64(t.OID())), types.TInt32), true, nil
	}
	return nil, false, nil
}
