package catalog

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/tributary/tributary/sql/types"
)

// System catalog conventions, shared with server/psqlcat so that psql's \d
// answers and the pg_catalog tables agree.
//
// pg_class lists tables (relkind 'r'), materialized views ('m'), views ('v')
// and the system tables themselves ('r', as PostgreSQL's own catalogs are).
// Sources and sinks are not relations in PostgreSQL's sense and are absent from
// pg_class, pg_attribute and information_schema (as in RisingWave); they are
// listed by rw_catalog.rw_sources and rw_catalog.rw_sinks. Hidden columns (the
// row id) appear nowhere; attnum and ordinal_position count visible columns.
const (
	// OwnerOID is the oid of the only user, "root" (PostgreSQL's bootstrap superuser oid).
	OwnerOID = 10
	// DatabaseOID is the oid of database "dev".
	DatabaseOID = 1
	// HeapAMOID and BtreeAMOID are pg_am's access methods (PostgreSQL's oids).
	HeapAMOID  = 2
	BtreeAMOID = 403
	// firstSystemID is the id of the first system table; they run up to FirstUserID.
	firstSystemID = 14001
	// collationDefault is pg_collation's "default" (the collation of text types).
	collationDefault = 100
)

// SchemaOID returns the pg_namespace oid of a schema (PostgreSQL's oids for
// pg_catalog and public), or 0 for an unknown schema.
func SchemaOID(schema string) uint32 {
	switch schema {
	case "pg_catalog":
		return 11
	case "public":
		return 2200
	case "information_schema":
		return 13000
	case "rw_catalog":
		return 13001
	}
	return 0
}

// RelKind returns the relation's pg_class.relkind, or 0 when it is not listed
// in pg_class (sinks and sources).
func RelKind(r *Relation) byte {
	switch r.Kind {
	case KindTable, KindSystem:
		return 'r'
	case KindMaterializedView:
		return 'm'
	case KindView:
		return 'v'
	case KindIndex:
		return 'i'
	}
	return 0
}

// HasPrimaryIndex reports whether the relation shows a primary-key index
// ("<name>_pkey"): a table whose key was declared (not the hidden row id).
func HasPrimaryIndex(r *Relation) bool {
	return r.Kind == KindTable && len(r.PK) > 0 && !r.HasRowID()
}

// PrimaryIndexName is the name of the primary-key index, PostgreSQL style.
func PrimaryIndexName(r *Relation) string { return r.Name + "_pkey" }

// VisibleColumns returns the relation's columns without the hidden ones, in order.
func VisibleColumns(r *Relation) []Column {
	out := make([]Column, 0, len(r.Columns))
	for _, c := range r.Columns {
		if !c.Hidden {
			out = append(out, c)
		}
	}
	return out
}

// ColumnNotNull reports pg_attribute.attnotnull for column i: declared NOT
// NULL, or part of a declared primary key.
func ColumnNotNull(r *Relation, i int) bool {
	if r.Columns[i].NotNull {
		return true
	}
	if !HasPrimaryIndex(r) {
		return false
	}
	for _, k := range r.PK {
		if k == i {
			return true
		}
	}
	return false
}

// DefaultText returns a column default as PostgreSQL's pg_get_expr prints it:
// a quoted literal gets the column's type as a cast ('x'::character varying),
// except for numbers and booleans, which print bare. "" when there is no default.
func DefaultText(c Column) string {
	d := strings.TrimSpace(c.Default)
	if d == "" {
		return ""
	}
	if c.Seq != nil && d == NextvalSQL(c.Seq.Name) { // a serial column's
		return strings.TrimSuffix(d, ")") + "::regclass)"
	}
	lit, ok := quotedLiteral(d)
	if !ok {
		return d
	}
	switch {
	case c.Type.IsNumeric():
		if _, err := types.ParseText(c.Type, lit); err == nil && !strings.ContainsAny(lit, " \t\n") {
			return lit
		}
	case c.Type.ID == types.Bool:
		if v, err := types.ParseText(c.Type, lit); err == nil {
			if v.Bool() {
				return "true"
			}
			return "false"
		}
	}
	return d + "::" + c.Type.Base().String()
}

// quotedLiteral reports whether s is exactly one single-quoted SQL string and returns its value.
func quotedLiteral(s string) (string, bool) {
	if len(s) < 2 || s[0] != '\'' || s[len(s)-1] != '\'' {
		return "", false
	}
	var b strings.Builder
	for i := 1; i < len(s)-1; i++ {
		if s[i] == '\'' {
			if i+1 < len(s)-1 && s[i+1] == '\'' {
				b.WriteByte('\'')
				i++
				continue
			}
			return "", false
		}
		b.WriteByte(s[i])
	}
	return b.String(), true
}

// PGType describes one pg_type row.
type PGType struct {
	OID      uint32
	Name     string // typname, e.g. "int4"
	Len      int16
	ByVal    bool
	Type     byte // typtype: 'b' base, 'p' pseudo
	Category byte // typcategory
	Storage  byte // typstorage: 'p' plain, 'm' main, 'x' extended
	Align    byte
}

