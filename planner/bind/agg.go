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

// aggBinding maps expressions above an aggregation to the Agg node's columns.
// Group keys come first (groupStrs holds their bound text in the input
// scope), then one column per aggregate call (registered while binding).
type aggBinding struct {
	inScope   *scope      // the aggregation's input scope
	pre       []expr.Expr // expressions the pre-projection computes (group keys, then agg args)
	groupStrs []string
	groupN    int
	calls     []plan.AggCall
	callStrs  []string
	scope     *scope // the aggregation output scope (set after planning)
	node      *plan.Agg
	// site is where correlated subqueries in aggregate arguments and
	// FILTER clauses join the aggregation's input.
	site *applySite
	// sets are GROUPING SETS' (ROLLUP's, CUBE's) sets of group keys, nil
	// for a plain GROUP BY; key gid (after the others) is the set's index.
	sets [][]int
	gid  int
}

// groupingSetsOf expands one GROUP BY item into grouping sets of key
// indexes (key binds an expression); isSets reports whether it was a
// ROLLUP, CUBE or GROUPING SETS rather than a plain expression.
func groupingSetsOf(n ast.ExprNode, key func(ast.ExprNode) (int, error)) (sets [][]int, isSets bool, err error) {
	call, ok := n.(*ast.FuncCallExpr)
	if !ok || !strings.HasPrefix(call.FnName.L, "pg__") {
		k, err := key(n)
		return [][]int{{k}}, false, err
	}
	// elems binds the arguments as plain key lists (ROLLUP and CUBE
	// elements: an expression or a parenthesized list).
	elems := func() ([][]int, error) {
		out := make([][]int, len(call.Args))
		for i, arg := range call.Args {
			if sub, ok := arg.(*ast.FuncCallExpr); ok && sub.FnName.L == "pg__set" {
				for _, x := range sub.Args {
					k, err := key(x)
					if err != nil {
						return nil, err
					}
					out[i] = append(out[i], k)
				}
				continue
			}
			if sub, ok := arg.(*ast.FuncCallExpr); ok && strings.HasPrefix(sub.FnName.L, "pg__") && sub.FnName.L != "pg__grouping" {
				return nil, types.Errorf(types.ErrSyntax, "syntax error: ROLLUP, CUBE and GROUPING SETS cannot be nested here")
			}
			k, err := key(arg)
			if err != nil {
				return nil, err
			}
			out[i] = []int{k}
		}
		return out, nil
	}
	switch call.FnName.L {
	case "pg__rollup":
		es, err := elems()
		if err != nil {
			return nil, true, err
		}
		// (e1, ..., en), (e1, ..., en-1), ..., ().
		for i := len(es); i >= 0; i-- {
			sets = append(sets, slices.Concat(es[:i]...))
		}
		return sets, true, nil
	case "pg__cube":
		es, err := elems()
		if err != nil {
			return nil, true, err
		}
		if len(es) > 12 {
			return nil, true, types.Errorf(types.ErrProgramLimit, "CUBE is limited to 12 elements")
		}
		// Every subset, the largest first (PostgreSQL's order).
		for mask := (1 << len(es)) - 1; mask >= 0; mask-- {
			var s []int
			for i := range es {
				if mask&(1<<(len(es)-1-i)) != 0 {
					s = append(s, es[i]...)
				}
			}
			sets = append(sets, s)
		}
		return sets, true, nil
	case "pg__grouping_sets":
		for _, arg := range call.Args {
			sub, _, err := groupingSetsOf(arg, key)
			if err != nil {
				return nil, true, err
			}
			sets = append(sets, sub...)
		}
		return sets, true, nil
	case "pg__set":
		var s []int
		for _, x := range call.Args {
			k, err := key(x)
			if err != nil {
				return nil, true, err
			}
			s = append(s, k)
		}
		return [][]int{s}, true, nil
	}
	k, err := key(n)
	return [][]int{{k}}, false, err
}

