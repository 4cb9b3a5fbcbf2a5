package session

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/connector"
	"github.com/tributary/tributary/executor/coordinator"
	"github.com/tributary/tributary/executor/stream"
	"github.com/tributary/tributary/planner/job"
	"github.com/tributary/tributary/planner/physical"
	"github.com/tributary/tributary/server/pgwire"
	"github.com/tributary/tributary/sql/parser"
	"github.com/tributary/tributary/sql/types"
)

// includeColumns are the default names and types of INCLUDE columns.
var includeColumns = map[string]catalog.Column{
	connector.MetaPartition: {Name: "_rw_kafka_partition", Type: types.TVarchar},
	connector.MetaOffset:    {Name: "_rw_kafka_offset", Type: types.TVarchar},
	connector.MetaTimestamp: {Name: "_rw_kafka_timestamp", Type: types.TTimestamptz},
	connector.MetaKey:       {Name: "_rw_key", Type: types.TBytea},
}

// The hidden columns of a shared source's stream: each row's split and
// position, by which a new job's backfill tells its own rows from the
// shared stream's.
const (
	splitColumn    = "_rw_split"
	positionColumn = "_rw_position"
)

// connectorOptions checks a CREATE TABLE's or CREATE SOURCE's connector
// options against the relation, adds its INCLUDE columns (then sets the
// primary key to key's columns, when given: it may name them) (and a shared
// source's hidden split and position columns), and records the typed
// settings in rel.Connector (with the session's source_rate_limit). A
// shared connector's external system must answer.
func (s *Session) connectorOptions(ctx context.Context, rel *catalog.Relation, with []parser.Option, format *parser.FormatEncode, include []parser.Include, key []string) error {
	props := map[string]string{}
	for _, o := range with {
		k := strings.ToLower(o.Key)
		if strings.HasPrefix(k, internalOptionPrefix) {
			return types.Errorf(types.ErrInvalidParameter, "unknown option %q (options beginning with %q are Tributary's own)", k, internalOptionPrefix)
		}
		props[k] = o.Value
	}
	conn := &catalog.Connector{Props: props, RateLimit: -1}
	if format != nil {
		if len(format.Options) > 0 {
			return types.Errorf(types.ErrUnsupported, "FORMAT ... ENCODE ... (options) is not supported")
		}
		conn.Format, conn.Encode = strings.ToLower(format.Format), strings.ToLower(format.Encode)
	}
	c, err := connector.LookupSource(props)
	if err != nil {
		return err
	}
	if err := s.checkConnectOut(ctx, c.Name, c.Endpoints, props); err != nil {
		return err
	}
	// INCLUDE columns go before the hidden row id, in the order given.
	var rowID *catalog.Column
	if n := len(rel.Columns); n > 0 && rel.Columns[n-1].Name == catalog.RowIDColumn && rel.HasRowID() {
		c := rel.Columns[n-1]
		rowID = &c
		rel.Columns = rel.Columns[: n-1 : n-1]
	}
	for _, inc := range include {
		col, ok := includeColumns[inc.What]
		if !ok {
			return types.Errorf(types.ErrUnsupported, "INCLUDE %s is not supported (supported: partition, offset, timestamp, key)", inc.What)
		}
		if inc.Name != "" {
			col.Name = inc.Name
		}
		col.Meta = inc.What
		if rel.ColumnIndex(col.Name) >= 0 {
			return types.Errorf(types.ErrDuplicateColumn, "column \"%s\" specified more than once", col.Name)
		}
		rel.Columns = append(rel.Columns, col)
	}
	if rowID != nil {
		rowID.Meta = connector.MetaRowID
		rel.Columns = append(rel.Columns, *rowID)
		rel.PK = []int{len(rel.Columns) - 1}
	}
	if len(key) > 0 { // a primary key that may name INCLUDE columns
		if err := resolveKey(rel, key); err != nil {
			return err
		}
	}
	conn.Shared = c.Shared && rel.Kind == catalog.KindSource
	conn.ReadOnly = c.ReadOnly
	conn.Splits = c.Shared && !c.ReadOnly && !c.Tables && rel.Kind == catalog.KindTable
	if conn.Shared {
		rel.Columns = append(rel.Columns,
			catalog.Column{Name: splitColumn, Type: types.TVarchar, NotNull: true, Hidden: true, Meta: connector.MetaSplit},
			catalog.Column{Name: positionColumn, Type: types.TInt64, NotNull: true, Hidden: true, Meta: connector.MetaPosition})
	}
	if conn.RateLimit, err = s.sourceRateLimit(); err != nil {
		return err
	}
	rel.Connector = conn
	_, src, err := stream.OpenSource(rel)
	if err != nil {
		return err
	}
	if err := src.Check(ctx); err != nil {
		return s.peerErr(err)
	}
	resolveTable(rel, src)
	return nil
}

