package plan

import (
	"fmt"

	"github.com/tributary/tributary/sql/types"
)

// StreamDynamicFilter keeps the rows of Left whose column Col compares true
// (Op: one of = <> < <= > >=) with the value of Right, a stream of at most
// one row whose first column is the value (a scalar subquery such as
// "SELECT max(v) FROM t", or a one-row side of a join): RisingWave's dynamic
// filter. A NULL or absent value keeps no row. Left rows arriving in an epoch
// are compared with the value in force at its start; at each barrier a
// changed value emits the rows entering the range and retracts those leaving
// it. Output: Left's columns; stream key: Left's.
//
// Both inputs run on one actor (the value is read by every row).
type StreamDynamicFilter struct {
	StateInfo
	Left, Right StreamNode
	Col         int
	Op          string
}

// DynamicFilterOps lists the comparisons a dynamic filter evaluates.
var DynamicFilterOps = map[string]bool{"=": true, "<>": true, "<": true, "<=": true, ">": true, ">=": true}

// Schema is the left side's.
func (n *StreamDynamicFilter) Schema() []Field { return n.Left.Schema() }

// StreamKey is the left side's.
func (n *StreamDynamicFilter) StreamKey() []int { return n.Left.StreamKey() }

// Inputs are the left and right sides.
func (n *StreamDynamicFilter) Inputs() []StreamNode { return []StreamNode{n.Left, n.Right} }

// Describe prints the comparison with the right side's value as $right.
func (n *StreamDynamicFilter) Describe() string {
	return fmt.Sprintf("StreamDynamicFilter $%d %s $right", n.Col, n.Op)
}

// StateLayouts implements StatefulNode: "dynamic filter left", every left
// row whose column is not NULL, keyed by (Col, the left stream key) so the
// rows a change of the value lets in or out are one key range; then
// "dynamic filter right", the value in force (one row: a constant 0 key,
// then the value). Neither is distributed: the filter runs on one actor.
func (n *StreamDynamicFilter) StateLayouts() []StateTable {
	pk := []int{n.Col}
	for _, k := range n.Left.StreamKey() {
		if k != n.Col {
			pk = append(pk, k)
		}
	}
	rt := n.Right.Schema()[0].Type
	return []StateTable{
		{Name: "dynamic filter left", Types: Types(n.Left.Schema()), PK: pk},
		{Name: "dynamic filter right", Types: []types.T{types.TInt32, rt}, PK: []int{0}},
	}
}
