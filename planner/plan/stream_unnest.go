package plan

import "github.com/tributary/tributary/sql/expr"

// StreamUnnest expands each input row into one row per element of Array
// (evaluated over the row): the row's columns, the element, then its 1-based
// position (hidden unless WITH ORDINALITY asked for it). It is stateless: a
// deleted row deletes the rows its insert produced, since the array is the
// same. Outer keeps a row without elements once, with a NULL element and
// position. Stream key: the input's key and the position.
type StreamUnnest struct {
	Input StreamNode
	Array expr.Expr
	Outer bool
	Out   []Field
	Key   []int
}

func (n *StreamUnnest) Schema() []Field      { return n.Out }
func (n *StreamUnnest) StreamKey() []int     { return n.Key }
func (n *StreamUnnest) Inputs() []StreamNode { return []StreamNode{n.Input} }
func (n *StreamUnnest) Describe() string     { return "StreamUnnest " + n.Array.String() }