// resolveTable records what a connector table's Check fixed: its options
// as the connector resolved them (a CDC table's key ranges), and whether
// its job's actors share out its splits (connector.SplitSharer; then its
// parallelism starts as the connector asks, in rel.Job).
func resolveTable(rel *catalog.Relation, src connector.Source) {
	if r, ok := src.(connector.Resolver); ok && rel.Kind == catalog.KindTable {
		rel.Connector.Props = r.Resolved()
	}
	if ss, ok := src.(connector.SplitSharer); ok {
		if share, n := ss.SharedSplits(); share {
			rel.Connector.Splits = true
			if n > 0 {
				rel.Job = &catalog.JobSettings{Parallelism: min(n, maxParallelism)}
			}
		}
	}
}

// internalOptionPrefix begins the connector options Tributary records
// itself (connector.OptSiblings and a CDC source's own).
const internalOptionPrefix = "tributary."

// sourceRateLimit is the session's source_rate_limit (-1: DEFAULT).
func (s *Session) sourceRateLimit() (int64, error) {
	r, err := s.vars.get("source_rate_limit")
	if err != nil || r == "default" {
		return -1, nil
	}
	v, err := strconv.ParseInt(r, 10, 64)
	if err != nil {
		return -1, types.Errorf(types.ErrInvalidParameter, "source_rate_limit must be a non-negative integer or DEFAULT")
	}
	return v, nil
}

// tablesSource reports whether rel is a source that tables are created
// FROM (a CDC source: it holds no rows itself).
func tablesSource(rel *catalog.Relation) bool {
	if rel.Kind != catalog.KindSource || rel.Connector == nil {
		return false
	}
	c, err := connector.LookupSource(rel.Connector.Props)
	return err == nil && c.Tables
}

// sourceTableOptions makes rel (CREATE TABLE ... FROM source TABLE 'name')
// a table of a CDC source: the connector's options are the source's for
// the upstream table, the table depends on the source (DROP SOURCE is
// refused while it exists), and the upstream table must answer as the
// table's columns need (the connector's Check). with are the table's own
// options: only those the connector lets a table set (TableOptions).
func (s *Session) sourceTableOptions(ctx context.Context, rel *catalog.Relation, from parser.ObjectName, table string, with []parser.Option) error {
	src, err := s.lookup(from.Schema, from.Name)
	if err != nil {
		return err
	}
	if !tablesSource(src) {
		return types.Errorf(types.ErrWrongObjectType, "\"%s\" is not a CDC source: CREATE TABLE ... FROM source TABLE 'name' reads a source of a CDC connector (postgres-cdc)", src.Name)
	}
	c, err := connector.LookupSource(src.Connector.Props)
	if err != nil {
		return err
	}
	props, err := c.TableOf(src.Connector.Props, src.QualifiedName(), table)
	if err != nil {
		return err
	}
	for _, o := range with {
		k := strings.ToLower(o.Key)
		if !slices.Contains(c.TableOptions, k) {
			return types.Errorf(types.ErrUnsupported, "CREATE TABLE ... FROM source TABLE takes no option %q: the source's options apply (a table may set only %s)", k, strings.Join(c.TableOptions, ", "))
		}
		props[k] = o.Value
	}
	if err := s.checkConnectOut(ctx, c.Name, c.Endpoints, props); err != nil {
		return err
	}
	// The table's own options (and those Tributary recorded, such as a
	// CDC table's key ranges) do not make it mirror another table.
	mirrors := func(p map[string]string) map[string]string {
		p = maps.Clone(p)
		for k := range p {
			if slices.Contains(c.TableOptions, k) || strings.HasPrefix(k, internalOptionPrefix) {
				delete(p, k)
			}
		}
		return p
	}
	for _, d := range s.eng.Catalog.Dependents(src.ID) {
		if d.Kind == catalog.KindTable && d.Connector != nil && maps.Equal(mirrors(d.Connector.Props), mirrors(props)) {
			return types.Errorf(types.ErrDuplicateObject, "table \"%s\" already mirrors upstream table '%s' of source %s: query it (or create a view on it)", d.Name, table, src.Name)
		}
	}
	conn := &catalog.Connector{Props: props, ReadOnly: c.ReadOnly}
	if conn.RateLimit, err = s.sourceRateLimit(); err != nil {
		return err
	}
	rel.Connector = conn
	rel.DependsOn = []uint32{src.ID}
	_, cs, err := stream.OpenSource(rel)
	if err != nil {
		return err
	}
	if err := cs.Check(ctx); err != nil {
		return s.peerErr(err)
	}
	resolveTable(rel, cs)
	return nil
}

