package plan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
)

// StreamTemporalJoin is a process-time temporal join (RisingWave's "JOIN t
// FOR SYSTEM_TIME AS OF PROCTIME()"): each row of the Left stream is joined
// with the rows a table (or materialized view) holds when the row is
// processed, read from the relation's committed state; later changes of the
// relation do not change earlier outputs. Inner or left outer.
//
// The rows are looked up in Lookup (Table itself, or one of its indexes,
// which hold Table's rows in Table's columns): the left columns KeyLeft give
// the values of Lookup's leading primary-key columns, which cover its
// distribution key, so a lookup is one key-range read in one vnode; without
// KeyLeft every row of Lookup is read (a nested-loop join). Cond is the rest
// of the condition, over the left columns followed by the right ones.
//
// A left input that may retract (not AppendOnly) needs the join to retract
// what a row's insert produced: its one state table, the memo, holds per
// left row the right rows it was joined with (StateLayouts).
type StreamTemporalJoin struct {
	StateInfo
	Kind   JoinKind // InnerJoin or LeftJoin
	Left   StreamNode
	Table  *catalog.Relation
	Lookup *catalog.Relation
	// RightCols are the relation's columns the right side outputs, in order;
	// RightOut their fields.
	RightCols []int
	RightOut  []Field
	KeyLeft   []int
	Cond      expr.Expr
	// AppendOnly: the left input only inserts (no memo is kept).
	AppendOnly bool
}

// Schema is the left columns followed by the right ones.
func (n *StreamTemporalJoin) Schema() []Field {
	l := n.Left.Schema()
	return append(append(make([]Field, 0, len(l)+len(n.RightOut)), l...), n.RightOut...)
}

// RightKey returns the positions in the right output of Table's primary key
// columns (the planner makes RightCols include them all).
func (n *StreamTemporalJoin) RightKey() []int {
	out := make([]int, 0, len(n.Table.PK))
	for _, c := range n.Table.PK {
		if i := slices.Index(n.RightCols, c); i >= 0 {
			out = append(out, i)
		}
	}
	return out
}

// DistCols are the left columns the join's input is distributed by: the
// lookup key, or the left stream key for a nested-loop join.
func (n *StreamTemporalJoin) DistCols() []int {
	if len(n.KeyLeft) > 0 {
		return n.KeyLeft
	}
	return n.Left.StreamKey()
}

// StreamKey is the left key, the right relation's key and the lookup key
// (which places the row on its actor): a NULL-padded row differs from the
// same left row padded under another lookup key.
func (n *StreamTemporalJoin) StreamKey() []int {
	nl := len(n.Left.Schema())
	k := slices.Clone(n.Left.StreamKey())
	for _, c := range n.RightKey() {
		k = append(k, nl+c)
	}
	return appendMissing(k, n.DistCols())
}

// Inputs is the left stream only: the right side is read from storage.
func (n *StreamTemporalJoin) Inputs() []StreamNode { return []StreamNode{n.Left} }

// Describe names the join, its lookup and condition.
func (n *StreamTemporalJoin) Describe() string {
	nl := len(n.Left.Schema())
	var b strings.Builder
	fmt.Fprintf(&b, "StreamTemporalJoin %s %s", n.Kind, n.Table.QualifiedName())
	if n.Lookup != n.Table {
		fmt.Fprintf(&b, " using index %s", n.Lookup.Name)
	}
	if len(n.KeyLeft) == 0 {
		b.WriteString(" nested loop")
	} else {
		pairs := make([]string, len(n.KeyLeft))
		for i, l := range n.KeyLeft {
			c := n.Lookup.PK[i]
			r := slices.Index(n.RightCols, c)
			if r >= 0 {
				pairs[i] = fmt.Sprintf("$%d = $%d", l, nl+r)
			} else {
				pairs[i] = fmt.Sprintf("$%d = %s", l, n.Lookup.Columns[c].Name)
			}
		}
		b.WriteString(" lookup " + strings.Join(pairs, " and "))
	}
	if n.Cond != nil {
		b.WriteString(" cond " + n.Cond.String())
	}
	if n.AppendOnly {
		b.WriteString(" append only")
	}
	return b.String()
}

// StateLayouts implements StatefulNode: none for an append-only left input;
// else the memo, one row per output row that joined a right row: the
// distribution columns (DistCols), the rest of the left stream key, then the
// right row. Its key is those left columns and the right relation's key,
// so a left row's outputs are one prefix; it is distributed like the input.
// A left row with no memo rows was output NULL-padded (left join) or not at
// all (inner join).
func (n *StreamTemporalJoin) StateLayouts() []StateTable {
	if n.AppendOnly {
		return nil
	}
	cols := n.MemoLeftCols()
	lf := n.Left.Schema()
	ts := make([]types.T, 0, len(cols)+len(n.RightOut))
	for _, c := range cols {
		ts = append(ts, lf[c].Type)
	}
	pk := identity(len(cols))
	for _, c := range n.RightKey() {
		pk = append(pk, len(cols)+c)
	}
	return []StateTable{{Name: "temporal join memo", Types: append(ts, Types(n.RightOut)...), PK: pk, Dist: identity(len(n.DistCols()))}}
}

// MemoLeftCols are the left columns leading a memo row: DistCols, then the
// left stream key columns not among them.
func (n *StreamTemporalJoin) MemoLeftCols() []int {
	return appendMissing(n.DistCols(), n.Left.StreamKey())
}
