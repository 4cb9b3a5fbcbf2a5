package plan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tributary/tributary/sql/types"
)

// StreamOverWindow maintains window functions over a change stream: Funcs
// share one PARTITION BY and ORDER BY (the planner chains one node per
// distinct window). Output: the input columns, then one column per function.
// Every input row is kept in one state table in (partition, order, stream
// key) order, distributed by the partition columns; a change in a partition
// recomputes it and emits the rows whose outputs changed.
//
// With EmitOnWindowClose (over an append-only input whose first ORDER BY
// column, ascending, carries a watermark) each row is emitted once, as an
// insert, when its outputs are final: when the rows its functions read are
// all below the watermark. A second state table then keeps, per partition,
// how many rows were emitted and how many there are.
type StreamOverWindow struct {
	StateInfo
	Input             StreamNode
	Funcs             []WindowFunc
	Out               []Field
	EmitOnWindowClose bool
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
	tables := []StateTable{{Name: "over-window input", Types: l.Types, PK: l.PK, PKDesc: l.PKDesc, Dist: l.Dist}}
	if n.EmitOnWindowClose {
		tables = append(tables, n.ProgressTable())
	}
	return tables
}

// ProgressTable is the layout of an emitting-on-window-close over-window's
// progress: the partition columns (or one constant column without them),
// then the rows emitted and the rows held, keyed and distributed by the
// partition.
func (n *StreamOverWindow) ProgressTable() StateTable {
	in := n.Input.Schema()
	t := StateTable{Name: "over-window progress"}
	for i, c := range n.PartitionBy() {
		t.Types = append(t.Types, in[c].Type)
		t.PK = append(t.PK, i)
	}
	t.Dist = slices.Clone(t.PK)
	if len(t.PK) == 0 {
		t.Types = append(t.Types, types.TBool)
		t.PK = []int{0}
	}
	t.Types = append(t.Types, types.TInt64, types.TInt64)
	return t
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
	s := fmt.Sprintf("StreamOverWindow partition by %s order by %s funcs [%s]",
		colList(n.PartitionBy()), keyList(n.OrderBy()), strings.Join(parts, ", "))
	if n.EmitOnWindowClose {
		s += " emit on window close"
	}
	return s
}
