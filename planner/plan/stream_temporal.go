package plan

// StateLayouts implements StatefulNode: the live rows (every input column),
// keyed by the filtered column then the input stream key, so the rows to
// retract are a prefix of each vnode's key range. The rows are placed in
// vnodes by the input stream key (one vnode when it is empty): the fragment
// must be hash-distributed by that key (or run one actor) so an actor's rows
// are exactly those of the vnodes it owns.
func (n *StreamTemporalFilter) StateLayouts() []StateTable {
	key := n.Input.StreamKey()
	pk := []int{n.Col}
	for _, k := range key {
		if k != n.Col {
			pk = append(pk, k)
		}
	}
	return []StateTable{{
		Name:  "temporal filter",
		Types: Types(n.Input.Schema()),
		PK:    pk,
		Dist:  append([]int(nil), key...),
	}}
}
