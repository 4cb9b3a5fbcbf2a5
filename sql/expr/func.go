package expr

import (
	"strings"

	"github.com/tributary/tributary/sql/types"
)

// Volatility says when a function's result may change for the same arguments.
type Volatility uint8

// Volatilities, as PostgreSQL's provolatile.
const (
	Immutable Volatility = iota // same result forever: foldable
	Stable                      // same result within a statement (now(), current_user)
	Volatile                    // may change per row (random())
)

// rowFn computes one result from argument values (already cast to the
// overload's parameter types). Strict functions never see a NULL argument.
type rowFn func(ctx *Ctx, args []types.Datum) (types.Datum, error)

// vecFn computes n results into out from argument vectors. It handles NULLs itself.
type vecFn func(ctx *Ctx, args []vecArg, n int, out *types.Vector) error

// lazyFn evaluates a non-strict, short-circuiting function (AND, OR, COALESCE)
// on one row, evaluating argument expressions only as needed.
type lazyFn func(ctx *Ctx, args []Expr, row []types.Datum) (types.Datum, error)

// FuncExpr is a resolved operator or function call. Args are already coerced
// to the chosen overload's parameter types.
type FuncExpr struct {
	Name       string // registry name, e.g. "+", "upper", "is_null"
	Args       []Expr
	Ret        types.T
	Volatility Volatility

	row    rowFn
	vec    vecFn
	lazy   lazyFn
	strict bool
	depth  int // levels of the tree rooted here (argDepth of Args)
}

func (f *FuncExpr) Type() types.T { return f.Ret }

func (f *FuncExpr) String() string {
	as := make([]string, len(f.Args))
	for i, a := range f.Args {
		as[i] = a.String()
	}
	return display(f.Name, as)
}

// display renders a call as SQL-ish text.
func display(name string, as []string) string {
	if sym, ok := infixOps[name]; ok && len(as) == 2 {
		return "(" + as[0] + " " + sym + " " + as[1] + ")"
	}
	if q, ok := strings.CutSuffix(name, " ANY"); ok && len(as) == 2 {
		return "(" + as[0] + " " + q + " ANY (" + as[1] + "))"
	}
	if q, ok := strings.CutSuffix(name, " ALL"); ok && len(as) == 2 {
		return "(" + as[0] + " " + q + " ALL (" + as[1] + "))"
	}
	switch name {
	case "pg__array":
		return "ARRAY[" + strings.Join(as, ", ") + "]"
	case "pg__subscript":
		return as[0] + "[" + as[1] + "]"
	case "pg__slice":
		return as[0] + "[" + as[1] + ":" + as[2] + "]"
	case "neg":
		return "(-" + as[0] + ")"
	case "bitnot":
		return "(~" + as[0] + ")"
	case "not":
		return "(NOT " + as[0] + ")"
	case "and", "or":
		return "(" + strings.Join(as, " "+strings.ToUpper(name)+" ") + ")"
	case "is_null", "is_not_null", "is_true", "is_false", "is_not_true", "is_not_false":
		return "(" + as[0] + " " + strings.ToUpper(strings.ReplaceAll(name, "_", " ")) + ")"
	case "in":
		return "(" + as[0] + " IN (" + strings.Join(as[1:], ", ") + "))"
	case "between":
		return "(" + as[0] + " BETWEEN " + as[1] + " AND " + as[2] + ")"
	case "extract":
		return "extract(" + strings.Trim(as[0], "'") + " FROM " + as[1] + ")"
	case "current_timestamp", "current_date", "localtimestamp", "current_user", "session_user", "current_schema":
		if len(as) == 0 {
			return name
		}
	}
	return name + "(" + strings.Join(as, ", ") + ")"
}

// infixOps maps binary operator names to the symbol printed (and used in errors).
var infixOps = map[string]string{
	"+": "+", "-": "-", "*": "*", "/": "/", "%": "%", "^": "^", "=": "=", "<>": "<>", "<": "<", "<=": "<=",
	">": ">", ">=": ">=", "<=>": "IS NOT DISTINCT FROM", "||": "||", "like": "LIKE", "ilike": "ILIKE",
	"not_like": "NOT LIKE", "not_ilike": "NOT ILIKE", "regexp": "~", "regexp_i": "~*",
	"not_regexp": "!~", "not_regexp_i": "!~*", "->": "->", "->>": "->>", "jsonb_get": "->", "jsonb_get_text": "->>",
	"&": "&", "|": "|", "#": "#", "<<": "<<", ">>": ">>",
}

