package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/apd/v3"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/tributary/tributary/e2e/pgtest"
	"github.com/tributary/tributary/e2e/testseed"
	"github.com/tributary/tributary/sql/types"
)

func TestParse(t *testing.T) {
	base := func(kv ...string) map[string]string {
		m := map[string]string{"connector": "postgres", "host": "db", "user": "u", "database": "d", "table": "t", "type": "upsert"}
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == "<delete>" {
				delete(m, kv[i])
			} else {
				m[kv[i]] = kv[i+1]
			}
		}
		return m
	}
	cfg, err := Parse(base(), []string{"id"})
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Host: "db", User: "u", Database: "d", Schema: "public", Table: "t", Port: 5432, Upsert: true, PrimaryKey: []string{"id"}}
	if !configEqual(cfg, want) {
		t.Errorf("Parse defaults = %+v, want %+v", cfg, want)
	}
	cfg, err = Parse(map[string]string{
		"Connector": "postgres", "HOST": " db2 ", "Port": "6543", "user": "u", "password": " p w ",
		"database": "d", "schema": "Sales", "table": "Orders", "type": "Append-Only", "force_append_only": "true",
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want = Config{Host: "db2", User: "u", Password: " p w ", Database: "d", Schema: "Sales", Table: "Orders", Port: 6543}
	if !configEqual(cfg, want) {
		t.Errorf("Parse = %+v, want %+v", cfg, want)
	}
	cfg, err = Parse(base("primary_key", " a , B "), []string{"id"})
	if err != nil || !slices.Equal(cfg.PrimaryKey, []string{"a", "B"}) {
		t.Errorf("primary_key = %v, %v; want [a B] over the default key", cfg.PrimaryKey, err)
	}
	for _, bad := range []map[string]string{
		base("host", "<delete>"),
		base("host", " "),
		base("user", "<delete>"),
		base("database", "<delete>"),
		base("table", "<delete>"),
		base("type", "<delete>"),
		base("type", "retract"),
		base("port", "0"),
		base("port", "65536"),
		base("port", "five"),
		base("schema", ""),
		base("primary_key", "a,,b"),
		base("primary_key", "a,A"),
		base("sslmode", "disable"),
		base("postgres.table", "x"),
	} {
		if _, err := Parse(bad, []string{"id"}); !errors.Is(err, types.ErrInvalidParameter) {
			t.Errorf("Parse(%v) = %v, want an invalid parameter error", bad, err)
		}
	}
	if _, err := Parse(base(), nil); !errors.Is(err, types.ErrInvalidParameter) {
		t.Errorf("an upsert sink without primary_key or default key: %v, want an invalid parameter error", err)
	}
	if _, err := Parse(base("type", "append-only"), nil); err != nil {
		t.Errorf("an append-only sink needs no key: %v", err)
	}
}

func configEqual(a, b Config) bool {
	return a.Host == b.Host && a.User == b.User && a.Password == b.Password && a.Database == b.Database &&
		a.Schema == b.Schema && a.Table == b.Table && a.Port == b.Port && a.Upsert == b.Upsert &&
		slices.Equal(a.PrimaryKey, b.PrimaryKey)
}

// env is one PostgreSQL cluster shared by the subtests, and an admin
// connection to its database dev.
type env struct {
	cluster *pgtest.Cluster
	host    string
	port    int
	admin   *pgx.Conn
}

func TestPostgres(t *testing.T) {
	cluster := pgtest.Start(t)
	host, port, err := net.SplitHostPort(cluster.Addr)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{cluster: cluster, host: host}
	e.port, _ = strconv.Atoi(port)
	e.connectAdmin(t)
	t.Cleanup(func() { _ = e.admin.Close(context.Background()) })

	t.Run("check", e.testCheck)
	t.Run("types", e.testTypes)
	t.Run("upsert", e.testUpsert)
	t.Run("null-key", e.testNullKey)
	t.Run("equal-keys", e.testEqualKeys)
	t.Run("append-only", e.testAppendOnly)
	t.Run("rollback", e.testRollback)
	t.Run("large-epoch", e.testLargeEpoch)
	t.Run("reconnect", e.testReconnect)
	t.Run("random", e.testRandom)
	t.Run("write-allocs", e.testWriteAllocs)
}

func (e *env) connectAdmin(t *testing.T) {
	t.Helper()
	ctx := testCtx(t)
	conn, err := pgx.Connect(ctx, e.cluster.DSN())
	if err != nil {
		t.Fatal(err)
	}
	e.admin = conn
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func (e *env) config(table string, upsert bool, key ...string) Config {
	return Config{Host: e.host, Port: e.port, User: "postgres", Database: "dev", Schema: "public",
		Table: table, Upsert: upsert, PrimaryKey: key}
}

func (e *env) exec(t *testing.T, sql string) {
	t.Helper()
	if _, err := e.admin.Exec(testCtx(t), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func (e *env) open(t *testing.T, cfg Config, cols []Column) *Sink {
	t.Helper()
	s, err := Open(testCtx(t), cfg, cols)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// row is one change of a test epoch.
type row struct {
	op   types.Op
	vals []types.Datum
}

func ins(vals ...types.Datum) row { return row{types.OpInsert, vals} }
func del(vals ...types.Datum) row { return row{types.OpDelete, vals} }
func ud(vals ...types.Datum) row  { return row{types.OpUpdateDelete, vals} }
func ui(vals ...types.Datum) row  { return row{types.OpUpdateInsert, vals} }

func colTypes(cols []Column) []types.T {
	ts := make([]types.T, len(cols))
	for i, c := range cols {
		ts[i] = c.Type
	}
	return ts
}

// write writes rows as one chunk, then scribbles over the chunk: the sink
// must have copied what it needs.
func write(t *testing.T, s *Sink, cols []Column, rows ...row) {
	t.Helper()
	c := types.NewChunk(colTypes(cols), len(rows))
	for _, r := range rows {
		c.AppendRowOp(r.op, r.vals)
	}
	if err := s.Write(testCtx(t), c); err != nil {
		t.Fatalf("Write: %v", err)
	}
	scribble(c)
}

func scribble(c *types.Chunk) {
	for j := range c.Cols {
		v := &c.Cols[j]
		for i := range v.Nulls {
			v.Nulls[i] = i%2 == 0
		}
		for i := range v.I64 {
			v.I64[i] = -1
		}
		for i := range v.F64 {
			v.F64[i] = -1
		}
		for i := range v.Str {
			v.Str[i] = "scribbled"
		}
		for i := range v.Dec {
			v.Dec[i].SetInt64(-1)
		}
	}
	for i := range c.Ops {
		c.Ops[i] = types.OpDelete
	}
}

func commit(t *testing.T, s *Sink, epoch uint64) {
	t.Helper()
	if err := s.Commit(testCtx(t), epoch); err != nil {
		t.Fatalf("Commit: %v", err)
	}
}

// tableRows reads the table's cols, formatted through the sink's types (so
// PostgreSQL's text and the model's compare alike), sorted.
func (e *env) tableRows(t *testing.T, table string, cols []Column) []string {
	t.Helper()
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = pgx.Identifier{c.Name}.Sanitize()
	}
	sql := "SELECT " + strings.Join(names, ", ") + " FROM " + pgx.Identifier{table}.Sanitize()
	res := e.admin.PgConn().ExecParams(testCtx(t), sql, nil, nil, nil, nil)
	var out []string
	for res.NextRow() {
		vals := make([]types.Datum, len(cols))
		for i, raw := range res.Values() {
			if raw == nil {
				vals[i] = types.NullDatum
				continue
			}
			d, err := types.ParseText(cols[i].Type, string(raw))
			if err != nil {
				t.Fatalf("parse %q as %s: %v", raw, cols[i].Type, err)
			}
			vals[i] = d
		}
		out = append(out, formatRow(cols, vals))
	}
	if _, err := res.Close(); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	slices.Sort(out)
	return out
}

func formatRow(cols []Column, vals []types.Datum) string {
	parts := make([]string, len(cols))
	for i := range cols {
		if vals[i].Null {
			parts[i] = "NULL"
		} else {
			parts[i] = strconv.Quote(types.FormatText(cols[i].Type, &vals[i]))
		}
	}
	return strings.Join(parts, "|")
}

func (e *env) expect(t *testing.T, table string, cols []Column, want ...[]types.Datum) {
	t.Helper()
	var w []string
	for _, r := range want {
		w = append(w, formatRow(cols, r))
	}
	slices.Sort(w)
	got := e.tableRows(t, table, cols)
	if !slices.Equal(got, w) {
		t.Fatalf("table %s:\n got  %s\n want %s", table, strings.Join(got, "\n      "), strings.Join(w, "\n      "))
	}
}

func vals(ds ...types.Datum) []types.Datum { return ds }

var (
	i64  = types.DInt
	str  = types.DString
	null = types.NullDatum
)

func dec(s string) types.Datum {
	d, _, err := apd.NewFromString(s)
	if err != nil {
		panic(err)
	}
	return types.DDecimal(d)
}

func ts(s string) types.Datum {
	us, err := types.ParseTimestamp(s, false)
	if err != nil {
		panic(err)
	}
	return types.DInt(us)
}

func date(s string) types.Datum {
	days, err := types.ParseDate(s)
	if err != nil {
		panic(err)
	}
	return types.DInt(days)
}

func (e *env) testCheck(t *testing.T) {
	e.exec(t, `CREATE TABLE chk_plain (id bigint, name text, score double precision)`)
	e.exec(t, `CREATE TABLE chk_pk (id bigint PRIMARY KEY, "Name" varchar(20), amount numeric(12,2), n int,
		ok boolean, at timestamp, day date, zoned timestamptz, span interval, note text, created timestamptz DEFAULT now(),
		serial_id bigint GENERATED BY DEFAULT AS IDENTITY)`)
	e.exec(t, `CREATE TABLE chk_uniq (a int NOT NULL, b text NOT NULL, c real, UNIQUE (b, a))`)
	e.exec(t, `CREATE TABLE chk_required (id int PRIMARY KEY, must text NOT NULL)`)
	e.exec(t, `CREATE TABLE chk_gen (id int PRIMARY KEY, twice int GENERATED ALWAYS AS (id * 2) STORED)`)
	e.exec(t, `CREATE TABLE chk_partial (id int, UNIQUE (id) DEFERRABLE INITIALLY DEFERRED)`)
	e.exec(t, `CREATE UNIQUE INDEX ON chk_partial (id) WHERE id > 0`)
	e.exec(t, `CREATE SCHEMA "Other"`)
	e.exec(t, `CREATE TABLE "Other"."T" (id int)`)
	e.exec(t, `CREATE VIEW chk_view AS SELECT 1 AS id`)
	e.exec(t, `CREATE DOMAIN posint AS int CHECK (VALUE > 0)`)
	e.exec(t, `CREATE TABLE chk_domain (id posint PRIMARY KEY)`)

	ctx := testCtx(t)
	ok := []struct {
		name string
		cfg  Config
		cols []Column
	}{
		{"append-only into a table without keys", e.config("chk_plain", false),
			[]Column{{"id", types.TInt32}, {"name", types.TVarchar}, {"score", types.TFloat32}}},
		{"columns the sink lacks are nullable", e.config("chk_plain", false), []Column{{"ID", types.TInt64}}},
		{"every kind, case-insensitive names, defaults and identity left out", e.config("chk_pk", true, "ID"),
			[]Column{{"ID", types.TInt16}, {"name", types.TVarchar}, {"amount", types.TNumeric}, {"n", types.TInt64},
				{"ok", types.TBool}, {"at", types.TTimestamp}, {"day", types.TDate}, {"zoned", types.TTimestamptz},
				{"span", types.TInterval}, {"note", types.TVarchar}}},
		{"a float and an integer into numeric", e.config("chk_pk", true, "id"),
			[]Column{{"id", types.TInt64}, {"amount", types.TFloat64}, {"n", types.TInt32}}},
		{"a unique constraint in another column order", e.config("chk_uniq", true, "a", "b"),
			[]Column{{"a", types.TInt32}, {"b", types.TVarchar}, {"c", types.TFloat64}}},
		{"case-sensitive schema and table", Config{Host: e.host, Port: e.port, User: "postgres", Database: "dev",
			Schema: "Other", Table: "T"}, []Column{{"id", types.TInt32}}},
		{"a domain over int", e.config("chk_domain", true, "id"), []Column{{"id", types.TInt32}}},
	}
	for _, c := range ok {
		if err := c.cfg.Check(ctx, c.cols); err != nil {
			t.Errorf("%s: Check = %v, want ok", c.name, err)
		}
	}

	bad := []struct {
		name string
		cfg  Config
		cols []Column
		kind error
	}{
		{"missing table", e.config("no_such_table", false), []Column{{"id", types.TInt64}}, types.ErrUndefinedTable},
		{"table in the wrong case", e.config("CHK_PLAIN", false), []Column{{"id", types.TInt64}}, types.ErrUndefinedTable},
		{"a view", e.config("chk_view", false), []Column{{"id", types.TInt32}}, types.ErrWrongObjectType},
		{"missing column", e.config("chk_plain", false), []Column{{"id", types.TInt64}, {"nope", types.TVarchar}}, types.ErrUndefinedColumn},
		{"text into bigint", e.config("chk_plain", false), []Column{{"id", types.TVarchar}}, types.ErrDatatypeMismatch},
		{"float into bigint", e.config("chk_plain", false), []Column{{"id", types.TFloat64}}, types.ErrDatatypeMismatch},
		{"numeric into double", e.config("chk_plain", false), []Column{{"score", types.TNumeric}}, types.ErrDatatypeMismatch},
		{"int into text", e.config("chk_plain", false), []Column{{"name", types.TInt32}}, types.ErrDatatypeMismatch},
		{"timestamptz into timestamp", e.config("chk_pk", true, "id"), []Column{{"id", types.TInt64}, {"at", types.TTimestamptz}}, types.ErrDatatypeMismatch},
		{"date into timestamp", e.config("chk_pk", true, "id"), []Column{{"id", types.TInt64}, {"at", types.TDate}}, types.ErrDatatypeMismatch},
		{"bool into int", e.config("chk_pk", true, "id"), []Column{{"id", types.TInt64}, {"n", types.TBool}}, types.ErrDatatypeMismatch},
		{"upsert without a unique key", e.config("chk_plain", true, "id"), []Column{{"id", types.TInt64}}, types.ErrInvalidParameter},
		{"upsert on a subset of the unique key", e.config("chk_uniq", true, "a"),
			[]Column{{"a", types.TInt32}, {"b", types.TVarchar}}, types.ErrInvalidParameter},
		{"upsert on a superset of the primary key", e.config("chk_pk", true, "id", "n"),
			[]Column{{"id", types.TInt64}, {"n", types.TInt32}}, types.ErrInvalidParameter},
		{"upsert on deferrable and partial unique indexes only", e.config("chk_partial", true, "id"),
			[]Column{{"id", types.TInt32}}, types.ErrInvalidParameter},
		{"primary key not a sink column", e.config("chk_pk", true, "nope"), []Column{{"id", types.TInt64}}, types.ErrUndefinedColumn},
		{"a NOT NULL column without default left out", e.config("chk_required", true, "id"),
			[]Column{{"id", types.TInt32}}, types.ErrInvalidParameter},
		{"a generated column written", e.config("chk_gen", true, "id"),
			[]Column{{"id", types.TInt32}, {"twice", types.TInt32}}, types.ErrInvalidParameter},
		{"two sink columns for one target column", e.config("chk_plain", false),
			[]Column{{"id", types.TInt64}, {"ID", types.TInt64}}, types.ErrDuplicateColumn},
	}
	for _, c := range bad {
		err := c.cfg.Check(ctx, c.cols)
		if !errors.Is(err, c.kind) {
			t.Errorf("%s: Check = %v, want a %v error", c.name, err, c.kind)
		} else {
			t.Logf("%s: %v", c.name, err)
		}
		if _, err := Open(ctx, c.cfg, c.cols); !errors.Is(err, c.kind) {
			t.Errorf("%s: Open = %v, want a %v error", c.name, err, c.kind)
		}
	}
	// A domain column gets values cast to the domain, whose check applies.
	dcols := []Column{{"id", types.TInt32}}
	s := e.open(t, e.config("chk_domain", true, "id"), dcols)
	write(t, s, dcols, ins(i64(5)))
	commit(t, s, 1)
	e.expect(t, "chk_domain", dcols, vals(i64(5)))
	write(t, s, dcols, ins(i64(0)))
	var pe *pgconn.PgError
	if err := s.Commit(ctx, 2); !errors.As(err, &pe) || pe.Code != "23514" {
		t.Errorf("Commit of a value the domain refuses = %v, want a check violation", err)
	}

	cfg := e.config("chk_plain", false)
	cfg.Database = "no_such_db"
	if err := cfg.Check(ctx, []Column{{"id", types.TInt64}}); err == nil {
		t.Error("Check against a missing database succeeded")
	}
}

// typeCols cover the types the sink writes, each into its own PostgreSQL type.
var typeCols = []Column{
	{"id", types.TInt32}, {"big", types.TInt64}, {"small", types.TInt16}, {"dbl", types.TFloat64},
	{"flt", types.TFloat32}, {"num", types.TNumeric}, {"txt", types.TVarchar}, {"vc", types.TVarchar},
	{"ok", types.TBool}, {"at", types.TTimestamp}, {"zoned", types.TTimestamptz}, {"day", types.TDate},
	{"clock", types.TTime}, {"span", types.TInterval}, {"raw", types.TBytea}, {"doc", types.TJsonb},
	{"big_as_num", types.TInt64}, {"dbl_as_num", types.TFloat64},
}

func (e *env) testTypes(t *testing.T) {
	e.exec(t, `CREATE TABLE typed (id int PRIMARY KEY, big bigint, small smallint, dbl double precision,
		flt real, num numeric, txt text, vc varchar(10), ok boolean, at timestamp, zoned timestamptz, day date,
		clock time, span interval, raw bytea, doc jsonb, big_as_num numeric, dbl_as_num numeric)`)
	s := e.open(t, e.config("typed", true, "id"), typeCols)
	tsz := func(s string) types.Datum {
		us, err := types.ParseTimestamp(s, true)
		if err != nil {
			panic(err)
		}
		return types.DInt(us)
	}
	rows := [][]types.Datum{
		vals(i64(1), i64(math.MaxInt64), i64(math.MinInt16), types.DFloat(math.Pi), types.DFloat(float64(float32(0.1))),
			dec("12345678901234567890.000000000123"), str(`it's "quoted" \ back\slash`+"\ttab\nnewline"), str("héllo ☃"),
			types.DBool(true), ts("2024-02-29 23:59:59.999999"), tsz("2024-06-01 12:00:00+02"), date("2000-01-01"),
			types.DInt(((13*60+14)*60+15)*1e6+16), types.DInterval(types.IntervalValue{Months: 14, Days: -3, Micros: 3_723_000_001}),
			str("\x00\x01\xfe\xff"), str(`{"a": [1, 2.5, null], "b": "x"}`), i64(math.MinInt64), types.DFloat(-1.5e-7)),
		vals(i64(2), i64(math.MinInt64), i64(math.MaxInt16), types.DFloat(math.Inf(-1)), types.DFloat(math.NaN()),
			dec("-0.50"), str(""), str(""), types.DBool(false), ts("0001-01-01 00:00:00"), types.DInt(types.InfinityTS),
			types.DInt(types.NegInfinityTS), types.DInt(0), types.DInterval(types.IntervalValue{}), str(""), str(`[]`),
			i64(0), types.DFloat(1e300)),
		vals(i64(3), null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null),
		vals(i64(4), i64(-7), i64(0), types.DFloat(math.Copysign(0, -1)), types.DFloat(math.Inf(1)), dec("NaN"),
			str("NULL"), str(`\N`), types.DBool(true), ts("1970-01-01 00:00:00"), tsz("1999-12-31 23:59:59.5-08"),
			date("1900-02-28"), types.DInt(86_399_999_999), types.DInterval(types.IntervalValue{Micros: -1}),
			str("\\x"), str(`"str"`), i64(1), types.DFloat(0.1)),
	}
	var chunk []row
	for _, r := range rows {
		chunk = append(chunk, ins(r...))
	}
	write(t, s, typeCols, chunk...)
	commit(t, s, 1)
	e.expect(t, "typed", typeCols, rows...)

	// An over-long varchar is refused on assignment (the cast drops the
	// modifier, so PostgreSQL checks it rather than truncating).
	write(t, s, typeCols, ins(i64(5), null, null, null, null, null, null, str("elevenchars"), null, null, null, null, null, null, null, null, null, null))
	var pe *pgconn.PgError
	if err := s.Commit(testCtx(t), 2); !errors.As(err, &pe) || pe.Code != "22001" {
		t.Fatalf("Commit of a too-long varchar(10) = %v, want a string data right truncation (22001)", err)
	}
	e.expect(t, "typed", typeCols, rows...)
}

func (e *env) testUpsert(t *testing.T) {
	e.exec(t, `CREATE TABLE ups (id bigint PRIMARY KEY, name text, amount numeric(10,2), at timestamp, seen boolean, extra text DEFAULT 'dflt')`)
	cols := []Column{{"id", types.TInt64}, {"name", types.TVarchar}, {"amount", types.TNumeric}, {"at", types.TTimestamp}, {"seen", types.TBool}}
	s := e.open(t, e.config("ups", true, "id"), cols)
	all := append(slices.Clone(cols), Column{"extra", types.TVarchar})
	r := func(id int64, name string, amount string, at string, seen bool, extra string) []types.Datum {
		n, a, x := str(name), null, str(extra)
		if name == "" {
			n = null
		}
		if amount != "" {
			a = dec(amount)
		}
		if extra == "" {
			x = null
		}
		return vals(i64(id), n, a, ts(at), types.DBool(seen), x)
	}
	sink := func(d []types.Datum) []types.Datum { return d[:len(cols)] }

	epochs := []struct {
		name string
		rows []row
		want [][]types.Datum
	}{
		{"inserts", []row{
			ins(sink(r(1, "one", "1.50", "2024-01-01 00:00:00", true, ""))...),
			ins(sink(r(2, "two", "2.00", "2024-01-02 00:00:00", false, ""))...),
			ins(sink(r(3, "", "", "2024-01-03 00:00:00", true, ""))...),
		}, [][]types.Datum{
			r(1, "one", "1.50", "2024-01-01 00:00:00", true, "dflt"),
			r(2, "two", "2.00", "2024-01-02 00:00:00", false, "dflt"),
			r(3, "", "", "2024-01-03 00:00:00", true, "dflt"),
		}},
		{"update, delete, key change, insert then delete, NULL to value", []row{
			ud(sink(r(1, "one", "1.50", "2024-01-01 00:00:00", true, ""))...),
			ui(sink(r(1, "uno", "1.75", "2024-01-01 00:00:01", false, ""))...),
			del(sink(r(2, "two", "2.00", "2024-01-02 00:00:00", false, ""))...),
			ud(sink(r(3, "", "", "2024-01-03 00:00:00", true, ""))...),
			ui(sink(r(30, "thirty", "30", "2024-01-30 00:00:00", true, ""))...),
			ins(sink(r(4, "four", "4", "2024-01-04 00:00:00", true, ""))...),
			del(sink(r(4, "four", "4", "2024-01-04 00:00:00", true, ""))...),
			ins(sink(r(5, "", "", "2024-01-05 00:00:00", true, ""))...),
			ud(sink(r(5, "", "", "2024-01-05 00:00:00", true, ""))...),
			ui(sink(r(5, "five", "5.5", "2024-01-05 00:00:00", true, ""))...),
		}, [][]types.Datum{
			r(1, "uno", "1.75", "2024-01-01 00:00:01", false, "dflt"),
			r(30, "thirty", "30.00", "2024-01-30 00:00:00", true, "dflt"),
			r(5, "five", "5.50", "2024-01-05 00:00:00", true, "dflt"),
		}},
		{"value to NULL, delete then reinsert, swap keys", []row{
			ud(sink(r(1, "uno", "1.75", "2024-01-01 00:00:01", false, ""))...),
			ui(sink(r(1, "", "", "2024-01-01 00:00:01", false, ""))...),
			del(sink(r(30, "thirty", "30.00", "2024-01-30 00:00:00", true, ""))...),
			ins(sink(r(30, "again", "31", "2024-01-31 00:00:00", false, ""))...),
			ud(sink(r(5, "five", "5.50", "2024-01-05 00:00:00", true, ""))...),
			ui(sink(r(6, "five", "5.50", "2024-01-05 00:00:00", true, ""))...),
			ins(sink(r(5, "new five", "0", "2024-01-05 00:00:00", true, ""))...),
		}, [][]types.Datum{
			r(1, "", "", "2024-01-01 00:00:01", false, "dflt"),
			r(30, "again", "31.00", "2024-01-31 00:00:00", false, "dflt"),
			r(5, "new five", "0.00", "2024-01-05 00:00:00", true, "dflt"),
			r(6, "five", "5.50", "2024-01-05 00:00:00", true, "dflt"),
		}},
	}
	for i, ep := range epochs {
		// Each epoch twice: replaying an epoch (a crash before the engine
		// recorded it) leaves the same table.
		for replay := 0; replay < 2; replay++ {
			// Split the epoch over two chunks.
			half := len(ep.rows) / 2
			write(t, s, cols, ep.rows[:half]...)
			write(t, s, cols, ep.rows[half:]...)
			commit(t, s, uint64(10+i))
			e.expect(t, "ups", all, ep.want...)
		}
	}
	// A column the sink does not write keeps its value through updates.
	e.exec(t, `UPDATE ups SET extra = 'kept' WHERE id = 1`)
	write(t, s, cols, ud(sink(r(1, "", "", "2024-01-01 00:00:01", false, ""))...), ui(sink(r(1, "back", "1", "2024-01-01 00:00:01", false, ""))...))
	commit(t, s, 20)
	e.expect(t, "ups", all,
		r(1, "back", "1.00", "2024-01-01 00:00:01", false, "kept"),
		r(30, "again", "31.00", "2024-01-31 00:00:00", false, "dflt"),
		r(5, "new five", "0.00", "2024-01-05 00:00:00", true, "dflt"),
		r(6, "five", "5.50", "2024-01-05 00:00:00", true, "dflt"))

	// An empty epoch, and one whose rows are all invisible, change nothing.
	commit(t, s, 21)
	c := types.NewChunk(colTypes(cols), 1)
	c.AppendRowOp(types.OpDelete, sink(r(1, "", "", "2024-01-01 00:00:01", false, "")))
	c.Vis = []bool{false}
	if err := s.Write(testCtx(t), c); err != nil {
		t.Fatal(err)
	}
	commit(t, s, 22)
	if got := len(e.tableRows(t, "ups", cols)); got != 4 {
		t.Fatalf("after invisible deletes the table has %d rows, want 4", got)
	}

	// A key whose columns are all the columns: ON CONFLICT DO NOTHING.
	e.exec(t, `CREATE TABLE ups_keyonly (a int, b text, PRIMARY KEY (a, b))`)
	kcols := []Column{{"a", types.TInt32}, {"b", types.TVarchar}}
	ks := e.open(t, e.config("ups_keyonly", true, "b", "a"), kcols)
	for replay := 0; replay < 2; replay++ {
		write(t, ks, kcols, ins(i64(1), str("x")), ins(i64(1), str("y")), ins(i64(2), str("x")), del(i64(2), str("x")))
		commit(t, ks, 1)
		e.expect(t, "ups_keyonly", kcols, vals(i64(1), str("x")), vals(i64(1), str("y")))
	}
}

// testNullKey: a unique index (unlike a primary key) allows NULL key columns.
// ON CONFLICT never matches them, so the sink deletes such keys with IS NOT
// DISTINCT FROM before inserting them, and replays still converge.
func (e *env) testNullKey(t *testing.T) {
	e.exec(t, `CREATE TABLE nk (a int, b text, v int, UNIQUE (a, b))`)
	cols := []Column{{"a", types.TInt32}, {"b", types.TVarchar}, {"v", types.TInt32}}
	s := e.open(t, e.config("nk", true, "a", "b"), cols)
	for replay := 0; replay < 2; replay++ {
		write(t, s, cols, ins(i64(1), null, i64(10)), ins(null, null, i64(20)), ins(i64(1), str("x"), i64(30)))
		commit(t, s, 1)
		e.expect(t, "nk", cols, vals(i64(1), null, i64(10)), vals(null, null, i64(20)), vals(i64(1), str("x"), i64(30)))
	}
	for replay := 0; replay < 2; replay++ {
		write(t, s, cols, ud(i64(1), null, i64(10)), ui(i64(1), null, i64(11)), del(null, null, i64(20)))
		commit(t, s, 2)
		e.expect(t, "nk", cols, vals(i64(1), null, i64(11)), vals(i64(1), str("x"), i64(30)))
	}
}

// testEqualKeys: keys PostgreSQL finds equal though they are spelled
// differently (numeric scale, -0, char(n) padding) are one key within an
// epoch; otherwise one INSERT ... ON CONFLICT would touch a row twice.
func (e *env) testEqualKeys(t *testing.T) {
	e.exec(t, `CREATE TABLE eqk (n numeric, f double precision, c char(4), v text, PRIMARY KEY (n, f, c))`)
	cols := []Column{{"n", types.TNumeric}, {"f", types.TFloat64}, {"c", types.TVarchar}, {"v", types.TVarchar}}
	s := e.open(t, e.config("eqk", true, "n", "f", "c"), cols)
	negZero := types.DFloat(math.Copysign(0, -1))
	write(t, s, cols,
		ins(dec("1.0"), types.DFloat(0), str("ab"), str("first")),
		ins(dec("1.000"), negZero, str("ab  "), str("second")),
		ins(dec("2"), types.DFloat(0), str("ab"), str("other")),
		ins(dec("0.00"), types.DFloat(1), str("x"), str("zero")),
		ins(dec("-0"), types.DFloat(1), str("x "), str("negative zero")))
	commit(t, s, 1)
	e.expect(t, "eqk", cols,
		vals(dec("1.000"), negZero, str("ab  "), str("second")),
		vals(dec("2"), types.DFloat(0), str("ab  "), str("other")),
		vals(dec("0"), types.DFloat(1), str("x   "), str("negative zero")))
}

func (e *env) testAppendOnly(t *testing.T) {
	e.exec(t, `CREATE TABLE app (id int, name text, at date, seq bigserial)`)
	cols := []Column{{"id", types.TInt32}, {"name", types.TVarchar}, {"at", types.TDate}}
	s := e.open(t, e.config("app", false), cols)
	write(t, s, cols, ins(i64(1), str("a"), date("2024-01-01")), ins(i64(2), null, null))
	write(t, s, cols, del(i64(1), str("a"), date("2024-01-01")), ud(i64(2), null, null), ui(i64(2), str("b"), null))
	commit(t, s, 1)
	e.expect(t, "app", cols, vals(i64(1), str("a"), date("2024-01-01")), vals(i64(2), null, null), vals(i64(2), str("b"), null))
	write(t, s, cols, ins(i64(1), str("a"), date("2024-01-01")))
	commit(t, s, 2)
	e.expect(t, "app", cols, vals(i64(1), str("a"), date("2024-01-01")), vals(i64(2), null, null), vals(i64(2), str("b"), null),
		vals(i64(1), str("a"), date("2024-01-01")))
}

// testRollback: a commit PostgreSQL refuses leaves the table as it was, and
// the epoch stays buffered for a retry.
func (e *env) testRollback(t *testing.T) {
	for _, upsert := range []bool{false, true} {
		table := fmt.Sprintf("rb_%v", upsert)
		e.exec(t, `CREATE TABLE `+table+` (id int PRIMARY KEY, v text NOT NULL)`)
		cols := []Column{{"id", types.TInt32}, {"v", types.TVarchar}}
		s := e.open(t, e.config(table, upsert, "id"), cols)
		write(t, s, cols, ins(i64(1), str("one")), ins(i64(2), str("two")))
		commit(t, s, 1)
		want := [][]types.Datum{vals(i64(1), str("one")), vals(i64(2), str("two"))}

		write(t, s, cols, ins(i64(3), str("three")), ins(i64(4), null))
		if upsert {
			write(t, s, cols, del(i64(1), str("one")))
		}
		var pe *pgconn.PgError
		for try := 0; try < 2; try++ {
			err := s.Commit(testCtx(t), 2)
			if !errors.As(err, &pe) || pe.Code != "23502" {
				t.Fatalf("upsert %v: Commit = %v, want a not null violation", upsert, err)
			}
			if !strings.Contains(err.Error(), "commit epoch 2") {
				t.Errorf("the error does not name the epoch: %v", err)
			}
			e.expect(t, table, cols, want...)
		}
		// The epoch is still buffered: once the target accepts it, a retry applies it.
		e.exec(t, `ALTER TABLE `+table+` ALTER COLUMN v DROP NOT NULL`)
		commit(t, s, 2)
		if upsert {
			want = [][]types.Datum{vals(i64(2), str("two")), vals(i64(3), str("three")), vals(i64(4), null)}
		} else {
			want = append(want, vals(i64(3), str("three")), vals(i64(4), null))
		}
		e.expect(t, table, cols, want...)
		// The connection is usable (not left in a failed transaction).
		write(t, s, cols, ins(i64(5), str("five")))
		commit(t, s, 3)
		e.expect(t, table, cols, append(want, vals(i64(5), str("five")))...)
	}
}

// testLargeEpoch: an epoch of many statements (full-size prepared batches,
// several round trips) is still one transaction.
func (e *env) testLargeEpoch(t *testing.T) {
	e.exec(t, `CREATE TABLE big (id int PRIMARY KEY, pad text NOT NULL)`)
	cols := []Column{{"id", types.TInt32}, {"pad", types.TVarchar}}
	s := e.open(t, e.config("big", true, "id"), cols)
	pad := strings.Repeat("p", 2000)
	const n = 5000 // 10 MB: three flushes
	var rows []row
	var want [][]types.Datum
	for i := 0; i < n; i++ {
		rows = append(rows, ins(i64(int64(i)), str(pad)))
		want = append(want, vals(i64(int64(i)), str(pad)))
	}
	write(t, s, cols, rows...)
	commit(t, s, 1)
	e.expect(t, "big", cols, want...)

	// Delete half, update the rest, and fail on the very last row: the
	// round trips before it (deletes and 4 MB of updates) must not stick.
	pad2 := strings.Repeat("q", 2000)
	rows = rows[:0]
	for i := 0; i < n; i++ {
		if i%2 == 0 {
			rows = append(rows, ud(i64(int64(i)), str(pad)), ui(i64(int64(i)), str(pad2)))
		} else {
			rows = append(rows, del(i64(int64(i)), str(pad)))
		}
	}
	rows = append(rows, ins(i64(n), null))
	write(t, s, cols, rows...)
	if err := s.Commit(testCtx(t), 2); err == nil {
		t.Fatal("Commit with a NULL in a NOT NULL column succeeded")
	}
	if got := len(e.tableRows(t, "big", cols)); got != n {
		t.Fatalf("after a failed commit the table has %d rows, want %d", got, n)
	}
	e.exec(t, `ALTER TABLE big ALTER COLUMN pad DROP NOT NULL`)
	commit(t, s, 2)
	want = want[:0]
	for i := 0; i < n; i += 2 {
		want = append(want, vals(i64(int64(i)), str(pad2)))
	}
	want = append(want, vals(i64(n), null))
	e.expect(t, "big", cols, want...)
}

// testReconnect: Commit reopens a connection the server dropped.
func (e *env) testReconnect(t *testing.T) {
	e.exec(t, `CREATE TABLE rc (id int PRIMARY KEY, v int)`)
	cols := []Column{{"id", types.TInt32}, {"v", types.TInt32}}
	s := e.open(t, e.config("rc", true, "id"), cols)
	write(t, s, cols, ins(i64(1), i64(1)))
	commit(t, s, 1)

	// The backend is killed between epochs.
	if _, err := e.admin.Exec(testCtx(t), `SELECT pg_terminate_backend($1)`, s.conn.PgConn().PID()); err != nil {
		t.Fatal(err)
	}
	write(t, s, cols, ud(i64(1), i64(1)), ui(i64(1), i64(2)), ins(i64(2), i64(2)))
	commit(t, s, 2)
	e.expect(t, "rc", cols, vals(i64(1), i64(2)), vals(i64(2), i64(2)))

	// The whole server restarts between epochs.
	if err := e.cluster.Restart(); err != nil {
		t.Fatal(err)
	}
	e.connectAdmin(t)
	write(t, s, cols, del(i64(2), i64(2)), ins(i64(3), i64(3)))
	commit(t, s, 3)
	e.expect(t, "rc", cols, vals(i64(1), i64(2)), vals(i64(3), i64(3)))

	// A server that stays down fails the commit, keeping the epoch.
	if err := e.cluster.Stop(); err != nil {
		t.Fatal(err)
	}
	write(t, s, cols, ins(i64(4), i64(4)))
	if err := s.Commit(testCtx(t), 4); err == nil {
		t.Fatal("Commit with the server down succeeded")
	}
	if err := e.cluster.Restart(); err != nil {
		t.Fatal(err)
	}
	e.connectAdmin(t)
	commit(t, s, 4)
	e.expect(t, "rc", cols, vals(i64(1), i64(2)), vals(i64(3), i64(3)), vals(i64(4), i64(4)))
}

// testRandom applies random upsert epochs, each a change stream consistent
// with the rows already sent, split into chunks with invisible rows between,
// some epochs replayed, and compares the table with the model after each.
func (e *env) testRandom(t *testing.T) {
	rng := rand.New(rand.NewSource(testseed.Int64(t)))

	e.exec(t, `CREATE TABLE rnd (k1 int, k2 text, i bigint, s text, n numeric, f double precision, at timestamp, b boolean,
		PRIMARY KEY (k2, k1))`)
	cols := []Column{{"k1", types.TInt32}, {"k2", types.TVarchar}, {"i", types.TInt64}, {"s", types.TVarchar},
		{"n", types.TNumeric}, {"f", types.TFloat64}, {"at", types.TTimestamp}, {"b", types.TBool}}
	s := e.open(t, e.config("rnd", true, "k1", "k2"), cols)

	texts := []string{"", "a", "b ", "O'Brien", `back\slash`, "tab\there", "line\nbreak", "ünï", "NULL", `\N`, "x,y", "(1,2)"}
	nums := []string{"0", "1.50", "-0.001", "123456789012345678901234567890.5", "1E+3", "NaN", "2.000"}
	floats := []float64{0, 1.5, -2.25e-10, 1e300, math.Inf(1), math.NaN(), 0.1}
	key := func() (int64, string) { return int64(rng.Intn(12)), texts[rng.Intn(4)] }
	value := func(k1 int64, k2 string) []types.Datum {
		r := vals(i64(k1), str(k2), i64(rng.Int63()-rng.Int63()), str(texts[rng.Intn(len(texts))]),
			dec(nums[rng.Intn(len(nums))]), types.DFloat(floats[rng.Intn(len(floats))]),
			types.DInt(rng.Int63n(200*365*86400e6)-100*365*86400e6), types.DBool(rng.Intn(2) == 0))
		for j := 2; j < len(r); j++ {
			if rng.Intn(6) == 0 {
				r[j] = null
			}
		}
		return r
	}
	keyOf := func(k1 int64, k2 string) string { return fmt.Sprintf("%d/%s", k1, k2) }
	model := map[string][]types.Datum{}
	pick := func() (string, []types.Datum) { // an existing row
		ks := make([]string, 0, len(model))
		for k := range model {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		k := ks[rng.Intn(len(ks))]
		return k, model[k]
	}

	chunk := types.NewChunk(colTypes(cols), 64) // reused for every Write
	for epoch := uint64(1); epoch <= 150; epoch++ {
		var rows []row
		for n := rng.Intn(40); n > 0; n-- {
			k1, k2 := key()
			k := keyOf(k1, k2)
			_, exists := model[k]
			switch op := rng.Intn(4); {
			case !exists:
				r := value(k1, k2)
				rows = append(rows, ins(r...))
				model[k] = r
			case op == 0:
				rows = append(rows, del(model[k]...))
				delete(model, k)
			case op == 1: // update in place
				r := value(k1, k2)
				rows = append(rows, ud(model[k]...), ui(r...))
				model[k] = r
			default: // update to another key, when one is free
				nk1, nk2 := key()
				if _, taken := model[keyOf(nk1, nk2)]; taken {
					continue
				}
				r := value(nk1, nk2)
				rows = append(rows, ud(model[k]...), ui(r...))
				delete(model, k)
				model[keyOf(nk1, nk2)] = r
			}
		}
		if len(model) > 0 && rng.Intn(3) == 0 { // rewrite an untouched row as delete + insert
			k, old := pick()
			rows = append(rows, del(old...), ins(old...))
			model[k] = old
		}
		for replay := 0; replay <= rng.Intn(2); replay++ {
			for i := 0; i < len(rows); {
				chunk.Reset()
				chunk.Vis = []bool{}
				for n := 1 + rng.Intn(8); n > 0 && i < len(rows); n-- {
					if rng.Intn(4) == 0 { // an invisible row: garbage the sink must skip
						k1, k2 := key()
						chunk.AppendRowOp(types.Op(rng.Intn(4)), value(k1, k2))
						chunk.Vis[len(chunk.Vis)-1] = false
						continue
					}
					chunk.AppendRowOp(rows[i].op, rows[i].vals)
					i++
				}
				if err := s.Write(testCtx(t), chunk); err != nil {
					t.Fatal(err)
				}
				scribble(chunk)
			}
			commit(t, s, epoch)
			var want [][]types.Datum
			for _, r := range model {
				want = append(want, r)
			}
			e.expect(t, "rnd", cols, want...)
		}
	}
}

func (e *env) testWriteAllocs(t *testing.T) {
	s := e.open(t, e.config("typed", true, "id"), typeCols)
	c := types.NewChunk(colTypes(typeCols), 1024)
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 1024; i++ {
		r := vals(i64(int64(i)), i64(rng.Int63()), i64(7), types.DFloat(rng.Float64()), types.DFloat(0.5),
			dec("1234.5678"), str("some text"), str("vc"), types.DBool(true), ts("2024-01-01 00:00:00"),
			types.DInt(rng.Int63n(1e15)), date("2020-02-02"), types.DInt(1e6), types.DInterval(types.IntervalValue{Days: 1}),
			str("raw"), str(`{"a": 1}`), i64(3), types.DFloat(2.5))
		op := types.OpInsert
		if i%4 == 1 {
			op = types.OpUpdateDelete
		}
		c.AppendRowOp(op, r)
	}
	ctx := testCtx(t)
	allocs := testing.AllocsPerRun(20, func() {
		if err := s.Write(ctx, c); err != nil {
			t.Fatal(err)
		}
		s.buf.winners()
		s.buf.reset()
	})
	t.Logf("Write + compaction of 1024 rows: %.1f allocations", allocs)
	if allocs > 10 {
		t.Errorf("Write + compaction of 1024 rows allocates %.1f times, want (almost) none", allocs)
	}
}

func TestConnConfigQuotes(t *testing.T) {
	c := Config{Host: "db.example", Port: 6000, User: `us'er`, Password: `p' w\d =x`, Database: `my db`, Schema: "public", Table: "t"}
	cc, err := c.connConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cc.Host != c.Host || cc.Port != 6000 || cc.User != c.User || cc.Password != c.Password || cc.Database != c.Database {
		t.Errorf("connConfig = host %q port %d user %q password %q database %q; want %+v", cc.Host, cc.Port, cc.User, cc.Password, cc.Database, c)
	}
	if cc.RuntimeParams["datestyle"] != "ISO, MDY" || cc.RuntimeParams["intervalstyle"] != "postgres" {
		t.Errorf("session settings = %v", cc.RuntimeParams)
	}
}
