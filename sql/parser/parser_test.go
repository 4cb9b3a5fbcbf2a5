package parser

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/tributary/tributary/sql/types"
)

func TestErrorPositions(t *testing.T) {
	cases := []struct {
		sql     string
		pos     int
		msg     string
		unsupp  bool
		nearEnd bool
	}{
		{sql: "SELECT a frm t", pos: 14, msg: `syntax error at or near "t"`},
		{sql: "SELECT a FROM", pos: 14, msg: "syntax error at end of input"},
		{sql: "SELECT 1; SELECT a FROM t WHERE", pos: 32, msg: "syntax error at end of input"},
		{sql: "SELECT 1;\nSELECT a::int frm t", pos: 29, msg: `syntax error at or near "t"`},
		{sql: "SELECT 'héllo', a frm t", pos: 23, msg: `syntax error at or near "t"`},
		{sql: "SELECT $1::text, INTERVAL '1 hour' a b", pos: 38, msg: `syntax error at or near "b"`},
		{sql: "SELECT 'abc", pos: 8, msg: `unterminated quoted string at or near "'abc"`},
		{sql: "SELECT (1", pos: 10, msg: "syntax error at end of input"},
		{sql: "SELECT 1)", pos: 9, msg: `syntax error at or near ")"`},
		{sql: "SELEC 1", pos: 1, msg: `syntax error at or near "SELEC"`},
		{sql: "SELECT 1 +", pos: 11, msg: "syntax error at end of input"},
		{sql: "LISTEN x", pos: 1, msg: "LISTEN is not supported", unsupp: true},
		{sql: "SELECT a FROM t WHERE x = ANY(ARRAY[[1]])", pos: 37, msg: "multidimensional arrays are not supported", unsupp: true},
		{sql: "CREATE TABLE t (a int,,)", pos: 24, msg: `syntax error at or near ")"`}, // one trailing comma is accepted, as RisingWave does
		{sql: "CREATE TABLE t (a nosuchtype(x))", pos: 30, msg: `syntax error at or near "x"`},
		{sql: "SELECT 1e", pos: 8, msg: `trailing junk after numeric literal at or near "1e"`},
		{sql: "SELECT 1 /* abc", pos: 10, msg: `unterminated /* comment at or near "/* abc"`},
		{sql: "SELECT 1 /* a /* b */", pos: 10, msg: `unterminated /* comment at or near "/* a /* b */"`},
		{sql: "SELECT `a`", pos: 8, msg: "syntax error at or near \"`\""},
		{sql: "SELECT 1 LIMIT 1, 2", pos: 10, msg: "LIMIT #,# syntax is not supported"},
		{sql: "SELECT * FROM (SELECT 1 LIMIT 1, 2) s", pos: 25, msg: "LIMIT #,# syntax is not supported"},
	}
	for _, c := range cases {
		_, err := Parse(c.sql)
		var te *types.Error
		if !errors.As(err, &te) {
			t.Errorf("%q: want *types.Error, got %v", c.sql, err)
			continue
		}
		wantKind := types.ErrSyntax
		if c.unsupp {
			wantKind = types.ErrUnsupported
		}
		if !errors.Is(err, wantKind) {
			t.Errorf("%q: kind %v, want %v", c.sql, te.Kind, wantKind)
		}
		if te.Pos != c.pos || te.Msg != c.msg {
			t.Errorf("%q: got pos=%d %q, want pos=%d %q", c.sql, te.Pos, te.Msg, c.pos, c.msg)
		}
	}
}

func TestStatementText(t *testing.T) {
	stmts, err := Parse("  -- hi\n SELECT 1 ;\n\tcreate table T (A int) ; FLUSH")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"SELECT 1", "create table T (A int)", "FLUSH"}
	if len(stmts) != len(want) {
		t.Fatalf("got %d statements", len(stmts))
	}
	for i, s := range stmts {
		if s.Text() != want[i] {
			t.Errorf("statement %d text %q, want %q", i, s.Text(), want[i])
		}
	}
	ct := stmts[1].(*CreateTable)
	if ct.Name.Name != "t" || ct.Columns[0].Name != "a" {
		t.Errorf("identifiers not folded: %+v %+v", ct.Name, ct.Columns[0])
	}
	mv, err := Parse(`CREATE MATERIALIZED VIEW "MyMv" AS SELECT "Col" FROM t`)
	if err != nil {
		t.Fatal(err)
	}
	m := mv[0].(*CreateMaterializedView)
	if m.Name.Name != "MyMv" || m.Query.Text() != `SELECT "Col" FROM t` {
		t.Errorf("got name %q query text %q", m.Name.Name, m.Query.Text())
	}
}

func TestTypeNameString(t *testing.T) {
	for in, want := range map[string]string{
		"int": "integer", "int2": "smallint", "INT8": "bigint", "float": "double precision", "float(10)": "real",
		"float(40)": "double precision", "decimal(10,2)": "numeric(10,2)", "character varying(20)": "varchar(20)",
		"varchar": "varchar", "bool": "boolean", "timestamp without time zone": "timestamp",
		"timestamp with time zone": "timestamptz", "time without time zone": "time", "pg_catalog.regclass": "regclass",
		"jsonb": "jsonb", "bytea": "bytea", "interval day to second": "interval", "name": "name", "oid": "oid",
		"double precision": "double precision", "real": "real", "text": "text", "date": "date",
	} {
		toks, err := lex(in)
		if err != nil {
			t.Fatal(err)
		}
		seq, err := buildTree(in, toks)
		if err != nil {
			t.Fatal(err)
		}
		tn, next, err := parseTypeName(in, seq, 0)
		if err != nil || next != len(seq) || tn.String() != want {
			t.Errorf("%q: got %q next=%d/%d err=%v, want %q", in, tn.String(), next, len(seq), err, want)
		}
	}
}

