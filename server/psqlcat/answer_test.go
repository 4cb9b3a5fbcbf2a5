package psqlcat

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/sql/types"
)

// richCatalog is the fixture catalog plus a table keyed by the hidden row id
// (with an upper-case column name), a source and a sink.
func richCatalog(t *testing.T) *catalog.Catalog {
	c := fixtureCatalog(t)
	for _, r := range []*catalog.Relation{
		{ID: 16400, Schema: "public", Name: "events", Kind: catalog.KindTable, Columns: []catalog.Column{
			{Name: "Kind", Type: types.TVarchar},
			{Name: catalog.RowIDColumn, Type: types.TInt64, Hidden: true},
			{Name: "at", Type: types.TTimestamptz, Default: "now()"},
		}, PK: []int{1}},
		{ID: 16401, Schema: "public", Name: "src", Kind: catalog.KindSource, Columns: []catalog.Column{{Name: "x", Type: types.TInt64}}},
		{ID: 16402, Schema: "public", Name: "snk", Kind: catalog.KindSink},
	} {
		if err := c.Add(r); err != nil {
			t.Fatalf("add %s: %v", r.Name, err)
		}
	}
	return c
}

// listQuery is psql 15's listTables query with the given relkinds and extra conditions.
func listQuery(kinds, conds string) string {
	return `SELECT n.nspname as "Schema",
  c.relname as "Name",
  CASE c.relkind WHEN 'r' THEN 'table' WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view' WHEN 'i' THEN 'index' WHEN 'S' THEN 'sequence' WHEN 't' THEN 'TOAST table' WHEN 'f' THEN 'foreign table' WHEN 'p' THEN 'partitioned table' WHEN 'I' THEN 'partitioned index' END as "Type",
  pg_catalog.pg_get_userbyid(c.relowner) as "Owner"
FROM pg_catalog.pg_class c
     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
     LEFT JOIN pg_catalog.pg_am am ON am.oid = c.relam
WHERE c.relkind IN (` + kinds + `)
` + conds + `
ORDER BY 1,2;`
}

const hideSystem = `      AND n.nspname <> 'pg_catalog'
      AND n.nspname !~ '^pg_toast'
      AND n.nspname <> 'information_schema'
  AND pg_catalog.pg_table_is_visible(c.oid)`

func lookupQuery(conds string) string {
	return `SELECT c.oid,
  n.nspname,
  c.relname
FROM pg_catalog.pg_class c
     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE ` + conds + `
ORDER BY 2, 3;`
}

func names(rows [][]string, col int) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r[col]
	}
	return out
}

func TestNotRecognised(t *testing.T) {
	c := richCatalog(t)
	for _, q := range []string{
		"SELECT 1",
		"select relname from pg_catalog.pg_class",
		"SELECT * FROM pg_catalog.pg_class c LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace",
		"CREATE TABLE x (a int)",
		lookupQuery("c.relname = 't'"), // not a condition psql sends
		strings.Replace(listQuery("'r'", hideSystem), `as "Owner"`, `as "Owner", c.relpages as "Pages"`, 1),
	} {
		if _, _, ok, err := Answer(c, q); ok || err != nil {
			t.Errorf("Answer recognised %q (err %v)", q, err)
		}
	}
}

func TestFormattingDoesNotMatter(t *testing.T) {
	c := richCatalog(t)
	q := listQuery("'r','p',''", hideSystem)
	oneLine := strings.Join(strings.Fields(q), " ")
	spaced := strings.ReplaceAll(strings.ReplaceAll(q, ",", " , "), "\n", "\n\t  ")
	for _, v := range []string{q, oneLine, spaced, strings.TrimSuffix(q, ";")} {
		_, rows := answerText(t, c, v)
		if got := names(rows, 1); !slices.Equal(got, []string{"events", "t"}) {
			t.Errorf("tables %q for %q", got, v)
		}
	}
}

