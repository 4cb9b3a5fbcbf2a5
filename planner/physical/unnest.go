package physical

import (
	"slices"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/types"
)

// unnest plans unnest of an input column (FROM t, unnest(t.a), or unnest in
// the SELECT list) as a StreamUnnest; its position column, hidden unless
// asked for, makes the stream key unique. unnest of a constant in FROM is
// refused.
func (p *planner) unnest(n *plan.Unnest) (plan.StreamNode, error) {
	if n.Input == nil {
		return nil, unsupported("unnest of a constant in FROM is not supported in materialized views")
	}
	if err := checkExpr(n.Array); err != nil {
		return nil, err
	}
	in, err := p.convert(n.Input)
	if err != nil {
		return nil, err
	}
	out := slices.Clone(n.Out)
	if !n.Ordinality {
		out = append(out, plan.Field{Name: "ordinality", Type: types.TInt64, Hidden: true})
	}
	key := append(slices.Clone(in.StreamKey()), len(out)-1)
	return &plan.StreamUnnest{Input: in, Array: n.Array, Outer: n.Outer, Out: out, Key: key}, nil
}
