package catalog

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/tributary/tributary/sql/types"
)

// Well-known names.
const (
	Database      = "dev"
	DefaultSchema = "public"
	Owner         = "root"
	// RowIDColumn is the hidden primary key of a table declared without one.
	RowIDColumn = "_row_id"
	// FirstUserID is the first relation id handed out (PostgreSQL's first user oid).
	FirstUserID = 16384
	// OptSiblings is the connector option by which the planner tells a
	// table of a source that tables are created FROM (CDC) which other
	// tables read the source (qualified names, comma-separated); the same
	// name as connector.OptSiblings, which the connector reads.
	OptSiblings = "tributary.tables"
)

// Schemas that always exist. pg_catalog, information_schema and rw_catalog hold system tables.
var builtinSchemas = []string{"public", "pg_catalog", "information_schema", "rw_catalog"}

// Kind is a relation's kind.
type Kind uint8

// Relation kinds.
const (
	KindTable Kind = iota + 1
	KindMaterializedView
	KindView
	KindSink
	KindSource
	KindSystem
	KindIndex
)

func (k Kind) String() string {
	switch k {
	case KindTable:
		return "table"
	case KindMaterializedView:
		return "materialized view"
	case KindView:
		return "view"
	case KindSink:
		return "sink"
	case KindSource:
		return "source"
	case KindSystem:
		return "system table"
	case KindIndex:
		return "index"
	}
	return "unknown"
}

// Column describes one column of a relation.
type Column struct {
	Name    string  `json:"name"`
	Type    types.T `json:"type"`
	NotNull bool    `json:"not_null,omitempty"`
	// Default is the SQL text of the DEFAULT expression ("" when none).
	Default string `json:"default,omitempty"`
	// Generated is the SQL text of a generated column's expression over the
	// row's other columns ("" when none): written rows compute it.
	Generated string `json:"generated,omitempty"`
	// Hidden columns (the row id) are not expanded by * and not listed by \d.
	Hidden bool `json:"hidden,omitempty"`
	// Meta says what a connector fills the column with ("" for the payload):
	// the connector package's Meta constants (row_id, split, position, and
	// INCLUDE partition | offset | timestamp | key).
	Meta string `json:"meta,omitempty"`
	// Identity is PostgreSQL's attidentity: "a" for GENERATED ALWAYS AS
	// IDENTITY, "d" for BY DEFAULT, "" otherwise.
	Identity string `json:"identity,omitempty"`
	// Seq is the column's own sequence (serial and identity columns), nil
	// when it has none.
	Seq *Sequence `json:"seq,omitempty"`
	// Dropped marks a column ALTER TABLE DROP COLUMN removed: it keeps its
	// place in the stored rows (nothing is rewritten; new rows hold NULL)
	// but is hidden and has no name a query can use (DroppedName).
	Dropped bool `json:"dropped,omitempty"`
	// Missing is the value (in its text form) that rows stored before the
	// column was added read: ADD COLUMN's DEFAULT, evaluated then; nil for
	// NULL.
	Missing *string `json:"missing,omitempty"`
	// Comment is COMMENT ON COLUMN's text ("" for none).
	Comment string `json:"comment,omitempty"`
}

// DroppedName is the name a dropped column at position i (0-based) takes,
// PostgreSQL's, which no identifier can spell by accident.
func DroppedName(i int) string { return fmt.Sprintf("........pg.dropped.%d........", i+1) }

// DefaultSQL is the SQL text a row gets when it gives no value: the
// DEFAULT, or nextval of an identity column's sequence ("" for NULL).
func (c *Column) DefaultSQL() string {
	if c.Default == "" && c.Identity != "" && c.Seq != nil {
		return NextvalSQL(c.Seq.Name)
	}
	return c.Default
}

// NextvalSQL is nextval('name') with name quoted as a SQL string.
func NextvalSQL(name string) string {
	return "nextval('" + strings.ReplaceAll(name, "'", "''") + "')"
}

