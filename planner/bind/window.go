package bind

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
)

// winBinding collects window functions while the select list is bound and
// builds the Window node over the current input.
type winBinding struct {
	dry   bool
	input plan.Node
	defs  []ast.WindowSpec // the WINDOW clause
	pre   []expr.Expr      // extra columns (partition/order keys, args) appended to the input
	funcs []plan.WindowFunc
	strs  []string
}

// spec resolves a function's OVER clause against the WINDOW clause as
// PostgreSQL does: OVER w is w itself; OVER (w ...) copies w's partitioning
// and adds an ORDER BY (if w has none) and a frame (w must have none).
func (w *winBinding) spec(s ast.WindowSpec, depth int) (ast.WindowSpec, plan.Exclusion, error) {
	if depth > len(w.defs)+1 {
		return s, 0, types.Errorf(types.ErrWindowing, "window definitions refer to each other in a cycle")
	}
	lookup := func(name ast.CIStr) (ast.WindowSpec, plan.Exclusion, error) {
		for _, d := range w.defs {
			if d.Name.L == name.L {
				d.Name = ast.CIStr{}
				return w.spec(d, depth+1)
			}
		}
		return ast.WindowSpec{}, 0, types.Errorf(types.ErrUndefinedObject, "window \"%s\" does not exist", name.O)
	}
	if s.OnlyAlias {
		return lookup(s.Name)
	}
	s, ex := splitExclude(s)
	if s.Ref.L == "" {
		return s, ex, nil
	}
	ref, _, err := lookup(s.Ref)
	if err != nil {
		return s, 0, err
	}
	if s.PartitionBy != nil {
		return s, 0, types.Errorf(types.ErrWindowing, "cannot override PARTITION BY clause of window \"%s\"", s.Ref.O)
	}
	if s.OrderBy != nil && ref.OrderBy != nil {
		return s, 0, types.Errorf(types.ErrWindowing, "cannot override ORDER BY clause of window \"%s\"", s.Ref.O)
	}
	if ref.Frame != nil {
		return s, 0, types.Errorf(types.ErrWindowing, "cannot copy window \"%s\" because it has a frame clause", s.Ref.O)
	}
	out := ast.WindowSpec{PartitionBy: ref.PartitionBy, OrderBy: ref.OrderBy, Frame: s.Frame}
	if s.OrderBy != nil {
		out.OrderBy = s.OrderBy
	}
	return out, ex, nil
}

// splitExclude takes the parser's pg__exclude('...') marker (a frame's
// EXCLUDE clause) out of a window's PARTITION BY.
func splitExclude(s ast.WindowSpec) (ast.WindowSpec, plan.Exclusion) {
	if s.PartitionBy == nil {
		return s, plan.ExcludeNoOthers
	}
	items := s.PartitionBy.Items
	last, ok := items[len(items)-1].Expr.(*ast.FuncCallExpr)
	if !ok || last.FnName.L != "pg__exclude" || len(last.Args) != 1 {
		return s, plan.ExcludeNoOthers
	}
	v, ok := last.Args[0].(ast.ValueExpr)
	if !ok {
		return s, plan.ExcludeNoOthers
	}
	ex := plan.ExcludeNoOthers
	switch fmt.Sprint(v.GetValue()) {
	case "current row":
		ex = plan.ExcludeCurrentRow
	case "group":
		ex = plan.ExcludeGroup
	case "ties":
		ex = plan.ExcludeTies
	}
	if len(items) == 1 {
		s.PartitionBy = nil
	} else {
		s.PartitionBy = &ast.PartitionByClause{Items: items[:len(items)-1]}
	}
	return s, ex
}