// PGTypes lists the types pg_type holds: every type Tributary supports plus
// the few PostgreSQL names clients ask about (text, name, oid, ...).
var PGTypes = []PGType{
	{types.OIDBool, "bool", 1, true, 'b', 'B', 'p', 'c'},
	{types.OIDBytea, "bytea", -1, false, 'b', 'U', 'x', 'i'},
	{types.OIDName, "name", 64, false, 'b', 'S', 'p', 'c'},
	{types.OIDInt8, "int8", 8, true, 'b', 'N', 'p', 'd'},
	{types.OIDInt2, "int2", 2, true, 'b', 'N', 'p', 's'},
	{types.OIDInt4, "int4", 4, true, 'b', 'N', 'p', 'i'},
	{types.OIDText, "text", -1, false, 'b', 'S', 'x', 'i'},
	{types.OIDOid, "oid", 4, true, 'b', 'N', 'p', 'i'},
	{types.OIDJSON, "json", -1, false, 'b', 'U', 'x', 'i'},
	{types.OIDFloat4, "float4", 4, true, 'b', 'N', 'p', 'i'},
	{types.OIDFloat8, "float8", 8, true, 'b', 'N', 'p', 'd'},
	{types.OIDUnknown, "unknown", -2, false, 'p', 'X', 'p', 'c'},
	{types.OIDBpchar, "bpchar", -1, false, 'b', 'S', 'x', 'i'},
	{types.OIDVarchar, "varchar", -1, false, 'b', 'S', 'x', 'i'},
	{types.OIDDate, "date", 4, true, 'b', 'D', 'p', 'i'},
	{types.OIDTime, "time", 8, true, 'b', 'D', 'p', 'd'},
	{types.OIDTimestamp, "timestamp", 8, true, 'b', 'D', 'p', 'd'},
	{types.OIDTimestamptz, "timestamptz", 8, true, 'b', 'D', 'p', 'd'},
	{types.OIDInterval, "interval", 16, false, 'b', 'T', 'p', 'd'},
	{types.OIDNumeric, "numeric", -1, false, 'b', 'N', 'm', 'i'},
	{types.OIDRegclass, "regclass", 4, true, 'b', 'N', 'p', 'i'},
	{types.OIDJsonb, "jsonb", -1, false, 'b', 'U', 'x', 'i'},
	{types.OIDUuid, "uuid", 16, false, 'b', 'U', 'p', 'c'},
	{types.OIDRecord, "record", -1, false, 'p', 'P', 'x', 'd'}, // every struct
}

// The array types of the types above (_int4, _text, ...), as PostgreSQL
// lists them: typcategory 'A', typelem (types.ElemOID) the element.
func init() {
	n := len(PGTypes)
	for _, p := range PGTypes[:n] {
		arr := types.ArrayOID(p.OID)
		if arr == 0 || p.Type != 'b' && p.OID != types.OIDRecord {
			continue
		}
		align := byte('i')
		if p.Align == 'd' {
			align = 'd'
		}
		PGTypes = append(PGTypes, PGType{OID: arr, Name: "_" + p.Name, Len: -1, Type: 'b', Category: 'A',
			Storage: 'x', Align: align})
	}
}

// PGTypeOf returns the pg_type row of t.
func PGTypeOf(t types.T) PGType {
	oid := t.OID()
	for _, p := range PGTypes {
		if p.OID == oid {
			return p
		}
	}
	return PGTypes[6] // text
}

// systemTable is one system table: its columns and how its rows are made.
type systemTable struct {
	schema, name string
	cols         []Column
	rows         func(r Reader) [][]types.Datum
}

// Column type shorthands, named after the PostgreSQL type each stands for.
var (
	tOID  = types.TInt32
	tName = types.TVarchar
	tText = types.TVarchar
	tChar = types.TVarchar // PostgreSQL's one-byte "char"
	tBool = types.TBool
	tI2   = types.TInt16
	tI4   = types.TInt32
	tI8   = types.TInt64
	tF4   = types.TFloat32
	tTSTZ = types.TTimestamptz
)

func col(name string, t types.T) Column { return Column{Name: name, Type: t} }

