package bind

import (
	"fmt"
	"slices"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
)

// Correlated subqueries. A column a subquery takes from an enclosing query
// binds to an outerRef. A subquery whose plan holds outerRefs is
// decorrelated: the conditions that read outer columns are pulled up out of
// its plan (through filters, projections, sorts and inner joins; an
// aggregation then groups by the inner side of each correlation equality,
// or, for other comparisons, by the distinct outer values it is joined
// with, RisingWave's domain; a LIMIT becomes a top-N per correlation key),
// and the subquery becomes a join with the enclosing query's input on them:
// a semi join (EXISTS, IN), an anti join (NOT EXISTS, NOT IN), a left join
// that appends the value (scalar subqueries, and EXISTS, IN, ANY and ALL
// inside expressions as counts), or an inner or left join (LATERAL). The
// projections on top of the subquery are computed above the join, so they
// may read outer columns. The result has no outer references, so it runs as
// an ordinary batch plan and stays incremental in a materialized view.
// Forms outside these rules are refused with 0A000, never answered wrongly.

// outerRef reads column Index of the query Depth levels out (1: the query
// immediately enclosing the subquery). Decorrelation replaces it with a
// column of the join's left side; it is never evaluated.
type outerRef struct {
	depth, index int
	typ          types.T
}

func (r *outerRef) Type() types.T  { return r.typ }
func (r *outerRef) String() string { return fmt.Sprintf("outer%d.$%d", r.depth, r.index) }
func (r *outerRef) Eval(*expr.Ctx, *types.Chunk, *types.Vector) error {
	return types.Errorf(types.ErrInternal, "unresolved outer reference %s", r)
}
func (r *outerRef) EvalRow(*expr.Ctx, []types.Datum) (types.Datum, error) {
	return types.NullDatum, types.Errorf(types.ErrInternal, "unresolved outer reference %s", r)
}

// resolveOuter binds a column that only an enclosing query's scope knows
// (nil when none does). A column of an aggregating query must be grouped.
func (b *Binder) resolveOuter(table, name string) (expr.Expr, error) {
	for i := len(b.outer) - 1; i >= 0; i-- {
		sc := b.outer[i]
		if idx, err := sc.resolve(table, name); err == nil {
			return &outerRef{depth: len(b.outer) - i, index: idx, typ: sc.fields[idx].Type}, nil
		}
		if sc.agg == nil {
			continue
		}
		if idx, err := sc.agg.inScope.resolve(table, name); err == nil {
			s := expr.Column(idx, sc.agg.inScope.fields[idx].Type).String()
			for k, g := range sc.agg.groupStrs {
				if g == s {
					return &outerRef{depth: len(b.outer) - i, index: k, typ: sc.fields[k].Type}, nil
				}
			}
			q := name
			if f := sc.agg.inScope.fields[idx]; f.Table != "" {
				q = f.Table + "." + name
			}
			return nil, types.Errorf(types.ErrGrouping, "subquery uses ungrouped column \"%s\" from outer query", q)
		}
	}
	return nil, nil
}

// errCorrelated refuses a correlated subquery form decorrelation cannot plan.
func errCorrelated(format string, args ...any) error {
	return types.Errorf(types.ErrUnsupported, "correlated subquery: "+format, args...)
}

// mapExpr rebuilds e with each column and outer reference replaced by f's
// result (f returns nil to keep the leaf).
func mapExpr(e expr.Expr, f func(expr.Expr) expr.Expr) (expr.Expr, error) {
	switch x := e.(type) {
	case *expr.ColumnRef, *outerRef:
		if r := f(e); r != nil {
			return r, nil
		}
		return e, nil
	case *expr.CastExpr:
		in, err := mapExpr(x.Input, f)
		if err != nil {
			return nil, err
		}
		c := *x
		c.Input = in
		return &c, nil
	case *expr.FuncExpr:
		args, err := mapExprs(x.Args, f)
		if err != nil {
			return nil, err
		}
		c := *x
		c.Args = args
		return &c, nil
	case *expr.CaseExpr:
		c := *x
		var err error
		if c.Operand != nil {
			if c.Operand, err = mapExpr(c.Operand, f); err != nil {
				return nil, err
			}
		}
		if c.Whens, err = mapExprs(c.Whens, f); err != nil {
			return nil, err
		}
		if c.Thens, err = mapExprs(c.Thens, f); err != nil {
			return nil, err
		}
		if c.Else != nil {
			if c.Else, err = mapExpr(c.Else, f); err != nil {
				return nil, err
			}
		}
		return &c, nil
	case *expr.Quantified:
		left, err := mapExpr(x.Left, f)
		if err != nil {
			return nil, err
		}
		return expr.NewQuantified(left, x.Op, x.All, x.Slot, x.Elem)
	}
	return e, nil
}

