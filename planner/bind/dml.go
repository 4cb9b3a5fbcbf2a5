package bind

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/parser"
	"github.com/tributary/tributary/sql/types"
)

// DefaultExpr binds a column's DEFAULT text (or NULL when none) as a constant
// expression of the column's type.
func (b *Binder) DefaultExpr(col *catalog.Column) (expr.Expr, error) {
	text := col.DefaultSQL()
	if text == "" {
		return expr.Literal(types.NullDatum, col.Type), nil
	}
	stmts, err := parser.Parse("SELECT " + text)
	if err != nil || len(stmts) != 1 {
		return nil, fmt.Errorf("default of column %s: %w", col.Name, err)
	}
	q, ok := stmts[0].(*parser.Query)
	if !ok {
		return nil, fmt.Errorf("default of column %s: not an expression", col.Name)
	}
	sel, ok := q.Node.(*ast.SelectStmt)
	if !ok || len(sel.Fields.Fields) != 1 {
		return nil, fmt.Errorf("default of column %s: not an expression", col.Name)
	}
	e, err := b.bindExpr(&exprCtx{scope: &scope{}, clause: "DEFAULT expressions"}, sel.Fields.Fields[0].Expr)
	if err != nil {
		return nil, err
	}
	return assignCast(e, col)
}

// GeneratedExpr binds rel's column i's generation expression over a row of
// rel (its columns in order, ColumnRef i for column i), cast to the
// column's type. It refuses references to generated columns and volatile
// functions, as PostgreSQL does (42P17).
func (b *Binder) GeneratedExpr(rel *catalog.Relation, i int) (expr.Expr, error) {
	col := &rel.Columns[i]
	stmts, err := parser.Parse("SELECT " + col.Generated)
	if err != nil || len(stmts) != 1 {
		return nil, fmt.Errorf("generation expression of column %s: %w", col.Name, err)
	}
	q, ok := stmts[0].(*parser.Query)
	if !ok {
		return nil, fmt.Errorf("generation expression of column %s: not an expression", col.Name)
	}
	sel, ok := q.Node.(*ast.SelectStmt)
	if !ok || len(sel.Fields.Fields) != 1 {
		return nil, fmt.Errorf("generation expression of column %s: not an expression", col.Name)
	}
	sc := &scope{fields: relFields(rel, rel.Name)}
	e, err := b.bindExpr(&exprCtx{scope: sc, clause: "generation expressions"}, sel.Fields.Fields[0].Expr)
	if err != nil {
		return nil, err
	}
	var bad error
	expr.Walk(e, func(x expr.Expr) bool {
		switch x := x.(type) {
		case *expr.ColumnRef:
			if x.Index < len(rel.Columns) && rel.Columns[x.Index].Generated != "" && bad == nil {
				bad = &types.Error{Kind: types.ErrInvalidDefinition, Msg: "cannot use generated column \"" + rel.Columns[x.Index].Name + "\" in column generation expression",
					Detail: "A generated column cannot reference another generated column."}
			}
		case *expr.FuncExpr:
			if x.Volatility != expr.Immutable && bad == nil {
				bad = types.Errorf(types.ErrInvalidDefinition, "generation expression is not immutable")
			}
		}
		return bad == nil
	})
	if bad != nil {
		return nil, bad
	}
	return assignCast(e, col)
}

// generatedExprs binds every generated column of rel (nil for the others;
// nil when rel has none).
func (b *Binder) generatedExprs(rel *catalog.Relation) ([]expr.Expr, error) {
	var out []expr.Expr
	for i := range rel.Columns {
		if rel.Columns[i].Generated == "" {
			continue
		}
		if out == nil {
			out = make([]expr.Expr, len(rel.Columns))
		}
		e, err := b.GeneratedExpr(rel, i)
		if err != nil {
			return nil, err
		}
		out[i] = e
	}
	return out, nil
}

// withGenerated wraps in (rows of rel's columns) in a projection computing
// rel's generated columns, when it has any.
func withGenerated(in plan.Node, gen []expr.Expr, out []plan.Field) plan.Node {
	if gen == nil {
		return in
	}
	exprs := make([]expr.Expr, len(out))
	for i, f := range out {
		if gen[i] != nil {
			exprs[i] = gen[i]
		} else {
			exprs[i] = expr.Column(i, f.Type)
		}
	}
	return &plan.Project{Input: in, Exprs: exprs, Out: out}
}