// systemTables is the fixed list; ids follow its order, so append only.
var systemTables = []systemTable{
	{"pg_catalog", "pg_namespace", []Column{
		col("oid", tOID), col("nspname", tName), col("nspowner", tOID), col("nspacl", tText),
	}, pgNamespaceRows},
	{"pg_catalog", "pg_class", []Column{
		col("oid", tOID), col("relname", tName), col("relnamespace", tOID), col("reltype", tOID),
		col("reloftype", tOID), col("relowner", tOID), col("relam", tOID), col("relfilenode", tOID),
		col("reltablespace", tOID), col("relpages", tI4), col("reltuples", tF4), col("relallvisible", tI4),
		col("reltoastrelid", tOID), col("relhasindex", tBool), col("relisshared", tBool),
		col("relpersistence", tChar), col("relkind", tChar), col("relnatts", tI2), col("relchecks", tI2),
		col("relhasrules", tBool), col("relhastriggers", tBool), col("relhassubclass", tBool),
		col("relrowsecurity", tBool), col("relforcerowsecurity", tBool), col("relispopulated", tBool),
		col("relreplident", tChar), col("relispartition", tBool), col("relrewrite", tOID),
		col("reloptions", tText), col("relpartbound", tText),
	}, pgClassRows},
	{"pg_catalog", "pg_attribute", []Column{
		col("attrelid", tOID), col("attname", tName), col("atttypid", tOID), col("attstattarget", tI4),
		col("attlen", tI2), col("attnum", tI2), col("attndims", tI4), col("attcacheoff", tI4),
		col("atttypmod", tI4), col("attbyval", tBool), col("attalign", tChar), col("attstorage", tChar),
		col("attcompression", tChar), col("attnotnull", tBool), col("atthasdef", tBool),
		col("atthasmissing", tBool), col("attidentity", tChar), col("attgenerated", tChar),
		col("attisdropped", tBool), col("attislocal", tBool), col("attinhcount", tI4),
		col("attcollation", tOID), col("attacl", tText), col("attoptions", tText), col("attfdwoptions", tText),
	}, pgAttributeRows},
	{"pg_catalog", "pg_type", []Column{
		col("oid", tOID), col("typname", tName), col("typnamespace", tOID), col("typowner", tOID),
		col("typlen", tI2), col("typbyval", tBool), col("typtype", tChar), col("typcategory", tChar),
		col("typispreferred", tBool), col("typisdefined", tBool), col("typdelim", tChar),
		col("typrelid", tOID), col("typelem", tOID), col("typarray", tOID), col("typalign", tChar),
		col("typstorage", tChar), col("typnotnull", tBool), col("typbasetype", tOID),
		col("typtypmod", tI4), col("typndims", tI4), col("typcollation", tOID),
	}, pgTypeRows},
	{"pg_catalog", "pg_proc", []Column{
		col("oid", tOID), col("proname", tName), col("pronamespace", tOID), col("proowner", tOID),
		col("prolang", tOID), col("prokind", tChar), col("prosecdef", tBool), col("proisstrict", tBool),
		col("proretset", tBool), col("provolatile", tChar), col("pronargs", tI2), col("prorettype", tOID),
		col("proargtypes", tText), col("prosrc", tText), col("proacl", tText),
	}, func(Reader) [][]types.Datum { return nil }}, // the session answers it (ProcRows)
	{"pg_catalog", "pg_extension", []Column{
		col("oid", tOID), col("extname", tName), col("extowner", tOID), col("extnamespace", tOID),
		col("extrelocatable", tBool), col("extversion", tText), col("extconfig", tText), col("extcondition", tText),
	}, func(Reader) [][]types.Datum { return nil }}, // no extensions
	{"pg_catalog", "pg_database", []Column{
		col("oid", tOID), col("datname", tName), col("datdba", tOID), col("encoding", tI4),
		col("datlocprovider", tChar), col("datistemplate", tBool), col("datallowconn", tBool),
		col("datconnlimit", tI4), col("dattablespace", tOID), col("datcollate", tText),
		col("datctype", tText), col("daticulocale", tText), col("datacl", tText),
	}, pgDatabaseRows},
	{"pg_catalog", "pg_tables", []Column{
		col("schemaname", tName), col("tablename", tName), col("tableowner", tName), col("tablespace", tName),
		col("hasindexes", tBool), col("hasrules", tBool), col("hastriggers", tBool), col("rowsecurity", tBool),
	}, pgTablesRows},
	{"pg_catalog", "pg_views", []Column{
		col("schemaname", tName), col("viewname", tName), col("viewowner", tName), col("definition", tText),
	}, pgViewsRows},
	{"pg_catalog", "pg_matviews", []Column{
		col("schemaname", tName), col("matviewname", tName), col("matviewowner", tName),
		col("tablespace", tName), col("hasindexes", tBool), col("ispopulated", tBool), col("definition", tText),
	}, pgMatviewsRows},
	{"pg_catalog", "pg_index", []Column{
		col("indexrelid", tOID), col("indrelid", tOID), col("indnatts", tI2), col("indnkeyatts", tI2),
		col("indisunique", tBool), col("indnullsnotdistinct", tBool), col("indisprimary", tBool),
		col("indisexclusion", tBool), col("indimmediate", tBool), col("indisclustered", tBool),
		col("indisvalid", tBool), col("indcheckxmin", tBool), col("indisready", tBool),
		col("indislive", tBool), col("indisreplident", tBool), col("indkey", tText),
		col("indcollation", tText), col("indclass", tText), col("indoption", tText),
		col("indexprs", tText), col("indpred", tText),
	}, pgIndexRows},
	{"pg_catalog", "pg_roles", []Column{
		col("rolname", tName), col("rolsuper", tBool), col("rolinherit", tBool), col("rolcreaterole", tBool),
		col("rolcreatedb", tBool), col("rolcanlogin", tBool), col("rolreplication", tBool),
		col("rolconnlimit", tI4), col("rolpassword", tText), col("rolvaliduntil", tTSTZ),
		col("rolbypassrls", tBool), col("rolconfig", tText), col("oid", tOID),
	}, pgRolesRows},
	{"pg_catalog", "pg_user", []Column{
		col("usename", tName), col("usesysid", tOID), col("usecreatedb", tBool), col("usesuper", tBool),
		col("userepl", tBool), col("usebypassrls", tBool), col("passwd", tText), col("valuntil", tTSTZ),
		col("useconfig", tText),
	}, pgUserRows},
	{"pg_catalog", "pg_am", []Column{
		col("oid", tOID), col("amname", tName), col("amhandler", tText), col("amtype", tChar),
	}, pgAmRows},
	{"information_schema", "tables", []Column{
		col("table_catalog", tName), col("table_schema", tName), col("table_name", tName),
		col("table_type", tText), col("self_referencing_column_name", tName),
		col("reference_generation", tText), col("user_defined_type_catalog", tName),
		col("user_defined_type_schema", tName), col("user_defined_type_name", tName),
		col("is_insertable_into", tText), col("is_typed", tText), col("commit_action", tText),
	}, isTablesRows},
	{"information_schema", "columns", []Column{
		col("table_catalog", tName), col("table_schema", tName), col("table_name", tName),
		col("column_name", tName), col("ordinal_position", tI4), col("column_default", tText),
		col("is_nullable", tText), col("data_type", tText), col("character_maximum_length", tI4),
		col("character_octet_length", tI4), col("numeric_precision", tI4),
		col("numeric_precision_radix", tI4), col("numeric_scale", tI4), col("datetime_precision", tI4),
		col("udt_catalog", tName), col("udt_schema", tName), col("udt_name", tName),
		col("is_identity", tText), col("is_generated", tText), col("generation_expression", tText),
		col("is_updatable", tText),
	}, isColumnsRows},
	{"information_schema", "schemata", []Column{
		col("catalog_name", tName), col("schema_name", tName), col("schema_owner", tName),
		col("default_character_set_catalog", tName), col("default_character_set_schema", tName),
		col("default_character_set_name", tName), col("sql_path", tText),
	}, isSchemataRows},
	{"information_schema", "views", []Column{
		col("table_catalog", tName), col("table_schema", tName), col("table_name", tName),
		col("view_definition", tText), col("check_option", tText), col("is_updatable", tText),
		col("is_insertable_into", tText), col("is_trigger_updatable", tText),
		col("is_trigger_deletable", tText), col("is_trigger_insertable_into", tText),
	}, isViewsRows},
	{"rw_catalog", "rw_tables", []Column{
		col("id", tI4), col("name", tText), col("schema_id", tI4), col("owner", tI4),
		col("definition", tText), col("append_only", tBool), col("created_at", tTSTZ),
	}, rwRows(KindTable)},
	{"rw_catalog", "rw_materialized_views", []Column{
		col("id", tI4), col("name", tText), col("schema_id", tI4), col("owner", tI4),
		col("definition", tText), col("append_only", tBool), col("created_at", tTSTZ),
		// status: Created, or Creating while its job backfills (the
		// engine's; the catalog alone says Created).
		col("status", tText),
	}, func(r Reader) [][]types.Datum {
		rows := rwRows(KindMaterializedView)(r)
		for i := range rows {
			rows[i] = append(rows[i], dS("Created"))
		}
		return rows
	}},
	// rw_indexes: CREATE INDEX's indexes, with the table they index and
	// whether they were created in the background (background_ddl).
	{"rw_catalog", "rw_indexes", []Column{
		col("id", tI4), col("name", tText), col("primary_table_id", tI4), col("schema_id", tI4), col("owner", tI4),
		col("definition", tText), col("created_at", tTSTZ), col("background_ddl", tBool),
	}, func(r Reader) [][]types.Datum {
		var rows [][]types.Datum
		for _, rel := range userRelations(r, KindIndex) {
			table := null
			if rel.Index != nil {
				table = dI(int64(rel.Index.Table))
			}
			rows = append(rows, []types.Datum{dI(int64(rel.ID)), dS(rel.Name), table, dI(int64(r.SchemaOID(rel.Schema))), dI(OwnerOID),
				dS(rel.Definition), createdAt(rel), dB(rel.Job != nil && rel.Job.Background)})
		}
		return rows
	}},
	{"rw_catalog", "rw_views", []Column{
		col("id", tI4), col("name", tText), col("schema_id", tI4), col("owner", tI4),
		col("definition", tText), col("append_only", tBool), col("created_at", tTSTZ),
	}, rwRows(KindView)},
	{"rw_catalog", "rw_sources", []Column{
		col("id", tI4), col("name", tText), col("schema_id", tI4), col("owner", tI4),
		col("connector", tText), col("definition", tText), col("append_only", tBool), col("created_at", tTSTZ),
	}, rwConnectorRows(KindSource)},
	{"rw_catalog", "rw_sinks", []Column{
		col("id", tI4), col("name", tText), col("schema_id", tI4), col("owner", tI4),
		col("connector", tText), col("definition", tText), col("append_only", tBool), col("created_at", tTSTZ),
	}, rwConnectorRows(KindSink)},
	{"rw_catalog", "rw_relations", []Column{
		col("id", tI4), col("name", tText), col("relation_type", tText), col("schema_id", tI4), col("owner", tI4),
	}, rwRelationsRows},
	{"rw_catalog", "rw_schemas", []Column{
		col("id", tI4), col("name", tText), col("owner", tI4),
	}, rwSchemasRows},
	// rw_ddl_progress's rows come from the streaming engine (the session
	// answers it); the catalog alone knows of no running backfill.
	{"rw_catalog", "rw_ddl_progress", []Column{
		col("ddl_id", tI8), col("ddl_statement", tText), col("create_type", tText), col("progress", tText),
		col("initialized_at", types.TTimestamptz), col("backfill_type", tText),
	}, func(Reader) [][]types.Datum { return nil }},
	// rw_barrier_latency's rows (the last committed epochs' barrier round
	// trips, by epoch) come from the streaming engine too.
	{"rw_catalog", "rw_barrier_latency", []Column{
		col("epoch", tI8), col("injected_at", tTSTZ), col("committed_at", tTSTZ),
		col("latency_ms", types.TFloat64),
	}, func(Reader) [][]types.Datum { return nil }},
	// rw_sink_log_store: each decoupled sink actor's log store (from the
	// streaming engine): committed epochs, rows and bytes not yet delivered.
	{"rw_catalog", "rw_sink_log_store", []Column{
		col("sink_name", tText), col("actor_id", tI8), col("pending_epochs", tI8), col("pending_rows", tI8),
		col("pending_bytes", tI8), col("delivered_epoch", tI8), col("failures", tI8), col("last_error", tText),
	}, func(Reader) [][]types.Datum { return nil }},
	// rw_event_logs: recent failures (sink deliveries, SINK_FAIL), streaming
	// jobs' expression errors (EXPR_ERROR) and sources' trouble and bad
	// messages (SOURCE_ERROR, SOURCE_BAD_MESSAGE, sampled), from the
	// streaming engine.
	{"rw_catalog", "rw_event_logs", []Column{
		col("timestamp", tTSTZ), col("event_type", tText), col("object_name", tText), col("actor_id", tI8), col("error", tText),
	}, func(Reader) [][]types.Datum { return nil }},
	// rw_fragments: every running job's fragments (from the streaming
	// engine): its top operator, parallelism and actors.
	{"rw_catalog", "rw_fragments", []Column{
		col("job_id", tI8), col("fragment_id", tI4), col("kind", tText), col("parallelism", tI4), col("actor_ids", tText),
		col("vnode_counts", tText),
	}, func(Reader) [][]types.Datum { return nil }},
	// rw_table_stats: the keys and bytes of every stored table (a table's or
	// materialized view's own rows, and each streaming job's state tables),
	// as RisingWave's, plus the job owning each; counted by scanning every
	// key at the committed epoch when queried (the session answers it).
	{"rw_catalog", "rw_table_stats", []Column{
		col("id", tI4), col("total_key_count", tI8), col("total_key_size", tI8), col("total_value_size", tI8),
		col("job_id", tI4),
	}, func(Reader) [][]types.Datum { return nil }},
	// rw_source_splits: each source split's reader: where it stands, rows
	// read since it started, bad messages since the server started.
	{"rw_catalog", "rw_source_splits", []Column{
		col("source_name", tText), col("split", tText), col("actor_id", tI8), col("next_offset", tI8),
		col("rows_read", tI8), col("bad_messages", tI8), col("last_error", tText),
	}, func(Reader) [][]types.Datum { return nil }},
	// rw_memory: the memory budget (--memory-limit) and what each consumer
	// may hold and holds (bytes; NULL when it has no budget of its own or
	// the figure is unknown): the total, the store's memtables and caches,
	// the streaming caches together and each operator cache by job and
	// actor (from the engine).
	{"rw_catalog", "rw_memory", []Column{
		col("consumer", tText), col("job_id", tI4), col("actor_id", tI4), col("budget_bytes", tI8), col("used_bytes", tI8),
	}, func(Reader) [][]types.Datum { return nil }},
	// rw_cdc_progress: each CDC table's copy and change stream position, as
	// last committed (from its reader).
	{"rw_catalog", "rw_cdc_progress", []Column{
		col("table_name", tText), col("split", tText), col("pk_position", tText), col("finished", tBool),
		col("row_count", tI8), col("lsn", tText),
		col("split_total_count", tI8), col("split_backfilled_count", tI8), col("split_completed_count", tI8),
	}, func(Reader) [][]types.Datum { return nil }},
	// rw_cdc_splits: each CDC table's copy per key range (backfill.parallelism;
	// one range otherwise), as last committed (from its reader).
	{"rw_catalog", "rw_cdc_splits", []Column{
		col("table_name", tText), col("split_id", tI4), col("pk_low", tText), col("pk_high", tText), col("pk_position", tText),
		col("finished", tBool), col("row_count", tI8), col("lsn_low", tText), col("lsn_high", tText),
	}, func(Reader) [][]types.Datum { return nil }},
	// rw_source_backfill_progress: every running shared source backfill's
	// state per split (from the streaming engine).
	{"rw_catalog", "rw_source_backfill_progress", []Column{
		col("job_id", tI8), col("actor_id", tI8), col("source_name", tText), col("split", tText),
		col("state", tText), col("start_offset", tI8), col("next_offset", tI8), col("end_offset", tI8), col("row_count", tI8),
	}, func(Reader) [][]types.Datum { return nil }},
	// rw_fragment_backfill_progress: every running backfill per fragment
	// and upstream relation (from the streaming engine), as RisingWave's.
	{"rw_catalog", "rw_fragment_backfill_progress", []Column{
		col("job_id", tI4), col("fragment_id", tI4), col("job_name", tText), col("upstream_table_name", tText),
		col("progress", tText),
	}, func(Reader) [][]types.Datum { return nil }},
	// rw_backfill_vnode_progress: every running backfill's state per upstream
	// vnode (from the streaming engine).
	{"rw_catalog", "rw_backfill_vnode_progress", []Column{
		col("job_id", tI8), col("actor_id", tI8), col("upstream_table", tText), col("vnode", tI4),
		col("state", tText), col("row_count", tI8), col("epoch", tI8),
	}, func(Reader) [][]types.Datum { return nil }},
	// pg_stat_activity: one row per client connection (from the wire
	// server, through the session).
	{"pg_catalog", "pg_stat_activity", []Column{
		col("datid", tOID), col("datname", tName), col("pid", tI4), col("leader_pid", tI4),
		col("usesysid", tOID), col("usename", tName), col("application_name", tText),
		col("client_addr", tText), col("client_hostname", tText), col("client_port", tI4),
		col("backend_start", tTSTZ), col("xact_start", tTSTZ), col("query_start", tTSTZ),
		col("state_change", tTSTZ), col("wait_event_type", tText), col("wait_event", tText),
		col("state", tText), col("backend_xid", tText), col("backend_xmin", tText), col("query_id", tI8),
		col("query", tText), col("backend_type", tText),
	}, func(Reader) [][]types.Datum { return nil }},
	// pg_authid: the roles with their password verifiers (from the
	// session, superusers only).
	{"pg_catalog", "pg_authid", []Column{
		col("oid", tOID), col("rolname", tName), col("rolsuper", tBool), col("rolinherit", tBool),
		col("rolcreaterole", tBool), col("rolcreatedb", tBool), col("rolcanlogin", tBool),
		col("rolreplication", tBool), col("rolbypassrls", tBool), col("rolconnlimit", tI4),
		col("rolpassword", tText), col("rolvaliduntil", tTSTZ),
	}, func(Reader) [][]types.Datum { return nil }},
	{"rw_catalog", "rw_databases", []Column{
		col("id", tI4), col("name", tText), col("owner", tI4),
	}, rwDatabasesRows},
}

