package physical

import (
	"slices"

	"github.com/tributary/tributary/planner/plan"
)

// overWindow plans a Window node as a chain of StreamOverWindow operators,
// one per distinct (PARTITION BY, ORDER BY), each after an exchange hashing
// by its partition columns (one actor without them). The functions' columns
// are then moved where the bound plan expects them: after the input
// columns, before the hidden stream-key columns.
func (p *planner) overWindow(n *plan.Window) (plan.StreamNode, error) {
	in, err := p.convert(n.Input)
	if err != nil {
		return nil, err
	}
	w, w2 := len(n.Input.Schema()), len(in.Schema())
	// Group the functions by window, keeping first appearance order.
	var groups [][]int
	for i := range n.Funcs {
		found := false
		for g := range groups {
			if n.Funcs[groups[g][0]].SameWindow(&n.Funcs[i]) {
				groups[g] = append(groups[g], i)
				found = true
				break
			}
		}
		if !found {
			groups = append(groups, []int{i})
		}
	}
	pos := make([]int, len(n.Funcs)) // each function's column in the chain's output
	node := in
	for _, g := range groups {
		funcs := make([]plan.WindowFunc, len(g))
		for k, i := range g {
			funcs[k] = n.Funcs[i]
		}
		node = exchange(node, plan.DistHash, funcs[0].PartitionBy)
		out := slices.Clone(node.Schema())
		for _, i := range g {
			pos[i] = len(out)
			out = append(out, n.Out[w+i])
		}
		node = &plan.StreamOverWindow{Input: node, Funcs: funcs, Out: out}
	}
	order := span(nil, 0, w)
	order = append(order, pos...)
	order = span(order, w, w2)
	// Stream-key columns the over-windows added (partition columns) are
	// already among the input's: nothing else to keep.
	if slices.Equal(order, span(nil, 0, len(node.Schema()))) {
		return node, nil
	}
	return p.reorder(node, order), nil
}

// eowcOverWindow marks an over-window as emitting on window close, or
// refuses it: its first ORDER BY column must be ascending with a watermark,
// and every function's value must be final once the rows a bounded distance
// after it are below the watermark (no percent_rank, cume_dist or ntile, no
// frame ending UNBOUNDED FOLLOWING or RANGE | GROUPS n FOLLOWING).
func eowcOverWindow(x *plan.StreamOverWindow) error {
	order := x.OrderBy()
	if len(order) == 0 || order[0].Desc || !slices.Contains(plan.WatermarkCols(x.Input), order[0].Col) {
		return unsupported("EMIT ON WINDOW CLOSE over a window function needs its ORDER BY to start with an ascending column that has a watermark")
	}
	for i := range x.Funcs {
		f := &x.Funcs[i]
		switch f.Name {
		case "percent_rank", "cume_dist", "ntile":
			return unsupported("EMIT ON WINDOW CLOSE is not supported with %s, which reads the whole partition", f.Name)
		}
		if !f.UsesFrame() {
			continue
		}
		fr := f.Frame.Normal()
		if fr.End.Kind == plan.UnboundedFollowing || (fr.End.Kind == plan.OffsetFollowing && fr.Mode != plan.FrameRows) {
			return unsupported("EMIT ON WINDOW CLOSE is not supported with a frame ending %s", fr.End)
		}
	}
	x.EmitOnWindowClose = true
	return nil
}