func (w *winBinding) window(b *Binder, c *exprCtx, n *ast.WindowFuncExpr) (expr.Expr, error) {
	n = unwrapWindowArgs(n)
	if w.dry {
		// The aggregation's dry run: register the aggregates the window's
		// arguments, partitioning and order use (sum(sum(x)) OVER ...).
		return expr.Literal(types.NullDatum, types.TInt64), w.dryRun(b, c, n)
	}
	name := strings.ToLower(n.Name)
	if n.IgnoreNull {
		return nil, types.Errorf(types.ErrUnsupported, "IGNORE NULLS is not supported for window function %s", name)
	}
	if n.FromLast {
		return nil, types.Errorf(types.ErrUnsupported, "FROM LAST is not supported for window function %s", name)
	}
	spec, exclude, err := w.spec(n.Spec, 0)
	if err != nil {
		return nil, err
	}
	inner := &exprCtx{scope: c.scope, agg: c.agg, clause: "window definitions"}
	base := len(w.input.Schema())
	col := func(e expr.Expr) int {
		if cr, ok := e.(*expr.ColumnRef); ok {
			return cr.Index
		}
		s := e.String()
		for i, p := range w.pre {
			if p.String() == s {
				return base + i
			}
		}
		w.pre = append(w.pre, e)
		return base + len(w.pre) - 1
	}
	f := plan.WindowFunc{Name: name}
	key := f.Name
	if spec.PartitionBy != nil {
		for _, it := range spec.PartitionBy.Items {
			e, err := b.bindExpr(inner, it.Expr)
			if err != nil {
				return nil, err
			}
			f.PartitionBy = append(f.PartitionBy, col(e))
			key += "|p" + e.String()
		}
	}
	var orderTypes []types.T
	if spec.OrderBy != nil {
		for _, it := range spec.OrderBy.Items {
			ex, nullsFirst, hasNulls := unwrapNulls(it.Expr)
			e, err := b.bindExpr(inner, ex)
			if err != nil {
				return nil, err
			}
			k := plan.SortKey{Col: col(e), Desc: it.Desc, NullsFirst: it.Desc}
			if hasNulls {
				k.NullsFirst = nullsFirst
			}
			f.OrderBy = append(f.OrderBy, k)
			orderTypes = append(orderTypes, e.Type())
			key += "|o" + e.String() + boolStr(it.Desc) + boolStr(k.NullsFirst)
		}
	}
	// Arguments, cast to the types the function takes.
	args := make([]expr.Expr, 0, len(n.Args))
	for _, an := range n.Args {
		if f.Name == "count" && len(n.Args) == 1 && isCountStar(an) {
			break
		}
		e, err := b.bindExpr(inner, an)
		if err != nil {
			return nil, err
		}
		args = append(args, e)
	}
	noFunc := func() error {
		ts := make([]string, len(args))
		for i, a := range args {
			ts[i] = a.Type().String()
		}
		return types.Errorf(types.ErrUndefinedFunction, "function %s(%s) does not exist", f.Name, strings.Join(ts, ", "))
	}
	toInt := func(i int) error {
		e, err := expr.ImplicitCast(args[i], types.TInt32)
		if err != nil || !args[i].Type().IsInteger() && args[i].Type().ID != types.Unknown {
			return noFunc()
		}
		args[i] = e
		return nil
	}
	switch f.Name {
	case "row_number", "rank", "dense_rank", "percent_rank", "cume_dist":
		if len(args) != 0 {
			return nil, noFunc()
		}
		f.Type = types.TInt64
		if f.Name == "percent_rank" || f.Name == "cume_dist" {
			f.Type = types.TFloat64
		}
	case "ntile":
		if len(args) != 1 || toInt(0) != nil {
			return nil, noFunc()
		}
		f.Type = types.TInt32
	case "lag", "lead":
		if len(args) < 1 || len(args) > 3 || (len(args) > 1 && toInt(1) != nil) {
			return nil, noFunc()
		}
		t := args[0].Type()
		if len(args) == 3 {
			if t, err = expr.CommonType([]types.T{t, args[2].Type()}); err != nil {
				return nil, noFunc()
			}
			for _, i := range []int{0, 2} {
				if args[i].Type().ID != t.ID {
					if args[i], err = expr.ImplicitCast(args[i], t); err != nil {
						return nil, noFunc()
					}
				}
			}
		} else if t.ID == types.Unknown {
			t = types.TVarchar
			args[0], _ = expr.ImplicitCast(args[0], t)
		}
		f.Type = t
	case "first_value", "last_value", "nth_value":
		if (f.Name == "nth_value") != (len(args) == 2) || len(args) == 0 || len(args) > 2 {
			return nil, noFunc()
		}
		if len(args) == 2 && toInt(1) != nil {
			return nil, noFunc()
		}
		f.Type = args[0].Type()
	default:
		if n.Distinct {
			return nil, types.Errorf(types.ErrUnsupported, "DISTINCT is not implemented for window functions")
		}
		argTypes := make([]types.T, len(args))
		for i, a := range args {
			argTypes[i] = a.Type()
		}
		agg, err := expr.LookupAgg(f.Name, argTypes, false)
		if err != nil {
			return nil, types.Errorf(types.ErrUndefinedFunction, "window function %s does not exist or is not supported: %v", f.Name, err)
		}
		for i, t := range agg.Args {
			if args[i].Type().ID != t.ID {
				if args[i], err = expr.ImplicitCast(args[i], t); err != nil {
					return nil, err
				}
			}
		}
		f.Agg = agg
		f.Type = agg.Result
	}
	for _, a := range args {
		f.Args = append(f.Args, col(a))
		key += "|a" + a.String()
	}
	f.Frame, err = b.frame(inner, spec.Frame, f.OrderBy, orderTypes)
	if err != nil {
		return nil, err
	}
	f.Frame.Exclude = exclude
	if f.UsesFrame() {
		key += "|f" + f.Frame.String()
	}
	for i, s := range w.strs {
		if s == key {
			return &winRef{w: w, i: i}, nil
		}
	}
	w.funcs = append(w.funcs, f)
	w.strs = append(w.strs, key)
	// The Window node's output: input, pre columns, then functions. Pre columns may
	// still grow, so column numbers are fixed up in finish.
	return &winRef{w: w, i: len(w.funcs) - 1}, nil
}