// Sequence describes a column's implicit sequence (t_col_seq): its values
// start at Start and step by Increment within [Min, Max]. The values handed
// out are persisted by the session layer (persist.SequenceKey).
type Sequence struct {
	Name      string `json:"name"`
	Start     int64  `json:"start"`
	Increment int64  `json:"increment"`
	Min       int64  `json:"min"`
	Max       int64  `json:"max"`
}

// Connector is the connector of a source or of a table fed by one: its
// typed settings, recorded at CREATE and read by the planner and the
// coordinator.
type Connector struct {
	// Props are the WITH options, keys lower-cased ("connector" included).
	Props map[string]string `json:"props"`
	// Format and Encode are the FORMAT ... ENCODE clause, lower-cased.
	Format string `json:"format,omitempty"`
	Encode string `json:"encode,omitempty"`
	// Shared marks a source read by one reader job (its split offsets in
	// StateTables[0]) whose stream every job on it shares, each backfilling
	// per split first.
	Shared bool `json:"shared,omitempty"`
	// ReadOnly marks a table that mirrors an external table (CDC): DML on
	// it is refused.
	ReadOnly bool `json:"read_only,omitempty"`
	// Splits marks a connector table whose splits (Kafka partitions, a CDC
	// table's key ranges) are independent: its source job's actors share
	// them out, each resuming its splits from their offsets, so its
	// parallelism can change.
	Splits bool `json:"splits,omitempty"`
	// RateLimit is source_rate_limit in rows per second over all splits
	// (< 0: the connector's own rate; 0 pauses).
	RateLimit int64 `json:"rate_limit"`
}

// Name is the connector's name.
func (c *Connector) Name() string { return c.Props["connector"] }

// JobSettings are a streaming job's settings (a materialized view's or a
// sink's), taken from the session at CREATE and changed by ALTER.
type JobSettings struct {
	// Parallelism of its hash-distributed fragments (0: the server's default).
	Parallelism int `json:"parallelism,omitempty"`
	// BackfillRate is backfill_rate_limit in rows per second (nil: unlimited;
	// 0 pauses). With Adaptive it is steered to keep the barrier latency
	// under TargetLatencyMs.
	BackfillRate    *int64 `json:"backfill_rate,omitempty"`
	Adaptive        bool   `json:"adaptive,omitempty"`
	TargetLatencyMs int    `json:"target_latency_ms,omitempty"`
	// SnapshotBackfill selects snapshot backfill over arrangement backfill.
	SnapshotBackfill bool `json:"snapshot_backfill,omitempty"`
	// EmitOnWindowClose: the job's windowed aggregation emits each window
	// once, when the watermark passes it (EMIT ON WINDOW CLOSE).
	EmitOnWindowClose bool `json:"emit_on_window_close,omitempty"`
	// NoBackfill: the job reads only the changes after its creation, not
	// its upstreams' existing rows (a sink's snapshot = 'false').
	NoBackfill bool `json:"no_backfill,omitempty"`
	// Background: created with background_ddl (CREATE returned before its
	// backfill ended).
	Background bool `json:"background,omitempty"`
	// StateVersion is the layout of state the job was planned with
	// (StateVersion for a job created now); a restart plans it again with
	// the same layout, so its state tables keep their meaning.
	StateVersion int `json:"state_version,omitempty"`
}

// StateVersion is the layout of state a new job is planned with:
//
//	0: the first
//	1: over an append-only input, min and max keep only their extreme (no input
//	   table) and top-N keeps only each group's top
//	2: a join's state holds only the columns of its inputs read above it,
//	   by its keys or by its condition (plan.PruneJoinInputs)
//	3: DISTINCT aggregates over the same arguments share one table, with a
//	   count per aggregate (plan.StreamAgg.ShareDistinct)
//	4: a hash aggregation of counts directly under its materialized view keeps
//	   its groups in the view's table (plan.StreamAgg.ViewState)
const StateVersion = 4