func TestListPatternsAndSystemSchemas(t *testing.T) {
	c := richCatalog(t)
	all := "'r','p','v','m','S','f',''"
	for _, tc := range []struct {
		what, q string
		want    []string // schema.name
	}{
		{`\d`, listQuery(all, hideSystem), []string{"public.events", "public.mv", "public.t", "public.v"}},
		{`\dt t*`, listQuery("'r','p',''", `  AND c.relname OPERATOR(pg_catalog.~) '^(t.*)$' COLLATE pg_catalog.default
  AND pg_catalog.pg_table_is_visible(c.oid)`), []string{"public.t"}},
		{`\dv rw_catalog.*`, listQuery("'v',''", `  AND n.nspname OPERATOR(pg_catalog.~) '^(rw_catalog)$' COLLATE pg_catalog.default`), nil},
		{`\di`, strings.Replace(strings.Replace(listQuery("'i','I',''", hideSystem),
			`as "Owner"`, `as "Owner",
 c2.relname as "Table"`, 1),
			"LEFT JOIN pg_catalog.pg_am am ON am.oid = c.relam", `LEFT JOIN pg_catalog.pg_am am ON am.oid = c.relam
     LEFT JOIN pg_catalog.pg_index i ON i.indexrelid = c.oid
     LEFT JOIN pg_catalog.pg_class c2 ON i.indrelid = c2.oid`, 1), []string{"public.t_pkey"}},
	} {
		_, rows := answerText(t, c, tc.q)
		var got []string
		for _, r := range rows {
			got = append(got, r[0]+"."+r[1])
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.what, got, tc.want)
		}
	}

	// \dtS: no name filter, only visibility: pg_catalog's tables show;
	// rw_catalog's and information_schema's are not on psql's search path.
	_, rows := answerText(t, c, listQuery("'r','p','s',''", `  AND n.nspname !~ '^pg_toast'
  AND pg_catalog.pg_table_is_visible(c.oid)`))
	got := map[string]bool{}
	for _, r := range rows {
		got[r[0]+"."+r[1]] = true
	}
	for want, shown := range map[string]bool{"pg_catalog.pg_class": true, "public.t": true, "rw_catalog.rw_tables": false, "information_schema.tables": false} {
		if got[want] != shown {
			t.Errorf(`\dtS lists %s: %v, want %v`, want, got[want], shown)
		}
	}

	// \dt rw_catalog.*: an explicit schema lists our system tables.
	_, rows = answerText(t, c, listQuery("'r','p','t','s',''", `  AND n.nspname OPERATOR(pg_catalog.~) '^(rw_catalog)$' COLLATE pg_catalog.default`))
	if n := names(rows, 1); !slices.Contains(n, "rw_materialized_views") || slices.Contains(n, "t") {
		t.Errorf(`\dt rw_catalog.*: %q`, n)
	}
}

func TestDescribeHiddenRowID(t *testing.T) {
	c := richCatalog(t)
	_, found := answerText(t, c, lookupQuery(`c.relname OPERATOR(pg_catalog.~) '^(events)$' COLLATE pg_catalog.default
  AND pg_catalog.pg_table_is_visible(c.oid)`))
	if len(found) != 1 || found[0][0] != "16400" {
		t.Fatalf("lookup events: %q", found)
	}
	fixture := readFixture(t)
	var describeT block
	for _, b := range fixture {
		if b.cmd == `\d+ t` {
			describeT = b
		}
	}
	queries := make([]string, len(describeT.queries))
	for i, q := range describeT.queries {
		queries[i] = strings.ReplaceAll(q, "16384", "16400")
	}
	_, info := answerText(t, c, queries[1])
	if info[0][1] != "r" || info[0][2] != "f" {
		t.Errorf("info %q: want relkind r, relhasindex f", info[0])
	}
	_, cols := answerText(t, c, queries[2])
	want := [][]string{
		{"Kind", "character varying", "", "f", "", "", "", "x", "", "", ""},
		{"at", "timestamp with time zone", "now()", "f", "", "", "", "p", "", "", ""},
	}
	if !slices.EqualFunc(cols, want, slices.Equal) {
		t.Errorf("columns\n got  %q\n want %q", cols, want)
	}
	if _, idx := answerText(t, c, queries[3]); len(idx) != 0 {
		t.Errorf("indexes of a row-id table: %q", idx)
	}
}

func TestQuotedIndexColumns(t *testing.T) {
	c := catalog.New(catalog.SystemRelations())
	if err := c.Add(&catalog.Relation{ID: 16384, Schema: "public", Name: "Odd", Kind: catalog.KindTable, Columns: []catalog.Column{
		{Name: "Key", Type: types.TInt32}, {Name: "b", Type: types.TInt32},
	}, PK: []int{0, 1}}); err != nil {
		t.Fatal(err)
	}
	var q string
	for _, b := range readFixture(t) {
		if b.cmd == `\d t` {
			q = b.queries[3]
		}
	}
	_, rows := answerText(t, c, q)
	if len(rows) != 1 || rows[0][0] != "Odd_pkey" || rows[0][5] != `CREATE UNIQUE INDEX "Odd_pkey" ON public."Odd" USING btree ("Key", b)` ||
		rows[0][6] != `PRIMARY KEY ("Key", b)` {
		t.Errorf("index rows %q", rows)
	}
}