func TestLexer(t *testing.T) {
	toks, err := lex(`SELECT E'a\n\'b\x41\u00e9', $$x'y$$, $q$a$$b$q$, "Q""x", FooBar, 1.5e3, .5, a<>-1, b!~*c, x::int`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tk := range toks {
		got = append(got, tk.val)
	}
	want := []string{"select", "a\n'bAé", ",", "x'y", ",", "a$$b", ",", `Q"x`, ",", "foobar", ",", "1.5e3", ",", ".5",
		",", "a", "<>", "-", "1", ",", "b", "!~*", "c", ",", "x", "::", "int"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func TestParseConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				if _, err := Parse("SELECT a::int, count(*) FILTER (WHERE b ~ 'x') FROM t GROUP BY 1"); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// FuzzParse checks Parse never panics and that every error is a *types.Error
// with a position inside the input (or 0).
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"SELECT a::int FROM t WHERE b ~ 'x' ORDER BY a NULLS FIRST LIMIT ALL",
		"SELECT * FROM (VALUES (1, 'a')) AS v(n, s)", "SELECT * FROM generate_series(1, 3) g(x)",
		"CREATE TABLE t (a int PRIMARY KEY, b varchar DEFAULT 'x'::text) WITH (a = 1)",
		"CREATE SINK s AS SELECT 1 WITH (connector = 'blackhole') FORMAT PLAIN ENCODE JSON",
		"SET x TO 'y'; SHOW ALL; BEGIN; COMMIT", "SELECT E'\\x41', $$a$$, $1, a IS DISTINCT FROM b",
		"SELECT string_agg(a, ',' ORDER BY a) FILTER (WHERE true) FROM t", "INSERT INTO t DEFAULT VALUES RETURNING *",
		"SELECT CASE WHEN a THEN b END::text, CAST(x AS numeric(1,2))", "/* x */ -- y\n;", "SELECT 'é'", "\x00",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		_, err := Parse(sql)
		if err == nil {
			return
		}
		var te *types.Error
		if !errors.As(err, &te) {
			t.Fatalf("%q: error is not *types.Error: %v", sql, err)
		}
		if !errors.Is(err, types.ErrSyntax) && !errors.Is(err, types.ErrUnsupported) &&
			!errors.Is(err, types.ErrInvalidTableDefinition) && !errors.Is(err, types.ErrUndefinedColumn) &&
			!errors.Is(err, types.ErrStackDepth) && !errors.Is(err, types.ErrProgramLimit) {
			t.Fatalf("%q: unexpected error kind %v", sql, te.Kind)
		}
		if te.Pos < 0 || te.Pos > utf8.RuneCountInString(sql)+1 {
			t.Fatalf("%q: position %d outside the input", sql, te.Pos)
		}
	})
}

// TestIdentifierTruncation: identifiers longer than 63 bytes are cut to 63
// bytes at a character boundary, with PostgreSQL's NOTICE for each.
func TestIdentifierTruncation(t *testing.T) {
	long := strings.Repeat("a", 70)
	stmts, notices, err := ParseNotices("CREATE TABLE " + strings.ToUpper(long) + " (\"" + long + "\" int)")
	if err != nil {
		t.Fatal(err)
	}
	ct := stmts[0].(*CreateTable)
	if ct.Name.Name != long[:63] {
		t.Errorf("table name %q", ct.Name.Name)
	}
	if len(notices) != 2 || notices[0].Code != "42622" ||
		notices[0].Msg != `identifier "`+long+`" will be truncated to "`+long[:63]+`"` {
		t.Errorf("notices %+v", notices)
	}
	// 62 ASCII bytes then a 2-byte character: the character does not fit.
	id := strings.Repeat("b", 62) + "é" + "c"
	_, notices, err = ParseNotices("SELECT 1 AS \"" + id + "\"")
	if err != nil || len(notices) != 1 || !strings.HasSuffix(notices[0].Msg, `"`+strings.Repeat("b", 62)+`"`) {
		t.Errorf("%v %+v", err, notices)
	}
	// 63 bytes exactly: kept, no notice.
	if _, notices, err = ParseNotices("SELECT 1 AS " + long[:63]); err != nil || len(notices) != 0 {
		t.Errorf("%v %+v", err, notices)
	}
}

// TestReplaceIdent: identifier tokens are replaced, quoted or not, and
// nothing inside strings or comments, nor a longer word containing the name.
func TestReplaceIdent(t *testing.T) {
	got, n, err := ReplaceIdent(`SELECT t.a, 't', "t".b FROM t /* t */ JOIN tt ON tt.x = t.a`, "t", "New Name")
	if err != nil {
		t.Fatal(err)
	}
	want := `SELECT "New Name".a, 't', "New Name".b FROM "New Name" /* t */ JOIN tt ON tt.x = "New Name".a`
	if got != want || n != 4 {
		t.Fatalf("got %d: %s\nwant 4: %s", n, got, want)
	}
}