// StateVersionOf returns the state layout rel's job was planned with.
func StateVersionOf(rel *Relation) int {
	if rel.Job == nil {
		return 0
	}
	return rel.Job.StateVersion
}

// SinkSettings are a sink's settings.
type SinkSettings struct {
	// Props are the connector's WITH options, keys lower-cased (none for a
	// sink into a table).
	Props map[string]string `json:"props,omitempty"`
	// Format and Encode are the FORMAT ... ENCODE clause, lower-cased.
	Format string `json:"format,omitempty"`
	Encode string `json:"encode,omitempty"`
	// Decoupled sinks write through a log store.
	Decoupled bool `json:"decoupled,omitempty"`
	// RateLimit is sink_rate_limit in rows per second (nil: unlimited).
	RateLimit *int64 `json:"rate_limit,omitempty"`
	// Into names the table a sink into a table writes, IntoColumns the
	// columns it fills (nil: all visible ones in order).
	Into        string   `json:"into,omitempty"`
	IntoColumns []string `json:"into_columns,omitempty"`
	// IntoSchema is the target table's schema ("": the sink's own).
	IntoSchema string `json:"into_schema,omitempty"`
	// CreateWait is create_wait: "delivered" makes a blocking CREATE wait
	// for delivery ("" or "backfilled": for the backfill).
	CreateWait string `json:"create_wait,omitempty"`
}

// Relation is a table, view, materialized view, sink, source or system table.
// Descriptors are immutable once published: changes replace the whole value.
type Relation struct {
	ID uint32 `json:"id"`
	// Database is the database the relation belongs to ("": dev).
	Database string   `json:"database,omitempty"`
	Schema   string   `json:"schema"`
	Name     string   `json:"name"`
	Kind     Kind     `json:"kind"`
	Columns  []Column `json:"columns"`
	// PK lists the primary key's column indices (the hidden row id when none was declared).
	PK []int `json:"pk,omitempty"`
	// Definition is the CREATE statement's text (the query for views and MVs).
	Definition string `json:"definition,omitempty"`
	AppendOnly bool   `json:"append_only,omitempty"`
	// Owner is the role that created it ("": root, for relations created
	// before roles); Grants the privileges given to other roles (role or
	// "public" -> select, insert, update, delete).
	Owner  string              `json:"owner,omitempty"`
	Grants map[string][]string `json:"grants,omitempty"`
	// OnConflict is what an INSERT of a key the table holds does:
	// "overwrite", "ignore", "do_update_if_not_null" ("": fail with 23505).
	OnConflict string `json:"on_conflict,omitempty"`
	// VersionColumns (ON CONFLICT ... WITH VERSION COLUMN (...)): a
	// conflicting row replaces the stored one only when its version
	// columns, compared in order, are not lower.
	VersionColumns []int    `json:"version_columns,omitempty"`
	DependsOn      []uint32 `json:"depends_on,omitempty"`
	// Functions are the user functions (catalog.Function ids) its
	// definition calls: DROP FUNCTION refuses while it exists.
	Functions []uint32 `json:"functions,omitempty"`
	// Refs pin what a stored definition (a view's, materialized view's or
	// sink's query) names, so a later rename, added or dropped column does
	// not change what it means; nil until the first ALTER of something it
	// reads (until then its names resolve as they did at CREATE).
	Refs []Ref `json:"refs,omitempty"`
	// Comment is COMMENT ON's text ("" for none).
	Comment string `json:"comment,omitempty"`
	// StateTables are the ids of a streaming job's internal state tables, in the
	// order the planner assigned them (a restart assigns them again in that order).
	StateTables []uint32 `json:"state_tables,omitempty"`
	// Connector is set for sources and tables fed by a connector.
	Connector *Connector `json:"connector,omitempty"`
	// Watermark is the WATERMARK FOR clause of a source or append-only table.
	Watermark *Watermark `json:"watermark,omitempty"`
	// Job is set for materialized views and sinks, Sink for sinks.
	Job  *JobSettings  `json:"job,omitempty"`
	Sink *SinkSettings `json:"sink,omitempty"`
	// Index is set for indexes (KindIndex).
	Index     *IndexSettings `json:"index,omitempty"`
	CreatedAt time.Time      `json:"created_at"`
}

