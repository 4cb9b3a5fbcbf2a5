package bind

import (
	"errors"
	"fmt"
	"slices"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/test_driver"
	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/parser"
	"github.com/tributary/tributary/sql/types"
)

// SystemRows produces a system table's rows from the catalog at bind time.
// The session installs it (catalog/system.go provides the default).
type SystemRows func(rel *catalog.Relation) ([][]types.Datum, error)

// WithSystemRows sets the provider of system-table rows.
func (b *Binder) WithSystemRows(f SystemRows) *Binder {
	b.systemRows = f
	return b
}

func (b *Binder) bindFrom(n ast.ResultSetNode) (plan.Node, error) {
	switch n := n.(type) {
	case *ast.Join:
		return b.bindJoin(n)
	case *ast.TableSource:
		return b.bindTableSource(n)
	case *ast.SelectStmt, *ast.SetOprStmt:
		node, err := b.bindResultSet(n)
		if err != nil {
			return nil, err
		}
		return node, nil
	}
	return nil, types.Errorf(types.ErrUnsupported, "FROM item %T is not supported", n)
}

func (b *Binder) bindTableSource(ts *ast.TableSource) (plan.Node, error) {
	alias := ts.AsName.O
	var node plan.Node
	var err error
	switch src := ts.Source.(type) {
	case *ast.TableName:
		node, err = b.bindTableName(src, alias)
	case *ast.SelectStmt, *ast.SetOprStmt:
		node, err = b.bindResultSet(src.(ast.ResultSetNode))
		if err == nil {
			// Without an alias (PostgreSQL 16, RisingWave) the subquery's
			// columns can be referenced only unqualified.
			node = renamed(node, alias, nil)
		}
	default:
		return nil, types.Errorf(types.ErrUnsupported, "FROM item %T is not supported", src)
	}
	if err != nil {
		return nil, err
	}
	names := b.aliasColumns[alias]
	for _, c := range ts.ColumnNames {
		names = append(names, c.O)
	}
	if len(names) > 0 {
		if len(names) > len(visible(node.Schema())) {
			return nil, types.Errorf(types.ErrInvalidColumnRef, "table \"%s\" has %d columns available but %d columns specified", alias, len(visible(node.Schema())), len(names))
		}
		node = renamed(node, alias, names)
	}
	return node, nil
}

func visible(fs []plan.Field) []plan.Field {
	var out []plan.Field
	for _, f := range fs {
		if !f.Hidden {
			out = append(out, f)
		}
	}
	return out
}

// renamed re-labels a node's output: table qualifier and optionally column names.
func renamed(n plan.Node, table string, names []string) plan.Node {
	fields := n.Schema()
	out := requalify(fields, table)
	k := 0
	for i := range out {
		if out[i].Hidden {
			continue
		}
		if k < len(names) {
			out[i].Name = names[k]
		}
		k++
	}
	exprs := make([]expr.Expr, len(fields))
	for i, f := range fields {
		exprs[i] = expr.Column(i, f.Type)
	}
	return &plan.Project{Input: n, Exprs: exprs, Out: out}
}

