package bind

import (
	"github.com/cockroachdb/apd/v3"
	"slices"
	"strconv"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
)

// bindResultSet binds anything that yields rows.
func (b *Binder) bindResultSet(n ast.ResultSetNode) (plan.Node, error) {
	if err := b.nest(); err != nil {
		return nil, err
	}
	defer b.unnest()
	node, err := b.bindResultSetIn(n)
	if err == nil && b.nesting == 1 {
		err = checkPlanDepth(node)
	}
	return node, err
}

func (b *Binder) bindResultSetIn(n ast.ResultSetNode) (plan.Node, error) {
	switch n := n.(type) {
	case *ast.SelectStmt:
		return b.bindSelect(n)
	case *ast.SetOprStmt:
		return b.bindSetOpr(n)
	case *ast.SubqueryExpr:
		return b.bindResultSet(n.Query)
	}
	return nil, types.Errorf(types.ErrUnsupported, "query form %T is not supported", n)
}

func (b *Binder) pushCTEs(w *ast.WithClause) (func(), error) {
	if w == nil {
		return func() {}, nil
	}
	m := map[string]*cte{}
	outer := b.ctes
	for _, c := range w.CTEs {
		cols := make([]string, len(c.ColNameList))
		for i, n := range c.ColNameList {
			cols[i] = n.O
		}
		if _, dup := m[c.Name.O]; dup {
			return nil, types.Errorf(types.ErrDuplicateAlias, "WITH query name \"%s\" specified more than once", c.Name.O)
		}
		before := make(map[string]*cte, len(m))
		for k, v := range m {
			before[k] = v
		}
		visible := append(append([]map[string]*cte(nil), outer...), before)
		if w.IsRecursive {
			// Every query of the list may reference every other, and itself.
			visible = append(append([]map[string]*cte(nil), outer...), m)
		}
		m[c.Name.O] = &cte{query: c.Query.Query, columns: cols, visible: visible,
			recursive: w.IsRecursive && refersTo(c.Query.Query, c.Name.O), inRecursive: w.IsRecursive}
	}
	b.ctes = append(outer, m)
	b.declared = append(b.declared, m)
	return func() {
		b.ctes = outer
		b.declared = b.declared[:len(b.declared)-1]
	}, nil
}

// declaredCTE reports whether a WITH list around the current point names a
// query called name, whether or not it may be referenced here.
func (b *Binder) declaredCTE(name string) bool {
	for _, m := range b.declared {
		if _, ok := m[name]; ok {
			return true
		}
	}
	return false
}

func (b *Binder) lookupCTE(name string) *cte {
	for i := len(b.ctes) - 1; i >= 0; i-- {
		if c, ok := b.ctes[i][name]; ok {
			return c
		}
	}
	return nil
}

// selectItem is one output expression before projection.
type selectItem struct {
	name string
	ast  ast.ExprNode // nil for expanded wildcards
	e    expr.Expr
}

// maxTargetEntries is PostgreSQL's MaxTupleAttributeNumber: a SELECT list
// (after * is expanded) has at most this many entries.
const maxTargetEntries = 1664

var errTooManyTargets = types.Errorf(types.ErrTooManyColumns, "target lists can have at most %d entries", maxTargetEntries)

// withTies reports whether ob is the ORDER BY of a FETCH ... WITH TIES: the
// parser appends the item pg__with_ties(), taken out here (the AST may be
// bound more than once, so the answer is remembered).
func (b *Binder) withTies(ob *ast.OrderByClause) bool {
	if ob == nil {
		return false
	}
	if n := len(ob.Items); n > 0 {
		if f, ok := ob.Items[n-1].Expr.(*ast.FuncCallExpr); ok && f.FnName.L == "pg__with_ties" {
			ob.Items = ob.Items[:n-1]
			if b.ties == nil {
				b.ties = map[*ast.OrderByClause]bool{}
			}
			b.ties[ob] = true
		}
	}
	return b.ties[ob]
}