// SystemRelations returns the fixed system-table descriptors (kind KindSystem,
// ids from 14001, below FirstUserID), in pg_catalog, information_schema and
// rw_catalog. Each call returns fresh descriptors.
func SystemRelations() []*Relation {
	out := make([]*Relation, len(systemTables))
	for i, st := range systemTables {
		out[i] = &Relation{
			ID:      uint32(firstSystemID + i),
			Schema:  st.schema,
			Name:    st.name,
			Kind:    KindSystem,
			Columns: append([]Column(nil), st.cols...),
		}
	}
	return out
}

// SystemRows produces the rows of system table rel from the catalog's current
// state, one datum per column of rel.Columns.
func SystemRows(r Reader, rel *Relation) ([][]types.Datum, error) {
	if rel.Kind != KindSystem {
		return nil, fmt.Errorf("system rows: %s is a %s, not a system table", rel.QualifiedName(), rel.Kind)
	}
	for _, st := range systemTables {
		if st.schema == rel.Schema && st.name == rel.Name {
			rows := st.rows(r)
			for _, row := range rows {
				if len(row) != len(st.cols) {
					return nil, fmt.Errorf("system rows: %s: row of %d values for %d columns", rel.QualifiedName(), len(row), len(st.cols))
				}
			}
			return rows, nil
		}
	}
	return nil, fmt.Errorf("system rows: unknown system table %s", rel.QualifiedName())
}

