package plan

import (
	"fmt"
	"github.com/tributary/tributary/sql/expr"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/sql/types"
)

// StreamSink ends a sink's job: it hands its input's changes to the sink's
// IntoNewRowID in StreamSink.IntoMap: the target's hidden row id, new for
// every row written (a table without a primary key).
const IntoNewRowID = -2

// connector (Props) each epoch, and outputs nothing.
type StreamSink struct {
	StateInfo
	Input    StreamNode
	Relation *catalog.Relation // the sink's descriptor
	// Props are the sink's WITH options (keys lower-cased): the connector's.
	Props map[string]string
	// Format and Encode are the FORMAT ... ENCODE clause (empty: none).
	Format, Encode string
	// AppendOnly drops deletes and turns updates into inserts
	// (type = 'append-only' with force_append_only).
	AppendOnly bool
	// Decouple puts a log store between the input and the connector: the
	// changes commit to it with the epoch, and a reader delivers them.
	Decouple bool
	// RateLimit bounds a decoupled sink's delivery, rows per second over the
	// sink's actors (< 0: unlimited, 0: paused).
	RateLimit int64
	// Into is the table a sink into a table writes (nil: a connector sink).
	// Target column i takes the sink's column IntoMap[i], or IntoDefaults[i]
	// when that is -1, or a new hidden row id when it is IntoNewRowID.
	Into         *catalog.Relation
	IntoMap      []int
	IntoDefaults []types.Datum
	// IntoGenerated[i] computes the target's generated column i over the
	// target row made so far (nil for the other columns; nil when none).
	IntoGenerated []expr.Expr
	// Coupled (a sink into a table under sink_decouple = false): the sink
	// still writes through its log store, but its actor holds each barrier
	// until the entries of the epochs before it are in the table, so the
	// table's pace is the upstream's.
	Coupled bool
}

// LogStoreTypes are a sink log store's columns: writer (the actor's first
// vnode), epoch, sequence number within the epoch, and a payload of encoded
// changes; the key is the first three.
var LogStoreTypes = []types.T{types.TInt32, types.TInt64, types.TInt32, types.TVarchar}

// StateLayouts implements StatefulNode: the log store of a decoupled sink.
func (n *StreamSink) StateLayouts() []StateTable {
	if !n.Decouple {
		return nil
	}
	return []StateTable{{Name: "sink log store", Types: LogStoreTypes, PK: []int{0, 1, 2}}}
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
	if n.Into != nil {
		d = fmt.Sprintf("StreamSink %s into %s", n.Relation.QualifiedName(), n.Into.QualifiedName())
	}
	if n.AppendOnly {
		d += " append-only"
	}
	switch {
	case n.Coupled:
		d += " coupled"
	case n.Decouple:
		d += " decoupled"
	}
	return d
}