func (b *Binder) bindSelect(s *ast.SelectStmt) (plan.Node, error) {
	ties := b.withTies(s.OrderBy)
	pop, err := b.pushCTEs(s.With)
	if err != nil {
		return nil, err
	}
	defer pop()
	if s.Kind == ast.SelectStmtKindValues || len(s.Lists) > 0 {
		return nil, types.Errorf(types.ErrUnsupported, "VALUES in this position is not supported")
	}
	if s.LockInfo != nil && s.LockInfo.LockType != ast.SelectLockNone {
		return nil, types.Errorf(types.ErrUnsupported, "SELECT ... FOR UPDATE is not supported")
	}
	if s.SelectIntoOpt != nil {
		return nil, types.Errorf(types.ErrUnsupported, "SELECT INTO is not supported")
	}
	// FROM
	var input plan.Node
	if s.From != nil {
		if input, err = b.bindFrom(s.From.TableRefs); err != nil {
			return nil, err
		}
	} else {
		input = &plan.Values{Rows: [][]expr.Expr{{}}, Out: nil}
	}
	sc := &scope{fields: input.Schema()}
	// WHERE
	if s.Where != nil {
		if input, err = b.bindWhere(input, sc, s.Where); err != nil {
			return nil, err
		}
	}
	fields := s.Fields.Fields
	// DISTINCT ON marker
	var distinctOn []ast.ExprNode
	if len(fields) > 0 && fields[0].Expr != nil {
		if fc, ok := fields[0].Expr.(*ast.FuncCallExpr); ok && fc.FnName.L == "pg__distinct_on" {
			distinctOn = fc.Args
			fields = fields[1:]
		}
	}
	// Aggregation
	needAgg := s.GroupBy != nil || s.Having != nil || hasAggregate(fields, s.Having, s.OrderBy)
	// unnest(...) in the SELECT list
	if u, err := b.bindSelectUnnest(input, sc, fields, needAgg); err != nil {
		return nil, err
	} else if u != input {
		input = u
		sc = &scope{fields: append(slices.Clone(sc.fields), u.Schema()[len(u.Schema())-1])}
	}
	var ab *aggBinding
	if needAgg {
		if input, ab, err = b.planAggregate(input, sc, s, fields); err != nil {
			return nil, err
		}
		sc = &scope{fields: input.Schema(), agg: ab}
	}
	// Correlated subqueries in HAVING, the SELECT list and ORDER BY join the input here.
	site := newSite(input)
	c := &exprCtx{scope: sc, agg: ab, clause: "SELECT", site: site}
	if ab != nil {
		ab.scope = sc
	}
	// HAVING
	if s.Having != nil {
		hc := &exprCtx{scope: sc, agg: ab, clause: "HAVING", site: site}
		cond, err := b.bindExpr(hc, s.Having.Expr)
		if err != nil {
			return nil, err
		}
		if cond, err = b.boolCond(cond, "HAVING"); err != nil {
			return nil, err
		}
		site.node = &plan.Filter{Input: site.node, Cond: cond}
	}
	input = site.node
	// Window functions
	wb := &winBinding{input: input, defs: s.WindowSpecs}
	c.win = wb
	// SELECT list
	if len(fields) > maxTargetEntries {
		return nil, errTooManyTargets
	}
	var items []selectItem
	for _, f := range fields {
		if f.WildCard != nil && ab != nil {
			// SELECT * over a grouping: every column must be a group key
			// (grouping by a table's primary key groups its other columns).
			exp, err := expandWildcard(ab.inScope, f.WildCard)
			if err != nil {
				return nil, err
			}
			for _, it := range exp {
				k := slices.Index(ab.groupStrs, it.e.String())
				if k < 0 {
					name := it.name
					if cr, ok := it.e.(*expr.ColumnRef); ok && ab.inScope.fields[cr.Index].Table != "" {
						name = ab.inScope.fields[cr.Index].Table + "." + name
					}
					return nil, types.Errorf(types.ErrGrouping, "column \"%s\" must appear in the GROUP BY clause or be used in an aggregate function", name)
				}
				items = append(items, selectItem{name: it.name, e: expr.Column(k, it.e.Type())})
			}
			continue
		}
		if f.WildCard != nil {
			exp, err := expandWildcard(sc, f.WildCard)
			if err != nil {
				return nil, err
			}
			items = append(items, exp...)
			continue
		}
		if call, ok := f.Expr.(*ast.FuncCallExpr); ok && call.FnName.L == "pg__field_star" && len(call.Args) == 1 {
			exp, err := b.expandFields(c, call.Args[0])
			if err != nil {
				return nil, err
			}
			items = append(items, exp...)
			continue
		}
		e, err := b.bindExpr(c, f.Expr)
		if err != nil {
			return nil, err
		}
		items = append(items, selectItem{name: columnName(f), ast: f.Expr, e: e})
	}
	if len(items) > maxTargetEntries {
		return nil, errTooManyTargets
	}
	// ORDER BY keys: resolve against output names, ordinals, or input expressions.
	var orderExprs []expr.Expr
	var orderKeys []plan.SortKey
	if s.OrderBy != nil {
		for _, it := range s.OrderBy.Items {
			e, nullsFirst, hasNulls := unwrapNulls(it.Expr)
			idx, bound, err := b.bindOrderItem(c, items, e)
			if err != nil {
				return nil, err
			}
			key := plan.SortKey{Desc: it.Desc, NullsFirst: it.Desc}
			if hasNulls {
				key.NullsFirst = nullsFirst
			}
			if idx >= 0 {
				key.Col = idx
			} else {
				key.Col = len(items) + len(orderExprs)
				orderExprs = append(orderExprs, bound)
			}
			orderKeys = append(orderKeys, key)
		}
	}
	var distinctExprs []expr.Expr
	var distinctCols []int
	for _, d := range distinctOn {
		idx, bound, err := b.bindOrderItem(c, items, d)
		if err != nil {
			return nil, err
		}
		if idx < 0 {
			// The same expression as a hidden ORDER BY key is that column
			// (DISTINCT ON (a) a + b ... ORDER BY a, b).
			for k, oe := range orderExprs {
				if oe.String() == bound.String() {
					idx = len(items) + k
					break
				}
			}
		}
		if idx < 0 {
			idx = len(items) + len(orderExprs) + len(distinctExprs)
			distinctExprs = append(distinctExprs, bound)
		}
		distinctCols = append(distinctCols, idx)
	}
	if site.node != input && len(wb.funcs) > 0 {
		return nil, errCorrelated("window functions next to a subquery reading outer columns are not supported")
	}
	wb.input = site.node
	input = wb.finish()
	if len(wb.funcs) > 0 {
		for i := range items {
			items[i].e = resolveWinRefs(items[i].e)
		}
		for i := range orderExprs {
			orderExprs[i] = resolveWinRefs(orderExprs[i])
		}
		for i := range distinctExprs {
			distinctExprs[i] = resolveWinRefs(distinctExprs[i])
		}
	}
	// Project: items, then hidden order-by columns, then DISTINCT ON keys.
	in := input.Schema()
	exprs := make([]expr.Expr, 0, len(items)+len(orderExprs)+len(distinctExprs))
	out := make([]plan.Field, 0, cap(exprs))
	for _, it := range items {
		exprs = append(exprs, it.e)
		out = append(out, fieldFor(it.name, it.e, in))
	}
	for _, e := range orderExprs {
		exprs = append(exprs, e)
		out = append(out, plan.Field{Name: "?order?", Type: e.Type(), Hidden: true})
	}
	for _, e := range distinctExprs {
		exprs = append(exprs, e)
		out = append(out, plan.Field{Name: "?distinct?", Type: e.Type(), Hidden: true})
	}
	var node plan.Node = &plan.Project{Input: input, Exprs: exprs, Out: out}
	tieKeys := orderKeys
	if s.Distinct || len(distinctOn) > 0 {
		if len(orderExprs) > 0 && len(distinctOn) == 0 {
			return nil, types.Errorf(types.ErrInvalidColumnRef, "for SELECT DISTINCT, ORDER BY expressions must appear in select list")
		}
		if len(distinctOn) > 0 {
			on := distinctCols
			if len(orderKeys) > 0 && !leadingKeysMatch(orderKeys, on) {
				return nil, types.Errorf(types.ErrInvalidColumnRef, "SELECT DISTINCT ON expressions must match initial ORDER BY expressions")
			}
			// DISTINCT ON keeps the first row per key in ORDER BY order: sort first.
			if len(orderKeys) > 0 {
				tieKeys = orderKeys
				node = &plan.Sort{Input: node, Keys: orderKeys}
				orderKeys = nil // Distinct keeps the sorted order
			}
			node = &plan.Distinct{Input: node, On: on}
		} else {
			node = &plan.Distinct{Input: node}
		}
	}
	if len(orderKeys) > 0 {
		node = &plan.Sort{Input: node, Keys: orderKeys}
	}
	if s.Limit != nil {
		if node, err = b.bindLimit(node, s.Limit, ties, tieKeys); err != nil {
			return nil, err
		}
	}
	if len(exprs) > len(items) {
		node = trimColumns(node, len(items))
	}
	return node, nil
}

