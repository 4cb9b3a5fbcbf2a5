package job

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/planner/bind"
	"github.com/tributary/tributary/planner/physical"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/parser"
)

// Planner plans jobs over a catalog.
type Planner struct {
	Catalog *catalog.Catalog
	// Eval evaluates column defaults a sink into a table fills in (nil: a
	// context of the superuser at the current time).
	Eval func() *expr.Ctx
}

// evalCtx is the context for defaults.
func (p *Planner) evalCtx() *expr.Ctx {
	if p.Eval != nil {
		return p.Eval()
	}
	return &expr.Ctx{Now: time.Now().UnixMicro(), User: "root", SessionUser: "root", Database: catalog.Database}
}

// Querier binds a query (a *bind.Binder).
type Querier interface {
	Query(*parser.Query) (*plan.Query, error)
}

// StreamQuery binds and plans a query for streaming (its aggregation
// emitting on window close when eowc), with state layout version (catalog.StateVersion).
func StreamQuery(q *parser.Query, b Querier, eowc bool, version int) (*physical.StreamQuery, *plan.Query, error) {
	pq, err := b.Query(q)
	if err != nil {
		return nil, nil, err
	}
	if version >= 2 {
		narrowed := *pq
		narrowed.Root = plan.PruneJoinInputs(pq.Root)
		pq = &narrowed
	}
	sq, err := physical.Stream(pq)
	if err != nil {
		return nil, nil, err
	}
	if eowc {
		if err := physical.EmitOnWindowClose(sq); err != nil {
			return nil, nil, err
		}
	}
	if version >= 1 {
		physical.AppendOnlyInputs(sq.Root)
	}
	if version >= 3 {
		physical.ShareDistinct(sq.Root)
	}
	return sq, pq, nil
}

// Materialize plans the materialized view or index rel over sq (physical.Materialize)
// with state layout version (catalog.StateVersion).
func Materialize(sq *physical.StreamQuery, rel *catalog.Relation, version int) plan.StreamNode {
	root := physical.Materialize(sq, rel)
	if version >= 4 {
		physical.AggStateInView(root)
	}
	return root
}

// Job plans rel's streaming job as recorded in the catalog, with the state
// tables it recorded: the id the job runs under and its plan, or ok false
// when rel runs no job (a plain table, a view, a source without a reader).
func (p *Planner) Job(rel *catalog.Relation) (id uint32, root plan.StreamNode, ok bool, err error) {
	switch {
	case IsConnectorTable(rel):
		return rel.StateTables[0], p.ConnectorTable(rel), true, nil
	case IsSharedSource(rel):
		return rel.ID, physical.SharedSourceReader(rel), true, nil
	case rel.Kind == catalog.KindMaterializedView || rel.Kind == catalog.KindSink || rel.Kind == catalog.KindIndex:
		root, err := p.Replay(rel)
		if err != nil {
			return 0, nil, false, fmt.Errorf("%s %s: %w", rel.Kind, rel.Name, err)
		}
		return rel.ID, root, true, nil
	}
	return 0, nil, false, nil
}

// Replay plans a materialized view or sink again from its definition, its
// operators taking the state tables it recorded, in order.
func (p *Planner) Replay(rel *catalog.Relation) (plan.StreamNode, error) {
	stmts, err := parser.Parse(rel.Definition)
	if err != nil || len(stmts) != 1 {
		return nil, fmt.Errorf("definition: %w", err)
	}
	q, ok := stmts[0].(*parser.Query)
	if !ok {
		return nil, fmt.Errorf("definition is not a query")
	}
	b := keepIndexes{bind.New(p.Catalog, nil).WithRefs(rel.Refs), rel.DependsOn}
	sq, _, err := StreamQuery(q, b, rel.Job != nil && rel.Job.EmitOnWindowClose, catalog.StateVersionOf(rel))
	if err != nil {
		return nil, err
	}
	var root plan.StreamNode
	if rel.Kind == catalog.KindSink {
		if root, err = p.Sink(sq, rel); err != nil {
			return nil, err
		}
	} else {
		root = Materialize(sq, rel, catalog.StateVersionOf(rel))
	}
	EnableBackfill(root, rel)
	physical.AssignState(root, replay(rel.StateTables))
	return root, nil
}

// keepIndexes binds a stored definition whose temporal joins may read only
// the indexes the job depends on (those it was created with).
type keepIndexes struct {
	Querier
	deps []uint32
}

func (k keepIndexes) Query(q *parser.Query) (*plan.Query, error) {
	pq, err := k.Querier.Query(q)
	if err == nil {
		physical.KeepIndexes(pq, func(id uint32) bool { return slices.Contains(k.deps, id) })
	}
	return pq, err
}

// replay hands out recorded state table ids in order.
func replay(ids []uint32) func() uint32 {
	i := 0
	return func() uint32 {
		if i >= len(ids) {
			return 0
		}
		i++
		return ids[i-1]
	}
}

// EnableBackfill makes every source of a job backfill its relation's
// existing rows, by snapshot backfill or arrangement backfill (as the job's
// settings say; a shared source's own backfill either way), unless the job
// reads only the changes after its creation (JobSettings.NoBackfill).
func EnableBackfill(n plan.StreamNode, rel *catalog.Relation) {
	if rel.Job != nil && rel.Job.NoBackfill {
		return // only the changes from now on
	}
	if s, ok := n.(*plan.StreamSource); ok {
		s.Backfill, s.Snapshot = true, rel.Job != nil && rel.Job.SnapshotBackfill
	}
	for _, in := range n.Inputs() {
		EnableBackfill(in, rel)
	}
}

// IsConnectorTable reports whether rel is a table fed by a connector (its
// source job runs under its one state table's id).
func IsConnectorTable(rel *catalog.Relation) bool {
	return rel.Kind == catalog.KindTable && rel.Connector != nil && len(rel.StateTables) == 1
}

// IsSharedSource reports whether rel is a source with its own reader job.
func IsSharedSource(rel *catalog.Relation) bool {
	return rel.Kind == catalog.KindSource && rel.Connector != nil && rel.Connector.Shared && len(rel.StateTables) == 1
}

// SourceOf returns the source a table created FROM a source (CDC) reads,
// or nil.
func (p *Planner) SourceOf(rel *catalog.Relation) *catalog.Relation {
	if rel.Kind != catalog.KindTable || rel.Connector == nil {
		return nil
	}
	for _, id := range rel.DependsOn {
		if src, ok := p.Catalog.ByID(id); ok && src.Kind == catalog.KindSource && src.Connector != nil {
			return src
		}
	}
	return nil
}

// ConnectorTable plans a connector table's source job; a table of a shared
// CDC source is told its siblings (the other tables of the source, which
// share its stream).
func (p *Planner) ConnectorTable(rel *catalog.Relation) *plan.StreamConnectorSource {
	if src := p.SourceOf(rel); src != nil {
		var sibs []string
		for _, d := range p.Catalog.Dependents(src.ID) {
			if d.ID != rel.ID && d.Kind == catalog.KindTable {
				sibs = append(sibs, d.QualifiedName())
			}
		}
		r, conn := *rel, *rel.Connector
		conn.Props = maps.Clone(conn.Props)
		conn.Props[catalog.OptSiblings] = strings.Join(sibs, ",")
		r.Connector = &conn
		rel = &r
	}
	return physical.ConnectorTable(rel)
}