// crossSets concatenates every set of a with every set of b (GROUP BY's
// items combine so).
func crossSets(a, b [][]int) [][]int {
	out := make([][]int, 0, len(a)*len(b))
	for _, x := range a {
		for _, y := range b {
			out = append(out, slices.Concat(x, y))
		}
	}
	return out
}

// grouping binds grouping(args): a bit per argument, the first the most
// significant, set when the row's grouping set leaves that key out.
func (a *aggBinding) grouping(b *Binder, c *exprCtx, n *ast.FuncCallExpr) (expr.Expr, error) {
	bad := types.Errorf(types.ErrGrouping, "arguments to GROUPING must be grouping expressions of the associated query level")
	if len(n.Args) > 31 {
		return nil, types.Errorf(types.ErrProgramLimit, "GROUPING must have fewer than 32 arguments")
	}
	keys := make([]int, len(n.Args))
	for i, arg := range n.Args {
		e, err := b.bindExpr(&exprCtx{scope: a.inScope, clause: c.clause}, arg)
		if err != nil {
			return nil, err
		}
		k := slices.Index(a.groupStrs, e.String())
		if k < 0 || (a.sets != nil && k == a.gid) {
			return nil, bad
		}
		keys[i] = k
	}
	value := func(set []int) types.Datum {
		v := int64(0)
		for i, k := range keys {
			if !slices.Contains(set, k) {
				v |= 1 << (len(keys) - 1 - i)
			}
		}
		return types.DInt(v)
	}
	if a.sets == nil {
		return expr.Literal(types.DInt(0), types.TInt32), nil
	}
	whens := make([]expr.Expr, len(a.sets))
	thens := make([]expr.Expr, len(a.sets))
	for s, set := range a.sets {
		whens[s] = expr.Literal(types.DInt(int64(s)), types.TInt64)
		thens[s] = expr.Literal(value(set), types.TInt32)
	}
	return expr.Case(expr.Column(a.gid, types.TInt64), whens, thens, nil)
}

// match resolves n if it is a group key; ok=false lets the caller recurse.
func (a *aggBinding) match(b *Binder, c *exprCtx, n ast.ExprNode) (expr.Expr, bool, error) {
	switch n.(type) {
	case *ast.AggregateFuncExpr, *ast.WindowFuncExpr, *ast.SubqueryExpr, *ast.ExistsSubqueryExpr:
		return nil, false, nil
	}
	inner := &exprCtx{scope: a.inScope, clause: c.clause}
	e, err := b.bindExpr(inner, n)
	if err != nil {
		return nil, false, nil // not bindable below the aggregation: recurse
	}
	s := e.String()
	for i, g := range a.groupStrs {
		if g == s {
			return expr.Column(i, e.Type()), true, nil
		}
	}
	if expr.IsConst(e) {
		return e, true, nil
	}
	return nil, false, nil
}

func (a *aggBinding) ungrouped(n *ast.ColumnNameExpr) error {
	name := n.Name.Name.O
	if n.Name.Table.O != "" {
		name = n.Name.Table.O + "." + name
	} else if idx, err := a.inScope.resolve("", n.Name.Name.O); err == nil && a.inScope.fields[idx].Table != "" {
		name = a.inScope.fields[idx].Table + "." + name
	} else if err != nil {
		return err
	}
	return types.Errorf(types.ErrGrouping, "column \"%s\" must appear in the GROUP BY clause or be used in an aggregate function", name)
}

// aggregate registers an aggregate call and returns its output column.
func (a *aggBinding) aggregate(b *Binder, c *exprCtx, n *ast.AggregateFuncExpr) (expr.Expr, error) {
	return a.aggregateWithFilter(b, c, n, nil)
}

// jsonAggNames are the JSON aggregates the parser wraps like array_agg when
// they carry ORDER BY or DISTINCT.
var jsonAggNames = map[string]bool{"jsonb_agg": true, "json_agg": true, "jsonb_object_agg": true, "json_object_agg": true}

