package physical

import (
	"slices"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
)

// Materialize wraps sq.Root for the MV or index rel (rel.Columns == sq.Columns; rel.PK is sq.PK, or
// for an index the indexed columns and then sq.PK): an exchange hashing by rel's distribution key,
// then StreamMaterialize.
func Materialize(sq *StreamQuery, rel *catalog.Relation) plan.StreamNode {
	dist := rel.DistKey() // an index's indexed columns, else the pk
	in := exchange(sq.Root, plan.DistHash, dist)
	return &plan.StreamMaterialize{Input: in, Relation: rel, PK: slices.Clone(rel.PK), Dist: slices.Clone(dist)}
}

// AggStateInView lets a hash aggregation right under a materialized view (root, from
// Materialize), or under a projection that only reorders its columns, keep its groups in
// the view's table (plan.StreamAgg.ViewState, ViewCols) when the view's rows are its
// output, keyed and distributed by its group columns, and the view's row of a group holds
// all its state (plan.StateInView). Call it before AssignState, for jobs planned with
// catalog.StateVersion 4 or later.
func AggStateInView(root plan.StreamNode) {
	m, ok := root.(*plan.StreamMaterialize)
	if !ok || m.Relation.Kind != catalog.KindMaterializedView {
		return
	}
	a, cols := aggBelow(m.Input)
	if a == nil || !plan.StateInView(a) {
		return
	}
	view := m.StateLayouts()[0]
	g := len(a.GroupBy)
	keys := make([]int, g) // the group columns' places in the view
	for i := range keys {
		keys[i] = cols[i]
	}
	if !slices.Equal(view.PK, keys) || !slices.Equal(view.Dist, keys) || slices.Contains(view.PKDesc, true) {
		return
	}
	for j, f := range a.Out {
		if view.Types[cols[j]] != f.Type {
			return
		}
	}
	a.ViewState = &view
	for j, c := range cols {
		if c != j {
			a.ViewCols = cols // reordered
			break
		}
	}
}

// aggBelow returns the aggregation under a materialized view's input n, directly or under a
// projection that only reorders its columns (each once, nothing else), and the view column of
// each of its output columns.
func aggBelow(n plan.StreamNode) (*plan.StreamAgg, []int) {
	if a, ok := n.(*plan.StreamAgg); ok {
		cols := make([]int, len(a.Out))
		for j := range cols {
			cols[j] = j
		}
		return a, cols
	}
	p, ok := n.(*plan.StreamProject)
	if !ok {
		return nil, nil
	}
	a, ok := p.Input.(*plan.StreamAgg)
	if !ok || len(p.Exprs) != len(a.Out) {
		return nil, nil
	}
	cols := slices.Repeat([]int{-1}, len(a.Out))
	for i, e := range p.Exprs {
		ref, ok := e.(*expr.ColumnRef)
		if !ok || ref.Index < 0 || ref.Index >= len(cols) || cols[ref.Index] >= 0 {
			return nil, nil
		}
		cols[ref.Index] = i
	}
	return a, cols
}

// AssignState walks root in a fixed (deterministic) order and gives every StatefulNode's layouts ids
// from next() - at creation the lead passes an allocator and records the ids in order; at recovery it
// replays the recorded ids. Layouts that already have an id (Materialize's) keep it.
//
// The order is pre-order (a node before its inputs, inputs left to right),
// layouts in StateLayouts order. Calling it again on the same tree keeps the
// ids assigned before.
func AssignState(root plan.StreamNode, next func() uint32) {
	if s, ok := root.(plan.StatefulNode); ok {
		layouts := s.StateLayouts()
		old := s.State()
		for i := range layouts {
			switch {
			case layouts[i].ID != 0:
			case i < len(old) && old[i].ID != 0:
				layouts[i].ID = old[i].ID
			default:
				layouts[i].ID = next()
			}
		}
		s.SetState(layouts)
	}
	for _, in := range root.Inputs() {
		AssignState(in, next)
	}
}