// IndexSettings describe an index: a materialized copy of its table's rows
// (the same columns, in the same order) kept by a streaming job, keyed by the
// indexed columns and then the table's key, and distributed by the indexed
// columns, so that rows with given values of them are one key-range read.
type IndexSettings struct {
	// Table is the indexed table's id; Columns the indexed columns'
	// positions (in the table and in the index alike), in index order.
	Table   uint32 `json:"table"`
	Columns []int  `json:"columns"`
	// DistLen is how many leading indexed columns distribute the rows
	// (DISTRIBUTED BY; 1 by default, as in RisingWave): a lookup needs
	// equality on at least those.
	DistLen int `json:"dist_len"`
}

// StoresBlocks reports whether rel's rows may be stored many to a state key
// (state.Schema.Blocks): a table, whose bulk writes of new keys (INSERT and
// COPY of keys it does not hold, a CDC copy, a generator) go as blocks.
// Readers of its keys outside its state table read through state.Scan,
// state.GetRow and state.ChangedRows.
func (r *Relation) StoresBlocks() bool {
	return r.Kind == KindTable && len(r.PK) > 0
}

// DistKey returns the columns whose hash places a row of rel's state table on
// its vnode: an index's indexed columns, every other relation's primary key.
func (r *Relation) DistKey() []int {
	if r.Index != nil {
		return r.Index.Columns[:r.Index.DistLen]
	}
	return r.PK
}

// IndexesOf returns the indexes (CREATE INDEX) of relation id among rels, in
// rels' order.
func IndexesOf(rels []*Relation, id uint32) []*Relation {
	var out []*Relation
	for _, r := range rels {
		if r.Kind == KindIndex && r.Index != nil && r.Index.Table == id {
			out = append(out, r)
		}
	}
	return out
}

// Ref is one relation a stored definition names: Name (Schema "" when the
// definition gave none) as written stands for the relation ID, whose
// columns it sees by position under the names Columns (a column renamed
// since keeps its old name there; columns added since are not seen).
type Ref struct {
	Schema  string   `json:"schema,omitempty"`
	Name    string   `json:"name"`
	ID      uint32   `json:"id"`
	Columns []string `json:"columns"`
}

// Watermark is a source's or append-only table's WATERMARK FOR Column AS
// Column - Delay: the jobs reading it take the greatest Column value seen
// less Delay as the watermark, and drop rows below it as late.
type Watermark struct {
	Column string `json:"column"`
	// Delay is the interval's text ("" for none).
	Delay string `json:"delay,omitempty"`
}

// DelayInterval parses Delay.
func (w *Watermark) DelayInterval() (types.IntervalValue, error) {
	if w.Delay == "" {
		return types.IntervalValue{}, nil
	}
	return types.ParseInterval(w.Delay)
}

// QualifiedName returns schema.name.
func (r *Relation) QualifiedName() string { return r.Schema + "." + r.Name }

// ColumnIndex returns the index of the named column, or -1.
func (r *Relation) ColumnIndex(name string) int {
	for i := range r.Columns {
		if r.Columns[i].Name == name {
			return i
		}
	}
	return -1
}

// ColumnTypes returns every column's type.
func (r *Relation) ColumnTypes() []types.T {
	ts := make([]types.T, len(r.Columns))
	for i := range r.Columns {
		ts[i] = r.Columns[i].Type
	}
	return ts
}

// MissingValues is what each column reads in rows stored before it was
// added (Column.Missing; NULL for the others), or nil when no column has
// such a value: state.Schema.Missing of the relation's rows.
func (r *Relation) MissingValues() []types.Datum {
	var out []types.Datum
	for i, c := range r.Columns {
		if c.Missing == nil {
			continue
		}
		if out == nil {
			out = make([]types.Datum, len(r.Columns))
			for k := range out {
				out[k] = types.NullDatum
			}
		}
		if d, err := types.ParseText(c.Type, *c.Missing); err == nil {
			out[i] = d // checked by ALTER TABLE ADD COLUMN, which wrote it
		}
	}
	return out
}