func mapExprs(es []expr.Expr, f func(expr.Expr) expr.Expr) ([]expr.Expr, error) {
	out := make([]expr.Expr, len(es))
	for i, e := range es {
		r, err := mapExpr(e, f)
		if err != nil {
			return nil, err
		}
		out[i] = r
	}
	return out, nil
}

// visitExpr calls f on every leaf of e (columns, outer references, ...).
func visitExpr(e expr.Expr, f func(expr.Expr)) {
	if e == nil {
		return
	}
	_, _ = mapExpr(e, func(x expr.Expr) expr.Expr { f(x); return nil })
}

func exprHasOuter(e expr.Expr) bool {
	found := false
	visitExpr(e, func(x expr.Expr) {
		if _, ok := x.(*outerRef); ok {
			found = true
		}
	})
	return found
}

// nodeExprs lists the expressions a plan node itself evaluates.
func nodeExprs(n plan.Node) []expr.Expr {
	switch n := n.(type) {
	case *plan.Filter:
		return []expr.Expr{n.Cond}
	case *plan.Project:
		return n.Exprs
	case *plan.Join:
		if n.Cond != nil {
			return []expr.Expr{n.Cond}
		}
	case *plan.Scan:
		return n.Lookup
	case *plan.Values:
		var out []expr.Expr
		for _, r := range n.Rows {
			out = append(out, r...)
		}
		return out
	case *plan.Series:
		return []expr.Expr{n.Start, n.Stop, n.Step}
	case *plan.Unnest:
		return []expr.Expr{n.Array}
	case *plan.Limit:
		return []expr.Expr{n.Count, n.Offset}
	}
	return nil
}

// hasOuter reports whether n's tree reads a column of an enclosing query.
func hasOuter(n plan.Node) bool {
	for _, e := range nodeExprs(n) {
		if e != nil && exprHasOuter(e) {
			return true
		}
	}
	for _, c := range n.Children() {
		if c != nil && hasOuter(c) {
			return true
		}
	}
	return false
}

// decorrelated is a subquery plan with its correlation pulled out.
type decorrelated struct {
	node plan.Node
	// conds read node's columns and outer references: the join condition.
	conds []expr.Expr
	// scalarAgg: the top aggregation had no GROUP BY and now groups by the
	// correlation keys, so an outer row without inner rows gets no row
	// where the subquery gave one row of empty-input aggregates (emptyVals,
	// one per aggregate; marker is a column never NULL in a real row).
	scalarAgg bool
	emptyVals []expr.Expr
	marker    int
	// atMostOne: node has at most one row per value of the correlation
	// (an aggregation grouped by it, a LIMIT 1 per correlation key).
	atMostOne bool
}

// decorrelate pulls the outer-referencing conditions out of n. The result
// keeps n's columns in order (it may append hidden ones the conditions
// read). top allows a top aggregation without GROUP BY (scalarAgg).
func (b *Binder) decorrelate(n plan.Node, top bool) (*decorrelated, error) {
	if err := b.nest(); err != nil {
		return nil, err
	}
	defer b.unnest()
	if !hasOuter(n) {
		return &decorrelated{node: n}, nil
	}
	switch n := n.(type) {
	case *plan.Filter:
		in, err := b.decorrelate(n.Input, false)
		if err != nil {
			return nil, err
		}
		var keep []expr.Expr
		for _, c := range expr.Conjuncts(n.Cond) {
			if exprHasOuter(c) {
				in.conds = append(in.conds, c)
			} else {
				keep = append(keep, c)
			}
		}
		if len(keep) > 0 {
			cond, err := expr.AndAll(keep)
			if err != nil {
				return nil, err
			}
			in.node = &plan.Filter{Input: in.node, Cond: cond}
		}
		return in, nil
	case *plan.Project:
		for _, e := range n.Exprs {
			if exprHasOuter(e) {
				return nil, errCorrelated("outer columns in the select list of a nested query are not supported")
			}
		}
		in, err := b.decorrelate(n.Input, false)
		if err != nil {
			return nil, err
		}
		return passThrough(n, in)
	case *plan.Sort:
		in, err := b.decorrelate(n.Input, false)
		if err != nil {
			return nil, err
		}
		in.node = &plan.Sort{Input: in.node, Keys: n.Keys}
		return in, nil
	case *plan.Join:
		return b.decorrelateJoin(n)
	case *plan.Agg:
		return b.decorrelateAgg(n, top)
	case *plan.Limit:
		return b.decorrelateLimit(n)
	}
	return nil, errCorrelated("outer columns under %s are not supported", describeKind(n))
}

