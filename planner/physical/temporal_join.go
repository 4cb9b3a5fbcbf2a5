package physical

import (
	"slices"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
)

// errDanglingTemporal refuses FOR SYSTEM_TIME AS OF PROCTIME() anywhere but
// on the right side of an inner or left join.
func errDanglingTemporal(rel *catalog.Relation) error {
	return unsupported("FOR SYSTEM_TIME AS OF PROCTIME() on %s is supported only on the right side of an inner or left outer join (a temporal join)", rel.QualifiedName())
}

// temporalRight is the right side of a temporal join as bound: a scan
// marked ProcTime under projections of its columns and filters.
type temporalRight struct {
	scan *plan.Scan
	// cols maps each column of the bound side to the scanned relation's column.
	cols []int
	// conds are the filters' conditions, over the relation's columns.
	conds []expr.Expr
}

// asTemporalRight recognises a temporal join's right side. A ProcTime scan
// under anything else is reported by found (the caller refuses it).
func asTemporalRight(n plan.Node) (r temporalRight, ok bool, found bool) {
	switch x := n.(type) {
	case *plan.Scan:
		if !x.ProcTime {
			return r, false, false
		}
		r.scan, r.cols = x, span(nil, 0, len(x.Out))
		return r, true, true
	case *plan.Project:
		in, ok, found := asTemporalRight(x.Input)
		if !ok {
			return r, false, found
		}
		r = in
		r.cols = make([]int, len(x.Exprs))
		for i, e := range x.Exprs {
			c, isCol := e.(*expr.ColumnRef)
			if !isCol {
				return r, false, true
			}
			r.cols[i] = in.cols[c.Index]
		}
		return r, true, true
	case *plan.Filter:
		in, ok, found := asTemporalRight(x.Input)
		if !ok {
			return r, false, found
		}
		cond, okc := plan.RewriteCols(x.Cond, func(c *expr.ColumnRef) expr.Expr { return expr.Column(in.cols[c.Index], c.Typ) })
		if !okc {
			return r, false, true
		}
		r = in
		r.conds = append(slices.Clone(in.conds), expr.Conjuncts(cond)...)
		return r, true, true
	}
	return r, false, hasProcTime(n)
}

// hasProcTime reports whether a ProcTime scan is in n's subtree.
func hasProcTime(n plan.Node) bool {
	if s, ok := n.(*plan.Scan); ok {
		return s.ProcTime
	}
	for _, c := range n.Children() {
		if hasProcTime(c) {
			return true
		}
	}
	return false
}

// lookupKey reports whether equal values of a left column of type lt and a
// relation column of type rt have one key encoding once cast to rt.
func lookupKey(lt, rt types.T) bool {
	return lt.Base() == rt.Base() || (lt.IsInteger() && rt.IsInteger())
}

// chooseLookup picks where a temporal join looks its rows up: the table when
// the equalities (left column = relation column, pairs) cover its primary
// key; else the index whose key they cover the longest prefix of (at least
// its distribution key); else, without equalities, every row of the table
// (a nested loop). It returns the relation and, per leading key column, the
// pair giving its value.
func chooseLookup(table *catalog.Relation, indexes []*catalog.Relation, pairs [][2]int) (*catalog.Relation, []int, error) {
	prefix := func(rel *catalog.Relation) []int {
		var used []int
		for _, c := range rel.PK {
			k := slices.IndexFunc(pairs, func(p [2]int) bool { return p[1] == c })
			if k < 0 {
				break
			}
			used = append(used, k)
		}
		return used
	}
	distPrefix := func(rel *catalog.Relation) bool {
		d := rel.DistKey()
		return len(d) <= len(rel.PK) && slices.Equal(rel.PK[:len(d)], d)
	}
	if used := prefix(table); len(used) == len(table.PK) && distPrefix(table) {
		return table, used, nil
	}
	var best *catalog.Relation
	var bestUsed []int
	for _, idx := range indexes {
		used := prefix(idx)
		if idx.Index != nil && len(used) >= idx.Index.DistLen && len(used) > len(bestUsed) && distPrefix(idx) {
			best, bestUsed = idx, used
		}
	}
	if best != nil {
		return best, bestUsed, nil
	}
	if len(pairs) == 0 {
		return table, nil, nil
	}
	return nil, nil, unsupported("a temporal join needs equality conditions on the whole primary key of %s (or on the leading columns of one of its indexes, at least those it is distributed by), or none at all", table.QualifiedName())
}