// withProps are WITH options with keys lower-cased.
func withProps(with []parser.Option) map[string]string {
	props := map[string]string{}
	for _, o := range with {
		props[strings.ToLower(o.Key)] = o.Value
	}
	return props
}

// createTablesSource is CREATE SOURCE name WITH (connector = ...) of a
// connector whose tables are created FROM the source (CDC): the source
// has no columns and no job and holds no rows; CREATE checks the external
// system (and may make what the tables share there: a replication slot, a
// publication) and records the options as the connector resolved them.
func (s *Session) createTablesSource(ctx context.Context, rel *catalog.Relation, n *parser.CreateSource) (pgwire.Result, error) {
	if len(n.Columns) > 0 || len(n.Include) > 0 || n.Format != nil {
		return nil, types.Errorf(types.ErrUnsupported, "a %s source takes no columns, INCLUDE or FORMAT: create a table per upstream table FROM it (CREATE TABLE t (columns, PRIMARY KEY (...)) FROM %s TABLE 'schema.table')", withProps(n.With)["connector"], rel.Name)
	}
	props := withProps(n.With)
	for k := range props {
		if strings.HasPrefix(k, internalOptionPrefix) {
			return nil, types.Errorf(types.ErrInvalidParameter, "unknown option %q (options beginning with %q are Tributary's own)", k, internalOptionPrefix)
		}
	}
	c, err := connector.LookupSource(props)
	if err != nil {
		return nil, err
	}
	if err := s.checkConnectOut(ctx, c.Name, c.Endpoints, props); err != nil {
		return nil, err
	}
	rel.Connector = &catalog.Connector{Props: props, ReadOnly: c.ReadOnly, RateLimit: -1}
	_, src, err := stream.OpenSource(rel)
	if err != nil {
		return nil, err
	}
	if err := src.Check(ctx); err != nil {
		return nil, s.peerErr(err)
	}
	if r, ok := src.(connector.Resolver); ok {
		rel.Connector.Props = r.Resolved()
	}
	rel.ID = s.eng.Catalog.NextID()
	if err := s.publish(ctx, rel); err != nil {
		releaseSource(ctx, rel) // what Check made
		return nil, err
	}
	return tagOnly("CREATE_SOURCE"), nil
}

// releaseSource lets a dropped relation's connector release what it holds
// in the external system (a CDC table's replication slot). Best effort:
// an unreachable upstream does not keep the DROP from going on.
func releaseSource(ctx context.Context, rel *catalog.Relation) {
	_, src, err := stream.OpenSource(rel)
	if err != nil {
		return
	}
	if d, ok := src.(connector.Dropper); ok {
		_ = d.Drop(ctx) // documented: drop the slot by hand when the upstream was unreachable
	}
}

// isConnectorTable reports whether rel is a table fed by a connector.
func isConnectorTable(rel *catalog.Relation) bool { return job.IsConnectorTable(rel) }

// isSharedSource reports whether rel is a source with its own reader job.
func isSharedSource(rel *catalog.Relation) bool { return job.IsSharedSource(rel) }

// copiesFirst reports whether connector table rel's source begins with a
// finite part its job copies before the table is complete (a CDC table's
// copy of the upstream table: connector.Progresser), which a blocking
// CREATE waits for and backfill_rate_limit limits.
func copiesFirst(rel *catalog.Relation) bool {
	_, src, err := stream.OpenSource(rel)
	if err != nil {
		return false
	}
	_, ok := src.(connector.Progresser)
	return ok
}

// tableJobSettings are a CDC table's job settings from the session:
// backfill_rate_limit, which limits its copy.
func (s *Session) tableJobSettings() (*catalog.JobSettings, error) {
	js := &catalog.JobSettings{}
	r, err := s.vars.get("backfill_rate_limit")
	if err != nil || r == "default" {
		return js, nil
	}
	v, err := strconv.ParseInt(r, 10, 64)
	if err != nil || v < 0 {
		return nil, types.Errorf(types.ErrUnsupported, "backfill_rate_limit = %s does not apply to a CDC table's copy: set a number of rows per second or DEFAULT", r)
	}
	js.BackfillRate = &v
	return js, nil
}