// trimColumns projects away hidden trailing columns.
// bindSelectUnnest plans unnest(a) in the SELECT list (a set-returning
// function, also inside an expression: unnest(a) || '!') of a query without
// aggregation: the input gets an Unnest computing the element per row, and
// the calls read it (through b.srfCols). Several calls must unnest the same
// array (PostgreSQL would zip different ones); elsewhere unnest is refused.
func (b *Binder) bindSelectUnnest(input plan.Node, sc *scope, fields []*ast.SelectField, needAgg bool) (plan.Node, error) {
	v := &unnestFinder{}
	for _, f := range fields {
		if f.Expr != nil {
			f.Expr.Accept(v)
		}
	}
	if len(v.calls) == 0 {
		return input, nil
	}
	if needAgg {
		return nil, types.Errorf(types.ErrUnsupported, "unnest in the SELECT list of an aggregating query is not supported (unnest in FROM instead)")
	}
	var arr expr.Expr
	for _, call := range v.calls {
		if len(call.Args) != 1 {
			return nil, types.Errorf(types.ErrUnsupported, "unnest with %d arguments is not supported", len(call.Args))
		}
		e, err := b.bindExpr(&exprCtx{scope: sc, clause: "SELECT"}, call.Args[0])
		if err != nil {
			return nil, err
		}
		if e.Type().ID != types.Array {
			return nil, types.Errorf(types.ErrUndefinedFunction, "function unnest(%s) does not exist", e.Type())
		}
		if arr != nil && e.String() != arr.String() {
			return nil, types.Errorf(types.ErrUnsupported, "unnest of different arrays in one SELECT list is not supported")
		}
		arr = e
	}
	in := input.Schema()
	elem := arr.Type().ElemType()
	out := append(slices.Clone(in), plan.Field{Name: "unnest", Type: elem, Hidden: true})
	if b.srfCols == nil {
		b.srfCols = map[ast.ExprNode]expr.Expr{}
	}
	for _, call := range v.calls {
		b.srfCols[call] = expr.Column(len(in), elem)
	}
	return &plan.Unnest{Input: input, Array: arr, Out: out}, nil
}