// Datum shorthands.
var null = types.NullDatum

func dS(s string) types.Datum { return types.DString(s) }
func dI(v int64) types.Datum  { return types.DInt(v) }
func dB(b bool) types.Datum   { return types.DBool(b) }
func dC(c byte) types.Datum {
	if c == 0 {
		return types.DString("")
	}
	return types.DString(string(c))
}

func noRows(Reader) [][]types.Datum { return nil }

// pgRelations returns the relations pg_class lists, ordered by id.
func pgRelations(r Reader) []*Relation {
	var out []*Relation
	for _, rel := range r.Relations() {
		if k := RelKind(rel); k != 0 && k != 'i' {
			out = append(out, rel)
		}
	}
	return out
}

// AttNum returns column i's pg_attribute.attnum: its position among the
// visible columns, from 1 (0 for a hidden column).
func AttNum(r *Relation, i int) int {
	if r.Columns[i].Hidden {
		return 0
	}
	n := 0
	for k := 0; k <= i; k++ {
		if !r.Columns[k].Hidden {
			n++
		}
	}
	return n
}

// pgIndexRows lists the user indexes (a table's primary key is not listed:
// psql's \d reads it through the queries server/psqlcat answers).
func pgIndexRows(r Reader) [][]types.Datum {
	var rows [][]types.Datum
	for _, rel := range r.Relations() {
		if rel.Kind != KindIndex || rel.Index == nil {
			continue
		}
		keys := make([]string, len(rel.Index.Columns))
		for i, c := range rel.Index.Columns {
			keys[i] = strconv.Itoa(AttNum(rel, c))
		}
		n := int64(len(keys))
		rows = append(rows, []types.Datum{
			dI(int64(rel.ID)), dI(int64(rel.Index.Table)), dI(n), dI(n),
			dB(false), dB(false), dB(false),
			dB(false), dB(true), dB(false),
			dB(true), dB(false), dB(true),
			dB(true), dB(false), dS(strings.Join(keys, " ")),
			null, null, null,
			null, null,
		})
	}
	return rows
}

