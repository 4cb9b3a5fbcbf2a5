package plan

import (
	"fmt"

	"github.com/tributary/tributary/catalog"
)

// StreamSink ends a sink's job: it hands its input's changes to the sink's
// connector (Props) each epoch, and outputs nothing.
type StreamSink struct {
	Input    StreamNode
	Relation *catalog.Relation // the sink's descriptor
	// Props are the sink's WITH options (keys lower-cased): the connector's.
	Props map[string]string
	// AppendOnly drops deletes and turns updates into inserts
	// (type = 'append-only' with force_append_only).
	AppendOnly bool
}

// Schema implements StreamNode.
func (n *StreamSink) Schema() []Field { return n.Input.Schema() }

// StreamKey implements StreamNode.
func (n *StreamSink) StreamKey() []int { return n.Input.StreamKey() }

// Inputs implements StreamNode.
func (n *StreamSink) Inputs() []StreamNode { return []StreamNode{n.Input} }

// Describe implements StreamNode.
func (n *StreamSink) Describe() string {
	d := fmt.Sprintf("StreamSink %s connector %s", n.Relation.QualifiedName(), n.Props["connector"])
	if n.AppendOnly {
		d += " append-only"
	}
	return d
}