func (a *aggBinding) aggregateWithFilter(b *Binder, c *exprCtx, n *ast.AggregateFuncExpr, filter ast.ExprNode) (expr.Expr, error) {
	inner := &exprCtx{scope: a.inScope, clause: "aggregate function calls", site: a.site}
	name := strings.ToLower(n.F)
	var args []expr.Expr
	argNodes := n.Args
	if name == "count" && len(argNodes) == 1 && isCountStar(argNodes[0]) {
		argNodes = nil
	}
	if name == "group_concat" {
		name = "string_agg"
		// first_value(x ORDER BY y) (and array_agg) arrives as GROUP_CONCAT(pg__first_value(x) ORDER BY y SEPARATOR ''),
		// string_agg(x, sep ORDER BY y) with a separator other than a literal likewise.
		if f, ok := argNodes[0].(*ast.FuncCallExpr); ok && len(argNodes) == 2 && (f.FnName.L == "pg__first_value" || f.FnName.L == "pg__last_value" || f.FnName.L == "pg__string_agg" || f.FnName.L == "pg__array_agg" ||
			f.FnName.L == "pg__percentile_cont" || f.FnName.L == "pg__percentile_disc" || f.FnName.L == "pg__mode" || f.FnName.L == "pg__approx_percentile" || jsonAggNames[strings.TrimPrefix(f.FnName.L, "pg__")]) {
			name, argNodes = strings.TrimPrefix(f.FnName.L, "pg__"), f.Args
		}
	}
	for _, an := range argNodes {
		e, err := b.bindExpr(inner, an)
		if err != nil {
			return nil, err
		}
		args = append(args, e)
	}
	if name == "string_agg" {
		for i := range args {
			args[i] = b.coerceParam(args[i], types.TVarchar)
			if args[i].Type().ID == types.Unknown {
				args[i], _ = expr.Cast(args[i], types.TVarchar)
			}
		}
	}
	if name == "percentile_cont" || name == "percentile_disc" {
		if err := b.percentileArgs(name, args); err != nil {
			return nil, err
		}
	}
	var approx [2]float64
	if name == "approx_percentile" {
		var err error
		if approx, err = b.approxPercentileArgs(args); err != nil {
			return nil, err
		}
		args = args[:1]
	}
	var order []plan.SortKey
	orderStr := ""
	if n.Order != nil && name != "approx_percentile" { // a sketch needs no order
		for _, it := range n.Order.Items {
			en, nullsFirst, explicit := unwrapNulls(it.Expr)
			if !explicit {
				nullsFirst = it.Desc // PostgreSQL: NULLS LAST ascending, FIRST descending
			}
			e, err := b.bindExpr(inner, en)
			if err != nil {
				return nil, err
			}
			k := plan.SortKey{Col: a.pre_(e), Desc: it.Desc, NullsFirst: nullsFirst}
			order = append(order, k)
			orderStr += fmt.Sprintf("|%s %v %v", e.String(), k.Desc, k.NullsFirst)
		}
	}
	for i := range args {
		if args[i].Type().ID == types.Unknown {
			args[i], _ = expr.Cast(b.coerceParam(args[i], types.TVarchar), types.TVarchar)
		}
	}
	argTypes := make([]types.T, len(args))
	for i, e := range args {
		argTypes[i] = e.Type()
	}
	distinct := n.Distinct
	if name == "first_value" || name == "last_value" {
		// DISTINCT changes neither (its ORDER BY may only name the argument).
		distinct = false
	}
	agg, err := expr.LookupAgg(name, argTypes, distinct)
	if err != nil {
		return nil, err
	}
	if agg.Kind == expr.AggApproxPercentile {
		agg.Quantile, agg.RelErr = approx[0], approx[1]
		orderStr += fmt.Sprintf("|approx %g %g", approx[0], approx[1])
	}
	if agg.Kind == expr.AggArrayAgg && distinct && len(order) == 0 {
		// PostgreSQL's array_agg(DISTINCT x) comes out sorted by x.
		k := plan.SortKey{Col: a.pre_(args[0])}
		order = append(order, k)
		orderStr += fmt.Sprintf("|%s %v %v", args[0].String(), k.Desc, k.NullsFirst)
	}
	call := plan.AggCall{Agg: agg, Filter: -1, Name: deriveName(n), OrderBy: order}
	for _, k := range order {
		if !n.Distinct {
			break
		}
		if !slices.ContainsFunc(args, func(e expr.Expr) bool { return a.pre_(e) == k.Col }) {
			return nil, types.Errorf(types.ErrInvalidColumnRef, "in an aggregate with DISTINCT, ORDER BY expressions must appear in argument list")
		}
	}
	key := name + "|" + boolStr(n.Distinct) + "|order" + orderStr
	for _, e := range args {
		call.Args = append(call.Args, a.pre_(e))
		key += "|" + e.String()
	}
	if filter != nil {
		f, err := b.bindExpr(inner, filter)
		if err != nil {
			return nil, err
		}
		if f, err = b.boolCond(f, "FILTER"); err != nil {
			return nil, err
		}
		call.Filter = a.pre_(f)
		key += "|filter " + f.String()
	}
	for i, s := range a.callStrs {
		if s == key {
			return expr.Column(a.groupN+i, a.calls[i].Agg.Result), nil
		}
	}
	a.calls = append(a.calls, call)
	a.callStrs = append(a.callStrs, key)
	return expr.Column(a.groupN+len(a.calls)-1, agg.Result), nil
}