// unnestFinder collects the unnest calls of an expression, not looking into
// subqueries (which have their own SELECT lists).
type unnestFinder struct{ calls []*ast.FuncCallExpr }

func (v *unnestFinder) Enter(n ast.Node) (ast.Node, bool) {
	switch f := n.(type) {
	case *ast.FuncCallExpr:
		if f.FnName.L == "unnest" && (f.Schema.L == "" || f.Schema.L == "pg_catalog") {
			v.calls = append(v.calls, f)
			return n, true
		}
	case *ast.SubqueryExpr:
		return n, true
	}
	return n, false
}
func (v *unnestFinder) Leave(n ast.Node) (ast.Node, bool) { return n, true }

func trimColumns(n plan.Node, keep int) plan.Node {
	fields := n.Schema()
	exprs := make([]expr.Expr, keep)
	for i := 0; i < keep; i++ {
		exprs[i] = expr.Column(i, fields[i].Type)
	}
	return &plan.Project{Input: n, Exprs: exprs, Out: append([]plan.Field(nil), fields[:keep]...)}
}

func unwrapNulls(e ast.ExprNode) (ast.ExprNode, bool, bool) {
	if fc, ok := e.(*ast.FuncCallExpr); ok {
		switch fc.FnName.L {
		case "pg__nulls_first":
			return fc.Args[0], true, true
		case "pg__nulls_last":
			return fc.Args[0], false, true
		}
	}
	return e, false, false
}