func (b *Binder) bindTableName(tn *ast.TableName, alias string) (plan.Node, error) {
	name := tn.Name.O
	if tf, ok := b.tableFuncs[name]; ok {
		return b.bindTableFunc(tf, alias)
	}
	if b.relations++; b.relations > maxRelations {
		return nil, types.Errorf(types.ErrProgramLimit, "statement references more than %d relations (a WITH query counts at each reference)", maxRelations)
	}
	procTime, err := procTimeClause(tn)
	if err != nil {
		return nil, err
	}
	if tn.Schema.O == "" {
		if work, ok := b.recursiveRef(name); ok {
			if alias == "" {
				alias = name
			}
			return renamed(work, alias, nil), nil
		}
		if c := b.lookupCTE(name); c != nil {
			if procTime {
				return nil, errTemporalRight(name, "a WITH query")
			}
			if c.active && c.inRecursive {
				return nil, types.Errorf(types.ErrUnsupported, "mutual recursion between WITH items is not implemented")
			}
			c.active = true
			var node plan.Node
			var err error
			if c.recursive {
				node, err = b.bindRecursiveCTE(name, c)
			} else {
				saved := b.ctes
				b.ctes = c.visible
				if sel, ok := takeChangelog(c.query); ok {
					if node, err = b.bindResultSet(sel); err == nil {
						node = plan.NewChangelog(node)
					}
				} else {
					node, err = b.bindResultSet(c.query)
				}
				b.ctes = saved
			}
			c.active = false
			if err != nil {
				return nil, err
			}
			if alias == "" {
				alias = name
			}
			return renamed(node, alias, c.columns), nil
		}
	}
	rel, ref, err := b.lookupRef(tn.Schema.O, name)
	if err != nil {
		if tn.Schema.O == "" && errors.Is(err, types.ErrUndefinedTable) && b.declaredCTE(name) {
			return nil, &types.Error{Kind: types.ErrUndefinedTable, Msg: fmt.Sprintf("relation \"%s\" does not exist", name),
				Detail: fmt.Sprintf("There is a WITH item named \"%s\", but it cannot be referenced from this part of the query.", name),
				Hint:   "Use WITH RECURSIVE, or re-order the WITH items to remove forward references."}
		}
		return nil, err
	}
	if alias == "" {
		alias = name // as written: a stored definition keeps its qualifiers after a rename
	}
	var indexCols []int
	var index *catalog.Relation
	if rel.Kind == catalog.KindIndex && rel.Index != nil {
		index = rel
		// RisingWave reads an index as a relation (PostgreSQL refuses: 42809):
		// its rows are its table's, so read the table, with the indexed
		// columns first as RisingWave's index shows them.
		table, ok := b.cat.ByID(rel.Index.Table)
		if !ok {
			return nil, types.Errorf(types.ErrUndefinedTable, "relation \"%s\" does not exist", name)
		}
		rel, indexCols = table, rel.Index.Columns
	}
	if rel.Kind == catalog.KindSource && rel.Connector != nil && len(rel.Columns) == 0 {
		// A CDC source: its tables hold the rows.
		return nil, types.Errorf(types.ErrWrongObjectType, "cannot read source \"%s\": a %s source holds no rows; query the tables created FROM it (CREATE TABLE t (columns, PRIMARY KEY (...)) FROM %s TABLE 'schema.table')",
			rel.Name, rel.Connector.Name(), rel.Name)
	}
	if rel.Kind != catalog.KindSystem && !slices.Contains(b.deps, rel.ID) {
		b.deps = append(b.deps, rel.ID)
	}
	if rel.Kind != catalog.KindSystem && b.inView == 0 && !slices.Contains(b.direct, rel.ID) {
		b.direct = append(b.direct, rel.ID)
	}
	if procTime && rel.Kind != catalog.KindTable && rel.Kind != catalog.KindMaterializedView && rel.Kind != catalog.KindIndex {
		return nil, errTemporalRight(name, "a "+rel.Kind.String())
	}
	switch rel.Kind {
	case catalog.KindView:
		b.inView++
		defer func() { b.inView-- }()
		stmts, err := parser.Parse(rel.Definition)
		if err != nil || len(stmts) != 1 {
			return nil, types.Errorf(types.ErrInternal, "view %s has a broken definition", rel.Name)
		}
		q, ok := stmts[0].(*parser.Query)
		if !ok {
			return nil, types.Errorf(types.ErrInternal, "view %s has a broken definition", rel.Name)
		}
		saved, savedRefs := b.tableFuncs, b.refs
		b.tableFuncs, b.refs = q.TableFuncs, rel.Refs
		node, err := b.bindResultSet(q.Node.(ast.ResultSetNode))
		b.tableFuncs, b.refs = saved, savedRefs
		if err != nil {
			return nil, err
		}
		names := make([]string, 0, len(rel.Columns))
		for i, c := range rel.Columns {
			if ref != nil && i < len(ref.Columns) {
				c.Name = ref.Columns[i]
			}
			names = append(names, c.Name)
		}
		return renamed(node, alias, names), nil
	case catalog.KindSystem:
		if b.systemRows == nil {
			return nil, types.Errorf(types.ErrUnsupported, "system table %s is not available here", rel.Name)
		}
		b.system = true
		rows, err := b.systemRows(rel)
		if err != nil {
			return nil, err
		}
		vals := make([][]expr.Expr, len(rows))
		for i, r := range rows {
			vals[i] = make([]expr.Expr, len(rel.Columns))
			for j := range rel.Columns {
				vals[i][j] = expr.Literal(r[j], rel.Columns[j].Type)
			}
		}
		return &plan.Values{Rows: vals, Out: relFields(rel, alias)}, nil
	case catalog.KindSink:
		return nil, types.Errorf(types.ErrWrongObjectType, "\"%s\" is a sink and cannot be queried", rel.Name)
	}
	node, err := scanPinned(rel, ref, alias)
	if err == nil && procTime {
		err = b.markProcTime(node, index)
	}
	if err != nil || indexCols == nil {
		return node, err
	}
	in := node.Schema()
	order := slices.Clone(indexCols)
	for i := range in {
		if !slices.Contains(order, i) {
			order = append(order, i)
		}
	}
	p := &plan.Project{Input: node}
	for _, i := range order {
		if i >= len(in) {
			continue
		}
		p.Exprs = append(p.Exprs, expr.Column(i, in[i].Type))
		p.Out = append(p.Out, in[i])
	}
	return p, nil
}