// percentileArgs checks and casts the arguments (x, f) of percentile_cont(f)
// and percentile_disc(f) WITHIN GROUP (ORDER BY x): f is a constant double
// precision in [0, 1] (PostgreSQL allows any expression of the group; this
// checks it at plan time), and percentile_cont's x is double precision or
// interval.
func (b *Binder) percentileArgs(name string, args []expr.Expr) error {
	f := b.coerceParam(args[1], types.TFloat64)
	ft := f.Type()
	if ft.ID != types.Unknown && !ft.IsNumeric() {
		return types.Errorf(types.ErrUndefinedFunction, "function %s(%s, %s) does not exist", name, ft, args[0].Type())
	}
	f, err := expr.Cast(f, types.TFloat64)
	if err != nil {
		return err
	}
	if !expr.IsConst(f) {
		return types.Errorf(types.ErrUnsupported, "the fraction of %s must be a constant", name)
	}
	v, err := f.EvalRow(nil, nil)
	if err != nil {
		return err
	}
	if !v.Null {
		if err := expr.PercentileOutOfRange(v.F); err != nil {
			return err
		}
	}
	args[1] = expr.Literal(v, types.TFloat64)
	if name == "percentile_cont" && args[0].Type().ID != types.Interval && args[0].Type().ID != types.Float64 {
		x, err := expr.ImplicitCast(args[0], types.TFloat64)
		if err != nil || !args[0].Type().IsNumeric() {
			return types.Errorf(types.ErrUndefinedFunction, "function %s(%s, %s) does not exist", name, ft, args[0].Type())
		}
		args[0] = x
	}
	return nil
}