// SameLayout reports whether rows of a and b (two descriptors of one
// relation) are laid out alike: the same columns, types and dropped ones.
// ALTER TABLE ADD | DROP COLUMN changes it; a rename or comment does not.
func SameLayout(a, b *Relation) bool {
	if len(a.Columns) != len(b.Columns) {
		return false
	}
	for i := range a.Columns {
		if a.Columns[i].Type != b.Columns[i].Type || a.Columns[i].Dropped != b.Columns[i].Dropped {
			return false
		}
	}
	return true
}

// IntoTarget is the schema and name of the table a sink into a table
// writes ("" name: it is no such sink).
func (r *Relation) IntoTarget() (schema, name string) {
	if r.Kind != KindSink || r.Sink == nil || r.Sink.Into == "" {
		return "", ""
	}
	schema = r.Sink.IntoSchema
	if schema == "" {
		schema = r.Schema
	}
	return schema, r.Sink.Into
}

// SinksInto reports whether r is a sink into table t.
func (r *Relation) SinksInto(t *Relation) bool {
	schema, name := r.IntoTarget()
	return name != "" && name == t.Name && schema == t.Schema && r.DB() == t.DB()
}

// HasRowID reports whether the relation's key is the hidden row id.
func (r *Relation) HasRowID() bool {
	return len(r.PK) == 1 && r.Columns[r.PK[0]].Hidden && r.Columns[r.PK[0]].Name == RowIDColumn
}

// Reader is the read-only view of the catalog the planner uses.
type Reader interface {
	// Lookup resolves a relation; schema "" searches the search path (public, then pg_catalog,
	// rw_catalog, information_schema). Missing → *types.Error of kind ErrUndefinedTable.
	Lookup(schema, name string) (*Relation, error)
	ByID(id uint32) (*Relation, bool)
	// Relations returns every relation, ordered by id.
	Relations() []*Relation
	// Dependents returns the relations that depend on id.
	Dependents(id uint32) []*Relation
	// Schemas lists the schemas: the built-in ones, then CREATE SCHEMA's by name.
	Schemas() []string
	// SchemaOID is a schema's pg_namespace oid (0: no such schema).
	SchemaOID(name string) uint32
	// Databases lists the databases, ordered by oid.
	Databases() []DatabaseDesc
}

// Catalog is the in-memory registry. Mutations validate and publish new
// descriptors; persisting them is the caller's job (see catalog/persist), done
// under the same DDL lock so order matches.
type Catalog struct {
	mu struct {
		sync.RWMutex
		byID   map[uint32]*Relation
		byName map[string]*Relation // "schema.name"
		nextID uint32
		// schemas are CREATE SCHEMA's schemas: SchemaKey(db, name) -> oid.
		schemas map[string]uint32
		// databases are the databases by name, dev among them.
		databases map[string]DatabaseDesc
		// funcs are CREATE FUNCTION's functions by id.
		funcs map[uint32]*Function
	}
	system []*Relation // fixed system tables (ids below FirstUserID)
}

// New returns a catalog holding only the system tables.
func New(system []*Relation) *Catalog {
	c := &Catalog{system: system}
	c.mu.byID = map[uint32]*Relation{}
	c.mu.byName = map[string]*Relation{}
	c.mu.schemas = map[string]uint32{}
	c.mu.nextID = FirstUserID
	c.mu.databases = map[string]DatabaseDesc{Database: {Name: Database, OID: DatabaseOID, Owner: Owner}}
	for _, r := range system {
		c.mu.byID[r.ID] = r
		c.mu.byName[r.key()] = r
	}
	return c
}

