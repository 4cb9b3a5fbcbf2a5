package plan

import (
	"fmt"
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
