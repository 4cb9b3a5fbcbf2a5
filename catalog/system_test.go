package catalog

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/sql/types"
)

// testCatalog holds the objects of the psql fixture (t, v, mv) plus a table
// keyed by the hidden row id, a source and a sink.
func testCatalog(t *testing.T) *Catalog {
	t.Helper()
	c := New(SystemRelations())
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	rels := []*Relation{
		{ID: 16384, Schema: "public", Name: "t", Kind: KindTable, Columns: []Column{
			{Name: "id", Type: types.TInt32},
			{Name: "name", Type: types.T{ID: types.Varchar, Width: 20}, NotNull: true, Default: "'x'"},
			{Name: "v", Type: types.T{ID: types.Numeric, Width: 10, Scale: 2}},
		}, PK: []int{0}, Definition: "CREATE TABLE t (...)", CreatedAt: created},
		{ID: 16390, Schema: "public", Name: "v", Kind: KindView, Columns: []Column{
			{Name: "id", Type: types.TInt32},
			{Name: "name", Type: types.T{ID: types.Varchar, Width: 20}},
		}, Definition: "SELECT id, name FROM t", DependsOn: []uint32{16384}},
		{ID: 16394, Schema: "public", Name: "mv", Kind: KindMaterializedView, Columns: []Column{
			{Name: "id", Type: types.TInt32},
			{Name: "c", Type: types.TInt64},
		}, PK: []int{0}, Definition: "CREATE MATERIALIZED VIEW mv AS SELECT id, count(*) AS c FROM t GROUP BY id"},
		{ID: 16400, Schema: "public", Name: "r", Kind: KindTable, Columns: []Column{
			{Name: "a", Type: types.TVarchar},
			{Name: RowIDColumn, Type: types.TInt64, Hidden: true},
			{Name: "b", Type: types.TTimestamptz},
		}, PK: []int{1}, AppendOnly: true},
		{ID: 16401, Schema: "public", Name: "src", Kind: KindSource, Columns: []Column{
			{Name: "x", Type: types.TInt64},
		}, Connector: &Connector{Props: map[string]string{"connector": "datagen"}}},
		{ID: 16402, Schema: "public", Name: "snk", Kind: KindSink, Sink: &SinkSettings{Props: map[string]string{"connector": "blackhole"}}},
	}
	for _, r := range rels {
		if err := c.Add(r); err != nil {
			t.Fatalf("add %s: %v", r.Name, err)
		}
	}
	return c
}

// table returns a system table's rows as text, "|"-joined, NULL as "NULL".
func table(t *testing.T, c *Catalog, schema, name string) []string {
	t.Helper()
	rel, err := c.Lookup(schema, name)
	if err != nil {
		t.Fatalf("lookup %s.%s: %v", schema, name, err)
	}
	rows, err := SystemRows(c, rel)
	if err != nil {
		t.Fatalf("rows of %s.%s: %v", schema, name, err)
	}
	out := make([]string, len(rows))
	for i, row := range rows {
		vals := make([]string, len(row))
		for j := range row {
			if row[j].Null {
				vals[j] = "NULL"
			} else {
				vals[j] = types.FormatText(rel.Columns[j].Type, &row[j])
			}
		}
		out[i] = strings.Join(vals, "|")
	}
	return out
}

// project keeps the named columns of a system table whose first kept column passes keep.
func project(t *testing.T, c *Catalog, schema, name string, cols []string, keep func(first string) bool) []string {
	t.Helper()
	rel, err := c.Lookup(schema, name)
	if err != nil {
		t.Fatal(err)
	}
	idx := make([]int, len(cols))
	for i, n := range cols {
		if idx[i] = rel.ColumnIndex(n); idx[i] < 0 {
			t.Fatalf("%s has no column %s", name, n)
		}
	}
	var out []string
	for _, line := range table(t, c, schema, name) {
		vals := strings.Split(line, "|")
		kept := make([]string, len(idx))
		for i, k := range idx {
			kept[i] = vals[k]
		}
		if keep == nil || keep(kept[0]) {
			out = append(out, strings.Join(kept, "|"))
		}
	}
	return out
}

func expect(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s:\n got  %q\n want %q", what, got, want)
	}
}