// generatedValueError is PostgreSQL's 428C9 for a value written into a
// generated column.
func generatedValueError(col *catalog.Column, update bool) error {
	if update {
		return &types.Error{Kind: types.ErrGeneratedAlways, Msg: fmt.Sprintf("column \"%s\" can only be updated to DEFAULT", col.Name),
			Detail: fmt.Sprintf("Column \"%s\" is a generated column.", col.Name)}
	}
	return &types.Error{Kind: types.ErrGeneratedAlways, Msg: fmt.Sprintf("cannot insert a non-DEFAULT value into column \"%s\"", col.Name),
		Detail: fmt.Sprintf("Column \"%s\" is a generated column.", col.Name)}
}

// identityValueError is PostgreSQL's 428C9 for a value written into a
// GENERATED ALWAYS AS IDENTITY column.
func identityValueError(col *catalog.Column, update bool) error {
	detail := fmt.Sprintf("Column \"%s\" is an identity column defined as GENERATED ALWAYS.", col.Name)
	if update {
		return &types.Error{Kind: types.ErrGeneratedAlways, Msg: fmt.Sprintf("column \"%s\" can only be updated to DEFAULT", col.Name), Detail: detail}
	}
	return &types.Error{Kind: types.ErrGeneratedAlways, Msg: fmt.Sprintf("cannot insert a non-DEFAULT value into column \"%s\"", col.Name),
		Detail: detail, Hint: "Use OVERRIDING SYSTEM VALUE to override."}
}

// assignCast coerces a value to a column's type with assignment rules.
func assignCast(e expr.Expr, col *catalog.Column) (expr.Expr, error) {
	if e.Type() == col.Type {
		return e, nil
	}
	c, err := expr.ImplicitCast(e, col.Type)
	if errors.Is(err, types.ErrDatatypeMismatch) || errors.Is(err, types.ErrCannotCoerce) {
		return nil, types.Errorf(types.ErrDatatypeMismatch, "column \"%s\" is of type %s but expression is of type %s", col.Name, col.Type, e.Type())
	}
	if err != nil {
		return nil, err
	}
	return c, nil
}

func (b *Binder) dmlTable(refs *ast.TableRefsClause) (*catalog.Relation, string, error) {
	if refs == nil {
		return nil, "", types.Errorf(types.ErrSyntax, "missing table")
	}
	j := refs.TableRefs
	var ts *ast.TableSource
	if j != nil && j.Right == nil {
		ts, _ = j.Left.(*ast.TableSource)
	}
	if ts == nil {
		return nil, "", types.Errorf(types.ErrUnsupported, "DML on joins is not supported")
	}
	tn, ok := ts.Source.(*ast.TableName)
	if !ok {
		return nil, "", types.Errorf(types.ErrUnsupported, "DML target must be a table")
	}
	if db, sc := catalog.SplitSchema(tn.Schema.O); db != "" {
		return nil, "", types.Errorf(types.ErrUnsupported, "cross-database references are not implemented: \"%s.%s.%s\"", db, sc, tn.Name.O)
	}
	rel, err := b.cat.Lookup(tn.Schema.O, tn.Name.O)
	if err != nil {
		return nil, "", err
	}
	if rel.Kind != catalog.KindTable {
		return nil, "", types.Errorf(types.ErrWrongObjectType, "cannot change %s \"%s\"", rel.Kind, rel.Name)
	}
	if rel.Connector != nil && rel.Connector.ReadOnly {
		return nil, "", types.Errorf(types.ErrWrongObjectType, "cannot change table \"%s\": it mirrors an upstream table (connector %s); change the upstream", rel.Name, rel.Connector.Name())
	}
	alias := ts.AsName.O
	if alias == "" {
		alias = rel.Name
	}
	return rel, alias, nil
}

// appendOnlyTarget refuses to update or delete rows of an append-only
// table: the jobs reading it rely on its rows only ever being inserted.
func appendOnlyTarget(rel *catalog.Relation, stmt string) error {
	if rel.AppendOnly {
		return types.Errorf(types.ErrUnsupported, "append-only table \"%s\" does not support %s", rel.Name, stmt)
	}
	return nil
}