// approxPercentileArgs checks the arguments (x, q [, e]) of
// approx_percentile(q [, e]) WITHIN GROUP (ORDER BY x), casting x to double
// precision, and returns the constants q and e (e defaults to
// expr.DefaultRelativeError).
func (b *Binder) approxPercentileArgs(args []expr.Expr) ([2]float64, error) {
	out := [2]float64{0, expr.DefaultRelativeError}
	if len(args) < 2 || len(args) > 3 {
		return out, types.Errorf(types.ErrUndefinedFunction, "function approx_percentile with %d direct arguments does not exist", len(args)-1)
	}
	for i, a := range args[1:] {
		f := b.coerceParam(a, types.TFloat64)
		if t := f.Type(); t.ID != types.Unknown && !t.IsNumeric() {
			return out, types.Errorf(types.ErrUndefinedFunction, "function approx_percentile(%s) does not exist", t)
		}
		f, err := expr.Cast(f, types.TFloat64)
		if err != nil {
			return out, err
		}
		if !expr.IsConst(f) {
			return out, types.Errorf(types.ErrUnsupported, "the arguments of approx_percentile must be constants")
		}
		v, err := f.EvalRow(nil, nil)
		if err != nil {
			return out, err
		}
		if v.Null {
			return out, types.Errorf(types.ErrInvalidParameter, "the arguments of approx_percentile must not be NULL")
		}
		out[i] = v.F
	}
	if err := expr.ApproxPercentileArgsOK(out[0], out[1]); err != nil {
		return out, err
	}
	x := args[0]
	if x.Type().ID != types.Float64 {
		c, err := expr.ImplicitCast(x, types.TFloat64)
		if err != nil || !x.Type().IsNumeric() && x.Type().ID != types.Unknown {
			return out, types.Errorf(types.ErrUndefinedFunction, "function approx_percentile(%s) does not exist", x.Type())
		}
		args[0] = c
	}
	return out, nil
}

// pre_ adds e to the pre-projection (reusing an identical one) and returns its column.
func (a *aggBinding) pre_(e expr.Expr) int {
	s := e.String()
	for i, p := range a.pre {
		// With grouping sets, the Expand node NULLs the keys: arguments
		// read their own copy.
		if a.sets != nil && i < a.groupN {
			continue
		}
		if p.String() == s {
			return i
		}
	}
	a.pre = append(a.pre, e)
	return len(a.pre) - 1
}

func boolStr(b bool) string {
	if b {
		return "distinct"
	}
	return ""
}

func isCountStar(n ast.ExprNode) bool {
	// TiDB parses count(*) as count(1) with a literal at offset 0.
	_, ok := intArg(n)
	return ok
}

// hasAggregate reports whether any select item, HAVING or ORDER BY contains an aggregate.
func hasAggregate(fields []*ast.SelectField, having *ast.HavingClause, order *ast.OrderByClause) bool {
	found := false
	v := &aggFinder{found: &found}
	for _, f := range fields {
		if f.Expr != nil {
			f.Expr.Accept(v)
		}
	}
	if having != nil {
		having.Expr.Accept(v)
	}
	if order != nil {
		for _, it := range order.Items {
			it.Expr.Accept(v)
		}
	}
	return found
}

type aggFinder struct{ found *bool }

