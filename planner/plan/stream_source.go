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
	Table *catalog.Relation // its Connector says what reads it
	State StateTable
	// RateLimit caps the rows per second over all splits (< 0: the connector's own rate; 0 pauses).
	RateLimit int64
	// Split: the job runs several actors that share out the splits
	// (catalog.Connector.Splits); otherwise one actor reads them all.
	Split bool
}

// ConnectorSourceState is the layout of a connector source's split offsets:
// split name, the connector's offset (where reading goes on), the position
// after the last row read.
func ConnectorSourceState(id uint32) StateTable {
	return StateTable{ID: id, Name: "source splits", Types: []types.T{types.TVarchar, types.TBytea, types.TInt64}, PK: []int{0}}
}

func connectorName(rel *catalog.Relation) string {
	if rel.Connector == nil {
		return ""
	}
	return rel.Connector.Name()
}

func (n *StreamConnectorSource) Schema() []Field      { return nil }
func (n *StreamConnectorSource) StreamKey() []int     { return nil }
func (n *StreamConnectorSource) Inputs() []StreamNode { return nil }
func (n *StreamConnectorSource) Describe() string {
	return fmt.Sprintf("StreamConnectorSource connector=%s into %s", connectorName(n.Table), n.Table.QualifiedName())
}

// StreamSourceScan reads a source's connector: the rows are the stream
// itself (inserts keyed by the hidden row id the connector fills), and the
// split offsets are the state. It is a shared source's reader job, or reads
// a generator source inside the job of a view or sink over it.
type StreamSourceScan struct {
	StateInfo
	Source *catalog.Relation // its Connector says what reads it
	Out    []Field
	// Split: the job's parallel actors each read a share of the splits (a
	// shared source's reader job); otherwise one actor reads them all.
	Split bool
	// RateLimit caps the rows per second over all splits (< 0: the connector's own rate; 0 pauses).
	RateLimit int64
}

func (n *StreamSourceScan) Schema() []Field      { return n.Out }
func (n *StreamSourceScan) StreamKey() []int     { return n.Source.PK }
func (n *StreamSourceScan) Inputs() []StreamNode { return nil }
func (n *StreamSourceScan) Describe() string {
	return fmt.Sprintf("StreamSourceScan %s connector=%s", n.Source.QualifiedName(), connectorName(n.Source))
}

// StateLayouts implements StatefulNode: the split offsets.
func (n *StreamSourceScan) StateLayouts() []StateTable {
	l := ConnectorSourceState(0)
	l.Name = "source splits"
	return []StateTable{l}
}