func TestSystemRelationsShape(t *testing.T) {
	seen := map[string]bool{}
	ids := map[uint32]bool{}
	for _, r := range SystemRelations() {
		if r.Kind != KindSystem || r.ID >= FirstUserID || r.ID == 0 {
			t.Errorf("%s: kind %s id %d", r.QualifiedName(), r.Kind, r.ID)
		}
		if seen[r.QualifiedName()] || ids[r.ID] {
			t.Errorf("%s (id %d) is listed twice", r.QualifiedName(), r.ID)
		}
		seen[r.QualifiedName()], ids[r.ID] = true, true
		if SchemaOID(r.Schema) == 0 {
			t.Errorf("%s: unknown schema", r.QualifiedName())
		}
	}
	for _, n := range []string{"pg_catalog.pg_class", "pg_catalog.pg_namespace", "pg_catalog.pg_attribute",
		"pg_catalog.pg_type", "pg_catalog.pg_database", "pg_catalog.pg_tables", "pg_catalog.pg_views",
		"pg_catalog.pg_matviews", "pg_catalog.pg_index", "pg_catalog.pg_roles", "pg_catalog.pg_user",
		"pg_catalog.pg_am", "information_schema.tables", "information_schema.columns",
		"information_schema.schemata", "rw_catalog.rw_tables", "rw_catalog.rw_materialized_views"} {
		if !seen[n] {
			t.Errorf("missing system table %s", n)
		}
	}
}

// TestSystemRowsAll checks every system table produces well-formed rows.
func TestSystemRowsAll(t *testing.T) {
	c := testCatalog(t)
	for _, rel := range SystemRelations() {
		rows, err := SystemRows(c, rel)
		if err != nil {
			t.Fatalf("%s: %v", rel.QualifiedName(), err)
		}
		for _, row := range rows {
			for j := range row {
				if row[j].Null {
					continue
				}
				switch rel.Columns[j].Type.Physical() {
				case types.PhysI64, types.PhysF64:
					if row[j].S != "" {
						t.Errorf("%s.%s: string %q in a %s column", rel.Name, rel.Columns[j].Name, row[j].S, rel.Columns[j].Type)
					}
				case types.PhysStr:
					if row[j].I != 0 {
						t.Errorf("%s.%s: integer %d in a %s column", rel.Name, rel.Columns[j].Name, row[j].I, rel.Columns[j].Type)
					}
				}
			}
		}
	}
	if _, err := SystemRows(c, &Relation{Schema: "public", Name: "t", Kind: KindTable}); err == nil {
		t.Error("SystemRows of a user table succeeded")
	}
}

func TestPgClassAndNamespace(t *testing.T) {
	c := testCatalog(t)
	pub := func(ns string) bool { return ns == "2200" }
	expect(t, "pg_class public",
		project(t, c, "pg_catalog", "pg_class", []string{"relnamespace", "oid", "relname", "relkind", "relhasindex", "relnatts", "relam", "relowner", "relpersistence"}, pub),
		[]string{"2200|16384|t|r|t|3|2|10|p", "2200|16390|v|v|f|2|0|10|p", "2200|16394|mv|m|f|2|2|10|p", "2200|16400|r|r|f|2|2|10|p"})
	sys := project(t, c, "pg_catalog", "pg_class", []string{"relnamespace", "relname", "relkind"}, func(ns string) bool { return ns == "11" })
	if !slices.Contains(sys, "11|pg_class|r") {
		t.Errorf("pg_class does not list itself: %q", sys)
	}
	expect(t, "pg_namespace", project(t, c, "pg_catalog", "pg_namespace", []string{"nspname", "oid", "nspowner"}, nil),
		[]string{"public|2200|10", "pg_catalog|11|10", "information_schema|13000|10", "rw_catalog|13001|10"})
}

func TestPgAttribute(t *testing.T) {
	c := testCatalog(t)
	cols := []string{"attrelid", "attnum", "attname", "atttypid", "atttypmod", "attnotnull", "atthasdef", "attisdropped", "attlen", "attstorage", "attidentity", "attgenerated"}
	user := func(id string) bool { return id >= "16384" }
	expect(t, "pg_attribute", project(t, c, "pg_catalog", "pg_attribute", cols, user), []string{
		"16384|1|id|23|-1|t|f|f|4|p||",
		"16384|2|name|1043|24|t|t|f|-1|x||",
		"16384|3|v|1700|655366|f|f|f|-1|m||",
		"16390|1|id|23|-1|f|f|f|4|p||",
		"16390|2|name|1043|24|f|f|f|-1|x||",
		"16394|1|id|23|-1|f|f|f|4|p||",
		"16394|2|c|20|-1|f|f|f|8|p||",
		"16400|1|a|1043|-1|f|f|f|-1|x||",
		"16400|2|b|1184|-1|f|f|f|8|p||",
	})
}

