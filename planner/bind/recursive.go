package bind

import (
	"fmt"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
)

// WITH RECURSIVE. A query of a WITH RECURSIVE list that names itself is
// non-recursive-term UNION [ALL] recursive-term: it binds to a
// plan.RecursiveUnion, whose recursive term reads the rows the last round
// added through a plan.WorkTableScan (evaluated iteratively in batch
// queries; refused in materialized views). The checks and errors are
// PostgreSQL's (42P19 for a recursive reference where it cannot be).

// recState is a recursive WITH query while its terms bind: in its
// non-recursive term (work nil) a reference to it is an error; in its
// recursive term it reads the work table.
type recState struct {
	name string
	work *plan.WorkTableScan
}

// refersTo reports whether the query q names the relation name (without a
// schema) anywhere, subqueries included.
func refersTo(q ast.Node, name string) bool {
	v := &refFinder{name: name}
	q.Accept(v)
	return v.count > 0
}

// refFinder counts the references to a relation name, and those inside an
// expression subquery.
type refFinder struct {
	name     string
	count    int
	inSub    int
	subCount int
}

func (v *refFinder) Enter(n ast.Node) (ast.Node, bool) {
	switch n := n.(type) {
	case *ast.SubqueryExpr:
		v.inSub++
	case *ast.TableName:
		if n.Schema.O == "" && n.Name.O == v.name {
			v.count++
			if v.inSub > 0 {
				v.subCount++
			}
		}
	}
	return n, false
}

func (v *refFinder) Leave(n ast.Node) (ast.Node, bool) {
	if _, ok := n.(*ast.SubqueryExpr); ok {
		v.inSub--
	}
	return n, true
}

// bindRecursiveCTE binds a reference to the recursive WITH query c.
func (b *Binder) bindRecursiveCTE(name string, c *cte) (plan.Node, error) {
	set, ok := c.query.(*ast.SetOprStmt)
	if !ok || set.SelectList == nil || len(set.SelectList.Selects) < 2 {
		return nil, &types.Error{Kind: types.ErrInvalidRecursion,
			Msg: fmt.Sprintf("recursive query \"%s\" does not have the form non-recursive-term UNION [ALL] recursive-term", name)}
	}
	sels := set.SelectList.Selects
	last := sels[len(sels)-1]
	var op *ast.SetOprType
	switch s := last.(type) {
	case *ast.SelectStmt:
		op = s.AfterSetOperator
	case *ast.SetOprSelectList:
		op = s.AfterSetOperator
	}
	if op == nil || (*op != ast.Union && *op != ast.UnionAll) {
		return nil, &types.Error{Kind: types.ErrInvalidRecursion,
			Msg: fmt.Sprintf("recursive query \"%s\" does not have the form non-recursive-term UNION [ALL] recursive-term", name)}
	}
	if set.OrderBy != nil {
		return nil, types.Errorf(types.ErrUnsupported, "ORDER BY in a recursive query is not implemented")
	}
	if set.Limit != nil {
		return nil, types.Errorf(types.ErrUnsupported, "LIMIT in a recursive query is not implemented")
	}
	for _, s := range sels[:len(sels)-1] {
		if refersTo(s, name) {
			return nil, types.Errorf(types.ErrInvalidRecursion, "recursive reference to query \"%s\" must not appear within its non-recursive term", name)
		}
	}
	v := &refFinder{name: name}
	last.Accept(v)
	switch {
	case v.subCount > 0:
		return nil, types.Errorf(types.ErrInvalidRecursion, "recursive reference to query \"%s\" must not appear within a subquery", name)
	case v.count > 1:
		return nil, types.Errorf(types.ErrInvalidRecursion, "recursive reference to query \"%s\" must not appear more than once", name)
	}
	if s, ok := last.(*ast.SelectStmt); ok && s.With != nil {
		return nil, types.Errorf(types.ErrUnsupported, "a WITH clause inside a recursive term is not supported")
	}

	saved := b.ctes
	b.ctes = c.visible
	defer func() { b.ctes = saved }()
	pop, err := b.pushCTEs(set.With)
	if err != nil {
		return nil, err
	}
	defer pop()

	// The non-recursive term.
	var base plan.Node
	if len(sels) == 2 {
		switch s := sels[0].(type) {
		case *ast.SelectStmt:
			base, err = b.bindSelect(s)
		case *ast.SetOprSelectList:
			base, err = b.bindSetOprList(s)
		}
	} else {
		base, err = b.bindSetOprList(&ast.SetOprSelectList{Selects: sels[:len(sels)-1]})
	}
	if err != nil {
		return nil, err
	}
	base = finalizeOutput(base)
	fields := base.Schema()
	if len(c.columns) > len(fields) {
		return nil, types.Errorf(types.ErrInvalidColumnRef, "WITH query \"%s\" has %d columns available but %d columns specified", name, len(fields), len(c.columns))
	}
	out := make([]plan.Field, len(fields))
	for i, f := range fields {
		out[i] = plan.Field{Name: f.Name, Type: f.Type}
		if i < len(c.columns) {
			out[i].Name = c.columns[i]
		}
	}

	// The recursive term, reading the work table.
	b.workTables++
	work := &plan.WorkTableScan{Name: name, ID: b.workTables, Out: out}
	if b.recursing == nil {
		b.recursing = map[string]*recState{}
	}
	prev, had := b.recursing[name]
	b.recursing[name] = &recState{name: name, work: work}
	defer func() {
		if had {
			b.recursing[name] = prev
		} else {
			delete(b.recursing, name)
		}
	}()
	var rec plan.Node
	switch s := last.(type) {
	case *ast.SelectStmt:
		rec, err = b.bindSelect(s)
	case *ast.SetOprSelectList:
		rec, err = b.bindSetOprList(s)
	}
	if err != nil {
		return nil, err
	}
	rf := rec.Schema()
	if len(rf) != len(fields) {
		return nil, types.Errorf(types.ErrSyntax, "each UNION query must have the same number of columns")
	}
	ts := make([]types.T, len(fields))
	for i := range fields {
		bt, rt := fields[i].Type, rf[i].Type
		ts[i] = bt
		if bt == rt || rt.ID == types.Unknown {
			continue
		}
		common, err := expr.CommonType([]types.T{bt, rt})
		if err != nil || common != bt {
			overall := rt
			if err == nil {
				overall = common
			}
			return nil, &types.Error{Kind: types.ErrDatatypeMismatch,
				Msg:  fmt.Sprintf("recursive query \"%s\" column %d has type %s in non-recursive term but type %s overall", name, i+1, bt, overall),
				Hint: "Cast the output of the non-recursive term to the correct type."}
		}
	}
	if rec, err = castColumns(rec, ts); err != nil {
		return nil, err
	}
	return &plan.RecursiveUnion{Name: name, ID: work.ID, Base: base, Recursive: rec, All: *op == ast.UnionAll, Out: out}, nil
}

// recursiveRef binds a reference to name while a recursive WITH query of
// that name binds (ok false when there is none).
func (b *Binder) recursiveRef(name string) (plan.Node, bool) {
	st, ok := b.recursing[name]
	if !ok {
		return nil, false
	}
	return st.work, true
}