// temporalJoin plans a join whose right side is read as of processing time
// (StreamTemporalJoin): the left side is distributed by the lookup key (by
// its stream key for a nested loop), the right side's filters and the
// equalities not used by the lookup join the condition.
func (p *planner) temporalJoin(n *plan.Join, r temporalRight) (plan.StreamNode, error) {
	rel := r.scan.Table
	if n.Kind != plan.InnerJoin && n.Kind != plan.LeftJoin || n.NullAware || n.MaxOneRow {
		return nil, errDanglingTemporal(rel)
	}
	if len(rel.PK) == 0 && rel.Kind == catalog.KindTable {
		return nil, unsupported("table %s has no primary key to look rows up by", rel.QualifiedName())
	}
	left, err := p.convert(n.Left)
	if err != nil {
		return nil, err
	}
	nl, nl2 := len(n.Left.Schema()), len(left.Schema())
	lf := left.Schema()
	relTypes := rel.ColumnTypes()

	// A lookup the binder moved into the scan is a condition here.
	conds := slices.Clone(r.conds)
	for i, e := range r.scan.Lookup {
		if err := checkExpr(e); err != nil {
			return nil, err
		}
		c := rel.PK[i]
		if r.scan.Index != nil {
			c = r.scan.Index.Index.Columns[i]
		}
		eq, err := expr.Call("=", []expr.Expr{expr.Column(c, relTypes[c]), e})
		if err != nil {
			return nil, err
		}
		conds = append(conds, eq)
	}

	// Equalities usable as lookup keys (left column, relation column).
	var pairs [][2]int
	var other [][2]int // the rest, compared in the condition
	for i := range n.EqLeft {
		pr := [2]int{n.EqLeft[i], r.cols[n.EqRight[i]]}
		if lookupKey(lf[pr[0]].Type, relTypes[pr[1]]) && !slices.ContainsFunc(pairs, func(q [2]int) bool { return q[1] == pr[1] }) {
			pairs = append(pairs, pr)
		} else {
			other = append(other, pr)
		}
	}
	lookup, used, err := chooseLookup(rel, r.scan.Indexes, pairs)
	if err != nil {
		return nil, err
	}
	j := &plan.StreamTemporalJoin{Kind: n.Kind, Table: rel, Lookup: lookup, AppendOnly: AppendOnly(left)}
	for _, k := range used {
		j.KeyLeft = append(j.KeyLeft, pairs[k][0])
	}
	for k, pr := range pairs {
		if !slices.Contains(used, k) {
			other = append(other, pr)
		}
	}

	// The right side's columns: the bound ones, then hidden ones the key
	// and the conditions need.
	j.RightCols = slices.Clone(r.cols)
	j.RightOut = slices.Clone(n.Right.Schema())
	bound := r.scan.Out
	need := func(c int) int {
		if i := slices.Index(j.RightCols, c); i >= 0 {
			return i
		}
		f := bound[c]
		f.Hidden = true
		j.RightCols, j.RightOut = append(j.RightCols, c), append(j.RightOut, f)
		return len(j.RightCols) - 1
	}
	for _, c := range rel.PK {
		need(c)
	}
	// Conditions over the output (left columns as planned, then the right side).
	var all []expr.Expr
	for _, pr := range other {
		eq, err := expr.Call("=", []expr.Expr{expr.Column(pr[0], lf[pr[0]].Type), expr.Column(nl2+need(pr[1]), relTypes[pr[1]])})
		if err != nil {
			return nil, err
		}
		all = append(all, eq)
	}
	for _, c := range conds {
		if err := checkExpr(c); err != nil {
			return nil, err
		}
		m, ok := plan.RewriteCols(c, func(ref *expr.ColumnRef) expr.Expr { return expr.Column(nl2+need(ref.Index), ref.Typ) })
		if !ok {
			return nil, unsupported("condition %s on a temporal join's table is not supported", c)
		}
		all = append(all, m)
	}
	if n.Cond != nil {
		if err := checkExpr(n.Cond); err != nil {
			return nil, err
		}
		m, ok := plan.RewriteCols(n.Cond, func(ref *expr.ColumnRef) expr.Expr {
			if ref.Index < nl {
				return ref
			}
			return expr.Column(nl2+need(r.cols[ref.Index-nl]), ref.Typ)
		})
		if !ok {
			return nil, unsupported("join condition %s is not supported in materialized views", n.Cond)
		}
		all = append(all, m)
	}
	if len(all) > 0 {
		if j.Cond, err = expr.AndAll(all); err != nil {
			return nil, err
		}
	}
	j.Left = left
	j.Left = exchange(left, plan.DistHash, j.DistCols())
	nr := len(r.cols)
	if nl2 == nl && len(j.RightCols) == nr {
		return j, nil
	}
	// Restore the bound layout: left columns, right columns, then the hidden ones of both.
	order := span(nil, 0, nl)
	order = span(order, nl2, nl2+nr)
	order = span(order, nl, nl2)
	order = span(order, nl2+nr, nl2+len(j.RightCols))
	return p.reorder(j, order), nil
}

// Dependencies returns deps followed by the relations sq's temporal joins
// read that deps lacks: an index chosen for a lookup is a dependency of
// the job as much as its table.
func (sq *StreamQuery) Dependencies(deps []uint32) []uint32 {
	out := slices.Clone(deps)
	var walk func(n plan.StreamNode)
	walk = func(n plan.StreamNode) {
		if j, ok := n.(*plan.StreamTemporalJoin); ok && !slices.Contains(out, j.Lookup.ID) {
			out = append(out, j.Lookup.ID)
		}
		for _, in := range n.Inputs() {
			walk(in)
		}
	}
	walk(sq.Root)
	return out
}

// KeepIndexes limits the indexes the temporal joins of q may look rows up
// in to those keep allows: a job planned again (recovery, rescale) reads
// the index it was created with, or its table, never one created since.
func KeepIndexes(q *plan.Query, keep func(id uint32) bool) {
	var walk func(n plan.Node)
	walk = func(n plan.Node) {
		if s, ok := n.(*plan.Scan); ok && s.ProcTime {
			s.Indexes = slices.DeleteFunc(slices.Clone(s.Indexes), func(idx *catalog.Relation) bool { return !keep(idx.ID) })
		}
		for _, c := range n.Children() {
			walk(c)
		}
	}
	walk(q.Root)
}
