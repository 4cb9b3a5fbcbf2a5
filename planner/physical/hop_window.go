package physical

import (
	"slices"

	"github.com/tributary/tributary/planner/plan"
)

func (p *planner) hopWindow(n *plan.HopWindow) (plan.StreamNode, error) {
	in, err := p.convert(n.Input)
	if err != nil {
		return nil, err
	}
	fields := in.Schema()
	w, w2 := len(n.Input.Schema()), len(fields)
	out := append(slices.Clone(fields), n.Out[w], n.Out[w+1])
	hw := &plan.StreamHopWindow{Input: in, TimeCol: n.TimeCol, Slide: n.Slide, Size: n.Size, Out: out}
	if w2 == w {
		return hw, nil
	}
	return p.reorder(hw, append(span(nil, 0, w), append([]int{w2, w2 + 1}, span(nil, w, w2)...)...)), nil
}