// Insert binds INSERT.
func (b *Binder) Insert(q *parser.Query) (*plan.Insert, *plan.Query, error) {
	b.tableFuncs, b.aliasColumns = q.TableFuncs, q.AliasColumns
	n := q.Node.(*ast.InsertStmt)
	if n.IsReplace || len(n.OnDuplicate) > 0 {
		return nil, nil, types.Errorf(types.ErrUnsupported, "REPLACE and ON DUPLICATE KEY UPDATE are not supported (use INSERT ... ON CONFLICT)")
	}
	rel, alias, err := b.dmlTable(n.Table)
	if err != nil {
		return nil, nil, err
	}
	// Target columns.
	var target []int
	if len(n.Columns) > 0 {
		seen := map[int]bool{}
		for _, c := range n.Columns {
			idx := rel.ColumnIndex(c.Name.O)
			if idx < 0 || rel.Columns[idx].Hidden {
				return nil, nil, types.Errorf(types.ErrUndefinedColumn, "column \"%s\" of relation \"%s\" does not exist", c.Name.O, rel.Name)
			}
			if seen[idx] {
				return nil, nil, types.Errorf(types.ErrDuplicateColumn, "column \"%s\" specified more than once", c.Name.O)
			}
			seen[idx] = true
			target = append(target, idx)
		}
	} else {
		for i, c := range rel.Columns {
			if !c.Hidden {
				target = append(target, i)
			}
		}
	}
	defaults := make([]expr.Expr, len(rel.Columns))
	for i := range rel.Columns {
		col := &rel.Columns[i]
		if col.Hidden && col.Name == catalog.RowIDColumn {
			defaults[i] = rowIDExpr{}
			continue
		}
		if defaults[i], err = b.DefaultExpr(col); err != nil {
			return nil, nil, err
		}
	}
	var input plan.Node
	out := relFields(rel, alias)
	switch {
	case n.Select != nil:
		src, err := b.bindResultSet(n.Select)
		if err != nil {
			return nil, nil, err
		}
		sf := visible(src.Schema())
		if len(sf) > len(target) {
			return nil, nil, types.Errorf(types.ErrSyntax, "INSERT has more expressions than target columns")
		}
		exprs := append([]expr.Expr(nil), defaults...)
		all := src.Schema()
		k := 0
		for i, f := range all {
			if f.Hidden {
				continue
			}
			col := &rel.Columns[target[k]]
			if col.Generated != "" {
				return nil, nil, generatedValueError(col, false)
			}
			if col.Identity == "a" && !q.OverridingSystem && !q.OverridingUser {
				return nil, nil, identityValueError(col, false)
			}
			if col.Identity != "" && q.OverridingUser {
				k++
				continue
			}
			e, err := assignCast(expr.Column(i, f.Type), col)
			if err != nil {
				return nil, nil, err
			}
			exprs[target[k]] = e
			k++
		}
		input = &plan.Project{Input: src, Exprs: exprs, Out: out}
	default:
		rows := n.Lists
		if len(rows) == 0 {
			rows = [][]ast.ExprNode{{}} // DEFAULT VALUES
		}
		for _, row := range rows[1:] {
			if len(row) != len(rows[0]) { // PostgreSQL checks this before the target columns
				return nil, nil, types.Errorf(types.ErrSyntax, "VALUES lists must all be the same length")
			}
		}
		for _, row := range q.Rows { // the parser's literal rows, after rows
			if len(row) != len(rows[0]) {
				return nil, nil, types.Errorf(types.ErrSyntax, "VALUES lists must all be the same length")
			}
		}
		c := &exprCtx{scope: &scope{}, clause: "VALUES"}
		literal := q.Rows
		var lit *types.Chunk
		if len(literal) > 0 && len(target) == len(defaults) && len(literal[0]) == len(target) {
			if lit = literalChunk(rel, target, literal, plan.Types(out)); lit != nil {
				literal = nil
			}
		}
		vals := make([][]expr.Expr, len(rows)+len(literal))
		// One allocation holds every row's expressions, and one the literal
		// rows' plain constants (literalConst): a 1000-row INSERT made
		// thousands of small ones.
		cells := make([]expr.Expr, len(vals)*len(defaults))
		var consts []expr.Const
		if len(literal) > 0 {
			consts = make([]expr.Const, 0, len(literal)*len(literal[0]))
		}
		for r := range vals {
			var row []ast.ExprNode
			var lits []parser.Literal
			width := 0
			if r < len(rows) {
				row = rows[r]
				width = len(row)
			} else {
				lits = literal[r-len(rows)]
				width = len(lits)
			}
			if width > len(target) {
				return nil, nil, types.Errorf(types.ErrSyntax, "INSERT has more expressions than target columns")
			}
			if len(n.Lists) > 0 && width < len(target) && len(n.Columns) > 0 {
				return nil, nil, types.Errorf(types.ErrSyntax, "INSERT has more target columns than expressions")
			}
			vals[r] = cells[r*len(defaults) : (r+1)*len(defaults) : (r+1)*len(defaults)]
			copy(vals[r], defaults)
			for k := range width {
				col := &rel.Columns[target[k]]
				if lits != nil && lits[k].Kind == parser.LitDefault {
					continue
				}
				if lits == nil {
					if _, isDefault := row[k].(*ast.DefaultExpr); isDefault {
						continue
					}
				}
				if col.Generated != "" {
					return nil, nil, generatedValueError(col, false)
				}
				if col.Identity == "a" && !q.OverridingSystem && !q.OverridingUser {
					return nil, nil, identityValueError(col, false)
				}
				if col.Identity != "" && q.OverridingUser {
					continue
				}
				var e expr.Expr
				if lits != nil {
					if d, ok := literalConst(lits[k], col.Type); ok {
						consts = append(consts, expr.Const{Value: d, Typ: col.Type})
						vals[r][target[k]] = &consts[len(consts)-1]
						continue
					}
					e, err = b.literalValue(c, lits[k])
				} else {
					e, err = b.bindExpr(c, row[k])
				}
				if err != nil {
					return nil, nil, err
				}
				e = b.coerceParam(e, col.Type)
				if e, err = assignCast(e, col); err != nil {
					return nil, nil, err
				}
				vals[r][target[k]] = e
			}
		}
		input = &plan.Values{Rows: vals, Out: out, Lit: lit}
	}
	gen, err := b.generatedExprs(rel)
	if err != nil {
		return nil, nil, err
	}
	input = withGenerated(input, gen, out)
	ins := &plan.Insert{Table: rel, Input: input}
	if q.OnConflict != nil {
		if ins.Conflict, err = b.onConflict(q.OnConflict, rel, alias); err != nil {
			return nil, nil, err
		}
	}
	if ins.Returning, ins.RetOut, err = b.returning(q.Returning, out); err != nil {
		return nil, nil, err
	}
	return ins, b.finish(input), nil
}

