package bind

import (
	"errors"
	"fmt"
	"slices"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/parser"
	"github.com/tributary/tributary/sql/types"
)

// User functions (CREATE FUNCTION ... LANGUAGE SQL) are inlined: a call
// binds the function's body, one SELECT of an expression, with its
// arguments standing for the parameters ($n or their names). So a call
// costs nothing at run time and works in materialized views and sinks as in
// batch queries; the statement records the function (Functions) so DROP
// FUNCTION can refuse while a view uses it.

// maxFuncDepth bounds user function calls inlined inside each other: a
// function that calls itself stops here with 54001.
const maxFuncDepth = 64

// maxInlined bounds the user function calls one statement inlines (a body
// calling a function twice doubles them at each level).
const maxInlined = 10000

// fnFrame is one function body being bound: its arguments, bound in the
// caller's scope.
type fnFrame struct {
	f    *catalog.Function
	args []expr.Expr
}

// Functions returns the ids of the user functions the statement calls.
func (b *Binder) Functions() []uint32 { return b.funcs }

// userFunc binds a call of a user function, if name (with these argument
// types) is one; ok is false when it is not, so built-in functions are
// tried.
func (b *Binder) userFunc(n *ast.FuncCallExpr, args []expr.Expr) (e expr.Expr, ok bool, err error) {
	fr, isFR := b.cat.(catalog.FunctionReader)
	if !isFR {
		return nil, false, nil
	}
	cands := fr.FunctionsNamed(n.Schema.L, n.FnName.L)
	if p := b.pendingFn; p != nil && p.Name == n.FnName.L && (n.Schema.L == "" || n.Schema.L == p.Schema) {
		cands = slices.DeleteFunc(slices.Clone(cands), func(g *catalog.Function) bool { return g.ID == p.ID })
		cands = append([]*catalog.Function{p}, cands...)
	}
	f := pickFunction(cands, args)
	if f == nil {
		return nil, false, nil
	}
	e, err = b.inline(f, args)
	return e, true, err
}

// pickFunction chooses the overload of cands args call: the one taking
// exactly their types, else the first they convert to implicitly.
func pickFunction(cands []*catalog.Function, args []expr.Expr) *catalog.Function {
	var implicit *catalog.Function
	for _, f := range cands {
		if len(f.ArgTypes) != len(args) {
			continue
		}
		exact, fits := true, true
		for i, a := range args {
			t := a.Type()
			switch {
			case t.ID == types.Unknown:
				exact = false
			case t.Base() == f.ArgTypes[i].Base():
			case expr.CanCoerce(t, f.ArgTypes[i]):
				exact = false
			default:
				fits = false
			}
		}
		if exact && fits {
			return f
		}
		if fits && implicit == nil {
			implicit = f
		}
	}
	return implicit
}

// FunctionBody parses a function's body and returns its one expression:
// the body must be one SELECT of one expression without FROM, WHERE,
// GROUP BY, ORDER BY or LIMIT (what Tributary inlines).
func FunctionBody(body string) (ast.ExprNode, error) {
	stmts, err := parser.Parse(body)
	if err != nil {
		return nil, err
	}
	if len(stmts) != 1 {
		return nil, types.Errorf(types.ErrUnsupported, "a function body of %d statements is not supported (only one SELECT of an expression)", len(stmts))
	}
	q, ok := stmts[0].(*parser.Query)
	var sel *ast.SelectStmt
	if ok {
		sel, ok = q.Node.(*ast.SelectStmt)
	}
	if !ok || sel.From != nil || sel.Where != nil || sel.GroupBy != nil || sel.Having != nil || sel.OrderBy != nil ||
		sel.Limit != nil || sel.Distinct || sel.With != nil || sel.Fields == nil || len(sel.Fields.Fields) != 1 || sel.Fields.Fields[0].WildCard != nil ||
		len(q.TableFuncs) > 0 {
		return nil, types.Errorf(types.ErrUnsupported, "only a function whose body is one SELECT of an expression (no FROM, WHERE, GROUP BY, ORDER BY or LIMIT) is supported")
	}
	return sel.Fields.Fields[0].Expr, nil
}

// inline binds f's body over args.
func (b *Binder) inline(f *catalog.Function, args []expr.Expr) (expr.Expr, error) {
	if len(b.fnStack) >= maxFuncDepth {
		return nil, types.StackDepthError(maxFuncDepth, "user function calls (a function calling itself?)")
	}
	if b.inlined++; b.inlined > maxInlined {
		return nil, types.StackDepthError(maxInlined, "user function calls in one statement")
	}
	body, err := FunctionBody(f.Body)
	if err != nil {
		return nil, err
	}
	conv := make([]expr.Expr, len(args))
	for i, a := range args {
		t := f.ArgTypes[i]
		if a.Type().ID == types.Unknown {
			if _, isParam := a.(*expr.ParamRef); isParam {
				conv[i] = b.coerceParam(a, t)
				continue
			}
		}
		if conv[i], err = expr.ImplicitCast(a, t); err != nil {
			return nil, err
		}
	}
	if f == b.pendingFn {
		// The function being created calls itself: checked as a call of
		// its type (a call inlines it until maxFuncDepth).
		return &placeholder{typ: f.Returns}, nil
	}
	if !slices.Contains(b.funcs, f.ID) {
		b.funcs = append(b.funcs, f.ID)
	}
	e, err := b.bindFunctionBody(f, body, conv)
	if err != nil {
		return nil, err
	}
	if f.Strict && len(conv) > 0 {
		var conds []expr.Expr
		for _, a := range conv {
			if _, isConst := a.(*expr.Const); isConst && !a.(*expr.Const).Value.Null {
				continue
			}
			c, err := expr.Call("is_null", []expr.Expr{a})
			if err != nil {
				return nil, err
			}
			conds = append(conds, c)
		}
		if len(conds) > 0 {
			any := conds[0]
			for _, c := range conds[1:] {
				if any, err = expr.Call("or", []expr.Expr{any, c}); err != nil {
					return nil, err
				}
			}
			return expr.Case(nil, []expr.Expr{any}, []expr.Expr{expr.Literal(types.NullDatum, f.Returns)}, e)
		}
	}
	return e, nil
}