func TestPgTypeDatabaseRoles(t *testing.T) {
	c := testCatalog(t)
	typs := project(t, c, "pg_catalog", "pg_type", []string{"typname", "oid", "typlen", "typtype"}, nil)
	for _, want := range []string{"int4|23|4|b", "varchar|1043|-1|b", "numeric|1700|-1|b", "timestamptz|1184|8|b", "bool|16|1|b", "jsonb|3802|-1|b"} {
		if !slices.Contains(typs, want) {
			t.Errorf("pg_type lacks %q: %q", want, typs)
		}
	}
	expect(t, "pg_database", project(t, c, "pg_catalog", "pg_database", []string{"datname", "datdba", "encoding", "datcollate"}, nil),
		[]string{"dev|10|6|C.UTF-8"})
	expect(t, "pg_roles", project(t, c, "pg_catalog", "pg_roles", []string{"rolname", "rolsuper", "oid"}, nil), []string{"root|t|10"})
	expect(t, "pg_user", project(t, c, "pg_catalog", "pg_user", []string{"usename", "usesuper"}, nil), []string{"root|t"})
	expect(t, "pg_am", project(t, c, "pg_catalog", "pg_am", []string{"amname", "oid"}, nil), []string{"heap|2", "btree|403"})
	expect(t, "pg_index", table(t, c, "pg_catalog", "pg_index"), nil)
}

func TestPgTablesViewsMatviews(t *testing.T) {
	c := testCatalog(t)
	pub := func(s string) bool { return s == "public" }
	expect(t, "pg_tables", project(t, c, "pg_catalog", "pg_tables", []string{"schemaname", "tablename", "tableowner", "hasindexes"}, pub),
		[]string{"public|t|root|t", "public|r|root|f"})
	expect(t, "pg_views", table(t, c, "pg_catalog", "pg_views"), []string{"public|v|root| SELECT id, name FROM t;"})
	expect(t, "pg_matviews", project(t, c, "pg_catalog", "pg_matviews", []string{"schemaname", "matviewname", "matviewowner", "definition"}, nil),
		[]string{"public|mv|root| SELECT id, count(*) AS c FROM t GROUP BY id;"})
}

func TestInformationSchema(t *testing.T) {
	c := testCatalog(t)
	pub := func(s string) bool { return s == "public" }
	expect(t, "tables", project(t, c, "information_schema", "tables", []string{"table_schema", "table_name", "table_type", "table_catalog", "is_insertable_into"}, pub),
		[]string{"public|t|BASE TABLE|dev|YES", "public|v|VIEW|dev|NO", "public|mv|MATERIALIZED VIEW|dev|NO", "public|r|BASE TABLE|dev|YES"})
	expect(t, "columns", project(t, c, "information_schema", "columns",
		[]string{"table_schema", "table_name", "column_name", "ordinal_position", "column_default", "is_nullable", "data_type", "character_maximum_length", "numeric_precision", "numeric_scale", "udt_name"}, pub),
		[]string{
			"public|t|id|1|NULL|NO|integer|NULL|32|0|int4",
			"public|t|name|2|'x'::character varying|NO|character varying|20|NULL|NULL|varchar",
			"public|t|v|3|NULL|YES|numeric|NULL|10|2|numeric",
			"public|v|id|1|NULL|YES|integer|NULL|32|0|int4",
			"public|v|name|2|NULL|YES|character varying|20|NULL|NULL|varchar",
			"public|mv|id|1|NULL|YES|integer|NULL|32|0|int4",
			"public|mv|c|2|NULL|YES|bigint|NULL|64|0|int8",
			"public|r|a|1|NULL|YES|character varying|NULL|NULL|NULL|varchar",
			"public|r|b|2|NULL|YES|timestamp with time zone|NULL|NULL|NULL|timestamptz",
		})
	expect(t, "schemata", project(t, c, "information_schema", "schemata", []string{"schema_name", "catalog_name", "schema_owner"}, nil),
		[]string{"public|dev|root", "pg_catalog|dev|root", "information_schema|dev|root", "rw_catalog|dev|root"})
	expect(t, "views", project(t, c, "information_schema", "views", []string{"table_name", "view_definition"}, nil),
		[]string{"v| SELECT id, name FROM t;"})
}