// bindOrderItem resolves an ORDER BY item: an output column name, an ordinal,
// or an expression over the input. It returns the output index or a bound expression.
func (b *Binder) bindOrderItem(c *exprCtx, items []selectItem, n ast.ExprNode) (int, expr.Expr, error) {
	if v, ok := intArg(n); ok {
		if v < 1 || v > len(items) {
			return -1, nil, types.Errorf(types.ErrInvalidColumnRef, "ORDER BY position %d is not in select list", v)
		}
		return v - 1, nil, nil
	}
	if col, ok := n.(*ast.ColumnNameExpr); ok && col.Name.Table.O == "" {
		match := -1
		for i, it := range items {
			if it.name == col.Name.Name.O {
				if match >= 0 && it.e.String() != items[match].e.String() {
					return -1, nil, types.Errorf(types.ErrAmbiguousColumn, "ORDER BY \"%s\" is ambiguous", col.Name.Name.O)
				}
				if match < 0 {
					match = i
				}
			}
		}
		if match >= 0 {
			return match, nil, nil
		}
	}
	e, err := b.bindExpr(c, n)
	if err != nil {
		return -1, nil, err
	}
	for i, it := range items {
		if it.e.String() == e.String() {
			return i, nil, nil
		}
	}
	return -1, e, nil
}

// expandFields binds (s).* in a SELECT list: one item per field of the
// struct s, named after the field.
func (b *Binder) expandFields(c *exprCtx, n ast.ExprNode) ([]selectItem, error) {
	s, err := b.bindExpr(c, n)
	if err != nil {
		return nil, err
	}
	fs := s.Type().StructFields()
	if s.Type().ID != types.Struct {
		return nil, types.Errorf(types.ErrWrongObjectType, "type %s is not composite", s.Type())
	}
	items := make([]selectItem, 0, len(fs))
	for _, f := range fs {
		e, err := expr.Call("pg__field", []expr.Expr{s, expr.Literal(types.DString(f.Name), types.TVarchar)})
		if err != nil {
			return nil, err
		}
		items = append(items, selectItem{name: f.Name, e: e})
	}
	return items, nil
}

func expandWildcard(sc *scope, w *ast.WildCardField) ([]selectItem, error) {
	var out []selectItem
	table := w.Table.O
	for i, f := range sc.fields {
		if f.Hidden || (table != "" && f.Table != table) {
			continue
		}
		out = append(out, selectItem{name: f.Name, e: expr.Column(i, f.Type)})
	}
	if table != "" && len(out) == 0 && !sc.hasTable(table) {
		return nil, types.Errorf(types.ErrUndefinedTable, "missing FROM-clause entry for table \"%s\"", table)
	}
	return out, nil
}

func (b *Binder) boolCond(e expr.Expr, clause string) (expr.Expr, error) {
	e = b.coerceParam(e, types.TBool)
	switch e.Type().ID {
	case types.Bool:
		return e, nil
	case types.Unknown:
		return expr.Cast(e, types.TBool)
	}
	return nil, types.Errorf(types.ErrDatatypeMismatch, "argument of %s must be type boolean, not type %s", clause, e.Type())
}

// bindLimit binds LIMIT and OFFSET; with ties, rows tied with the last one
// on the keys (the ORDER BY) pass too.
func (b *Binder) bindLimit(n plan.Node, l *ast.Limit, ties bool, keys []plan.SortKey) (plan.Node, error) {
	c := &exprCtx{scope: &scope{}, clause: "LIMIT"}
	lim := &plan.Limit{Input: n}
	if ties {
		lim.Ties = slices.Clone(keys)
	}
	bound := func(x ast.ExprNode) (expr.Expr, error) {
		e, err := b.bindExpr(c, x)
		if err != nil {
			return nil, err
		}
		// A LIMIT beyond bigint means no limit: the parser writes OFFSET-only queries so.
		if k, ok := e.(*expr.Const); ok && k.Typ.ID == types.Numeric && !k.Value.Null && k.Value.Dec.Cmp(maxInt64Dec) > 0 {
			return nil, nil
		}
		return b.cast(b.coerceParam(e, types.TInt64), types.TInt64)
	}
	var err error
	if l.Count != nil {
		if lim.Count, err = bound(l.Count); err != nil {
			return nil, err
		}
	}
	if l.Offset != nil {
		if lim.Offset, err = bound(l.Offset); err != nil {
			return nil, err
		}
	}
	return lim, nil
}