// bindFunctionBody binds body, the expression of f, with args for its
// parameters, and converts it to f's return type. The body sees only its
// parameters: not the caller's columns.
func (b *Binder) bindFunctionBody(f *catalog.Function, body ast.ExprNode, args []expr.Expr) (expr.Expr, error) {
	outer, applyLeft := b.outer, b.applyLeft
	b.outer, b.applyLeft = nil, nil
	b.fnStack = append(b.fnStack, &fnFrame{f: f, args: args})
	defer func() {
		b.outer, b.applyLeft = outer, applyLeft
		b.fnStack = b.fnStack[:len(b.fnStack)-1]
	}()
	c := &exprCtx{scope: &scope{}, clause: "a function body", fn: b.fnStack[len(b.fnStack)-1]}
	e, err := b.bindExpr(c, body)
	if err != nil {
		return nil, err
	}
	return returnCast(f, e)
}

// returnCast converts a function body's value to the declared return type,
// or fails with PostgreSQL's 42P13.
func returnCast(f *catalog.Function, e expr.Expr) (expr.Expr, error) {
	if e.Type().ID == types.Unknown {
		return expr.Cast(e, f.Returns)
	}
	if e.Type() == f.Returns {
		return e, nil
	}
	if expr.CanCoerce(e.Type(), f.Returns) || e.Type().Base() == f.Returns.Base() {
		return expr.ImplicitCast(e, f.Returns)
	}
	c, err := expr.ImplicitCast(e, f.Returns)
	if err == nil && e.Type().ID != types.Varchar && f.Returns.ID != types.Varchar {
		return c, nil // assignment casts (numeric narrowing), as PostgreSQL allows
	}
	if err != nil && !errors.Is(err, types.ErrDatatypeMismatch) && !errors.Is(err, types.ErrCannotCoerce) {
		return nil, err
	}
	return nil, &types.Error{Kind: types.ErrInvalidFunctionDef,
		Msg:    fmt.Sprintf("return type mismatch in function declared to return %s", f.Returns),
		Detail: fmt.Sprintf("Actual return type is %s.", e.Type())}
}

// fnArg resolves a parameter name of the function body being bound.
func (c *exprCtx) fnArg(table, name string) (expr.Expr, bool) {
	if c.fn == nil || (table != "" && table != c.fn.f.Name) {
		return nil, false
	}
	for i, n := range c.fn.f.ArgNames {
		if n != "" && n == name {
			return c.fn.args[i], true
		}
	}
	return nil, false
}

// fnParam resolves $k in the function body being bound.
func (c *exprCtx) fnParam(k int) (expr.Expr, error) {
	if k < 1 || k > len(c.fn.args) {
		return nil, types.Errorf(types.ErrUndefinedParameter, "there is no parameter $%d", k)
	}
	return c.fn.args[k-1], nil
}

// CheckFunction binds f's body over NULLs of its argument types, as
// CREATE FUNCTION validates a body: its names and its type.
func (b *Binder) CheckFunction(f *catalog.Function) error {
	body, err := FunctionBody(f.Body)
	if err != nil {
		return err
	}
	args := make([]expr.Expr, len(f.ArgTypes))
	for i, t := range f.ArgTypes {
		args[i] = &placeholder{typ: t}
	}
	b.pendingFn = f
	defer func() { b.pendingFn = nil }()
	_, err = b.bindFunctionBody(f, body, args)
	return err
}

// placeholder stands for an argument while CREATE FUNCTION checks a body:
// typed and never constant, so nothing is folded.
type placeholder struct{ typ types.T }

func (p *placeholder) Type() types.T  { return p.typ }
func (p *placeholder) String() string { return "$arg" }
func (p *placeholder) Eval(ctx *expr.Ctx, in *types.Chunk, out *types.Vector) error {
	for i := 0; i < in.Len(); i++ {
		out.AppendNull()
	}
	return nil
}
func (p *placeholder) EvalRow(ctx *expr.Ctx, row []types.Datum) (types.Datum, error) {
	return types.NullDatum, nil
}

// argTypes are the types of a call's arguments, for messages.
func argTypes(args []expr.Expr) []types.T {
	ts := make([]types.T, len(args))
	for i, a := range args {
		ts[i] = a.Type()
	}
	return ts
}