func TestRwCatalog(t *testing.T) {
	c := testCatalog(t)
	expect(t, "rw_tables", table(t, c, "rw_catalog", "rw_tables"), []string{
		"16384|t|2200|10|CREATE TABLE t (...)|f|2026-01-02 03:04:05+00",
		"16400|r|2200|10||t|NULL",
	})
	expect(t, "rw_materialized_views", project(t, c, "rw_catalog", "rw_materialized_views", []string{"id", "name", "schema_id", "owner"}, nil),
		[]string{"16394|mv|2200|10"})
	expect(t, "rw_sources", project(t, c, "rw_catalog", "rw_sources", []string{"name", "connector"}, nil), []string{"src|datagen"})
	expect(t, "rw_sinks", project(t, c, "rw_catalog", "rw_sinks", []string{"name", "connector"}, nil), []string{"snk|blackhole"})
	user := project(t, c, "rw_catalog", "rw_relations", []string{"name", "relation_type"}, nil)
	for _, want := range []string{"t|table", "v|view", "mv|materialized view", "src|source", "snk|sink", "pg_class|system table"} {
		if !slices.Contains(user, want) {
			t.Errorf("rw_relations lacks %q", want)
		}
	}
}

func TestDefaultTextAndViewDefinition(t *testing.T) {
	for _, tc := range []struct {
		col  Column
		want string
	}{
		{Column{Type: types.TVarchar, Default: "'x'"}, "'x'::character varying"},
		{Column{Type: types.T{ID: types.Varchar, Width: 3}, Default: "'it''s'"}, "'it''s'::character varying"},
		{Column{Type: types.TInt32, Default: "5"}, "5"},
		{Column{Type: types.TInt32, Default: "'5'"}, "5"},
		{Column{Type: types.TNumeric, Default: "'1.5'"}, "1.5"},
		{Column{Type: types.TBool, Default: "'t'"}, "true"},
		{Column{Type: types.TDate, Default: "'2020-01-01'"}, "'2020-01-01'::date"},
		{Column{Type: types.TTimestamptz, Default: "now()"}, "now()"},
		{Column{Type: types.TVarchar, Default: "'a' || 'b'"}, "'a' || 'b'"},
		{Column{Type: types.TVarchar}, ""},
	} {
		if got := DefaultText(tc.col); got != tc.want {
			t.Errorf("DefaultText(%s DEFAULT %s) = %q, want %q", tc.col.Type, tc.col.Default, got, tc.want)
		}
	}
	for def, want := range map[string]string{
		"SELECT 1":                                  " SELECT 1;",
		"select a from t;":                          " select a from t;",
		"CREATE VIEW v AS SELECT a FROM t":          " SELECT a FROM t;",
		"create materialized view m as\nselect 1 x": " select 1 x;",
		"": "",
	} {
		if got := ViewDefinition(&Relation{Definition: def}); got != want {
			t.Errorf("ViewDefinition(%q) = %q, want %q", def, got, want)
		}
	}
}

func TestMaskSecrets(t *testing.T) {
	for in, want := range map[string]string{
		"CREATE SINK s FROM t WITH (connector = 'postgres', password = 'hunter''2', user = 'u')": "CREATE SINK s FROM t WITH (connector = 'postgres', password = '***', user = 'u')",
		"WITH (properties.sasl.password='x', topic = 't')":                                       "WITH (properties.sasl.password='***', topic = 't')",
		"WITH (aws.credentials.secret_access_key = 'k', s3.secret = 'z')":                        "WITH (aws.credentials.secret_access_key = '***', s3.secret = '***')",
		"WITH (connection = 'postgres://alice:pw@db:5432/x')":                                    "WITH (connection = 'postgres://alice:***@db:5432/x')",
		"SELECT 'password' FROM t":                                                               "SELECT 'password' FROM t",
	} {
		if got := MaskSecrets(in); got != want {
			t.Errorf("MaskSecrets(%q) = %q, want %q", in, got, want)
		}
	}
}