// unwrapWindowArgs undoes the parser's max(pg__lag(...)) OVER form of a
// window function whose offset is an expression, and of array_agg(x) OVER
// (a window function TiDB's grammar lacks).
func unwrapWindowArgs(n *ast.WindowFuncExpr) *ast.WindowFuncExpr {
	if !strings.EqualFold(n.Name, "max") || len(n.Args) != 1 || n.Distinct {
		return n
	}
	call, ok := n.Args[0].(*ast.FuncCallExpr)
	if !ok {
		return n
	}
	name, ok := strings.CutPrefix(call.FnName.L, "pg__")
	if !ok || (name != "lag" && name != "lead" && name != "nth_value" && name != "ntile" && name != "array_agg") {
		return n
	}
	out := *n
	out.Name, out.Args = name, call.Args
	return &out
}

func (w *winBinding) dryRun(b *Binder, c *exprCtx, n *ast.WindowFuncExpr) error {
	spec, _, err := w.spec(n.Spec, 0)
	if err != nil {
		return err
	}
	inner := &exprCtx{scope: c.scope, agg: c.agg, clause: "window definitions"}
	nodes := slices.Clone(n.Args)
	if spec.PartitionBy != nil {
		for _, it := range spec.PartitionBy.Items {
			nodes = append(nodes, it.Expr)
		}
	}
	if spec.OrderBy != nil {
		for _, it := range spec.OrderBy.Items {
			e, _, _ := unwrapNulls(it.Expr)
			nodes = append(nodes, e)
		}
	}
	for i, an := range nodes {
		if i == 0 && strings.EqualFold(n.Name, "count") && len(n.Args) == 1 && isCountStar(an) {
			continue
		}
		if _, err := b.bindExpr(inner, an); err != nil {
			return err
		}
	}
	return nil
}

// frame binds a frame clause (nil: PostgreSQL's default) with PostgreSQL's
// checks and errors.
func (b *Binder) frame(c *exprCtx, fc *ast.FrameClause, order []plan.SortKey, orderTypes []types.T) (plan.Frame, error) {
	if fc == nil {
		return plan.DefaultFrame(), nil
	}
	var fr plan.Frame
	switch fc.Type {
	case ast.Rows:
		fr.Mode = plan.FrameRows
	case ast.Groups:
		fr.Mode = plan.FrameGroups
		if len(order) == 0 {
			return fr, types.Errorf(types.ErrWindowing, "GROUPS mode requires an ORDER BY clause")
		}
	default:
		fr.Mode = plan.FrameRange
	}
	var err error
	if fr.Start, err = b.frameBound(c, &fc.Extent.Start, fr.Mode, order, orderTypes, "starting"); err != nil {
		return fr, err
	}
	if fr.End, err = b.frameBound(c, &fc.Extent.End, fr.Mode, order, orderTypes, "ending"); err != nil {
		return fr, err
	}
	switch {
	case fr.Start.Kind == plan.UnboundedFollowing:
		return fr, types.Errorf(types.ErrWindowing, "frame start cannot be UNBOUNDED FOLLOWING")
	case fr.End.Kind == plan.UnboundedPreceding:
		return fr, types.Errorf(types.ErrWindowing, "frame end cannot be UNBOUNDED PRECEDING")
	case fr.Start.Kind == plan.CurrentRow && fr.End.Kind == plan.OffsetPreceding:
		return fr, types.Errorf(types.ErrWindowing, "frame starting from current row cannot have preceding rows")
	case fr.Start.Kind == plan.OffsetFollowing && (fr.End.Kind == plan.OffsetPreceding || fr.End.Kind == plan.CurrentRow):
		return fr, types.Errorf(types.ErrWindowing, "frame starting from following row cannot have preceding rows")
	}
	return fr, nil
}

