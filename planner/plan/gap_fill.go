package plan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tributary/tributary/sql/types"
)

// FillKind is how GAP_FILL fills a column of the rows it adds.
type FillKind uint8

const (
	FillNull        FillKind = iota // KEEPNULL, the default
	FillLOCF                        // the last row's value
	FillInterpolate                 // linear between the rows around the gap
)

func (k FillKind) String() string {
	switch k {
	case FillLOCF:
		return "locf"
	case FillInterpolate:
		return "interpolate"
	}
	return "keepnull"
}

// GapFill is RisingWave's GAP_FILL(relation, time_col, step, fills...,
// [PARTITION_BY(cols)]): the relation's rows and, within each partition,
// between two rows whose times are more than Step apart, a row at every
// Step after the first and before the second, its partition columns copied,
// the other columns filled per Fills (indexed by column).
type GapFill struct {
	Input       Node
	TimeCol     int
	Step        types.IntervalValue
	Fills       []FillKind
	PartitionBy []int
	Out         []Field
}

func (n *GapFill) Schema() []Field  { return n.Out }
func (n *GapFill) Children() []Node { return []Node{n.Input} }
func (n *GapFill) Describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "GapFill time=#%d step=%s", n.TimeCol, types.AppendInterval(nil, n.Step))
	for i, f := range n.Fills {
		if f != FillNull {
			fmt.Fprintf(&b, " %s(#%d)", f, i)
		}
	}
	if len(n.PartitionBy) > 0 {
		fmt.Fprintf(&b, " partition_by=%v", n.PartitionBy)
	}
	return b.String()
}

// StreamGapFill maintains a GapFill in a view: it keeps its input's rows
// (every column) in a state table keyed by partition, time and the input
// stream key, and on each change retracts the filled rows of the gap it
// lands in (or closes) and adds those of the gaps around it. It runs on one
// actor.
//
// With EmitOnWindowClose (an append-only input with a watermark on the time
// column) it emits each row, with the filled rows before it, once the
// watermark passes its time, and only inserts; emitted rows leave the state
// but a partition's last one, kept in a second table.
type StreamGapFill struct {
	Input             StreamNode
	Fill              *GapFill // TimeCol, Step, Fills, PartitionBy; columns as Input's
	Out               []Field
	EmitOnWindowClose bool
	StateInfo
}

func (n *StreamGapFill) Schema() []Field      { return n.Out }
func (n *StreamGapFill) Inputs() []StreamNode { return []StreamNode{n.Input} }
func (n *StreamGapFill) Describe() string     { return "Stream" + n.Fill.Describe() }

// StreamKey is the partition columns, the time column, then the rest of the
// input stream key: a filled row's time is unique in its partition (it lies
// strictly between two rows' times), a row of the input is told apart from
// others of the same time by the input key.
func (n *StreamGapFill) StreamKey() []int {
	key := append(append([]int(nil), n.Fill.PartitionBy...), n.Fill.TimeCol)
	for _, k := range n.Input.StreamKey() {
		if !slices.Contains(key, k) {
			key = append(key, k)
		}
	}
	return key
}

// StateLayouts implements StatefulNode: the input rows, keyed as the
// output; one vnode (the node runs on one actor).
func (n *StreamGapFill) StateLayouts() []StateTable {
	t := []StateTable{{Name: "gap fill input", Types: Types(n.Input.Schema()), PK: n.StreamKey()}}
	if n.EmitOnWindowClose {
		pk := append(append([]int(nil), n.Fill.PartitionBy...), n.Fill.TimeCol)
		t = append(t, StateTable{Name: "gap fill last emitted", Types: Types(n.Input.Schema()), PK: pk})
	}
	return t
}