func (b *Binder) bindSetOpr(s *ast.SetOprStmt) (plan.Node, error) {
	ties := b.withTies(s.OrderBy)
	pop, err := b.pushCTEs(s.With)
	if err != nil {
		return nil, err
	}
	defer pop()
	node, err := b.bindSetOprList(s.SelectList)
	if err != nil {
		return nil, err
	}
	var tieKeys []plan.SortKey
	if s.OrderBy != nil {
		fields := node.Schema()
		items := make([]selectItem, len(fields))
		for i, f := range fields {
			items[i] = selectItem{name: f.Name, e: expr.Column(i, f.Type)}
		}
		c := &exprCtx{scope: &scope{fields: fields}, clause: "ORDER BY"}
		var keys []plan.SortKey
		for _, it := range s.OrderBy.Items {
			e, nullsFirst, hasNulls := unwrapNulls(it.Expr)
			idx, _, err := b.bindOrderItem(c, items, e)
			if err != nil {
				return nil, err
			}
			if idx < 0 {
				return nil, types.Errorf(types.ErrInvalidColumnRef, "invalid UNION/INTERSECT/EXCEPT ORDER BY clause")
			}
			key := plan.SortKey{Col: idx, Desc: it.Desc, NullsFirst: it.Desc}
			if hasNulls {
				key.NullsFirst = nullsFirst
			}
			keys = append(keys, key)
		}
		node = &plan.Sort{Input: node, Keys: keys}
		tieKeys = keys
	}
	if s.Limit != nil {
		return b.bindLimit(node, s.Limit, ties, tieKeys)
	}
	return node, nil
}

func (b *Binder) bindSetOprList(l *ast.SetOprSelectList) (plan.Node, error) {
	// PostgreSQL gives INTERSECT higher precedence than UNION/EXCEPT: fold
	// INTERSECT runs first, then combine left to right.
	type part struct {
		node plan.Node
		op   *ast.SetOprType
		corr *correspondingBy
	}
	var parts []part
	for _, sel := range l.Selects {
		var n plan.Node
		var op *ast.SetOprType
		var corr *correspondingBy
		var err error
		switch s := sel.(type) {
		case *ast.SelectStmt:
			op = s.AfterSetOperator
			if s, corr, err = takeCorresponding(s); err != nil {
				return nil, err
			}
			n, err = b.bindSelect(s)
		case *ast.SetOprSelectList:
			op = s.AfterSetOperator
			if s, corr, err = takeListCorresponding(s); err != nil {
				return nil, err
			}
			n, err = b.bindSetOprList(s)
		default:
			err = types.Errorf(types.ErrUnsupported, "set operation input %T", sel)
		}
		if err != nil {
			return nil, err
		}
		if len(parts) > 0 && op != nil && (*op == ast.Intersect || *op == ast.IntersectAll) {
			prev := &parts[len(parts)-1]
			combined, err := combineCorresponding(prev.node, n, *op, corr)
			if err != nil {
				return nil, err
			}
			prev.node = combined
			continue
		}
		parts = append(parts, part{node: n, op: op, corr: corr})
	}
	node := parts[0].node
	for _, p := range parts[1:] {
		var err error
		if node, err = combineCorresponding(node, p.node, *p.op, p.corr); err != nil {
			return nil, err
		}
	}
	if l.OrderBy != nil || l.Limit != nil {
		return nil, types.Errorf(types.ErrUnsupported, "ORDER BY/LIMIT inside a parenthesised set operation is not supported")
	}
	return node, nil
}

// takeChangelog reports whether s is "SELECT pg__changelog(), * FROM t", the
// parser's form of a "WITH c AS changelog FROM t" query, and returns it
// without the marker.
func takeChangelog(q ast.ResultSetNode) (*ast.SelectStmt, bool) {
	if sq, ok := q.(*ast.SubqueryExpr); ok {
		q = sq.Query
	}
	s, ok := q.(*ast.SelectStmt)
	if !ok || s.Fields == nil || len(s.Fields.Fields) != 2 {
		return s, false
	}
	fc, ok := s.Fields.Fields[0].Expr.(*ast.FuncCallExpr)
	if !ok || fc.FnName.L != "pg__changelog" {
		return s, false
	}
	cp := *s
	fl := *s.Fields
	fl.Fields = fl.Fields[1:]
	cp.Fields = &fl
	return &cp, true
}

