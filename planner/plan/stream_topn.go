package plan

import (
	"slices"

	"github.com/tributary/tributary/sql/types"
)

// TopNStateRow is how StreamTopN keeps an input row in its state table so
// that the table's key order is the ranking order: the row is the input
// columns, then one boolean column per ORDER BY key whose NULL placement
// differs from the key encoding's (NULLs last ascending, first descending),
// then, when nothing else would form a key (no group, order or stream key
// columns: a stream of at most one row), one constant boolean column.
// The key is (group columns, order columns with their flags, stream key
// columns not already in it); the distribution key is the group columns.
type TopNStateRow struct {
	Types  []types.T
	PK     []int
	PKDesc []bool
	Dist   []int
	// NullFlag[i] is the state column of OrderBy[i]'s NULL flag (true for a
	// NULL when NULLs come first, for a value when they come last; always
	// ascending), or -1 when the key needs none.
	NullFlag []int
	// Const is the constant key column, or -1.
	Const int
	// OrderEnd is the number of PK columns holding the group and order keys:
	// rows tie in rank when they agree on PK[:OrderEnd].
	OrderEnd int
}

// StateRow returns the layout of the node's state table rows.
func (n *StreamTopN) StateRow() TopNStateRow {
	return orderedStateRow(n.Input, n.GroupBy, n.OrderBy)
}

// orderedStateRow lays out in's rows for a state table read per group in
// OrderBy order (top-N and over-window input tables).
func orderedStateRow(in StreamNode, groupBy []int, orderBy []SortKey) TopNStateRow {
	l := TopNStateRow{Const: -1}
	for _, f := range in.Schema() {
		l.Types = append(l.Types, f.Type)
	}
	add := func(col int, desc bool) {
		l.PK = append(l.PK, col)
		l.PKDesc = append(l.PKDesc, desc)
	}
	for _, c := range groupBy {
		if !slices.Contains(l.PK, c) {
			add(c, false)
			l.Dist = append(l.Dist, c)
		}
	}
	l.NullFlag = make([]int, len(orderBy))
	for i, k := range orderBy {
		l.NullFlag[i] = -1
		if slices.Contains(l.PK, k.Col) {
			continue // a group column, or an earlier order key: constant here
		}
		if k.NullsFirst != k.Desc {
			l.NullFlag[i] = len(l.Types)
			l.Types = append(l.Types, types.TBool)
			add(l.NullFlag[i], false)
		}
		add(k.Col, k.Desc)
	}
	l.OrderEnd = len(l.PK)
	for _, c := range in.StreamKey() {
		if !slices.Contains(l.PK, c) {
			add(c, false)
		}
	}
	if len(l.PK) == 0 {
		l.Const = len(l.Types)
		l.Types = append(l.Types, types.TBool)
		add(l.Const, false)
	}
	return l
}

// StateLayouts implements StatefulNode: one table holding every input row of
// every group in rank order (the rows beyond the top refill it after
// deletes); over an append-only input, only the rows of each group's top.
func (n *StreamTopN) StateLayouts() []StateTable {
	l := n.StateRow()
	return []StateTable{{Name: "top-n input", Types: l.Types, PK: l.PK, PKDesc: l.PKDesc, Dist: l.Dist}}
}
