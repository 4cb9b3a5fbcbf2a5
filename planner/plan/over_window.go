package plan

import (
	"fmt"
	"strings"
)

// StreamOverWindow maintains window functions over a change stream: Funcs
// share one PARTITION BY and ORDER BY (the planner chains one node per
// distinct window). Output: the input columns, then one column per function.
// Every input row is kept in one state table in (partition, order, stream
// key) order, distributed by the partition columns; a change in a partition
// recomputes it and emits the rows whose outputs changed.
type StreamOverWindow struct {
	StateInfo
	Input StreamNode
	Funcs []WindowFunc
	Out   []Field
}

// PartitionBy returns the functions' partition columns.
func (n *StreamOverWindow) PartitionBy() []int { return n.Funcs[0].PartitionBy }

// OrderBy returns the functions' window order.
func (n *StreamOverWindow) OrderBy() []SortKey { return n.Funcs[0].OrderBy }

// StateRow returns the layout of the node's state table rows.
func (n *StreamOverWindow) StateRow() TopNStateRow {
	return orderedStateRow(n.Input, n.PartitionBy(), n.OrderBy())
}

// StateLayouts implements StatefulNode: every input row, by partition in
// window order.
func (n *StreamOverWindow) StateLayouts() []StateTable {
	l := n.StateRow()
	return []StateTable{{Name: "over-window input", Types: l.Types, PK: l.PK, PKDesc: l.PKDesc, Dist: l.Dist}}
}

// Schema implements StreamNode.
func (n *StreamOverWindow) Schema() []Field { return n.Out }

// StreamKey implements StreamNode: the input key plus the partition columns
// (which decide the actor a row comes from, as for a group top-N).
func (n *StreamOverWindow) StreamKey() []int {
	return appendMissing(n.Input.StreamKey(), n.PartitionBy())
}

// Inputs implements StreamNode.
func (n *StreamOverWindow) Inputs() []StreamNode { return []StreamNode{n.Input} }

// Describe implements StreamNode.
func (n *StreamOverWindow) Describe() string {
	parts := make([]string, len(n.Funcs))
	for i := range n.Funcs {
		f := &n.Funcs[i]
		parts[i] = f.Name + colList(f.Args)
		if f.UsesFrame() && !f.Frame.IsDefault() {
			parts[i] += " " + f.Frame.String()
		}
	}
	return fmt.Sprintf("StreamOverWindow partition by %s order by %s funcs [%s]",
		colList(n.PartitionBy()), keyList(n.OrderBy()), strings.Join(parts, ", "))
}
