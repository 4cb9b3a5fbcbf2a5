package session

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/planner/job"
	"github.com/tributary/tributary/server/pgwire"
	"github.com/tributary/tributary/sql/parser"
	"github.com/tributary/tributary/sql/types"
)

// createIndex runs CREATE INDEX: a streaming job keeps a copy of the table's
// (or materialized view's) rows keyed by the indexed columns, and queries with
// equality on the leading indexed columns read it instead of the whole table
// (planner/bind). Like PostgreSQL's, the statement returns once the index holds
// every existing row; writes to the table go on meanwhile.
func (s *Session) createIndex(ctx context.Context, n *parser.CreateIndex) (pgwire.Result, error) {
	s.eng.ddl.Lock()
	defer s.eng.ddl.Unlock()
	tbl, err := s.lookup(n.Table.Schema, n.Table.Name)
	if err != nil || tbl.Kind == catalog.KindSystem {
		return nil, types.Errorf(types.ErrUndefinedTable, "relation \"%s\" does not exist", n.Table.Name)
	}
	schema := tbl.Schema // an index lives in its table's schema, as in PostgreSQL
	if tbl.Kind != catalog.KindTable && tbl.Kind != catalog.KindMaterializedView {
		return nil, types.Errorf(types.ErrWrongObjectType, "cannot create index on relation \"%s\"", tbl.Name)
	}
	if err := s.checkOwner(tbl); err != nil {
		return nil, err
	}
	cols := make([]int, len(n.Columns))
	for i, name := range n.Columns {
		if cols[i] = visibleColumn(tbl, name); cols[i] < 0 {
			return nil, types.Errorf(types.ErrUndefinedColumn, "column \"%s\" does not exist", name)
		}
	}
	for _, name := range n.Include { // every column is in the index anyway
		if visibleColumn(tbl, name) < 0 {
			return nil, types.Errorf(types.ErrUndefinedColumn, "column \"%s\" does not exist", name)
		}
	}
	distLen := 1
	if len(n.DistributedBy) > 0 {
		if len(n.DistributedBy) > len(n.Columns) || !slices.Equal(n.DistributedBy, n.Columns[:len(n.DistributedBy)]) {
			return nil, types.Errorf(types.ErrUnsupported, "DISTRIBUTED BY must name leading columns of the index")
		}
		distLen = len(n.DistributedBy)
	}
	name := n.Name
	if name == "" {
		name = s.indexName(tbl, n.Columns)
	}
	if res, found, err := s.exists(schema, name, n.IfNotExists, "CREATE INDEX"); found {
		return res, err
	}
	def := "SELECT " + indexSelectList(tbl) + " FROM " + quoteIdent(tbl.Schema) + "." + quoteIdent(tbl.Name)
	stmts, err := parser.Parse(def)
	if err != nil || len(stmts) != 1 {
		return nil, fmt.Errorf("index %s: %s: %w", name, def, err)
	}
	b := s.binder(nil)
	sq, _, err := job.StreamQuery(stmts[0].(*parser.Query), b, false, catalog.StateVersion)
	if err != nil {
		return nil, err
	}
	// The index holds the table's columns in the table's order (SELECT * and
	// then the hidden key columns), so its rows read as the table's.
	if len(sq.Columns) != len(tbl.Columns) {
		return nil, types.Errorf(types.ErrInternal, "index %s: %d columns for a relation of %d", name, len(sq.Columns), len(tbl.Columns))
	}
	rel := &catalog.Relation{Database: s.relDB(), Schema: schema, Name: name, Kind: catalog.KindIndex, Definition: def,
		Columns: make([]catalog.Column, len(tbl.Columns)), DependsOn: []uint32{tbl.ID}, Refs: pinned(b.Refs()), CreatedAt: time.Now().UTC(),
		Index: &catalog.IndexSettings{Table: tbl.ID, Columns: cols, DistLen: distLen}}
	for i, f := range sq.Columns {
		c := tbl.Columns[i]
		if f.Type != c.Type || (f.Hidden && !c.Hidden) {
			return nil, types.Errorf(types.ErrInternal, "index %s: column %d is %s, the relation's %s", name, i, f.Name, c.Name)
		}
		rel.Columns[i] = catalog.Column{Name: c.Name, Type: c.Type, Hidden: c.Hidden}
	}
	rel.PK = slices.Clone(cols)
	for _, k := range sq.PK {
		if !slices.Contains(rel.PK, k) {
			rel.PK = append(rel.PK, k)
		}
	}
	s.jobSettings(rel)
	rel.ID = s.eng.Catalog.NextID()
	root := job.Materialize(sq, rel, rel.Job.StateVersion)
	return s.startJob(ctx, rel, root, n.Text(), "CREATE INDEX", "index", nil)
}

// indexSelectList is what an index over tbl selects: "*" when the table's
// columns are its visible ones followed by hidden key columns (what SELECT *
// and the stream key give), else every column in the table's order, hidden
// ones by name and dropped ones as a typed NULL (a column added to a table
// keyed by a hidden row id comes after the row id; a dropped one keeps its
// place), so the index's rows read as the table's.
func indexSelectList(tbl *catalog.Relation) string {
	ordered, hidden := true, false
	for _, c := range tbl.Columns {
		switch {
		case c.Dropped:
			ordered = false
		case c.Hidden:
			hidden = true
		case hidden:
			ordered = false
		}
	}
	if ordered {
		return "*"
	}
	items := make([]string, len(tbl.Columns))
	for i, c := range tbl.Columns {
		if c.Dropped {
			items[i] = "NULL::" + c.Type.String()
		} else {
			items[i] = quoteIdent(c.Name)
		}
	}
	return strings.Join(items, ", ")
}

// visibleColumn returns the position of the visible column name of rel, or -1.
func visibleColumn(rel *catalog.Relation, name string) int {
	for i, c := range rel.Columns {
		if !c.Hidden && c.Name == name {
			return i
		}
	}
	return -1
}

// indexName is PostgreSQL's name for an unnamed index: table_col1_col2_idx,
// numbered from 1 when taken.
func (s *Session) indexName(tbl *catalog.Relation, cols []string) string {
	base := tbl.Name + "_" + strings.Join(cols, "_") + "_idx"
	name := base
	for k := 1; ; k++ {
		if _, err := s.lookup(tbl.Schema, name); err != nil {
			return name
		}
		name = fmt.Sprintf("%s%d", base, k)
	}
}

// indexReady is batch.Env.IndexReady: an index may answer a lookup read at
// epoch once its job no longer builds it, and only at epochs from the first
// committed epoch seen since (a transaction's older snapshot reads the table).
func (e *Engine) indexReady(id uint32, epoch uint64) bool {
	rel, ok := e.Catalog.ByID(id)
	if !ok || rel.Kind != catalog.KindIndex {
		return false // dropped since the statement was planned
	}
	for _, j := range e.coord().Jobs() {
		if j.ID == id {
			return false // still building
		}
	}
	e.indexes.Lock()
	defer e.indexes.Unlock()
	if e.indexes.readyAt == nil {
		e.indexes.readyAt = map[uint32]uint64{}
	}
	at, ok := e.indexes.readyAt[id]
	if !ok {
		at = e.coord().CommittedEpoch()
		e.indexes.readyAt[id] = at
	}
	return epoch >= at
}