// correspondingBy is a set operation's CORRESPONDING [BY (cols)] clause
// (RisingWave's), marked by the parser as a first select item
// pg__corresponding(cols) of the right-hand query.
type correspondingBy struct {
	by []string // nil: every column name the two sides share
}

// takeCorresponding strips the CORRESPONDING marker from s (returning a
// copy) and returns the clause, or nil when s has none.
func takeCorresponding(s *ast.SelectStmt) (*ast.SelectStmt, *correspondingBy, error) {
	if s.Fields == nil || len(s.Fields.Fields) == 0 {
		return s, nil, nil
	}
	fc, ok := s.Fields.Fields[0].Expr.(*ast.FuncCallExpr)
	if !ok || fc.FnName.L != "pg__corresponding" {
		return s, nil, nil
	}
	c := &correspondingBy{}
	for _, a := range fc.Args {
		col, ok := a.(*ast.ColumnNameExpr)
		if !ok || col.Name.Table.O != "" {
			return nil, nil, types.Errorf(types.ErrSyntax, "CORRESPONDING BY takes a list of column names")
		}
		if slices.Contains(c.by, col.Name.Name.O) {
			return nil, nil, types.Errorf(types.ErrSyntax, "Duplicated column name `%s` in CORRESPONDING BY", col.Name.Name.O)
		}
		c.by = append(c.by, col.Name.Name.O)
	}
	cp := *s
	fl := *s.Fields
	fl.Fields = fl.Fields[1:]
	cp.Fields = &fl
	return &cp, c, nil
}

// takeListCorresponding is takeCorresponding for a parenthesised query,
// whose marker is in its first SELECT.
func takeListCorresponding(l *ast.SetOprSelectList) (*ast.SetOprSelectList, *correspondingBy, error) {
	if len(l.Selects) == 0 {
		return l, nil, nil
	}
	var first ast.Node
	var corr *correspondingBy
	var err error
	switch s := l.Selects[0].(type) {
	case *ast.SelectStmt:
		first, corr, err = takeCorresponding(s)
	case *ast.SetOprSelectList:
		first, corr, err = takeListCorresponding(s)
	}
	if err != nil || corr == nil {
		return l, nil, err
	}
	cp := *l
	cp.Selects = append([]ast.Node{first}, l.Selects[1:]...)
	return &cp, corr, nil
}

// combineCorresponding combines l and r, first matching their columns by
// name when corr is set: the BY list in its order, or else the left side's
// columns that the right side also has.
func combineCorresponding(l, r plan.Node, op ast.SetOprType, corr *correspondingBy) (plan.Node, error) {
	if corr == nil {
		return combineSetOp(l, r, op)
	}
	lf, rf := l.Schema(), r.Schema()
	find := func(fs []plan.Field, name string) (int, error) {
		idx := -1
		for i, f := range fs {
			if f.Name == name {
				if idx >= 0 {
					return -1, types.Errorf(types.ErrSyntax, "Duplicated column name `%s` in a side of the %s operation", name, setOpName(op))
				}
				idx = i
			}
		}
		return idx, nil
	}
	names := corr.by
	if names == nil {
		for _, f := range lf {
			if i, err := find(rf, f.Name); err != nil {
				return nil, err
			} else if i >= 0 && !slices.Contains(names, f.Name) {
				names = append(names, f.Name)
			}
		}
		if len(names) == 0 {
			quote := func(fs []plan.Field) string {
				q := make([]string, len(fs))
				for i, f := range fs {
					q[i] = strconv.Quote(f.Name)
				}
				return "(" + strings.Join(q, ", ") + ")"
			}
			return nil, types.Errorf(types.ErrSyntax, "When CORRESPONDING is specified, at least one column of the left side shall have a column name that is the column name of some column of the right side in a %s operation. Left side query column list: %s. Right side query column list: %s.", setOpName(op), quote(lf), quote(rf))
		}
	}
	var li, ri []int
	for _, name := range names {
		i, err := find(lf, name)
		if err != nil {
			return nil, err
		}
		j, err := find(rf, name)
		if err != nil {
			return nil, err
		}
		if i < 0 || j < 0 {
			return nil, types.Errorf(types.ErrSyntax, "Column name `%s` in CORRESPONDING BY is not found in a side of the %s operation. It shall be included in both sides.", name, setOpName(op))
		}
		li, ri = append(li, i), append(ri, j)
	}
	return combineSetOp(pickColumns(l, li), pickColumns(r, ri), op)
}