// userRelations returns the non-system relations of the given kind, ordered by id.
func userRelations(r Reader, k Kind) []*Relation {
	var out []*Relation
	for _, rel := range r.Relations() {
		if rel.Kind == k {
			out = append(out, rel)
		}
	}
	return out
}

func pgNamespaceRows(r Reader) [][]types.Datum {
	var rows [][]types.Datum
	for _, s := range r.Schemas() {
		rows = append(rows, []types.Datum{dI(int64(r.SchemaOID(s))), dS(s), dI(OwnerOID), null})
	}
	return rows
}

func pgClassRows(r Reader) [][]types.Datum {
	var rows [][]types.Datum
	for _, rel := range r.Relations() {
		kind := RelKind(rel)
		if kind == 0 {
			continue
		}
		am, replident := int64(HeapAMOID), byte('d')
		switch kind {
		case 'v':
			am, replident = 0, 'n'
		case 'i':
			am, replident = int64(BtreeAMOID), 'n'
		}
		rows = append(rows, []types.Datum{
			dI(int64(rel.ID)), dS(rel.Name), dI(int64(r.SchemaOID(rel.Schema))), dI(0),
			dI(0), dI(OwnerOID), dI(am), dI(int64(rel.ID)),
			dI(0), dI(0), types.DFloat(-1), dI(0),
			dI(0), dB(HasPrimaryIndex(rel)), dB(false),
			dC('p'), dC(kind), dI(int64(len(VisibleColumns(rel)))), dI(0),
			dB(false), dB(false), dB(false),
			dB(false), dB(false), dB(true),
			dC(replident), dB(false), dI(0),
			null, null,
		})
	}
	return rows
}

func pgAttributeRows(r Reader) [][]types.Datum {
	var rows [][]types.Datum
	for _, rel := range pgRelations(r) {
		num := 0
		for i, c := range rel.Columns {
			if c.Hidden {
				continue
			}
			num++
			pt := PGTypeOf(c.Type)
			coll := int64(0)
			if c.Type.IsString() {
				coll = collationDefault
			}
			identity := byte(0)
			if c.Identity != "" {
				identity = c.Identity[0]
			}
			rows = append(rows, []types.Datum{
				dI(int64(rel.ID)), dS(c.Name), dI(int64(c.Type.OID())), dI(-1),
				dI(int64(c.Type.Size())), dI(int64(num)), dI(int64(attndims(c.Type))), dI(-1),
				dI(int64(c.Type.Typmod())), dB(pt.ByVal), dC(pt.Align), dC(pt.Storage),
				dC(0), dB(ColumnNotNull(rel, i)), dB(c.Default != ""),
				dB(false), dC(identity), dC(0),
				dB(false), dB(true), dI(0),
				dI(coll), null, null, null,
			})
		}
	}
	return rows
}

// pgArrayOIDs are PostgreSQL's array types of its base types (pg_type's
// typarray), by element oid.
var pgArrayOIDs = map[uint32]uint32{
	16: 1000, 17: 1001, 18: 1002, 19: 1003, 20: 1016, 21: 1005, 23: 1007, 24: 1008, 25: 1009, 26: 1028,
	114: 199, 700: 1021, 701: 1022, 1042: 1014, 1043: 1015, 1082: 1182, 1083: 1183, 1114: 1115,
	1184: 1185, 1186: 1187, 1266: 1270, 1700: 1231, 2205: 2210, 2206: 2211, 2950: 2951, 3802: 3807, 2249: 2287,
	2202: 2208, 4089: 4090,
}

// attndims is pg_attribute.attndims: 1 for an array column, else 0.
func attndims(t types.T) int {
	if t.ID == types.Array {
		return 1
	}
	return 0
}

// infoDataType is information_schema.columns.data_type: "ARRAY" for an
// array (udt_name names its type), else the type without modifiers.
func infoDataType(t types.T) string {
	if t.ID == types.Array {
		return "ARRAY"
	}
	return t.Base().String()
}

func pgTypeRows(Reader) [][]types.Datum {
	rows := make([][]types.Datum, 0, len(PGTypes))
	for _, p := range PGTypes {
		coll := int64(0)
		switch p.OID {
		case types.OIDText, types.OIDVarchar, types.OIDBpchar:
			coll = collationDefault
		case types.OIDName:
			coll = 950 // "C"
		}
		rows = append(rows, []types.Datum{
			dI(int64(p.OID)), dS(p.Name), dI(int64(SchemaOID("pg_catalog"))), dI(OwnerOID),
			dI(int64(p.Len)), dB(p.ByVal), dC(p.Type), dC(p.Category),
			dB(false), dB(true), dC(','),
			dI(0), dI(int64(types.ElemOID(p.OID))), dI(int64(pgArrayOIDs[p.OID])), dC(p.Align),
			dC(p.Storage), dB(false), dI(0),
			dI(-1), dI(0), dI(coll),
		})
	}
	return rows
}