// procTimeClause reads a table name's AS OF clause: only the parser's
// rewrite of FOR SYSTEM_TIME AS OF PROCTIME() is accepted.
func procTimeClause(tn *ast.TableName) (bool, error) {
	if tn.AsOf == nil {
		return false, nil
	}
	if fc, ok := tn.AsOf.TsExpr.(*ast.FuncCallExpr); ok && fc.FnName.L == parser.ProcTimeMarker && len(fc.Args) == 0 {
		return true, nil
	}
	return false, types.Errorf(types.ErrUnsupported, "AS OF TIMESTAMP is not supported (FOR SYSTEM_TIME AS OF PROCTIME() is)")
}

func errTemporalRight(name, what string) error {
	return types.Errorf(types.ErrUnsupported, "the right side of a temporal join (FOR SYSTEM_TIME AS OF PROCTIME()) must be a table, an index or a materialized view: \"%s\" is %s", name, what)
}

// markProcTime marks the scan under node (a scan, or a projection of one) as
// a temporal join's right side, with the indexes it may look rows up in:
// index alone when the query named it, else every index of the relation
// that holds its columns.
func (b *Binder) markProcTime(node plan.Node, index *catalog.Relation) error {
	for {
		switch n := node.(type) {
		case *plan.Project:
			node = n.Input
			continue
		case *plan.Scan:
			n.ProcTime = true
			if index != nil {
				n.Indexes = []*catalog.Relation{index}
				return nil
			}
			for _, idx := range catalog.IndexesOf(b.cat.Relations(), n.Table.ID) {
				if sameColumns(idx, n.Table) {
					n.Indexes = append(n.Indexes, idx)
				}
			}
			return nil
		}
		return types.Errorf(types.ErrInternal, "temporal join: %s is not a scan", node.Describe())
	}
}

// scanPinned scans rel; ref, when set, is how the stored definition being
// bound pinned it.
func scanPinned(rel *catalog.Relation, ref *catalog.Ref, alias string) (plan.Node, error) {
	out := relFields(rel, alias)
	if ref == nil {
		return &plan.Scan{Table: rel, Alias: alias, Out: out}, nil
	}
	// A stored definition sees the columns it knew, by position, under the
	// names it knew; columns added since are projected away right at the
	// scan, so the plan above (and its state) stays as it was.
	for i := range out {
		if i < len(ref.Columns) && !rel.Columns[i].Dropped {
			out[i].Name = ref.Columns[i]
		}
	}
	scan := &plan.Scan{Table: rel, Alias: alias, Out: out}
	if len(out) <= len(ref.Columns) {
		return scan, nil
	}
	exprs := make([]expr.Expr, len(ref.Columns))
	for i := range exprs {
		exprs[i] = expr.Column(i, out[i].Type)
	}
	return &plan.Project{Input: scan, Exprs: exprs, Out: slices.Clone(out[:len(ref.Columns)])}, nil
}