func (b *Binder) returning(fields []*ast.SelectField, in []plan.Field) ([]expr.Expr, []plan.Field, error) {
	if len(fields) == 0 {
		return nil, nil, nil
	}
	sc := &scope{fields: in}
	c := &exprCtx{scope: sc, clause: "RETURNING"}
	var exprs []expr.Expr
	var out []plan.Field
	for _, f := range fields {
		if f.WildCard != nil {
			items, err := expandWildcard(sc, f.WildCard)
			if err != nil {
				return nil, nil, err
			}
			for _, it := range items {
				exprs = append(exprs, it.e)
				out = append(out, fieldFor(it.name, it.e, in))
			}
			continue
		}
		e, err := b.bindExpr(c, f.Expr)
		if err != nil {
			return nil, nil, err
		}
		if e.Type().ID == types.Unknown {
			e, _ = expr.Cast(e, types.TVarchar)
		}
		exprs = append(exprs, e)
		out = append(out, fieldFor(columnName(f), e, in))
	}
	return exprs, out, nil
}

// dmlInput plans the rows an UPDATE or DELETE reads: its target's, joined
// with the relations of UPDATE's FROM or DELETE's USING list (from, nil when
// none) as PostgreSQL does, and filtered by where. all are the fields the
// statement's expressions see: the target's columns, then from's. The
// input may carry more columns after those (subqueries' joins).
func (b *Binder) dmlInput(rel *catalog.Relation, alias string, from *ast.TableRefsClause, where ast.ExprNode) (plan.Node, []plan.Field, error) {
	fields := relFields(rel, alias)
	var input plan.Node = &plan.Scan{Table: rel, Alias: alias, Out: fields}
	var join *plan.Join
	if from != nil {
		other, err := b.bindFrom(from.TableRefs)
		if err != nil {
			return nil, nil, err
		}
		for _, f := range other.Schema() {
			if f.Table == alias {
				return nil, nil, types.Errorf(types.ErrDuplicateAlias, "table name \"%s\" specified more than once", alias)
			}
		}
		join = &plan.Join{Kind: plan.InnerJoin, Left: input, Right: other}
		input = join
	}
	all := input.Schema()
	if where == nil {
		return input, all, nil
	}
	input, err := b.bindWhere(input, &scope{fields: all}, where)
	if err != nil {
		return nil, nil, err
	}
	// The WHERE's equalities between the target and the FROM list become
	// the join's keys (a hash join rather than a nested loop).
	if f, ok := input.(*plan.Filter); ok && join != nil && f.Input == join {
		if input, err = b.finishJoin(join, expr.Conjuncts(f.Cond)); err != nil {
			return nil, nil, err
		}
	}
	return input, all, nil
}

