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