func pgDatabaseRows(r Reader) [][]types.Datum {
	var rows [][]types.Datum
	for _, d := range r.Databases() {
		rows = append(rows, []types.Datum{
			dI(int64(d.OID)), dS(d.Name), dI(OwnerOID), dI(6), // 6 = UTF8
			dC('c'), dB(false), dB(true),
			dI(-1), dI(0), dS("C.UTF-8"),
			dS("C.UTF-8"), null, null,
		})
	}
	return rows
}

func pgTablesRows(r Reader) [][]types.Datum {
	var rows [][]types.Datum
	for _, rel := range pgRelations(r) {
		if RelKind(rel) != 'r' {
			continue
		}
		rows = append(rows, []types.Datum{
			dS(rel.Schema), dS(rel.Name), dS(Owner), null,
			dB(HasPrimaryIndex(rel)), dB(false), dB(false), dB(false),
		})
	}
	return rows
}

func pgViewsRows(r Reader) [][]types.Datum {
	var rows [][]types.Datum
	for _, rel := range userRelations(r, KindView) {
		rows = append(rows, []types.Datum{dS(rel.Schema), dS(rel.Name), dS(Owner), dS(ViewDefinition(rel))})
	}
	return rows
}

func pgMatviewsRows(r Reader) [][]types.Datum {
	var rows [][]types.Datum
	for _, rel := range userRelations(r, KindMaterializedView) {
		rows = append(rows, []types.Datum{
			dS(rel.Schema), dS(rel.Name), dS(Owner), null, dB(false), dB(true), dS(ViewDefinition(rel)),
		})
	}
	return rows
}

func pgRolesRows(Reader) [][]types.Datum {
	return [][]types.Datum{{
		dS(Owner), dB(true), dB(true), dB(true),
		dB(true), dB(true), dB(true),
		dI(-1), dS("********"), null,
		dB(true), null, dI(OwnerOID),
	}}
}

func pgUserRows(Reader) [][]types.Datum {
	return [][]types.Datum{{
		dS(Owner), dI(OwnerOID), dB(true), dB(true),
		dB(true), dB(true), dS("********"), null,
		null,
	}}
}

func pgAmRows(Reader) [][]types.Datum {
	return [][]types.Datum{
		{dI(HeapAMOID), dS("heap"), dS("heap_tableam_handler"), dC('t')},
		{dI(BtreeAMOID), dS("btree"), dS("bthandler"), dC('i')},
	}
}

func isTablesRows(r Reader) [][]types.Datum {
	var rows [][]types.Datum
	for _, rel := range pgRelations(r) {
		typ, insertable := "BASE TABLE", "YES"
		switch rel.Kind {
		case KindView:
			typ, insertable = "VIEW", "NO"
		case KindMaterializedView:
			typ, insertable = "MATERIALIZED VIEW", "NO"
		case KindSystem:
			insertable = "NO"
		}
		rows = append(rows, []types.Datum{
			dS(Database), dS(rel.Schema), dS(rel.Name),
			dS(typ), null,
			null, null,
			null, null,
			dS(insertable), dS("NO"), null,
		})
	}
	return rows
}

// isIdentity is information_schema.columns.is_identity.
func isIdentity(c Column) string {
	if c.Identity != "" {
		return "YES"
	}
	return "NO"
}

func isColumnsRows(r Reader) [][]types.Datum {
	var rows [][]types.Datum
	for _, rel := range pgRelations(r) {
		updatable := "NO"
		if rel.Kind == KindTable {
			updatable = "YES"
		}
		pos := 0
		for i, c := range rel.Columns {
			if c.Hidden {
				continue
			}
			pos++
			def := null
			if c.Default != "" {
				def = dS(DefaultText(c))
			}
			nullable := "YES"
			if ColumnNotNull(rel, i) {
				nullable = "NO"
			}
			charMax, charOctet, prec, radix, scale, dtPrec := null, null, null, null, null, null
			switch c.Type.ID {
			case types.Varchar:
				if c.Type.Width > 0 {
					charMax, charOctet = dI(int64(c.Type.Width)), dI(int64(c.Type.Width)*4)
				} else {
					charOctet = dI(1 << 30)
				}
			case types.Int16:
				prec, radix, scale = dI(16), dI(2), dI(0)
			case types.Int32:
				prec, radix, scale = dI(32), dI(2), dI(0)
			case types.Int64:
				prec, radix, scale = dI(64), dI(2), dI(0)
			case types.Float32:
				prec, radix = dI(24), dI(2)
			case types.Float64:
				prec, radix = dI(53), dI(2)
			case types.Numeric:
				radix = dI(10)
				if c.Type.Width > 0 {
					prec, scale = dI(int64(c.Type.Width)), dI(int64(c.Type.Scale))
				}
			case types.Date:
				dtPrec = dI(0)
			case types.Time, types.Timestamp, types.Timestamptz, types.Interval:
				dtPrec = dI(6)
			}
			rows = append(rows, []types.Datum{
				dS(Database), dS(rel.Schema), dS(rel.Name),
				dS(c.Name), dI(int64(pos)), def,
				dS(nullable), dS(infoDataType(c.Type)), charMax,
				charOctet, prec,
				radix, scale, dtPrec,
				dS(Database), dS("pg_catalog"), dS(PGTypeOf(c.Type).Name),
				dS(isIdentity(c)), dS("NEVER"), null,
				dS(updatable),
			})
		}
	}
	return rows
}

func isSchemataRows(r Reader) [][]types.Datum {
	var rows [][]types.Datum
	for _, s := range r.Schemas() {
		rows = append(rows, []types.Datum{dS(Database), dS(s), dS(Owner), null, null, null, null})
	}
	return rows
}