func (v *aggFinder) Enter(n ast.Node) (ast.Node, bool) {
	switch f := n.(type) {
	case *ast.AggregateFuncExpr:
		*v.found = true
		return n, true
	case *ast.FuncCallExpr:
		if aggregateNames[f.FnName.L] {
			*v.found = true
			return n, true
		}
	case *ast.SubqueryExpr, *ast.WindowFuncExpr:
		return n, true
	}
	return n, false
}
func (v *aggFinder) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// planAggregate builds Project(group keys, agg args) → Agg. Aggregate calls
// are discovered by binding the select list, HAVING and ORDER BY in a dry
// run, so that the pre-projection knows every argument.
func (b *Binder) planAggregate(input plan.Node, sc *scope, s *ast.SelectStmt, fields []*ast.SelectField) (plan.Node, *aggBinding, error) {
	a := &aggBinding{inScope: sc, site: newSite(input)}
	gc := &exprCtx{scope: sc, clause: "GROUP BY"}
	if s.GroupBy != nil {
		if s.GroupBy.Rollup {
			return nil, nil, types.Errorf(types.ErrUnsupported, "WITH ROLLUP is not supported (use GROUP BY ROLLUP (...))")
		}
		// key binds one grouping expression and returns its key index.
		key := func(n ast.ExprNode) (int, error) {
			var e expr.Expr
			var err error
			// GROUP BY may name an output column or position.
			if v, ok := intArg(n); ok {
				if v < 1 || v > len(fields) || fields[v-1].Expr == nil {
					return 0, types.Errorf(types.ErrInvalidColumnRef, "GROUP BY position %d is not in select list", v)
				}
				e, err = b.bindExpr(gc, fields[v-1].Expr)
			} else {
				e, err = b.bindExpr(gc, n)
				if err != nil {
					if col, ok := n.(*ast.ColumnNameExpr); ok && col.Name.Table.O == "" {
						for _, f := range fields {
							if f.AsName.O == col.Name.Name.O && f.Expr != nil {
								e, err = b.bindExpr(gc, f.Expr)
								break
							}
						}
					}
				}
			}
			if err != nil {
				return 0, err
			}
			s := e.String()
			if i := slices.Index(a.groupStrs, s); i >= 0 {
				return i, nil
			}
			a.pre = append(a.pre, e)
			a.groupStrs = append(a.groupStrs, s)
			return len(a.groupStrs) - 1, nil
		}
		sets := [][]int{{}}
		grouped := false
		for _, it := range s.GroupBy.Items {
			item, isSets, err := groupingSetsOf(it.Expr, key)
			if err != nil {
				return nil, nil, err
			}
			grouped = grouped || isSets
			sets = crossSets(sets, item)
		}
		if grouped {
			a.sets = sets
		}
	}
	if a.sets != nil {
		// The grouping set's index: a key the Expand node fills in.
		a.gid = len(a.pre)
		a.pre = append(a.pre, expr.Literal(types.DInt(0), types.TInt64))
		a.groupStrs = append(a.groupStrs, "\x00grouping set")
	} else {
		b.addPKDependents(a, sc)
	}
	a.groupN = len(a.groupStrs)
	// Dry run: register aggregates by binding everything above the aggregation.
	dry := &exprCtx{scope: &scope{}, agg: a, win: &winBinding{dry: true}, clause: "SELECT"}
	for _, f := range fields {
		if f.Expr != nil {
			if _, err := b.bindExpr(dry, f.Expr); err != nil {
				return nil, nil, err
			}
		}
	}
	if s.Having != nil {
		dry.clause = "HAVING"
		if _, err := b.bindExpr(dry, s.Having.Expr); err != nil {
			return nil, nil, err
		}
	}
	if s.OrderBy != nil {
		for _, it := range s.OrderBy.Items {
			e, _, _ := unwrapNulls(it.Expr)
			if _, ok := intArg(e); ok {
				continue
			}
			if col, ok := e.(*ast.ColumnNameExpr); ok && col.Name.Table.O == "" && isOutputName(fields, col.Name.Name.O) {
				continue
			}
			if _, err := b.bindExpr(dry, e); err != nil {
				return nil, nil, err
			}
		}
	}
	// Pre-projection and the Agg node.
	preOut := make([]plan.Field, len(a.pre))
	for i, e := range a.pre {
		preOut[i] = fieldFor("?pre?", e, a.site.node.Schema())
	}
	var pre plan.Node = &plan.Project{Input: a.site.node, Exprs: a.pre, Out: preOut}
	if a.sets != nil {
		pre = &plan.Expand{Input: pre, Keys: a.gid, Sets: a.sets, GID: a.gid}
	}
	groupBy := make([]int, a.groupN)
	out := make([]plan.Field, 0, a.groupN+len(a.calls))
	for i := 0; i < a.groupN; i++ {
		groupBy[i] = i
		f := fieldFor("?group?", a.pre[i], a.site.node.Schema())
		if col, ok := a.pre[i].(*expr.ColumnRef); ok {
			f.Name, f.Table = sc.fields[col.Index].Name, sc.fields[col.Index].Table
		}
		f.Hidden = a.sets != nil && i == a.gid
		out = append(out, f)
	}
	for _, c := range a.calls {
		out = append(out, plan.Field{Name: c.Name, Type: c.Agg.Result})
	}
	a.node = &plan.Agg{Input: pre, GroupBy: groupBy, Aggs: a.calls, Out: out}
	for id, set := range a.sets {
		if len(set) == 0 {
			a.node.EmptySets = append(a.node.EmptySets, int64(id))
			a.node.GID = a.gid
		}
	}
	return a.node, a, nil
}