// errOpSymbols are the PostgreSQL operator spellings used in "operator does not exist" errors.
var errOpSymbols = map[string]string{
	"like": "~~", "ilike": "~~*", "not_like": "!~~", "not_ilike": "!~~*", "regexp": "~", "regexp_i": "~*",
	"not_regexp": "!~", "not_regexp_i": "!~*", "<=>": "IS NOT DISTINCT FROM", "neg": "-", "bitnot": "~",
}

func (f *FuncExpr) Eval(ctx *Ctx, in *types.Chunk, out *types.Vector) error {
	ctx = orNew(ctx)
	n := in.Len()
	if n == 0 {
		return nil
	}
	var buf [4]vecArg
	args := buf[:0]
	release := func() {
		for i := range args {
			args[i].release(ctx)
		}
	}
	for _, a := range f.Args {
		va, err := evalArg(ctx, a, in)
		if err != nil {
			release()
			if f.lazy != nil {
				// An argument failed on some row; evaluate row by row so that
				// short-circuiting hides errors in rows that do not need the argument.
				return evalRows(ctx, f, in, out)
			}
			return err
		}
		args = append(args, va)
	}
	defer release()
	if f.vec != nil {
		return f.vec(ctx, args, n, out)
	}
	if f.row == nil {
		return evalRows(ctx, f, in, out)
	}
	d := ctx.getDatums(len(args))
	defer ctx.putDatums(d)
	for i := 0; i < n; i++ {
		null := false
		for j := range args {
			args[j].v.GetInto(args[j].idx(i), &d[j])
			null = null || d[j].Null
		}
		if null && f.strict {
			out.AppendNull()
			continue
		}
		r, err := f.row(ctx, d)
		if err != nil {
			return err
		}
		out.Append(&r)
	}
	return nil
}

// evalRows evaluates e row by row via EvalRow.
func evalRows(ctx *Ctx, e Expr, in *types.Chunk, out *types.Vector) error {
	row := ctx.getDatums(len(in.Cols))
	defer ctx.putDatums(row)
	for i, n := 0, in.Len(); i < n; i++ {
		row = in.Row(i, row)
		d, err := e.EvalRow(ctx, row)
		if err != nil {
			return err
		}
		out.Append(&d)
	}
	return nil
}

func (f *FuncExpr) EvalRow(ctx *Ctx, row []types.Datum) (types.Datum, error) {
	if f.lazy != nil {
		return f.lazy(ctx, f.Args, row)
	}
	args := make([]types.Datum, len(f.Args))
	null := false
	for i, a := range f.Args {
		d, err := a.EvalRow(ctx, row)
		if err != nil {
			return types.NullDatum, err
		}
		args[i] = d
		null = null || d.Null
	}
	if null && f.strict {
		return types.NullDatum, nil
	}
	if f.row != nil {
		return f.row(orNew(ctx), args)
	}
	// Vector-only function: run it on a one-row chunk.
	vs := make([]vecArg, len(args))
	for i := range args {
		v := types.NewVector(f.Args[i].Type(), 1)
		v.Append(&args[i])
		vs[i] = vecArg{v: v}
	}
	out := types.NewVector(f.Ret, 1)
	if err := f.vec(orNew(ctx), vs, 1, out); err != nil {
		return types.NullDatum, err
	}
	return out.Get(0), nil
}

// overload is one registered signature of a function or operator.
type overload struct {
	params    []types.T
	variadic  bool // the last parameter repeats (zero or more times)
	ret       types.T
	retFn     func(args []types.T) types.T
	row       rowFn
	vec       vecFn
	lazy      lazyFn
	nonStrict bool
	vol       Volatility
}

var registry = map[string][]*overload{}

// special resolvers handle polymorphic functions (comparisons, IN, COALESCE, ...).
var specials = map[string]func(name string, args []Expr) (Expr, error){}

// def registers an overload under one or more space-separated names.
func def(names string, ret types.T, params ...types.T) *overload {
	o := &overload{params: params, ret: ret}
	for _, n := range strings.Fields(names) {
		registry[n] = append(registry[n], o)
	}
	return o
}

func (o *overload) r(f rowFn) *overload         { o.row = f; return o }
func (o *overload) v(f vecFn) *overload         { o.vec = f; return o }
func (o *overload) vol_(v Volatility) *overload { o.vol = v; return o }
func (o *overload) variadic_() *overload        { o.variadic = true; return o }