func isViewsRows(r Reader) [][]types.Datum {
	var rows [][]types.Datum
	for _, rel := range userRelations(r, KindView) {
		rows = append(rows, []types.Datum{
			dS(Database), dS(rel.Schema), dS(rel.Name),
			dS(ViewDefinition(rel)), dS("NONE"), dS("NO"),
			dS("NO"), dS("NO"),
			dS("NO"), dS("NO"),
		})
	}
	return rows
}

func createdAt(rel *Relation) types.Datum {
	if rel.CreatedAt.IsZero() {
		return null
	}
	return dI(rel.CreatedAt.UnixMicro())
}

func rwRows(k Kind) func(Reader) [][]types.Datum {
	return func(r Reader) [][]types.Datum {
		var rows [][]types.Datum
		for _, rel := range userRelations(r, k) {
			rows = append(rows, []types.Datum{
				dI(int64(rel.ID)), dS(rel.Name), dI(int64(r.SchemaOID(rel.Schema))), dI(OwnerOID),
				dS(MaskSecrets(rel.Definition)), dB(rel.AppendOnly), createdAt(rel),
			})
		}
		return rows
	}
}

func rwConnectorRows(k Kind) func(Reader) [][]types.Datum {
	return func(r Reader) [][]types.Datum {
		var rows [][]types.Datum
		for _, rel := range userRelations(r, k) {
			connector := null
			if rel.Connector != nil {
				connector = dS(rel.Connector.Name())
			} else if rel.Sink != nil && rel.Sink.Props["connector"] != "" {
				connector = dS(rel.Sink.Props["connector"])
			}
			rows = append(rows, []types.Datum{
				dI(int64(rel.ID)), dS(rel.Name), dI(int64(r.SchemaOID(rel.Schema))), dI(OwnerOID),
				connector, dS(MaskSecrets(rel.Definition)), dB(rel.AppendOnly), createdAt(rel),
			})
		}
		return rows
	}
}

func rwRelationsRows(r Reader) [][]types.Datum {
	var rows [][]types.Datum
	for _, rel := range r.Relations() {
		rows = append(rows, []types.Datum{
			dI(int64(rel.ID)), dS(rel.Name), dS(rel.Kind.String()), dI(int64(r.SchemaOID(rel.Schema))), dI(OwnerOID),
		})
	}
	return rows
}

func rwSchemasRows(r Reader) [][]types.Datum {
	var rows [][]types.Datum
	for _, s := range r.Schemas() {
		rows = append(rows, []types.Datum{dI(int64(r.SchemaOID(s))), dS(s), dI(OwnerOID)})
	}
	return rows
}

func rwDatabasesRows(r Reader) [][]types.Datum {
	var rows [][]types.Datum
	for _, d := range r.Databases() {
		rows = append(rows, []types.Datum{dI(int64(d.OID)), dS(d.Name), dI(OwnerOID)})
	}
	return rows
}

var createViewPrefix = regexp.MustCompile(`(?is)^create\s+(or\s+replace\s+)?(materialized\s+)?view\s+(if\s+not\s+exists\s+)?.+?\s+as\s+`)

// ViewDefinition returns a view's or materialized view's query the way
// pg_get_viewdef does: the SELECT alone (a leading CREATE ... AS is dropped),
// with a leading space and a trailing semicolon.
func ViewDefinition(rel *Relation) string {
	q := strings.TrimSpace(rel.Definition)
	if m := createViewPrefix.FindStringIndex(q); m != nil {
		q = strings.TrimSpace(q[m[1]:])
	}
	q = strings.TrimSpace(strings.TrimSuffix(q, ";"))
	if q == "" {
		return ""
	}
	return " " + q + ";"
}

// Proc is one built-in function or aggregate overload, as pg_proc lists it.
type Proc struct {
	Name       string
	Args       []types.T
	Variadic   bool // the last argument repeats
	AnyArg     bool // one argument of any type ("any"); Args is empty
	Result     types.T
	Agg        bool
	Volatility byte // 'i', 's' or 'v'
}

// firstProcOID numbers pg_proc's rows (PostgreSQL's own oids for its
// functions are not reproduced).
const firstProcOID = 90000

// anyOID is the pseudo-type "any".
const anyOID = 2276

// ProcRows are pg_proc's rows for procs, in order (the session answers
// pg_proc from the function registry): all in pg_catalog, language internal.
func ProcRows(procs []Proc) [][]types.Datum {
	rows := make([][]types.Datum, 0, len(procs))
	for i, p := range procs {
		kind := byte('f')
		if p.Agg {
			kind = 'a'
		}
		var args []string
		for _, t := range p.Args {
			args = append(args, strconv.FormatUint(uint64(t.OID()), 10))
		}
		if p.AnyArg {
			args = []string{strconv.Itoa(anyOID)}
		}
		rows = append(rows, []types.Datum{
			dI(int64(firstProcOID + i)), dS(p.Name), dI(int64(SchemaOID("pg_catalog"))), dI(OwnerOID),
			dI(12), dC(kind), dB(false), dB(!p.Agg),
			dB(false), dC(p.Volatility), dI(int64(len(args))), dI(int64(p.Result.OID())),
			dS(strings.Join(args, " ")), dS(p.Name), null,
		})
	}
	return rows
}

// RoleRows are pg_roles' and pg_user's rows for roles (the session
// answers those tables from its roles).
func RoleRows(roles []Role) (pgRoles, pgUser [][]types.Datum) {
	for _, r := range roles {
		pass := null
		if r.Password != "" {
			pass = dS("********")
		}
		pgRoles = append(pgRoles, []types.Datum{
			dS(r.Name), dB(r.Superuser), dB(true), dB(r.Superuser),
			dB(r.CreateDB), dB(r.Login), dB(r.Superuser),
			dI(-1), pass, null,
			dB(r.Superuser), null, dI(int64(r.OID)),
		})
		if r.Login {
			pgUser = append(pgUser, []types.Datum{
				dS(r.Name), dI(int64(r.OID)), dB(r.CreateDB), dB(r.Superuser),
				dB(r.Superuser), dB(r.Superuser), pass, null,
				null,
			})
		}
	}
	return pgRoles, pgUser
}