// lookupRef resolves a relation name: as the stored definition being bound
// pins it (b.refs), else in the catalog. The statement's own resolutions
// are collected for Refs.
func (b *Binder) lookupRef(schema, name string) (*catalog.Relation, *catalog.Ref, error) {
	for i := range b.refs {
		r := &b.refs[i]
		if r.Schema == schema && r.Name == name {
			if rel, ok := b.cat.ByID(r.ID); ok {
				b.see(schema, name, rel, r.Columns)
				return rel, r, nil
			}
		}
	}
	cat := b.cat
	if p, ok := cat.(catalog.Path); ok && b.inView > 0 && b.refs == nil {
		// A view whose names were never pinned meant them as CREATE, on
		// the default path, saw them; not with this session's path.
		cat = p.Catalog
	}
	rel, err := cat.Lookup(schema, name)
	if err != nil {
		return nil, nil, err
	}
	if rel.Kind != catalog.KindSystem {
		names := make([]string, len(rel.Columns))
		for i, c := range rel.Columns {
			names[i] = c.Name
		}
		b.see(schema, name, rel, names)
	}
	return rel, nil, nil
}

// see records a resolution of the statement's own (not a view's).
func (b *Binder) see(schema, name string, rel *catalog.Relation, cols []string) {
	if b.inView > 0 {
		return
	}
	for _, r := range b.seen {
		if r.Schema == schema && r.Name == name {
			return
		}
	}
	b.seen = append(b.seen, catalog.Ref{Schema: schema, Name: name, ID: rel.ID, Columns: cols})
}

// relFields are rel's columns as a scan's output; a dropped column is
// hidden and has no name.
func relFields(rel *catalog.Relation, alias string) []plan.Field {
	out := make([]plan.Field, len(rel.Columns))
	for i, c := range rel.Columns {
		out[i] = plan.Field{Name: c.Name, Table: alias, Type: c.Type, Hidden: c.Hidden, Rel: rel.ID, Col: int16(i + 1)}
		if c.Dropped {
			out[i].Name, out[i].Hidden = "", true
		}
	}
	return out
}

func (b *Binder) bindTableFunc(tf *parser.TableFunc, alias string) (plan.Node, error) {
	switch tf.Name {
	case "generate_series":
		return b.generateSeries(tf, alias)
	case "range":
		return b.rangeSeries(tf, alias)
	case "unnest":
		return b.unnestFunc(tf, alias)
	case "tumble", "hop":
		return b.windowTVF(tf, alias)
	case "gap_fill":
		return b.gapFill(tf, alias)
	}
	return b.scalarFuncInFrom(tf, alias)
}

// scalarFuncInFrom is a scalar function in FROM (`SELECT * FROM abs(-1)`),
// as in PostgreSQL: one row of one column, named by the column alias, else
// the table alias, else the function.
func (b *Binder) scalarFuncInFrom(tf *parser.TableFunc, alias string) (plan.Node, error) {
	if tf.Ordinality {
		return nil, types.Errorf(types.ErrUnsupported, "WITH ORDINALITY over the scalar function %s is not supported", tf.Name)
	}
	c := &exprCtx{scope: &scope{}, clause: "functions in FROM"}
	e, err := b.bindExpr(c, &ast.FuncCallExpr{FnName: ast.NewCIStr(tf.Name), Args: tf.Args})
	if err != nil {
		return nil, err
	}
	name, table := tf.Name, tf.Name
	if alias != "" {
		name, table = alias, alias
	}
	if len(tf.ColumnAliases) > 0 {
		name = tf.ColumnAliases[0]
	}
	return &plan.Project{Input: &plan.Values{Rows: [][]expr.Expr{{}}}, Exprs: []expr.Expr{e},
		Out: []plan.Field{{Name: name, Table: table, Type: e.Type()}}}, nil
}