func describeKind(n plan.Node) string {
	switch n.(type) {
	case *plan.Limit:
		return "LIMIT"
	case *plan.Distinct:
		return "DISTINCT"
	case *plan.SetOp:
		return "a set operation"
	case *plan.Window:
		return "a window function"
	case *plan.Values, *plan.Scan, *plan.Series, *plan.Unnest:
		return "a FROM item"
	}
	return fmt.Sprintf("%T", n)
}

// passThrough re-plans projection p over its decorrelated input: the
// columns the pulled conditions read are appended (hidden) and the
// conditions remapped to them.
func passThrough(p *plan.Project, in *decorrelated) (*decorrelated, error) {
	exprs := slices.Clone(p.Exprs)
	out := slices.Clone(p.Out)
	pos := map[int]int{}
	remap := func(e expr.Expr) expr.Expr {
		c, ok := e.(*expr.ColumnRef)
		if !ok {
			return nil
		}
		k, seen := pos[c.Index]
		if !seen {
			k = len(exprs)
			pos[c.Index] = k
			exprs = append(exprs, expr.Column(c.Index, c.Typ))
			f := in.node.Schema()[c.Index]
			f.Hidden = true
			out = append(out, f)
		}
		return expr.Column(k, c.Typ)
	}
	conds, err := mapExprs(in.conds, remap)
	if err != nil {
		return nil, err
	}
	res := &decorrelated{conds: conds, atMostOne: in.atMostOne}
	res.node = &plan.Project{Input: in.node, Exprs: exprs, Out: out}
	return res, nil
}