// alterTableBackfillRate is ALTER TABLE name SET BACKFILL_RATE_LIMIT {= |
// TO} {n | DEFAULT} of a CDC table: its copy changes rate online (by a
// barrier mutation; the change stream keeps its own rate), and the rate is
// recorded with the table for restarts.
func (s *Session) alterTableBackfillRate(ctx context.Context, n *parser.Alter) (pgwire.Result, error) {
	s.eng.ddl.Lock()
	defer s.eng.ddl.Unlock()
	rel, err := s.lookup(n.Name.Schema, n.Name.Name)
	if err != nil {
		return nil, err
	}
	if rel.Kind != catalog.KindTable {
		return nil, types.Errorf(types.ErrWrongObjectType, "\"%s\" is not a table", rel.Name)
	}
	if !isConnectorTable(rel) || !copiesFirst(rel) {
		return nil, types.Errorf(types.ErrWrongObjectType, "\"%s\" is not a CDC table: BACKFILL_RATE_LIMIT of a table limits its copy of an upstream table (SOURCE_RATE_LIMIT limits a connector's rows)", rel.Name)
	}
	js := catalog.JobSettings{}
	if rel.Job != nil {
		js = *rel.Job
	}
	js.BackfillRate = nil
	rate := int64(-1)
	if !n.Default && !strings.EqualFold(n.Value, "default") {
		v, err := strconv.ParseInt(n.Value, 10, 64)
		if err != nil || v < 0 {
			return nil, types.Errorf(types.ErrInvalidParameter, "backfill_rate_limit of a CDC table must be a non-negative integer or DEFAULT")
		}
		rate, js.BackfillRate = v, &v
	}
	updated := *rel
	updated.Job = &js
	if err := s.replaceRelation(ctx, &updated); err != nil {
		return nil, err
	}
	if err := s.eng.coord().SetBackfillRate(ctx, rel.StateTables[0], coordinator.JobOptions{BackfillRate: rate}); err != nil {
		return nil, fmt.Errorf("alter table %s: %w", rel.Name, err)
	}
	return tagOnly("ALTER_TABLE"), nil
}

// alterSourceRate is ALTER TABLE name SET SOURCE_RATE_LIMIT {= | TO} {n |
// DEFAULT}: a connector table's source changes rate online (by a barrier
// mutation), and the rate is recorded with the table for restarts.
func (s *Session) alterSourceRate(ctx context.Context, n *parser.Alter) (pgwire.Result, error) {
	s.eng.ddl.Lock()
	defer s.eng.ddl.Unlock()
	rel, err := s.lookup(n.Name.Schema, n.Name.Name)
	if err != nil {
		return nil, err
	}
	if n.Kind == parser.KindSource && rel.Kind != catalog.KindSource {
		return nil, types.Errorf(types.ErrWrongObjectType, "\"%s\" is not a source", rel.Name)
	}
	if n.Kind == parser.KindTable && !isConnectorTable(rel) {
		return nil, types.Errorf(types.ErrWrongObjectType, "\"%s\" is not a table with a connector", rel.Name)
	}
	if rel.Connector == nil {
		return nil, types.Errorf(types.ErrWrongObjectType, "\"%s\" has no connector", rel.Name)
	}
	if tablesSource(rel) {
		return nil, types.Errorf(types.ErrWrongObjectType, "source \"%s\" reads nothing itself: set SOURCE_RATE_LIMIT on its tables (ALTER TABLE t SET SOURCE_RATE_LIMIT = n)", rel.Name)
	}
	rate := int64(-1)
	if !n.Default && !strings.EqualFold(n.Value, "default") {
		v, err := strconv.ParseInt(n.Value, 10, 64)
		if err != nil || v < 0 {
			return nil, types.Errorf(types.ErrInvalidParameter, "source_rate_limit must be a non-negative integer or DEFAULT")
		}
		rate = v
	}
	updated := *rel
	conn := *rel.Connector
	conn.RateLimit = rate
	updated.Connector = &conn
	if err := s.replaceRelation(ctx, &updated); err != nil {
		return nil, err
	}
	if isSharedSource(rel) {
		if err := s.eng.coord().SetSourceRate(ctx, rel.ID, rate); err != nil {
			return nil, fmt.Errorf("alter source %s: %w", rel.Name, err)
		}
		return tagOnly("ALTER_SOURCE"), nil
	}
	if rel.Kind == catalog.KindSource {
		if err := s.eng.coord().SetSourceScanRate(ctx, rel.ID, rate); err != nil {
			return nil, fmt.Errorf("alter source %s: %w", rel.Name, err)
		}
		return tagOnly("ALTER_SOURCE"), nil
	}
	if err := s.eng.coord().SetSourceRate(ctx, rel.StateTables[0], rate); err != nil {
		return nil, fmt.Errorf("alter table %s: %w", rel.Name, err)
	}
	return tagOnly("ALTER_TABLE"), nil
}