// Load installs persisted descriptors (at start-up).
func (c *Catalog) Load(rels []*Relation, nextID uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range rels {
		c.mu.byID[r.ID] = r
		c.mu.byName[r.key()] = r
		if r.ID >= c.mu.nextID {
			c.mu.nextID = r.ID + 1
		}
	}
	if nextID > c.mu.nextID {
		c.mu.nextID = nextID
	}
}

// NextID reserves a new relation id.
func (c *Catalog) NextID() uint32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := c.mu.nextID
	c.mu.nextID++
	return id
}

// PeekNextID returns the id NextID would hand out (for persisting the counter).
func (c *Catalog) PeekNextID() uint32 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.mu.nextID
}

// Lookup implements Reader: names resolve in database dev.
func (c *Catalog) Lookup(schema, name string) (*Relation, error) {
	return Path{Catalog: c, Search: []string{DefaultSchema}}.Lookup(schema, name)
}

// Path is the catalog seen from a session: its database (dev when "") and
// search path. Unqualified names resolve in the path's schemas (those that
// exist), then in pg_catalog, rw_catalog and information_schema; a schema
// the parser encoded with a database (CrossDBSep, a three-part name) resolves
// in that database. Relations, Schemas and SchemaOID list the path's database
// (and the system tables), so the system tables show it alone.
type Path struct {
	*Catalog
	Database string
	Search   []string
}

func (p Path) db() string {
	if p.Database == "" {
		return Database
	}
	return p.Database
}

// Lookup implements Reader.
func (p Path) Lookup(schema, name string) (*Relation, error) {
	db := p.db()
	if d, sc := SplitSchema(schema); d != "" {
		if _, ok := p.DatabaseByName(d); !ok {
			return nil, errNoDatabase(d)
		}
		db, schema = d, sc
	}
	p.Catalog.mu.RLock()
	defer p.Catalog.mu.RUnlock()
	if schema != "" {
		if r, ok := p.Catalog.mu.byName[key(db, schema, name)]; ok {
			return r, nil
		}
		return nil, types.Errorf(types.ErrUndefinedTable, "relation \"%s.%s\" does not exist", schema, name)
	}
	for _, s := range append(slices.Clone(p.Search), "pg_catalog", "rw_catalog", "information_schema") {
		if r, ok := p.Catalog.mu.byName[key(db, s, name)]; ok {
			return r, nil
		}
	}
	return nil, types.Errorf(types.ErrUndefinedTable, "relation \"%s\" does not exist", name)
}

// Relations implements Reader: the system tables and the path's database's relations.
func (p Path) Relations() []*Relation {
	all := p.Catalog.Relations()
	out := all[:0:0]
	db := p.db()
	for _, r := range all {
		if r.ID < FirstUserID || r.DB() == db {
			out = append(out, r)
		}
	}
	return out
}

// Schemas implements Reader for the path's database.
func (p Path) Schemas() []string { return p.Catalog.schemasIn(p.db()) }

// SchemaOID implements Reader for the path's database.
func (p Path) SchemaOID(name string) uint32 { return p.Catalog.SchemaOIDIn(p.db(), name) }

// HasSchema reports whether schema name exists in the path's database.
func (p Path) HasSchema(name string) bool { return p.SchemaOID(name) != 0 }

// ByID implements Reader.
func (c *Catalog) ByID(id uint32) (*Relation, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	r, ok := c.mu.byID[id]
	return r, ok
}

// Relations implements Reader.
func (c *Catalog) Relations() []*Relation {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]*Relation, 0, len(c.mu.byID))
	for _, r := range c.mu.byID {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Dependents implements Reader.
func (c *Catalog) Dependents(id uint32) []*Relation {
	var out []*Relation
	for _, r := range c.Relations() {
		if slices.Contains(r.DependsOn, id) {
			out = append(out, r)
		}
	}
	return out
}

// Schemas implements Reader (database dev's).
func (c *Catalog) Schemas() []string { return c.schemasIn(Database) }

// SchemaOID implements Reader (database dev's).
func (c *Catalog) SchemaOID(name string) uint32 { return c.SchemaOIDIn(Database, name) }

// HasSchema reports whether schema name exists in database dev.
func (c *Catalog) HasSchema(name string) bool { return c.SchemaOID(name) != 0 }

// IsBuiltinSchema reports whether name is a schema that always exists.
func IsBuiltinSchema(name string) bool { return slices.Contains(builtinSchemas, name) }

// UserSchemas returns CREATE SCHEMA's schemas: name -> oid.
func (c *Catalog) UserSchemas() map[string]uint32 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return maps.Clone(c.mu.schemas)
}