// decorrelateJoin pulls conditions out of an inner join (either side and
// its ON condition) or out of the left side of a left, semi or anti join
// (a filter there commutes with the join).
func (b *Binder) decorrelateJoin(j *plan.Join) (*decorrelated, error) {
	l, err := b.decorrelate(j.Left, false)
	if err != nil {
		return nil, err
	}
	r, err := b.decorrelate(j.Right, false)
	if err != nil {
		return nil, err
	}
	nl0, nr0 := len(j.Left.Schema()), len(j.Right.Schema())
	nl1, nr1 := len(l.node.Schema()), len(r.node.Schema())
	shiftRight := func(e expr.Expr) expr.Expr {
		if c, ok := e.(*expr.ColumnRef); ok && c.Index >= nl0 {
			return expr.Column(c.Index-nl0+nl1, c.Typ)
		}
		return nil
	}
	var cond expr.Expr
	if j.Cond != nil {
		if cond, err = mapExpr(j.Cond, shiftRight); err != nil {
			return nil, err
		}
	}
	res := &decorrelated{conds: l.conds}
	if j.Kind != plan.InnerJoin {
		nullableLeft := j.Kind == plan.RightJoin || j.Kind == plan.FullJoin
		if len(r.conds) > 0 || (nullableLeft && len(l.conds) > 0) || (cond != nil && exprHasOuter(cond)) {
			return nil, errCorrelated("outer columns on the inner side of an outer, semi or anti join are not supported")
		}
		nj := *j
		nj.Left, nj.Right, nj.Cond = l.node, r.node, cond
		if j.Kind == plan.SemiJoin || j.Kind == plan.AntiJoin || nl0 == nl1 {
			res.node = &nj
			return res, nil
		}
		res.node = restoreJoinLayout(&nj, nl0, nl1, nr0, nr1)
		if res.conds, err = toJoinLayout(res.conds, nl0, nl1, nr0, nr1); err != nil {
			return nil, err
		}
		return res, nil
	}
	for _, c := range r.conds {
		c, err := mapExpr(c, func(e expr.Expr) expr.Expr {
			if c, ok := e.(*expr.ColumnRef); ok {
				return expr.Column(c.Index+nl1, c.Typ)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		res.conds = append(res.conds, c)
	}
	var keep []expr.Expr
	if cond != nil {
		for _, c := range expr.Conjuncts(cond) {
			if exprHasOuter(c) {
				res.conds = append(res.conds, c)
			} else {
				keep = append(keep, c)
			}
		}
	}
	if cond, err = expr.AndAll(keep); err != nil {
		return nil, err
	}
	nj := &plan.Join{Kind: plan.InnerJoin, Left: l.node, Right: r.node, EqLeft: j.EqLeft, EqRight: j.EqRight, Cond: cond}
	if nl0 == nl1 {
		res.node = nj
		return res, nil
	}
	// Restore the bound layout (left, right, then the appended columns) and
	// move the conditions' columns with it.
	res.node = restoreJoinLayout(nj, nl0, nl1, nr0, nr1)
	if res.conds, err = toJoinLayout(res.conds, nl0, nl1, nr0, nr1); err != nil {
		return nil, err
	}
	return res, nil
}

// toJoinLayout moves conditions over a joined row to the restored layout
// (restoreJoinLayout).
func toJoinLayout(conds []expr.Expr, nl0, nl1, nr0, nr1 int) ([]expr.Expr, error) {
	perm := joinLayout(nl0, nl1, nr0, nr1)
	where := make([]int, len(perm))
	for to, from := range perm {
		where[from] = to
	}
	return mapExprs(conds, func(e expr.Expr) expr.Expr {
		if c, ok := e.(*expr.ColumnRef); ok {
			return expr.Column(where[c.Index], c.Typ)
		}
		return nil
	})
}

// joinLayout lists, for each output position, the joined column it takes:
// the left's bound columns, the right's, then the left's and right's
// appended columns.
func joinLayout(nl0, nl1, nr0, nr1 int) []int {
	var order []int
	order = span(order, 0, nl0)
	order = span(order, nl1, nl1+nr0)
	order = span(order, nl0, nl1)
	return span(order, nl1+nr0, nl1+nr1)
}

func span(s []int, lo, hi int) []int {
	for i := lo; i < hi; i++ {
		s = append(s, i)
	}
	return s
}

func restoreJoinLayout(j *plan.Join, nl0, nl1, nr0, nr1 int) plan.Node {
	fields := j.Schema()
	order := joinLayout(nl0, nl1, nr0, nr1)
	exprs := make([]expr.Expr, len(order))
	out := make([]plan.Field, len(order))
	for i, c := range order {
		exprs[i] = expr.Column(c, fields[c].Type)
		out[i] = fields[c]
	}
	return &plan.Project{Input: j, Exprs: exprs, Out: out}
}

// decorrelateAgg turns the correlation equalities under an aggregation
// (inner column = outer expression) into group keys.
func (b *Binder) decorrelateAgg(a *plan.Agg, top bool) (*decorrelated, error) {
	if _, ok := a.Input.(*plan.Expand); ok {
		return nil, errCorrelated("outer columns in a query with GROUPING SETS, ROLLUP or CUBE are not supported")
	}
	in, err := b.decorrelate(a.Input, false)
	if err != nil {
		return nil, err
	}
	if len(a.GroupBy) == 0 && !top {
		return nil, errCorrelated("an aggregate without GROUP BY below other operators is not supported")
	}
	if len(in.conds) == 0 {
		return nil, errCorrelated("outer columns in aggregate arguments are not supported")
	}
	var keys []int
	var outerSides []expr.Expr
	for _, c := range in.conds {
		col, other, ok := correlationEq(c)
		if !ok {
			keys, outerSides = nil, nil
			if err := b.joinDomain(in); err != nil {
				return nil, err
			}
			break
		}
		keys = append(keys, col.Index)
		outerSides = append(outerSides, other)
	}
	if keys == nil {
		// Grouped by the domain's columns, equal to the outer ones.
		w := len(in.node.Schema()) - len(in.conds)
		for k, c := range in.conds {
			keys = append(keys, w+k)
			outerSides = append(outerSides, c)
		}
	}
	g0, na := len(a.GroupBy), len(a.Aggs)
	infs := in.node.Schema()
	na2 := &plan.Agg{Input: in.node, GroupBy: append(slices.Clone(a.GroupBy), keys...), Aggs: a.Aggs}
	na2.Out = append(na2.Out, a.Out[:g0]...)
	for _, k := range keys {
		f := infs[k]
		f.Hidden = true
		na2.Out = append(na2.Out, f)
	}
	na2.Out = append(na2.Out, a.Out[g0:]...)
	// Back to the bound layout: group keys, aggregates, then the correlation keys.
	nk := len(keys)
	var exprs []expr.Expr
	var out []plan.Field
	for _, c := range joinLayout(g0, g0+nk, na, na) {
		exprs = append(exprs, expr.Column(c, na2.Out[c].Type))
		out = append(out, na2.Out[c])
	}
	// One row per group: at most one per correlation value when the
	// aggregation had no GROUP BY of its own.
	res := &decorrelated{node: &plan.Project{Input: na2, Exprs: exprs, Out: out}, atMostOne: g0 == 0}
	for i, other := range outerSides {
		eq, err := expr.Call("=", []expr.Expr{expr.Column(g0+na+i, infs[keys[i]].Type), other})
		if err != nil {
			return nil, err
		}
		res.conds = append(res.conds, eq)
	}
	if len(a.GroupBy) == 0 {
		res.scalarAgg, res.marker = true, g0+na
		for _, call := range a.Aggs {
			res.emptyVals = append(res.emptyVals, expr.Literal(call.Agg.NewState().Result(), call.Agg.Result))
		}
	}
	return res, nil
}

// decorrelateLimit plans a LIMIT (after an optional ORDER BY) over a
// correlated input as a top-N per correlation value (row_number over the
// partition of each correlation equality's inner column), which is what
// the subquery returns for each outer row.
func (b *Binder) decorrelateLimit(l *plan.Limit) (*decorrelated, error) {
	if l.Offset != nil {
		if k, ok := l.Offset.(*expr.Const); !ok || k.Value.Null || k.Value.I != 0 {
			return nil, errCorrelated("OFFSET over outer columns is not supported")
		}
	}
	if l.Count == nil {
		return b.decorrelate(l.Input, false)
	}
	k, ok := l.Count.(*expr.Const)
	if !ok || k.Value.Null {
		return nil, errCorrelated("LIMIT over outer columns must be a constant")
	}
	input := l.Input
	var order []plan.SortKey
	if s, ok := input.(*plan.Sort); ok {
		input, order = s.Input, s.Keys
	}
	in, err := b.decorrelate(input, false)
	if err != nil {
		return nil, err
	}
	var part []int
	for _, c := range in.conds {
		col, _, ok := correlationEq(c)
		if !ok {
			return nil, errCorrelated("LIMIT over a subquery correlated by other than equalities is not supported")
		}
		part = append(part, col.Index)
	}
	fs := in.node.Schema()
	rank := "row_number"
	if l.Ties != nil {
		rank = "rank" // FETCH ... WITH TIES: the rows ranked within the count
	}
	w := &plan.Window{Input: in.node, Funcs: []plan.WindowFunc{{Name: rank, PartitionBy: part, OrderBy: slices.Clone(order), Frame: plan.DefaultFrame(), Type: types.TInt64}},
		Out: append(slices.Clone(fs), plan.Field{Name: rank, Type: types.TInt64, Hidden: true})}
	le, err := expr.Call("<=", []expr.Expr{expr.Column(len(fs), types.TInt64), expr.Literal(types.DInt(k.Value.I), types.TInt64)})
	if err != nil {
		return nil, err
	}
	in.node = trimColumns(&plan.Filter{Input: w, Cond: le}, len(fs))
	in.atMostOne = in.atMostOne || (k.Value.I <= 1 && l.Ties == nil)
	return in, nil
}

// correlationEq recognises "inner column = expression over outer columns only".
func correlationEq(c expr.Expr) (*expr.ColumnRef, expr.Expr, bool) {
	call, ok := c.(*expr.FuncExpr)
	if !ok || call.Name != "=" || len(call.Args) != 2 {
		return nil, nil, false
	}
	for side := 0; side < 2; side++ {
		col, ok := stripCast(call.Args[side]).(*expr.ColumnRef)
		other := call.Args[1-side]
		if !ok || !onlyOuter(other) {
			continue
		}
		return col, other, true
	}
	return nil, nil, false
}

// stripCast removes a cast between integer types (which keeps equality).
func stripCast(e expr.Expr) expr.Expr {
	if c, ok := e.(*expr.CastExpr); ok && c.Input.Type().IsInteger() && c.Type().IsInteger() {
		return c.Input
	}
	return e
}

// onlyOuter reports whether e reads outer references and no column.
func onlyOuter(e expr.Expr) bool {
	ok := true
	visitExpr(e, func(x expr.Expr) {
		if _, col := x.(*expr.ColumnRef); col {
			ok = false
		}
	})
	return ok && exprHasOuter(e)
}

// applied is a decorrelated subquery ready to join the enclosing query's
// input (nl columns): conds and values are over the joined row (the
// input's columns, then right's).
type applied struct {
	right     plan.Node
	conds     []expr.Expr
	values    []expr.Expr // the subquery's output columns
	scalarAgg bool        // at most one right row per input row, none for an empty group (values cover it)
	atMostOne bool        // at most one right row per input row
	// left is the input to join right with: the enclosing query's input,
	// perhaps with computed join keys appended (hidden).
	left plan.Node
}

// peelSet strips what cannot change a subquery's answer to EXISTS (exists:
// the select list, DISTINCT, ORDER BY, a LIMIT of at least one row) or IN
// (DISTINCT, ORDER BY).
func peelSet(n plan.Node, exists bool) plan.Node {
	for {
		switch x := n.(type) {
		case *plan.Project:
			if !exists {
				return n
			}
			n = x.Input
		case *plan.Sort:
			n = x.Input
		case *plan.Distinct:
			if len(x.On) > 0 {
				return n
			}
			n = x.Input
		case *plan.Limit:
			if !exists || x.Offset != nil || x.Count == nil {
				return n
			}
			k, ok := x.Count.(*expr.Const)
			if !ok || k.Value.Null || k.Value.I < 1 {
				return n
			}
			n = x.Input
		default:
			return n
		}
	}
}

// apply decorrelates subquery plan sub for a join with left, the enclosing
// query's input; domain has left's first columns and (at least) its rows.
// The projections on top of sub are evaluated above the join, so they may
// read outer columns.
func (b *Binder) apply(sub, left, domain plan.Node) (*applied, error) {
	nl := len(left.Schema())
	saved := b.applyLeft
	b.applyLeft = domain
	defer func() { b.applyLeft = saved }()
	var projs []*plan.Project
	core := sub
	for {
		p, ok := core.(*plan.Project)
		if !ok {
			break
		}
		projs = append(projs, p)
		core = p.Input
	}
	d, err := b.decorrelate(core, true)
	if err != nil {
		return nil, err
	}
	if hasOuter(d.node) {
		return nil, errCorrelated("this form is not supported")
	}
	outer := func(e expr.Expr) expr.Expr {
		if r, ok := e.(*outerRef); ok {
			if r.depth == 1 {
				return expr.Column(r.index, r.typ)
			}
			return &outerRef{depth: r.depth - 1, index: r.index, typ: r.typ}
		}
		return nil
	}
	joined := func(e expr.Expr) expr.Expr {
		if c, ok := e.(*expr.ColumnRef); ok {
			return expr.Column(nl+c.Index, c.Typ)
		}
		return outer(e)
	}
	res := &applied{right: d.node, scalarAgg: d.scalarAgg, atMostOne: d.atMostOne || d.scalarAgg}
	if !res.atMostOne {
		// Equalities on a key of the subquery's rows (a table's primary key).
		var eqCols []int
		for _, c := range d.conds {
			if col, _, ok := correlationEq(c); ok {
				eqCols = append(eqCols, col.Index)
			}
		}
		res.atMostOne = uniqueBy(d.node, eqCols)
	}
	if res.conds, err = mapExprs(d.conds, joined); err != nil {
		return nil, err
	}
	cf := core.Schema()
	cur := make([]expr.Expr, len(cf))
	var empty []expr.Expr
	for i, f := range cf {
		cur[i] = expr.Column(nl+i, f.Type)
	}
	if d.scalarAgg {
		empty = slices.Clone(d.emptyVals)
	}
	for k := len(projs) - 1; k >= 0; k-- {
		through := func(vals []expr.Expr) func(expr.Expr) expr.Expr {
			return func(e expr.Expr) expr.Expr {
				if c, ok := e.(*expr.ColumnRef); ok {
					return vals[c.Index]
				}
				return outer(e)
			}
		}
		next, err := mapExprs(projs[k].Exprs, through(cur))
		if err != nil {
			return nil, err
		}
		if d.scalarAgg {
			if empty, err = mapExprs(projs[k].Exprs, through(empty)); err != nil {
				return nil, err
			}
		}
		cur = next
	}
	if d.scalarAgg {
		// An input row without inner rows: the values over an empty group.
		marker := expr.Column(nl+d.marker, d.node.Schema()[d.marker].Type)
		isNull, err := expr.Call("is_null", []expr.Expr{marker})
		if err != nil {
			return nil, err
		}
		for i := range cur {
			e, err := expr.Fold(empty[i])
			if err != nil {
				return nil, err
			}
			if k, ok := e.(*expr.Const); ok && k.Value.Null {
				continue
			}
			if cur[i], err = expr.Case(nil, []expr.Expr{isNull}, []expr.Expr{e}, cur[i]); err != nil {
				return nil, err
			}
		}
	}
	res.values = cur
	res.left = left
	return res, keyColumns(res, nl)
}

// keyColumns turns each correlation equality "expression over the input
// = subquery column" whose expression is not a column into an equi-join
// key: the expression becomes a hidden column appended to the input
// (res.left), and the subquery's columns, one place further right per key,
// are renumbered in the conditions and values.
func keyColumns(res *applied, nl int) error {
	var extra []expr.Expr
	var at []int // the condition each extra key comes from
	for i, c := range res.conds {
		call, ok := c.(*expr.FuncExpr)
		if !ok || call.Name != "=" || len(call.Args) != 2 {
			continue
		}
		for side := 0; side < 2; side++ {
			r, ok := intColumn(call.Args[1-side])
			if !ok || r.Index < nl {
				continue
			}
			e := call.Args[side]
			if _, plain := intColumn(e); plain || !inputOnly(e, nl) {
				continue
			}
			extra = append(extra, e)
			at = append(at, i)
			break
		}
	}
	if len(extra) == 0 {
		return nil
	}
	m := len(extra)
	shift := func(e expr.Expr) expr.Expr {
		if c, ok := e.(*expr.ColumnRef); ok && c.Index >= nl {
			return expr.Column(c.Index+m, c.Typ)
		}
		return nil
	}
	var err error
	if res.conds, err = mapExprs(res.conds, shift); err != nil {
		return err
	}
	if res.values, err = mapExprs(res.values, shift); err != nil {
		return err
	}
	for j, i := range at {
		call, ok := res.conds[i].(*expr.FuncExpr)
		if !ok {
			return types.Errorf(types.ErrInternal, "correlation key %s is not an equality", res.conds[i])
		}
		for side := 0; side < 2; side++ {
			if r, ok := intColumn(call.Args[1-side]); ok && r.Index >= nl {
				args := []expr.Expr{expr.Column(nl+j, extra[j].Type()), call.Args[1-side]}
				if res.conds[i], err = expr.Call("=", args); err != nil {
					return err
				}
				break
			}
		}
	}
	fs := res.left.Schema()
	exprs := make([]expr.Expr, 0, nl+m)
	out := slices.Clone(fs)
	for i, f := range fs {
		exprs = append(exprs, expr.Column(i, f.Type))
	}
	for _, e := range extra {
		exprs = append(exprs, e)
		out = append(out, plan.Field{Name: "?key?", Type: e.Type(), Hidden: true})
	}
	res.left = &plan.Project{Input: res.left, Exprs: exprs, Out: out}
	return nil
}

// inputOnly reports whether e reads columns below nl only (and no outer
// reference): it can be computed on the join's input side.
func inputOnly(e expr.Expr, nl int) bool {
	ok := true
	visitExpr(e, func(x expr.Expr) {
		switch y := x.(type) {
		case *expr.ColumnRef:
			if y.Index >= nl {
				ok = false
			}
		case *outerRef:
			ok = false
		}
	})
	return ok
}

// lateralJoin plans "left [LEFT] JOIN LATERAL (subquery) ON conds" when the
// subquery reads left's columns: a join on the correlation, then the
// subquery's columns computed over the joined row. conds are over left's
// columns and the subquery's output (the layout of the result).
func (b *Binder) lateralJoin(j *plan.Join, conds []expr.Expr) (plan.Node, error) {
	lf, rf := j.Left.Schema(), j.Right.Schema()
	nl := len(lf)
	a, err := b.apply(j.Right, j.Left, j.Left)
	if err != nil {
		return nil, err
	}
	kind := j.Kind
	var on, after []expr.Expr
	if a.scalarAgg {
		// One row per left row (aggregates over an empty group included):
		// a left join on the correlation, the ON condition a filter after.
		if kind == plan.LeftJoin && len(conds) > 0 {
			return nil, errCorrelated("LEFT JOIN LATERAL over an aggregate needs ON true")
		}
		kind, after = plan.LeftJoin, conds
	} else if on, err = mapExprs(conds, func(e expr.Expr) expr.Expr {
		// The ON condition reads the subquery's values over the joined row.
		if c, ok := e.(*expr.ColumnRef); ok && c.Index >= nl {
			return a.values[c.Index-nl]
		}
		return nil
	}); err != nil {
		return nil, err
	}
	node, err := b.finishJoin(&plan.Join{Kind: kind, Left: a.left, Right: a.right}, append(a.conds, on...))
	if err != nil {
		return nil, err
	}
	exprs := make([]expr.Expr, 0, nl+len(rf))
	for i, f := range lf {
		exprs = append(exprs, expr.Column(i, f.Type))
	}
	exprs = append(exprs, a.values...)
	node = &plan.Project{Input: node, Exprs: exprs, Out: append(slices.Clone(lf), rf...)}
	if len(after) > 0 {
		cond, err := expr.AndAll(after)
		if err != nil {
			return nil, err
		}
		node = &plan.Filter{Input: node, Cond: cond}
	}
	return node, nil
}

// joinDomain handles correlation conditions other than equalities under an
// aggregation (RisingWave's domain): in.node is joined with the distinct
// values of the outer columns the conditions read, taken from the
// enclosing query's input, on the conditions; afterwards in.node has those
// values appended and in.conds holds one outer reference per value (what
// each appended column equals). Only comparisons are allowed, so an outer
// NULL matches no inner row, as the subquery would see none.
func (b *Binder) joinDomain(in *decorrelated) error {
	if b.applyLeft == nil {
		return errCorrelated("this form is not supported")
	}
	var refs []*outerRef
	pos := map[int]int{}
	for _, c := range in.conds {
		for _, conj := range expr.Conjuncts(c) {
			if !strictComparison(conj) {
				return errCorrelated("an aggregating subquery may be correlated only by comparisons, not %s", conj)
			}
		}
		bad := false
		visitExpr(c, func(x expr.Expr) {
			r, ok := x.(*outerRef)
			if !ok {
				return
			}
			if r.depth != 1 {
				bad = true
				return
			}
			if _, seen := pos[r.index]; !seen {
				pos[r.index] = len(refs)
				refs = append(refs, r)
			}
		})
		if bad {
			return errCorrelated("an aggregating subquery correlated with a query two levels out is not supported")
		}
	}
	lf := b.applyLeft.Schema()
	exprs := make([]expr.Expr, len(refs))
	out := make([]plan.Field, len(refs))
	for k, r := range refs {
		exprs[k] = expr.Column(r.index, r.typ)
		out[k] = lf[r.index]
		out[k].Hidden = false
	}
	domain := &plan.Distinct{Input: &plan.Project{Input: b.applyLeft, Exprs: exprs, Out: out}}
	nin := len(in.node.Schema())
	conds, err := mapExprs(in.conds, func(e expr.Expr) expr.Expr {
		if r, ok := e.(*outerRef); ok {
			return expr.Column(nin+pos[r.index], r.typ)
		}
		return nil
	})
	if err != nil {
		return err
	}
	j, err := b.finishJoin(&plan.Join{Kind: plan.InnerJoin, Left: in.node, Right: domain}, conds)
	if err != nil {
		return err
	}
	in.node = j
	in.conds = in.conds[:0]
	for _, r := range refs {
		in.conds = append(in.conds, r)
	}
	return nil
}

// strictComparison reports whether e is a comparison (=, <>, <, <=, >, >=,
// BETWEEN) of expressions that are NULL when an input is: never true when
// an outer column is NULL.
func strictComparison(e expr.Expr) bool {
	call, ok := e.(*expr.FuncExpr)
	if !ok {
		return false
	}
	switch call.Name {
	case "=", "<>", "<", "<=", ">", ">=", "between":
	default:
		return false
	}
	for _, a := range call.Args {
		if !nullPropagating(a) {
			return false
		}
	}
	return true
}

// nullPropagating reports whether e is NULL whenever a column it reads is:
// columns, constants, casts and arithmetic.
func nullPropagating(e expr.Expr) bool {
	switch x := e.(type) {
	case *expr.ColumnRef, *outerRef, *expr.Const:
		return true
	case *expr.CastExpr:
		return nullPropagating(x.Input)
	case *expr.FuncExpr:
		switch x.Name {
		case "+", "-", "*", "/", "%", "neg":
		default:
			return false
		}
		for _, a := range x.Args {
			if !nullPropagating(a) {
				return false
			}
		}
		return true
	}
	return false
}

// uniqueBy reports whether n has at most one row per value of cols: they
// cover the primary key of the scanned table (through filters and column
// projections) or an aggregation's group keys.
func uniqueBy(n plan.Node, cols []int) bool {
	for depth := 0; depth < types.MaxNesting; depth++ {
		switch x := n.(type) {
		case *plan.Scan:
			if len(x.Table.PK) == 0 {
				return false
			}
			for _, k := range x.Table.PK {
				if !slices.Contains(cols, k) {
					return false
				}
			}
			return true
		case *plan.Agg:
			for k := range x.GroupBy {
				if !slices.Contains(cols, k) {
					return false
				}
			}
			return true
		case *plan.Filter:
			n = x.Input
		case *plan.Sort:
			n = x.Input
		case *plan.Project:
			var in []int
			for _, c := range cols {
				if r, ok := x.Exprs[c].(*expr.ColumnRef); ok {
					in = append(in, r.Index)
				}
			}
			n, cols = x.Input, in
		default:
			return false
		}
	}
	return false
}