// pickColumns projects n to the columns idx, in that order.
func pickColumns(n plan.Node, idx []int) plan.Node {
	fields := n.Schema()
	if len(idx) == len(fields) {
		same := true
		for i, c := range idx {
			same = same && c == i
		}
		if same {
			return n
		}
	}
	exprs := make([]expr.Expr, len(idx))
	out := make([]plan.Field, len(idx))
	for i, c := range idx {
		exprs[i] = expr.Column(c, fields[c].Type)
		out[i] = fields[c]
	}
	return &plan.Project{Input: n, Exprs: exprs, Out: out}
}

func combineSetOp(l, r plan.Node, op ast.SetOprType) (plan.Node, error) {
	lf, rf := l.Schema(), r.Schema()
	if len(lf) != len(rf) {
		return nil, types.Errorf(types.ErrSyntax, "each %s query must have the same number of columns", setOpName(op))
	}
	ts := make([]types.T, len(lf))
	for i := range lf {
		t, err := expr.CommonType([]types.T{lf[i].Type, rf[i].Type})
		if err != nil {
			return nil, types.Errorf(types.ErrDatatypeMismatch, "%s types %s and %s cannot be matched", setOpName(op), lf[i].Type, rf[i].Type)
		}
		if t.ID == types.Unknown {
			t = types.TVarchar
		}
		ts[i] = t
	}
	l, err := castColumns(l, ts)
	if err != nil {
		return nil, err
	}
	r, err = castColumns(r, ts)
	if err != nil {
		return nil, err
	}
	out := make([]plan.Field, len(lf))
	for i := range lf {
		out[i] = plan.Field{Name: lf[i].Name, Type: ts[i]}
	}
	n := &plan.SetOp{Inputs: []plan.Node{l, r}, Out: out}
	switch op {
	case ast.Union:
	case ast.UnionAll:
		n.All = true
	case ast.Intersect:
		n.Kind = plan.Intersect
	case ast.IntersectAll:
		n.Kind, n.All = plan.Intersect, true
	case ast.Except:
		n.Kind = plan.Except
	case ast.ExceptAll:
		n.Kind, n.All = plan.Except, true
	}
	// Flatten UNION ALL chains.
	if n.Kind == plan.Union {
		if inner, ok := l.(*plan.SetOp); ok && inner.Kind == plan.Union && inner.All == n.All {
			n.Inputs = append(append([]plan.Node(nil), inner.Inputs...), r)
		}
	}
	return n, nil
}

func setOpName(op ast.SetOprType) string {
	switch op {
	case ast.Intersect, ast.IntersectAll:
		return "INTERSECT"
	case ast.Except, ast.ExceptAll:
		return "EXCEPT"
	}
	return "UNION"
}

// castColumns projects n's columns to the given types where they differ.
func castColumns(n plan.Node, ts []types.T) (plan.Node, error) {
	fields := n.Schema()
	same := true
	for i := range fields {
		if fields[i].Type != ts[i] {
			same = false
		}
	}
	if same {
		return n, nil
	}
	exprs := make([]expr.Expr, len(fields))
	out := make([]plan.Field, len(fields))
	for i, f := range fields {
		var e expr.Expr = expr.Column(i, f.Type)
		if f.Type != ts[i] {
			var err error
			if e, err = expr.ImplicitCast(e, ts[i]); err != nil {
				return nil, err
			}
		}
		exprs[i] = e
		out[i] = plan.Field{Name: f.Name, Table: f.Table, Type: ts[i]}
	}
	return &plan.Project{Input: n, Exprs: exprs, Out: out}, nil
}

var maxInt64Dec = func() *apd.Decimal {
	d, _, _ := apd.NewFromString("9223372036854775807")
	return d
}()

// leadingKeysMatch reports whether the first len(on) sort keys are the
// DISTINCT ON columns, in any order.
func leadingKeysMatch(keys []plan.SortKey, on []int) bool {
	n := min(len(keys), len(on))
	for _, k := range keys[:n] {
		found := false
		for _, c := range on {
			if k.Col == c {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}
