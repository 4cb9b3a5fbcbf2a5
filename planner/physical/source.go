package physical

import (
	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/planner/plan"
)

// ConnectorTable is the plan of a connector table's source job: the
// connector's rows written into the table (its split offsets in the
// table's first state table).
func ConnectorTable(rel *catalog.Relation) *plan.StreamConnectorSource {
	return &plan.StreamConnectorSource{Table: rel, State: plan.ConnectorSourceState(rel.StateTables[0]), RateLimit: rel.Connector.RateLimit,
		Split: rel.Connector.Splits}
}

// SharedSourceReader is the plan of a shared source's reader job: its
// actors share out the splits and their rows are the source's stream, which
// the jobs on the source read (each backfilling first).
func SharedSourceReader(rel *catalog.Relation) *plan.StreamSourceScan {
	n := &plan.StreamSourceScan{Source: rel, RateLimit: rel.Connector.RateLimit, Split: true}
	for _, c := range rel.Columns {
		n.Out = append(n.Out, plan.Field{Name: c.Name, Type: c.Type, Hidden: c.Hidden})
	}
	n.SetState([]plan.StateTable{plan.ConnectorSourceState(rel.StateTables[0])})
	return n
}