// addPKDependents makes a relation's other columns groupable when its whole
// primary key is grouped (PostgreSQL's functional dependency rule): they are
// added as further group keys, which does not change the groups.
func (b *Binder) addPKDependents(a *aggBinding, sc *scope) {
	grouped := map[int]bool{}
	for _, e := range a.pre {
		if cr, ok := e.(*expr.ColumnRef); ok {
			grouped[cr.Index] = true
		}
	}
	type source struct {
		table string
		rel   uint32
	}
	seen := map[source]bool{}
	for _, f := range sc.fields {
		src := source{f.Table, f.Rel}
		if f.Rel == 0 || seen[src] {
			continue
		}
		seen[src] = true
		rel, ok := b.cat.ByID(f.Rel)
		if !ok || len(rel.PK) == 0 {
			continue
		}
		covered := true
		for _, k := range rel.PK {
			found := false
			for i, g := range sc.fields {
				if g.Table == src.table && g.Rel == src.rel && int(g.Col) == k+1 && grouped[i] {
					found = true
				}
			}
			if !found {
				covered = false
			}
		}
		if !covered {
			continue
		}
		for i, g := range sc.fields {
			if g.Table == src.table && g.Rel == src.rel && !grouped[i] {
				e := expr.Column(i, g.Type)
				a.pre = append(a.pre, e)
				a.groupStrs = append(a.groupStrs, e.String())
				grouped[i] = true
			}
		}
	}
}

func isOutputName(fields []*ast.SelectField, name string) bool {
	for _, f := range fields {
		if f.AsName.O == name {
			return true
		}
	}
	return false
}

// winRef is a placeholder for a window function's output column until the
// number of pre-computed columns is known.
type winRef struct {
	w *winBinding
	i int
}

func (r *winRef) col() expr.Expr {
	return expr.Column(len(r.w.input.Schema())+len(r.w.pre)+r.i, r.w.funcs[r.i].Type)
}
func (r *winRef) Type() types.T  { return r.w.funcs[r.i].Type }
func (r *winRef) String() string { return r.col().String() }
func (r *winRef) Eval(ctx *expr.Ctx, in *types.Chunk, out *types.Vector) error {
	return r.col().Eval(ctx, in, out)
}
func (r *winRef) EvalRow(ctx *expr.Ctx, row []types.Datum) (types.Datum, error) {
	return r.col().EvalRow(ctx, row)
}

// resolveWinRefs replaces the window-function placeholders in e by the
// columns they read, once finish fixed the Window node's columns (so later
// passes see plain column references); e stays as it is where it holds an
// expression kind that cannot be rebuilt.
func resolveWinRefs(e expr.Expr) expr.Expr {
	r, ok := plan.RewriteLeaves(e, func(x expr.Expr) (expr.Expr, bool) {
		if w, ok := x.(*winRef); ok {
			return w.col(), true
		}
		return nil, false
	})
	if !ok {
		return e
	}
	return r
}

// finish returns the input with the Window node applied (or unchanged).
func (w *winBinding) finish() plan.Node {
	if len(w.funcs) == 0 {
		return w.input
	}
	in := w.input.Schema()
	node := w.input
	if len(w.pre) > 0 {
		exprs := make([]expr.Expr, 0, len(in)+len(w.pre))
		out := make([]plan.Field, 0, len(in)+len(w.pre))
		for i, f := range in {
			exprs = append(exprs, expr.Column(i, f.Type))
			out = append(out, f)
		}
		for _, e := range w.pre {
			exprs = append(exprs, e)
			out = append(out, plan.Field{Name: "?window?", Type: e.Type(), Hidden: true})
		}
		node = &plan.Project{Input: node, Exprs: exprs, Out: out}
	}
	out := append([]plan.Field(nil), node.Schema()...)
	for _, f := range w.funcs {
		out = append(out, plan.Field{Name: f.Name, Type: f.Type})
	}
	return &plan.Window{Input: node, Funcs: w.funcs, Out: out}
}
