package plan

import (
	"fmt"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/sql/types"
)

// StreamConnectorSource is the root of a table's connector job (CREATE TABLE
// ... WITH (connector = ...)): it reads the connector's splits and writes
// their rows into Table in the epoch they were read in, as DML does, so they
// reach the table's change stream; it emits only barriers. State keeps each
// split's offset: (split int, offset bigint) keyed by split.
type StreamConnectorSource struct {
	Table *catalog.Relation
	// Props are the table's WITH options, keys lower-cased.
	Props map[string]string
	State StateTable
	// RateLimit caps the rows per second over all splits (< 0: the connector's own rate; 0 pauses).
	RateLimit int64
}

// ConnectorSourceState is the layout of a connector source's split offsets.
func ConnectorSourceState(id uint32) StateTable {
	return StateTable{ID: id, Name: "source splits", Types: []types.T{types.TInt32, types.TInt64}, PK: []int{0}}
}

func (n *StreamConnectorSource) Schema() []Field      { return nil }
func (n *StreamConnectorSource) StreamKey() []int     { return nil }
func (n *StreamConnectorSource) Inputs() []StreamNode { return nil }
func (n *StreamConnectorSource) Describe() string {
	return fmt.Sprintf("StreamConnectorSource connector=%s into %s", n.Props["connector"], n.Table.QualifiedName())
}

// StreamSourceScan reads a source (CREATE SOURCE) inside the job of a view or
// sink over it: the connector's rows are the stream itself (inserts keyed by
// the hidden row id the connector fills), and the split offsets are the
// job's state.
type StreamSourceScan struct {
	StateInfo
	Source *catalog.Relation
	// Props are the source's WITH options, keys lower-cased.
	Props map[string]string
	Out   []Field
	// RateLimit caps the rows per second over all splits (< 0: the connector's own rate; 0 pauses).
	RateLimit int64
}

func (n *StreamSourceScan) Schema() []Field      { return n.Out }
func (n *StreamSourceScan) StreamKey() []int     { return n.Source.PK }
func (n *StreamSourceScan) Inputs() []StreamNode { return nil }
func (n *StreamSourceScan) Describe() string {
	return fmt.Sprintf("StreamSourceScan %s connector=%s", n.Source.QualifiedName(), n.Props["connector"])
}

// StateLayouts implements StatefulNode: the split offsets.
func (n *StreamSourceScan) StateLayouts() []StateTable {
	l := ConnectorSourceState(0)
	l.Name = "source splits"
	return []StateTable{l}
}
