package physical

import (
	"slices"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/planner/plan"
)

// Materialize wraps sq.Root for the MV or index rel (rel.Columns == sq.Columns; rel.PK is sq.PK, or
// for an index the indexed columns and then sq.PK): an exchange hashing by rel's distribution key,
// then StreamMaterialize.
func Materialize(sq *StreamQuery, rel *catalog.Relation) plan.StreamNode {
	dist := rel.DistKey() // an index's indexed columns, else the pk
	in := exchange(sq.Root, plan.DistHash, dist)
	return &plan.StreamMaterialize{Input: in, Relation: rel, PK: slices.Clone(rel.PK), Dist: slices.Clone(dist)}
}

// AggStateInView lets a hash aggregation directly under a materialized view (root, from
// Materialize) keep its groups in the view's table (plan.StreamAgg.ViewState) when the
// view's rows are exactly its output, keyed and distributed by its group columns, and
// the view's row of a group holds all its state (plan.StateInView). Call it before
// AssignState, for jobs planned with catalog.StateVersion 4 or later.
func AggStateInView(root plan.StreamNode) {
	m, ok := root.(*plan.StreamMaterialize)
	if !ok || m.Relation.Kind != catalog.KindMaterializedView {
		return
	}
	a, ok := m.Input.(*plan.StreamAgg)
	if !ok || !plan.StateInView(a) {
		return
	}
	view := m.StateLayouts()[0]
	g := len(a.GroupBy)
	keys := make([]int, g)
	for i := range keys {
		keys[i] = i
	}
	if !slices.Equal(view.PK, keys) || !slices.Equal(view.Dist, keys) || slices.Contains(view.PKDesc, true) ||
		!slices.Equal(view.Types, plan.Types(a.Out)) {
		return
	}
	a.ViewState = &view
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