// Update binds UPDATE.
func (b *Binder) Update(q *parser.Query) (*plan.Update, *plan.Query, error) {
	b.tableFuncs, b.aliasColumns = q.TableFuncs, q.AliasColumns
	n := q.Node.(*ast.UpdateStmt)
	if n.Order != nil || n.Limit != nil {
		return nil, nil, types.Errorf(types.ErrUnsupported, "UPDATE with ORDER BY/LIMIT is not supported")
	}
	rel, alias, err := b.dmlTable(n.TableRefs)
	if err != nil {
		return nil, nil, err
	}
	if err := appendOnlyTarget(rel, "UPDATE"); err != nil {
		return nil, nil, err
	}
	input, all, err := b.dmlInput(rel, alias, q.From, n.Where)
	if err != nil {
		return nil, nil, err
	}
	sc := &scope{fields: all}
	up := &plan.Update{Table: rel, Joined: q.From != nil}
	// Correlated subqueries in SET join the rows to update (extra columns
	// after the table's, which the update ignores).
	site := newSite(input)
	c := &exprCtx{scope: sc, clause: "UPDATE", site: site}
	seen := map[int]bool{}
	for _, a := range n.List {
		idx := rel.ColumnIndex(a.Column.Name.O)
		if idx < 0 || rel.Columns[idx].Hidden {
			return nil, nil, types.Errorf(types.ErrUndefinedColumn, "column \"%s\" of relation \"%s\" does not exist", a.Column.Name.O, rel.Name)
		}
		if seen[idx] {
			return nil, nil, types.Errorf(types.ErrSyntax, "multiple assignments to same column \"%s\"", a.Column.Name.O)
		}
		seen[idx] = true
		col := &rel.Columns[idx]
		var e expr.Expr
		_, isDefault := a.Expr.(*ast.DefaultExpr)
		if col.Generated != "" {
			if !isDefault {
				return nil, nil, generatedValueError(col, true)
			}
			continue // recomputed from the new row anyway
		}
		if col.Identity == "a" && !isDefault {
			return nil, nil, identityValueError(col, true)
		}
		if isDefault {
			e, err = b.DefaultExpr(col)
		} else {
			e, err = b.bindExpr(c, a.Expr)
			if err == nil {
				e, err = assignCast(b.coerceParam(e, col.Type), col)
			}
		}
		if err != nil {
			return nil, nil, err
		}
		up.Cols = append(up.Cols, idx)
		up.Set = append(up.Set, e)
	}
	input = site.node
	up.Input = input
	if up.Generated, err = b.generatedExprs(rel); err != nil {
		return nil, nil, err
	}
	if up.Returning, up.RetOut, err = b.returning(q.Returning, all); err != nil {
		return nil, nil, err
	}
	return up, b.finish(input), nil
}

// Delete binds DELETE.
func (b *Binder) Delete(q *parser.Query) (*plan.Delete, *plan.Query, error) {
	b.tableFuncs, b.aliasColumns = q.TableFuncs, q.AliasColumns
	n := q.Node.(*ast.DeleteStmt)
	if n.IsMultiTable || n.Order != nil || n.Limit != nil {
		return nil, nil, types.Errorf(types.ErrUnsupported, "this DELETE form is not supported")
	}
	rel, alias, err := b.dmlTable(n.TableRefs)
	if err != nil {
		return nil, nil, err
	}
	if err := appendOnlyTarget(rel, "DELETE"); err != nil {
		return nil, nil, err
	}
	input, all, err := b.dmlInput(rel, alias, q.From, n.Where)
	if err != nil {
		return nil, nil, err
	}
	del := &plan.Delete{Table: rel, Input: input, Joined: q.From != nil}
	if del.Returning, del.RetOut, err = b.returning(q.Returning, all); err != nil {
		return nil, nil, err
	}
	return del, b.finish(input), nil
}