// SetSchemas installs CREATE SCHEMA's schemas (at start-up, and after
// CREATE or DROP SCHEMA): name -> oid, each oid taken from NextID.
func (c *Catalog) SetSchemas(schemas map[string]uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.schemas = maps.Clone(schemas)
	for _, oid := range schemas {
		if oid >= c.mu.nextID {
			c.mu.nextID = oid + 1
		}
	}
}

// Add publishes a new relation. A name clash gives ErrDuplicateTable.
func (c *Catalog) Add(r *Relation) error {
	if err := validate(r); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.mu.databases[r.DB()]; !ok {
		return errNoDatabase(r.DB())
	}
	if _, ok := c.mu.schemas[schemaKey(r.DB(), r.Schema)]; !ok && r.Schema != DefaultSchema {
		return types.Errorf(types.ErrInvalidSchemaName, "schema \"%s\" does not exist", r.Schema)
	}
	if old, ok := c.mu.byName[r.key()]; ok {
		return types.Errorf(types.ErrDuplicateTable, "%s \"%s\" already exists", old.Kind, r.Name)
	}
	if _, ok := c.mu.byID[r.ID]; ok {
		return fmt.Errorf("catalog: relation id %d already used", r.ID)
	}
	c.mu.byID[r.ID] = r
	c.mu.byName[r.key()] = r
	return nil
}

// Replace swaps in a new descriptor for an existing relation (same id and name).
func (c *Catalog) Replace(r *Relation) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	old, ok := c.mu.byID[r.ID]
	if !ok || old.key() != r.key() {
		return fmt.Errorf("catalog: replace of unknown relation %d", r.ID)
	}
	c.mu.byID[r.ID] = r
	c.mu.byName[r.key()] = r
	return nil
}

// Rename swaps in r, a new descriptor for an existing relation under a new
// name. A name clash gives ErrDuplicateTable.
func (c *Catalog) Rename(r *Relation) error {
	if err := validate(r); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	old, ok := c.mu.byID[r.ID]
	if !ok {
		return fmt.Errorf("catalog: rename of unknown relation %d", r.ID)
	}
	if other, ok := c.mu.byName[r.key()]; ok && other.ID != r.ID {
		return types.Errorf(types.ErrDuplicateTable, "relation \"%s\" already exists", r.Name)
	}
	delete(c.mu.byName, old.key())
	c.mu.byID[r.ID] = r
	c.mu.byName[r.key()] = r
	return nil
}

// Remove unpublishes a relation.
func (c *Catalog) Remove(id uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.mu.byID[id]; ok {
		delete(c.mu.byID, id)
		delete(c.mu.byName, r.key())
	}
}

func validate(r *Relation) error {
	if r.Name == "" {
		return types.Errorf(types.ErrInvalidName, "zero-length delimited identifier")
	}
	if r.Schema != DefaultSchema && IsBuiltinSchema(r.Schema) {
		return types.Errorf(types.ErrInsufficientPrivilege, "permission denied to create \"%s.%s\"", r.Schema, r.Name)
	}
	seen := map[string]bool{}
	for _, col := range r.Columns {
		if seen[col.Name] {
			return types.Errorf(types.ErrDuplicateColumn, "column \"%s\" specified more than once", col.Name)
		}
		seen[col.Name] = true
	}
	for _, k := range r.PK {
		if k < 0 || k >= len(r.Columns) {
			return fmt.Errorf("catalog: pk column %d out of range", k)
		}
	}
	return nil
}