func TestSourcesAndSinksAreNotRelations(t *testing.T) {
	c := richCatalog(t)
	for _, name := range []string{"src", "snk"} {
		_, rows := answerText(t, c, lookupQuery(`c.relname OPERATOR(pg_catalog.~) '^(`+name+`)$' COLLATE pg_catalog.default
  AND pg_catalog.pg_table_is_visible(c.oid)`))
		if len(rows) != 0 {
			t.Errorf(`\d %s found %q`, name, rows)
		}
	}
}

func TestInvalidPattern(t *testing.T) {
	c := richCatalog(t)
	_, _, ok, err := Answer(c, lookupQuery(`c.relname OPERATOR(pg_catalog.~) '^(a(b)$' COLLATE pg_catalog.default`))
	if !ok || !errors.Is(err, types.ErrInvalidRegex) {
		t.Errorf("ok=%v err=%v, want ErrInvalidRegex", ok, err)
	}
}

func TestListSchemasVariants(t *testing.T) {
	c := richCatalog(t)
	base := `SELECT n.nspname AS "Name",
  pg_catalog.pg_get_userbyid(n.nspowner) AS "Owner"%s
FROM pg_catalog.pg_namespace n
%sORDER BY 1;`
	verbose := `,
  pg_catalog.array_to_string(n.nspacl, E'\n') AS "Access privileges",
  pg_catalog.obj_description(n.oid, 'pg_namespace') AS "Description"`
	for _, tc := range []struct {
		what, q string
		cols    int
		want    []string
	}{
		{`\dnS`, strings.Replace(strings.Replace(base, "%s", "", 1), "%s", "", 1), 2,
			[]string{"information_schema", "pg_catalog", "public", "rw_catalog"}},
		{`\dn+`, strings.Replace(strings.Replace(base, "%s", verbose, 1), "%s", "WHERE n.nspname !~ '^pg_' AND n.nspname <> 'information_schema'\n", 1), 4,
			[]string{"public"}},
		{`\dn p*`, strings.Replace(strings.Replace(base, "%s", "", 1), "%s", "WHERE n.nspname OPERATOR(pg_catalog.~) '^(p.*)$' COLLATE pg_catalog.default\n", 1), 2,
			[]string{"pg_catalog", "public"}},
	} {
		header, rows := answerText(t, c, tc.q)
		if len(header) != tc.cols || !slices.Equal(names(rows, 0), tc.want) {
			t.Errorf("%s: header %q rows %q", tc.what, header, rows)
		}
	}
}

func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{
		"SELECT  a ,\n b\tFROM t ;":         "SELECT a,b FROM t",
		"WHERE x = 'a  b' AND f( y )":       "WHERE x='a  b' AND f(y)",
		`SELECT "A  B" , 'it''s  x'`:        `SELECT "A  B",'it''s  x'`,
		"n.nspname <> 'x' AND c.oid ='1';;": "n.nspname <> 'x' AND c.oid='1'",
	} {
		if got := normalize(in); got != want {
			t.Errorf("normalize(%q) = %q, want %q", in, got, want)
		}
	}
}

type withRoles struct {
	*catalog.Catalog
	roles []catalog.Role
}

func (w withRoles) Roles() []catalog.Role { return w.roles }

// TestListRoles: psql 15's \du query (and with a pattern) is answered from
// the roles.
func TestListRoles(t *testing.T) {
	r := withRoles{catalog.New(catalog.SystemRelations()), []catalog.Role{
		{Name: "alice", Login: true, CreateDB: true}, {Name: "root", Superuser: true, Login: true}}}
	const du = `SELECT r.rolname, r.rolsuper, r.rolinherit,
  r.rolcreaterole, r.rolcreatedb, r.rolcanlogin,
  r.rolconnlimit, r.rolvaliduntil,
  ARRAY(SELECT b.rolname
        FROM pg_catalog.pg_auth_members m
        JOIN pg_catalog.pg_roles b ON (m.roleid = b.oid)
        WHERE m.member = r.oid) as memberof
, r.rolreplication
, r.rolbypassrls
FROM pg_catalog.pg_roles r
%s
ORDER BY 1;`
	for where, want := range map[string]int{
		"WHERE r.rolname !~ '^pg_'": 2,
		"WHERE r.rolname OPERATOR(pg_catalog.~) '^(ali.*)$' COLLATE pg_catalog.default": 1,
	} {
		cols, rows, ok, err := Answer(r, fmt.Sprintf(du, where))
		if !ok || err != nil || len(cols) != 11 || len(rows) != want {
			t.Errorf("%s: ok %v, err %v, %d columns, %d rows (want %d)", where, ok, err, len(cols), len(rows), want)
		}
	}
	if _, _, ok, _ := Answer(r.Catalog, fmt.Sprintf(du, "WHERE r.rolname !~ '^pg_'")); ok {
		t.Error("answered \\du without roles")
	}
}