// createSource is CREATE SOURCE name (columns) WITH (connector = ...). A
// shared connector's source (an external system: Kafka) runs one reader job
// whose stream every view or sink on it shares, each backfilling the
// splits' history first. A generator's source is a descriptor only: every
// view or sink over it reads the connector in its own job (a
// StreamSourceScan), from its own split offsets. Either way its rows are
// keyed by a hidden row id the connector fills from each row's split and
// position.
func (s *Session) createSource(ctx context.Context, n *parser.CreateSource) (pgwire.Result, error) {
	s.eng.ddl.Lock()
	defer s.eng.ddl.Unlock()
	schema, err := s.schemaOf(n.Name)
	if err != nil {
		return nil, err
	}
	if len(n.PrimaryKey) > 0 {
		return nil, types.Errorf(types.ErrUnsupported, "a source has no primary key (its rows are keyed by a hidden row id); use CREATE TABLE ... WITH (connector = ...) for a keyed table")
	}
	if res, found, err := s.exists(schema, n.Name.Name, n.IfNotExists, "CREATE_SOURCE"); found {
		return res, err
	}
	rel := &catalog.Relation{Database: s.relDB(), Schema: schema, Name: n.Name.Name, Kind: catalog.KindSource, Definition: n.Text(),
		AppendOnly: true, CreatedAt: time.Now().UTC()}
	if c, err := connector.LookupSource(withProps(n.With)); err == nil && c.Tables {
		if n.Watermark != nil {
			return nil, types.Errorf(types.ErrUnsupported, "WATERMARK FOR is not supported on a source of tables (%s)", c.Name)
		}
		return s.createTablesSource(ctx, rel, n)
	}
	for _, cd := range n.Columns {
		if cd.PrimaryKey {
			return nil, types.Errorf(types.ErrUnsupported, "a source has no primary key (its rows are keyed by a hidden row id)")
		}
		col, err := columnOf(cd, "")
		if err != nil {
			return nil, err
		}
		if rel.ColumnIndex(cd.Name) >= 0 {
			return nil, types.Errorf(types.ErrDuplicateColumn, "column \"%s\" specified more than once", cd.Name)
		}
		if col.Generated != "" {
			return nil, types.Errorf(types.ErrUnsupported, "generated columns on a source are not supported yet")
		}
		col.Default = "" // a source's rows come from its connector
		rel.Columns = append(rel.Columns, col)
	}
	if len(rel.Columns) == 0 {
		return nil, types.Errorf(types.ErrUnsupported, "a source needs at least one column")
	}
	rel.Columns = append(rel.Columns, catalog.Column{Name: catalog.RowIDColumn, Type: types.TInt64, NotNull: true, Hidden: true})
	rel.PK = []int{len(rel.Columns) - 1}
	if err := s.connectorOptions(ctx, rel, n.With, n.Format, n.Include, nil); err != nil {
		return nil, err
	}
	if err := setWatermark(rel, n.Watermark); err != nil {
		return nil, err
	}
	rel.ID = s.eng.Catalog.NextID()
	if rel.Connector.Shared {
		rel.StateTables = []uint32{s.eng.Catalog.NextID()} // the reader's split offsets
	}
	if err := s.publish(ctx, rel); err != nil {
		return nil, err
	}
	if isSharedSource(rel) {
		root := physical.SharedSourceReader(rel)
		if err := s.eng.coord().AddJob(ctx, rel.ID, root, coordinator.OptionsFor(rel, root)); err != nil {
			// Undo the source: it must not exist without its reader.
			_ = s.dropStreamingState(ctx, []*catalog.Relation{rel})
			s.eng.Catalog.Remove(rel.ID)
			return nil, err
		}
	}
	return tagOnly("CREATE_SOURCE"), nil
}