func (b *Binder) bindJoin(j *ast.Join) (plan.Node, error) {
	if err := b.nest(); err != nil {
		return nil, err
	}
	defer b.unnest()
	left, err := b.bindFrom(j.Left)
	if err != nil {
		return nil, err
	}
	if j.Right == nil {
		return left, nil
	}
	var right plan.Node
	lateral := false
	if ts, ok := j.Right.(*ast.TableSource); ok && ts.Lateral {
		// LATERAL: the FROM items to its left are in scope.
		leave := b.enter(&scope{fields: left.Schema()})
		right, err = b.bindTableSource(ts)
		leave()
		lateral = err == nil && hasOuter(right)
	} else {
		saved := b.unnestLeft
		if b.isUnnestCall(j.Right) {
			b.unnestLeft = left // its argument may read left's columns
		}
		right, err = b.bindFrom(j.Right)
		b.unnestLeft = saved
	}
	if err != nil {
		return nil, err
	}
	if u, ok := right.(*plan.Unnest); ok && u.Input == left {
		return b.lateralUnnest(j, u)
	}
	kind := plan.InnerJoin
	switch j.Tp {
	case ast.LeftJoin:
		kind = plan.LeftJoin
	case ast.RightJoin:
		kind = plan.RightJoin
	}
	var onExpr ast.ExprNode
	if j.On != nil {
		onExpr = j.On.Expr
		// FULL JOIN arrives as JOIN ... ON pg__full_join(cond) from the parser's rewrite.
		if fc, ok := onExpr.(*ast.FuncCallExpr); ok && fc.FnName.L == "pg__full_join" {
			kind = plan.FullJoin
			onExpr = fc.Args[0]
		}
	}
	join := &plan.Join{Kind: kind, Left: left, Right: right}
	lf, rf := left.Schema(), right.Schema()
	all := join.Schema()
	sc := &scope{fields: all}
	var conds []expr.Expr
	if lateral && (j.NaturalJoin || len(j.Using) > 0 || (kind != plan.InnerJoin && kind != plan.LeftJoin)) {
		return nil, errCorrelated("LATERAL with NATURAL, USING, RIGHT or FULL joins is not supported")
	}
	if j.NaturalJoin || len(j.Using) > 0 {
		var names []string
		if j.NaturalJoin {
			for _, f := range lf {
				if f.Hidden {
					continue
				}
				for _, g := range rf {
					if !g.Hidden && g.Name == f.Name {
						names = append(names, f.Name)
					}
				}
			}
		}
		for _, u := range j.Using {
			names = append(names, u.Name.O)
		}
		for _, name := range names {
			li, err := (&scope{fields: lf}).resolve("", name)
			if err != nil {
				return nil, err
			}
			ri, err := (&scope{fields: rf}).resolve("", name)
			if err != nil {
				return nil, err
			}
			eq, err := expr.Call("=", []expr.Expr{expr.Column(li, lf[li].Type), expr.Column(len(lf)+ri, rf[ri].Type)})
			if err != nil {
				return nil, err
			}
			conds = append(conds, eq)
		}
		// USING columns appear once: hide the right side's copies (for inner/left joins).
		node, err := b.finishJoin(join, conds)
		if err != nil {
			return nil, err
		}
		return hideUsing(node, len(lf), names, kind), nil
	}
	var site *applySite
	if onExpr != nil {
		c := &exprCtx{scope: sc, clause: "JOIN conditions"}
		if kind == plan.InnerJoin && !lateral {
			// An inner join's ON condition may hold correlated subqueries:
			// they join the join's output, and the conditions reading them
			// filter after.
			site = newSite(join)
			c.site = site
		}
		e, err := b.bindExpr(c, onExpr)
		if err != nil {
			return nil, err
		}
		if e, err = b.boolCond(e, "JOIN/ON"); err != nil {
			return nil, err
		}
		conds = expr.Conjuncts(e)
	}
	if lateral {
		return b.lateralJoin(join, dropTrue(conds))
	}
	if site == nil || site.node == plan.Node(join) {
		return b.finishJoin(join, conds)
	}
	width := len(all)
	var own, after []expr.Expr
	for _, c := range conds {
		inJoin := true
		visitExpr(c, func(x expr.Expr) {
			if r, ok := x.(*expr.ColumnRef); ok && r.Index >= width {
				inJoin = false
			}
		})
		if inJoin {
			own = append(own, c)
		} else {
			after = append(after, c)
		}
	}
	// The applied joins read join as their left input: its keys and
	// condition are set in place (its columns do not change).
	if _, err := b.finishJoin(join, own); err != nil {
		return nil, err
	}
	cond, err := expr.AndAll(after)
	if err != nil {
		return nil, err
	}
	return trimColumns(&plan.Filter{Input: site.node, Cond: cond}, width), nil
}