// Call resolves an operator or function by name and argument types, choosing
// an overload with PostgreSQL-like implicit casts, and returns the call with
// its arguments coerced. An unknown name or no matching overload gives a
// *types.Error of kind ErrUndefinedFunction.
func Call(name string, args []Expr) (Expr, error) {
	if argDepth(args) > types.MaxExprDepth {
		return nil, types.StackDepthError(types.MaxExprDepth, "expressions")
	}
	lname := strings.ToLower(name)
	if sp, ok := specials[lname]; ok {
		return sp(lname, args)
	}
	ovs := registry[lname]
	ts := exprTypes(args)
	o := resolve(ovs, ts)
	if o == nil {
		return nil, noFunction(lname, ts)
	}
	return bind(lname, o, args)
}

func exprTypes(args []Expr) []types.T {
	ts := make([]types.T, len(args))
	for i, a := range args {
		ts[i] = a.Type()
	}
	return ts
}

// bind coerces args to o's parameters and builds the FuncExpr.
func bind(name string, o *overload, args []Expr) (Expr, error) {
	cargs := make([]Expr, len(args))
	ts := make([]types.T, len(args))
	for i, a := range args {
		p := o.param(i)
		c, err := coerce(a, p)
		if err != nil {
			return nil, err
		}
		cargs[i] = c
		ts[i] = c.Type()
	}
	ret := o.ret
	if o.retFn != nil {
		ret = o.retFn(ts)
	}
	return &FuncExpr{Name: name, Args: cargs, depth: argDepth(cargs), Ret: ret, Volatility: o.vol, row: o.row, vec: o.vec,
		lazy: o.lazy, strict: !o.nonStrict}, nil
}

func (o *overload) param(i int) types.T {
	if i >= len(o.params) {
		return o.params[len(o.params)-1]
	}
	return o.params[i]
}

// coerce implicitly casts e to p's family (keeping e's modifiers when the
// family already matches).
func coerce(e Expr, p types.T) (Expr, error) {
	if e.Type().ID == p.ID && e.Type().Elem == p.Elem {
		return e, nil
	}
	return castExpr(e, p, castImplicit)
}

func noFunction(name string, ts []types.T) error {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.Base().String()
	}
	if sym, ok := errOpSymbols[name]; ok || infixOps[name] != "" {
		if !ok {
			sym = infixOps[name]
		}
		var msg string
		switch len(ts) {
		case 1:
			msg = "operator does not exist: " + sym + " " + names[0]
		case 2:
			msg = "operator does not exist: " + names[0] + " " + sym + " " + names[1]
		default:
			msg = "operator does not exist: " + sym + "(" + strings.Join(names, ", ") + ")"
		}
		return &types.Error{Kind: types.ErrUndefinedFunction, Msg: msg,
			Hint: "No operator matches the given name and argument types. You might need to add explicit type casts."}
	}
	return &types.Error{Kind: types.ErrUndefinedFunction, Msg: "function " + name + "(" + strings.Join(names, ", ") + ") does not exist",
		Hint: "No function matches the given name and argument types. You might need to add explicit type casts."}
}

// resolve picks the best overload for argument types ts, or nil.
func resolve(ovs []*overload, ts []types.T) *overload {
	// Exact match; for binary operators an unknown argument first assumes the other's type.
	for _, o := range ovs {
		if arityOK(o, len(ts)) && exact(o, ts, true) {
			return o
		}
	}
	var best *overload
	var bestScore [3]int
	for _, o := range ovs {
		if !arityOK(o, len(ts)) {
			continue
		}
		score, ok := matchScore(o, ts)
		if !ok {
			continue
		}
		if best == nil || better(score, bestScore) {
			best, bestScore = o, score
		}
	}
	return best
}

func better(a, b [3]int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] > b[i]
		}
	}
	return false
}

func arityOK(o *overload, n int) bool {
	if o.variadic {
		return n >= len(o.params)-1
	}
	return n == len(o.params)
}

func exact(o *overload, ts []types.T, unknownAdopts bool) bool {
	for i, t := range ts {
		p := o.param(i).ID
		if t.ID == p {
			continue
		}
		if t.ID == types.Unknown && unknownAdopts && len(ts) == 2 && ts[1-i].ID == p {
			continue
		}
		return false
	}
	return true
}