func (b *Binder) frameBound(c *exprCtx, fb *ast.FrameBound, mode plan.FrameMode, order []plan.SortKey, orderTypes []types.T, which string) (plan.FrameBound, error) {
	var out plan.FrameBound
	switch {
	case fb.Type == ast.CurrentRow:
		out.Kind = plan.CurrentRow
		return out, nil
	case fb.UnBounded && fb.Type == ast.Preceding:
		out.Kind = plan.UnboundedPreceding
		return out, nil
	case fb.UnBounded:
		out.Kind = plan.UnboundedFollowing
		return out, nil
	case fb.Type == ast.Preceding:
		out.Kind = plan.OffsetPreceding
	default:
		out.Kind = plan.OffsetFollowing
	}
	e, err := b.bindExpr(c, fb.Expr)
	if err != nil {
		return out, err
	}
	if fb.Unit != 0 || fb.Expr != nil && e.Type().ID == types.Unknown && mode == plan.FrameRange && len(orderTypes) == 1 && isTimeType(orderTypes[0]) {
		// INTERVAL '...' PRECEDING (the parser keeps the whole text in the literal).
		if e, err = expr.Cast(e, types.TInterval); err != nil {
			return out, err
		}
	}
	var cols bool
	expr.Walk(e, func(x expr.Expr) bool {
		if _, ok := x.(*expr.ColumnRef); ok {
			cols = true
		}
		return !cols
	})
	if cols || !expr.IsConst(e) {
		return out, types.Errorf(types.ErrInvalidColumnRef, "argument of %s must not contain variables", [...]string{"RANGE", "ROWS", "GROUPS"}[mode])
	}
	if mode != plan.FrameRange {
		if e, err = expr.ImplicitCast(e, types.TInt64); err != nil {
			return out, err
		}
		d, err := e.EvalRow(nil, nil)
		if err != nil {
			return out, err
		}
		if d.Null {
			return out, types.Errorf(types.ErrNullNotAllowed, "frame %s offset must not be null", which)
		}
		if d.I < 0 {
			return out, types.Errorf(types.ErrWindowFrameSize, "frame %s offset must not be negative", which)
		}
		out.Offset, out.Text = d.I, e.String()
		return out, nil
	}
	if len(order) != 1 {
		return out, types.Errorf(types.ErrWindowing, "RANGE with offset PRECEDING/FOLLOWING requires exactly one ORDER BY column")
	}
	d, err := e.EvalRow(nil, nil)
	if err != nil {
		return out, err
	}
	if d.Null {
		return out, types.Errorf(types.ErrNullNotAllowed, "frame %s offset must not be null", which)
	}
	keyT := orderTypes[0]
	notSupported := func() error {
		return types.Errorf(types.ErrUnsupported, "RANGE with offset PRECEDING/FOLLOWING is not supported for column type %s and offset type %s", keyT, e.Type())
	}
	switch {
	case keyT.IsNumeric() && e.Type().IsNumeric():
		if sign(e.Type(), &d) < 0 {
			return out, types.Errorf(types.ErrWindowFrameSize, "invalid preceding or following size in window function")
		}
	case isTimeType(keyT) && e.Type().ID == types.Interval:
		if types.IntervalKey(d.Iv) < 0 {
			return out, types.Errorf(types.ErrWindowFrameSize, "invalid preceding or following size in window function")
		}
	default:
		return out, notSupported()
	}
	op := "+"
	if (out.Kind == plan.OffsetPreceding) != order[0].Desc {
		op = "-"
	}
	k := expr.Column(0, keyT) // over a one-column row: the ORDER BY key
	if out.Target, err = expr.Call(op, []expr.Expr{k, expr.Literal(d, e.Type())}); err != nil {
		return out, notSupported()
	}
	out.Key = k
	if tt := out.Target.Type(); tt.ID != keyT.ID {
		if out.Key, err = expr.ImplicitCast(k, tt); err != nil {
			return out, notSupported()
		}
	}
	out.Text = e.String()
	return out, nil
}

func isTimeType(t types.T) bool {
	switch t.ID {
	case types.Date, types.Timestamp, types.Timestamptz, types.Time, types.Interval:
		return true
	}
	return false
}

// sign reports whether a numeric constant is negative (-1), zero or positive.
func sign(t types.T, d *types.Datum) int {
	switch t.Physical() {
	case types.PhysI64:
		return cmpInt(d.I)
	case types.PhysF64:
		switch {
		case d.F < 0:
			return -1
		case d.F > 0:
			return 1
		}
		return 0
	case types.PhysDec:
		return d.Dec.Sign()
	}
	return 0
}

func cmpInt(v int64) int {
	switch {
	case v < 0:
		return -1
	case v > 0:
		return 1
	}
	return 0
}