// finishJoin splits conjuncts into equi-keys (left col = right col) and the rest.
func (b *Binder) finishJoin(j *plan.Join, conds []expr.Expr) (plan.Node, error) {
	nl := len(j.Left.Schema())
	var rest []expr.Expr
	for _, c := range conds {
		if l, r, ok := equiKey(c, nl); ok {
			lt, rt := j.Left.Schema()[l].Type, j.Right.Schema()[r].Type
			if lt.Base() == rt.Base() || (lt.IsInteger() && rt.IsInteger()) {
				j.EqLeft = append(j.EqLeft, l)
				j.EqRight = append(j.EqRight, r)
				continue
			}
		}
		rest = append(rest, c)
	}
	cond, err := expr.AndAll(rest)
	if err != nil {
		return nil, err
	}
	j.Cond = cond
	return j, nil
}

// equiKey recognises "$l = $r" with l on the left side and r on the right.
func equiKey(e expr.Expr, nl int) (int, int, bool) {
	call, ok := e.(*expr.FuncExpr)
	if !ok || call.Name != "=" || len(call.Args) != 2 {
		return 0, 0, false
	}
	a, ok1 := intColumn(call.Args[0])
	c, ok2 := intColumn(call.Args[1])
	if !ok1 || !ok2 {
		return 0, 0, false
	}
	switch {
	case a.Index < nl && c.Index >= nl:
		return a.Index, c.Index - nl, true
	case c.Index < nl && a.Index >= nl:
		return c.Index, a.Index - nl, true
	}
	return 0, 0, false
}

// intColumn unwraps a column reference, also under an integer widening cast
// (int2/int4 = int8 join keys share one physical layout and hash equal).
func intColumn(e expr.Expr) (*expr.ColumnRef, bool) {
	if c, ok := e.(*expr.CastExpr); ok && c.To.IsInteger() && c.Input.Type().IsInteger() {
		e = c.Input
	}
	cr, ok := e.(*expr.ColumnRef)
	return cr, ok
}

// hideUsing marks the duplicate USING columns hidden (right side for inner/left
// joins; for right/full joins the visible column is coalesce(left, right)).
func hideUsing(n plan.Node, nl int, names []string, kind plan.JoinKind) plan.Node {
	fields := n.Schema()
	out := append([]plan.Field(nil), fields...)
	exprs := make([]expr.Expr, len(fields))
	for i, f := range fields {
		exprs[i] = expr.Column(i, f.Type)
	}
	for _, name := range names {
		li, ri := -1, -1
		for i := 0; i < nl; i++ {
			if fields[i].Name == name && !fields[i].Hidden {
				li = i
			}
		}
		for i := nl; i < len(fields); i++ {
			if fields[i].Name == name && !fields[i].Hidden {
				ri = i
			}
		}
		if li < 0 || ri < 0 {
			continue
		}
		if kind == plan.RightJoin || kind == plan.FullJoin {
			if e, err := expr.Call("coalesce", []expr.Expr{exprs[li], exprs[ri]}); err == nil {
				exprs[li] = e
				out[li].Rel, out[li].Col = 0, 0
			}
		}
		out[ri].Hidden = true
	}
	return &plan.Project{Input: n, Exprs: exprs, Out: out}
}