// matchScore rates how well ts fits o: (exact matches, preferred types at
// coerced positions, string-accepting unknown positions); ok is false when
// some argument cannot be implicitly cast.
func matchScore(o *overload, ts []types.T) (score [3]int, ok bool) {
	for i, t := range ts {
		p := o.param(i).ID
		switch {
		case t.ID == p:
			score[0]++
		case t.ID == types.Unknown:
			if p == types.Varchar {
				score[2]++
			}
			if isPreferred(p) {
				score[1]++
			}
		case implicitCastable(t.ID, p):
			if isPreferred(p) {
				score[1]++
			}
		default:
			return score, false
		}
	}
	return score, true
}

// category groups types as PostgreSQL's typcategory does.
func category(id types.ID) byte {
	switch id {
	case types.Int16, types.Int32, types.Int64, types.Float32, types.Float64, types.Numeric:
		return 'N'
	case types.Varchar:
		return 'S'
	case types.Date, types.Time, types.Timestamp, types.Timestamptz:
		return 'D'
	case types.Interval:
		return 'T'
	case types.Bool:
		return 'B'
	case types.Unknown:
		return 'X'
	}
	return 'U'
}

func isPreferred(id types.ID) bool {
	switch id {
	case types.Float64, types.Varchar, types.Timestamptz, types.Interval, types.Bool:
		return true
	}
	return false
}

// numRank orders the numeric family by implicit-cast direction.
func numRank(id types.ID) int {
	switch id {
	case types.Int16:
		return 1
	case types.Int32:
		return 2
	case types.Int64:
		return 3
	case types.Numeric:
		return 4
	case types.Float32:
		return 5
	case types.Float64:
		return 6
	}
	return 0
}

// implicitCastable reports whether PostgreSQL casts from → to implicitly.
func implicitCastable(from, to types.ID) bool {
	if from == to || from == types.Unknown {
		return true
	}
	if a, b := numRank(from), numRank(to); a > 0 && b > 0 {
		return a < b
	}
	switch from {
	case types.Date:
		return to == types.Timestamp || to == types.Timestamptz
	case types.Timestamp:
		return to == types.Timestamptz
	case types.Time:
		return to == types.Interval
	}
	return false
}

// CommonType resolves the result type of UNION, CASE, COALESCE, VALUES and
// friends from the branch types, as PostgreSQL's select_common_type: unknowns
// adopt the others' type (text when all are unknown); the others must share a
// category and the one every other casts to implicitly wins. Mismatches give
// ErrDatatypeMismatch.
func CommonType(ts []types.T) (types.T, error) {
	var res types.T
	found := false
	sameMods := true
	for _, t := range ts {
		if t.ID == types.Unknown {
			continue
		}
		if !found {
			res, found = t, true
			continue
		}
		if t.ID == res.ID && t.ID == types.Struct && t.Fields != res.Fields {
			st, err := commonStruct(res, t)
			if err != nil {
				return types.TUnknown, err
			}
			res = st
			continue
		}
		if t.ID == res.ID && t.ID == types.Array && t.Elem != res.Elem {
			e, err := CommonType([]types.T{res.ElemType(), t.ElemType()})
			if err != nil {
				return types.TUnknown, types.Errorf(types.ErrDatatypeMismatch, "types %s and %s cannot be matched", res.Base(), t.Base())
			}
			res, sameMods = types.ArrayOf(e), false
			continue
		}
		if t.ID == res.ID {
			if t != res {
				sameMods = false
			}
			continue
		}
		sameMods = false
		if category(t.ID) != category(res.ID) {
			return types.TUnknown, types.Errorf(types.ErrDatatypeMismatch, "types %s and %s cannot be matched", res.Base(), t.Base())
		}
		switch {
		case implicitCastable(res.ID, t.ID):
			res = t
		case implicitCastable(t.ID, res.ID):
		default:
			return types.TUnknown, types.Errorf(types.ErrDatatypeMismatch, "types %s and %s cannot be matched", res.Base(), t.Base())
		}
	}
	if !found {
		return types.TVarchar, nil
	}
	if !sameMods {
		return res.Base(), nil
	}
	return res, nil
}

// coerceAll casts every expression to t (implicitly).
func coerceAll(args []Expr, t types.T) ([]Expr, error) {
	out := make([]Expr, len(args))
	for i, a := range args {
		c, err := coerce(a, t)
		if err != nil {
			return nil, err
		}
		out[i] = c
	}
	return out, nil
}