// onConflict binds INSERT's ON CONFLICT: the target must name the primary
// key (its columns, or the constraint <table>_pkey), the only unique
// constraint a table has; DO UPDATE's expressions see the stored row (the
// table's name or alias) and the proposed one (EXCLUDED).
func (b *Binder) onConflict(oc *parser.OnConflict, rel *catalog.Relation, alias string) (*plan.InsertConflict, error) {
	noMatch := types.Errorf(types.ErrInvalidColumnRef, "there is no unique or exclusion constraint matching the ON CONFLICT specification")
	if oc.Constraint != "" && !strings.EqualFold(oc.Constraint, rel.Name+"_pkey") || oc.Constraint != "" && rel.HasRowID() {
		return nil, types.Errorf(types.ErrUndefinedObject, "constraint \"%s\" for table \"%s\" does not exist", oc.Constraint, rel.Name)
	}
	if len(oc.Columns) > 0 {
		if rel.HasRowID() {
			return nil, noMatch
		}
		named := map[int]bool{}
		for _, name := range oc.Columns {
			i := rel.ColumnIndex(name)
			if i < 0 || rel.Columns[i].Hidden {
				return nil, types.Errorf(types.ErrUndefinedColumn, "column \"%s\" does not exist", name)
			}
			named[i] = true
		}
		if len(named) != len(rel.PK) {
			return nil, noMatch
		}
		for _, k := range rel.PK {
			if !named[k] {
				return nil, noMatch
			}
		}
	}
	if oc.DoNothing {
		return &plan.InsertConflict{DoNothing: true}, nil
	}
	if len(oc.Columns) == 0 && oc.Constraint == "" {
		return nil, types.Errorf(types.ErrSyntax, "ON CONFLICT DO UPDATE requires inference specification or constraint name")
	}
	fields := append(relFields(rel, alias), relFields(rel, "excluded")...)
	c := &exprCtx{scope: &scope{fields: fields}, clause: "ON CONFLICT DO UPDATE"}
	ic := &plan.InsertConflict{}
	seen := map[int]bool{}
	for _, a := range oc.Set {
		idx := rel.ColumnIndex(a.Column.Name.O)
		if idx < 0 || rel.Columns[idx].Hidden {
			return nil, types.Errorf(types.ErrUndefinedColumn, "column \"%s\" of relation \"%s\" does not exist", a.Column.Name.O, rel.Name)
		}
		if seen[idx] {
			return nil, types.Errorf(types.ErrSyntax, "multiple assignments to same column \"%s\"", a.Column.Name.O)
		}
		seen[idx] = true
		col := &rel.Columns[idx]
		_, isDefault := a.Expr.(*ast.DefaultExpr)
		if col.Generated != "" {
			if !isDefault {
				return nil, generatedValueError(col, true)
			}
			continue
		}
		if slices.Contains(rel.PK, idx) {
			return nil, types.Errorf(types.ErrUnsupported, "ON CONFLICT DO UPDATE cannot change the primary key column \"%s\"", col.Name)
		}
		var e expr.Expr
		var err error
		if isDefault {
			e, err = b.DefaultExpr(col)
		} else if e, err = b.bindExpr(c, a.Expr); err == nil {
			e, err = assignCast(b.coerceParam(e, col.Type), col)
		}
		if err != nil {
			return nil, err
		}
		ic.Cols = append(ic.Cols, idx)
		ic.Set = append(ic.Set, e)
	}
	if oc.Where != nil {
		w, err := b.bindExpr(c, oc.Where)
		if err != nil {
			return nil, err
		}
		if w.Type().ID != types.Bool && w.Type().ID != types.Unknown {
			return nil, types.Errorf(types.ErrDatatypeMismatch, "argument of WHERE must be type boolean, not type %s", w.Type())
		}
		ic.Where = w
	}
	var err error
	if ic.Generated, err = b.generatedExprs(rel); err != nil {
		return nil, err
	}
	return ic, nil
}

// literalChunk returns an INSERT's literal rows (the parser's, each a value for every
// column, target[k] the column of value k) as a chunk of the columns' types ts, when every
// value binds to a plain constant (literalConst) of a column that is neither generated nor
// an identity; else nil, and the rows bind value by value.
func literalChunk(rel *catalog.Relation, target []int, rows [][]parser.Literal, ts []types.T) *types.Chunk {
	for _, c := range target {
		if col := &rel.Columns[c]; col.Generated != "" || col.Identity != "" {
			return nil
		}
	}
	ch := types.NewChunk(ts, len(rows))
	for _, row := range rows {
		for k, l := range row {
			d, ok := literalConst(l, ts[target[k]])
			if !ok {
				return nil
			}
			ch.Cols[target[k]].Append(&d)
		}
		ch.RowAppended()
	}
	return ch
}