// generateSeries plans generate_series(start, stop[, step]) over integers
// (the arguments' type: integer or bigint) or timestamps (with an interval step).
func (b *Binder) generateSeries(tf *parser.TableFunc, alias string) (plan.Node, error) {
	c := &exprCtx{scope: &scope{}, clause: "FROM"}
	args, err := b.bindExprs(c, tf.Args)
	if err != nil {
		return nil, err
	}
	if len(args) < 2 || len(args) > 3 {
		return nil, types.Errorf(types.ErrUndefinedFunction, "function generate_series with %d arguments does not exist", len(args))
	}
	t, err := expr.CommonType([]types.T{args[0].Type(), args[1].Type()})
	if err != nil {
		return nil, err
	}
	switch {
	case t.ID == types.Timestamp || t.ID == types.Timestamptz:
	case t.ID == types.Int16 || t.ID == types.Int32 || t.ID == types.Unknown:
		t = types.TInt32
	case t.ID == types.Int64:
	default:
		return nil, types.Errorf(types.ErrUndefinedFunction, "function generate_series(%s, %s) does not exist", args[0].Type(), args[1].Type())
	}
	stepType := t
	if t.IsTemporal() {
		stepType = types.TInterval
		if len(args) < 3 {
			return nil, types.Errorf(types.ErrUndefinedFunction, "function generate_series(%s, %s) does not exist", t, t)
		}
	}
	bound := make([]expr.Expr, 3)
	for i, a := range args {
		want := t
		if i == 2 {
			want = stepType
		}
		if bound[i], err = b.cast(b.coerceParam(a, want), want); err != nil {
			return nil, err
		}
	}
	n := &plan.Series{Start: bound[0], Stop: bound[1], Step: bound[2], Out: seriesFields(tf, alias, t)}
	if n.Step == nil {
		n.Step = expr.Literal(types.DInt(1), t)
	}
	if t.IsTemporal() {
		if n.Add, err = expr.Call("+", []expr.Expr{expr.Column(0, t), expr.Column(1, types.TInterval)}); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// unnestFunc plans unnest(array) [WITH ORDINALITY]: the element column, named
// by the alias's column list, the alias or "unnest", then "ordinality". On
// the right of a join (b.unnestLeft) the argument may read the left side's
// columns: the result then has the left side as Input, and its columns
// first (lateralUnnest finishes the join).
func (b *Binder) unnestFunc(tf *parser.TableFunc, alias string) (plan.Node, error) {
	left := b.unnestLeft
	b.unnestLeft = nil
	sc := &scope{}
	if left != nil {
		sc.fields = left.Schema()
	}
	c := &exprCtx{scope: sc, clause: "FROM"}
	args, err := b.bindExprs(c, tf.Args)
	if err != nil {
		return nil, err
	}
	if len(args) != 1 {
		return nil, types.Errorf(types.ErrUnsupported, "unnest with %d arguments is not supported", len(args))
	}
	arr := args[0]
	if arr.Type().ID == types.Unknown {
		if _, ok := arr.(*expr.ParamRef); ok {
			return nil, types.Errorf(types.ErrIndeterminateDatatype, "could not determine polymorphic type because input has type unknown")
		}
		return nil, types.Errorf(types.ErrUndefinedFunction, "function unnest(unknown) is not unique")
	}
	if arr.Type().ID != types.Array {
		return nil, types.Errorf(types.ErrUndefinedFunction, "function unnest(%s) does not exist", arr.Type())
	}
	out := seriesFields(tf, alias, arr.Type().ElemType())
	if alias == "" && len(tf.ColumnAliases) == 0 {
		out[0].Name, out[0].Table = "unnest", "unnest"
	}
	if tf.Ordinality {
		name := "ordinality"
		if len(tf.ColumnAliases) > 1 {
			name = tf.ColumnAliases[1]
		}
		out = append(out, plan.Field{Name: name, Table: out[0].Table, Type: types.TInt64})
	}
	if left != nil && readsColumns(arr) {
		return &plan.Unnest{Input: left, Array: arr, Ordinality: tf.Ordinality, Out: append(slices.Clone(left.Schema()), out...)}, nil
	}
	return &plan.Unnest{Array: arr, Ordinality: tf.Ordinality, Out: out}, nil
}

// isUnnestCall reports whether n is an unnest(...) call in FROM (the
// parser's placeholder table for it), not a subquery or join holding one.
func (b *Binder) isUnnestCall(n ast.ResultSetNode) bool {
	ts, ok := n.(*ast.TableSource)
	if !ok {
		return false
	}
	tn, ok := ts.Source.(*ast.TableName)
	if !ok {
		return false
	}
	tf, ok := b.tableFuncs[tn.Name.O]
	return ok && tf.Name == "unnest"
}

func readsColumns(e expr.Expr) bool {
	found := false
	expr.Walk(e, func(x expr.Expr) bool {
		if _, ok := x.(*expr.ColumnRef); ok {
			found = true
		}
		return !found
	})
	return found
}

// lateralUnnest finishes "left [INNER | CROSS | LEFT] JOIN unnest(f(left))
// [ON cond]" (also "FROM left, unnest(...)"): u, whose output is already the
// join's layout, with the ON condition as a filter over it; a LEFT join
// keeps left rows with no element (ON true only).
func (b *Binder) lateralUnnest(j *ast.Join, u *plan.Unnest) (plan.Node, error) {
	if j.NaturalJoin || len(j.Using) > 0 || j.Tp == ast.RightJoin {
		return nil, errCorrelated("unnest of a column with NATURAL, USING or RIGHT joins is not supported")
	}
	var cond ast.ExprNode
	if j.On != nil {
		cond = j.On.Expr
		if fc, ok := cond.(*ast.FuncCallExpr); ok && fc.FnName.L == "pg__full_join" {
			return nil, errCorrelated("unnest of a column with a FULL join is not supported")
		}
	}
	if j.Tp == ast.LeftJoin {
		if cond != nil && !isTrueLiteral(cond) {
			return nil, errCorrelated("LEFT JOIN unnest(...) of a column needs ON true")
		}
		u.Outer = true
		return u, nil
	}
	if cond == nil {
		return u, nil
	}
	c := &exprCtx{scope: &scope{fields: u.Out}, clause: "JOIN conditions"}
	e, err := b.bindExpr(c, cond)
	if err != nil {
		return nil, err
	}
	if e, err = b.boolCond(e, "JOIN/ON"); err != nil {
		return nil, err
	}
	return &plan.Filter{Input: u, Cond: e}, nil
}

// dropTrue removes the conjuncts that are the constant true (ON true).
func dropTrue(conds []expr.Expr) []expr.Expr {
	var out []expr.Expr
	for _, c := range conds {
		if k, ok := c.(*expr.Const); ok && k.Typ.ID == types.Bool && !k.Value.Null && k.Value.I == 1 {
			continue
		}
		out = append(out, c)
	}
	return out
}

func isTrueLiteral(n ast.ExprNode) bool {
	v, ok := n.(*test_driver.ValueExpr)
	if !ok {
		return false
	}
	switch v.Datum.Kind() {
	case test_driver.KindInt64:
		return v.Datum.GetInt64() == 1
	case test_driver.KindUint64:
		return v.Datum.GetUint64() == 1
	}
	return false
}

func seriesFields(tf *parser.TableFunc, alias string, t types.T) []plan.Field {
	name := "generate_series"
	if alias != "" {
		name = alias
	}
	if len(tf.ColumnAliases) > 0 {
		name = tf.ColumnAliases[0]
	}
	if alias == "" {
		alias = "generate_series"
	}
	return []plan.Field{{Name: name, Table: alias, Type: t}}
}

// rangeSeries is RisingWave's range(start, stop [, step]): generate_series
// without stop itself (its column named range). The step must be a constant
// (its sign says which side of stop to stop at).
func (b *Binder) rangeSeries(tf *parser.TableFunc, alias string) (plan.Node, error) {
	gs := *tf
	gs.Name = "generate_series"
	node, err := b.generateSeries(&gs, alias)
	if err != nil {
		return nil, err
	}
	n, ok := node.(*plan.Series)
	if !ok || !expr.IsConst(n.Step) {
		return nil, types.Errorf(types.ErrUnsupported, "range() needs a constant step")
	}
	step, err := n.Step.EvalRow(nil, nil)
	if err != nil {
		return nil, err
	}
	t := n.Stop.Type()
	var back expr.Expr // what takes stop itself out: one unit towards start
	neg := false
	if t.IsTemporal() {
		back = expr.Literal(types.DInterval(types.IntervalValue{Micros: 1}), types.TInterval)
		neg = !step.Null && (step.Iv.Months < 0 || step.Iv.Days < 0 || step.Iv.Micros < 0)
	} else {
		back = expr.Literal(types.DInt(1), t)
		neg = !step.Null && step.I < 0
	}
	op := "-"
	if neg {
		op = "+"
	}
	if n.Stop, err = expr.Call(op, []expr.Expr{n.Stop, back}); err != nil {
		return nil, err
	}
	if n.Stop.Type() != t {
		if n.Stop, err = b.cast(n.Stop, t); err != nil {
			return nil, err
		}
	}
	if alias == "" && len(tf.ColumnAliases) == 0 {
		for i := range n.Out {
			n.Out[i].Name, n.Out[i].Table = "range", "range"
		}
	}
	return n, nil
}
