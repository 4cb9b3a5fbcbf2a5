package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/tributary/tributary/e2e/e2etest"
	"github.com/tributary/tributary/e2e/pgtest"
)

// copyTypesDDL is a table of many types for the COPY tests.
const copyTypesDDL = `CREATE TABLE ct (id bigint PRIMARY KEY, i int, s smallint, f double precision, r real,
	n numeric(12,3), b boolean, t text, vc varchar(20), raw bytea, ts timestamptz, tsn timestamp,
	d date, tm time, iv interval, j jsonb, dflt text DEFAULT 'dv')`

var copyTypesCols = []string{"id", "i", "s", "f", "r", "n", "b", "t", "vc", "raw", "ts", "tsn", "d", "tm", "iv", "j"}

// copyTypesRow is row k of the pgx CopyFrom tests (NULLs in every 7th row).
func copyTypesRow(k int64) []any {
	base := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	n := pgtype.Numeric{Int: big.NewInt(k*1000 + 123), Exp: -3, Valid: true}
	row := []any{k, int32(k % 1000), int16(k % 100), float64(k) / 4, float32(k%50) / 2, n, k%2 == 0,
		fmt.Sprintf("row %d\ttab \\ back é", k), fmt.Sprintf("v%d", k%97), []byte{byte(k), 0, 255},
		base.Add(time.Duration(k) * time.Second), base.Add(time.Duration(k) * time.Minute), base.AddDate(0, 0, int(k%400)),
		pgtype.Time{Microseconds: (k % 86400) * 1_000_000, Valid: true},
		pgtype.Interval{Months: int32(k % 12), Days: int32(k % 30), Microseconds: k * 1000, Valid: true},
		map[string]any{"k": k}}
	if k%7 == 0 {
		for i := 1; i < len(row); i++ {
			row[i] = nil
		}
	}
	return row
}

// TestCopyFromPgx loads 100k rows of many types with pgx's CopyFrom (binary
// COPY) into a table a materialized view reads, checks the table and the
// view, then a duplicate key mid-stream (nothing of that COPY stays, the
// connection goes on), a bad text value and a client's CopyFail.
func TestCopyFromPgx(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srv := e2etest.StartServer(t)
	conn := e2etest.Connect(t, ctx, srv)
	exec := func(sql string) {
		t.Helper()
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	exec(copyTypesDDL)
	exec(`CREATE MATERIALIZED VIEW ct_agg AS SELECT count(*) AS n, count(t) AS nt, sum(i) AS si, count(DISTINCT dflt) AS nd FROM ct`)

	const rows = 100_000
	k := int64(0)
	src := pgx.CopyFromFunc(func() ([]any, error) {
		if k >= rows {
			return nil, nil
		}
		k++
		return copyTypesRow(k), nil
	})
	start := time.Now()
	n, err := conn.CopyFrom(ctx, pgx.Identifier{"ct"}, copyTypesCols, src)
	if err != nil || n != rows {
		t.Fatalf("CopyFrom: %d rows, %v", n, err)
	}
	t.Logf("CopyFrom of %d rows: %v", rows, time.Since(start))

	var cnt, nt, si, nd int64
	if err := conn.QueryRow(ctx, `SELECT n, nt, si, nd FROM ct_agg`).Scan(&cnt, &nt, &si, &nd); err != nil {
		t.Fatal(err)
	}
	var wantSI, wantNT int64
	for k := int64(1); k <= rows; k++ {
		if k%7 != 0 {
			wantSI += k % 1000
			wantNT++
		}
	}
	if cnt != rows || nt != wantNT || si != wantSI || nd != 1 {
		t.Errorf("view: n=%d nt=%d si=%d nd=%d, want %d %d %d 1", cnt, nt, si, nd, rows, wantNT, wantSI)
	}
	// Spot-check rows against what was sent (read back in binary by pgx).
	for _, id := range []int64{1, 7, 4242, rows} {
		want := copyTypesRow(id)
		var (
			got     = make([]any, len(want))
			i32     pgtype.Int4
			i16     pgtype.Int2
			f64     pgtype.Float8
			f32     pgtype.Float4
			num     pgtype.Numeric
			b       pgtype.Bool
			txt, vc pgtype.Text
			raw     []byte
			ts      pgtype.Timestamptz
			tsn     pgtype.Timestamp
			d       pgtype.Date
			tm      pgtype.Time
			iv      pgtype.Interval
			j       map[string]any
			dflt    string
			gotID   int64
		)
		err := conn.QueryRow(ctx, `SELECT id, i, s, f, r, n, b, t, vc, raw, ts, tsn, d, tm, iv, j, dflt FROM ct WHERE id = $1`, id).
			Scan(&gotID, &i32, &i16, &f64, &f32, &num, &b, &txt, &vc, &raw, &ts, &tsn, &d, &tm, &iv, &j, &dflt)
		if err != nil {
			t.Fatalf("row %d: %v", id, err)
		}
		got[0] = gotID
		if id%7 == 0 {
			if i32.Valid || num.Valid || txt.Valid || raw != nil || ts.Valid || iv.Valid || j != nil || dflt != "dv" {
				t.Errorf("row %d: want NULLs and the default, got %v %v %v %v %v %v %v %q", id, i32, num, txt, raw, ts, iv, j, dflt)
			}
			continue
		}
		wn := want[5].(pgtype.Numeric)
		if i32.Int32 != want[1].(int32) || i16.Int16 != want[2].(int16) || f64.Float64 != want[3].(float64) ||
			f32.Float32 != want[4].(float32) || num.Int.Cmp(wn.Int) != 0 || num.Exp != wn.Exp || b.Bool != want[6].(bool) ||
			txt.String != want[7].(string) || vc.String != want[8].(string) || !bytes.Equal(raw, want[9].([]byte)) ||
			!ts.Time.Equal(want[10].(time.Time)) || !tsn.Time.Equal(want[11].(time.Time)) ||
			!d.Time.Equal(want[12].(time.Time).Truncate(24*time.Hour)) || tm != want[13].(pgtype.Time) ||
			iv != want[14].(pgtype.Interval) || fmt.Sprint(j["k"]) != fmt.Sprint(id) || dflt != "dv" {
			t.Errorf("row %d differs:\n got %v %v %v %v %v %v %v %q %q %x %v %v %v %v %v %v %q", id, i32, i16, f64, f32, num, num.Exp, b,
				txt.String, vc.String, raw, ts.Time, tsn.Time, d.Time, tm, iv, j, dflt)
		}
	}

	// A duplicate key in the middle of a second COPY: 23505 with the row's
	// line, nothing of that COPY is in the table or the view.
	k = rows
	dupAt := int64(rows + 30_000)
	src = pgx.CopyFromFunc(func() ([]any, error) {
		if k >= rows+60_000 {
			return nil, nil
		}
		k++
		if k == dupAt {
			return copyTypesRow(5), nil // id 5 exists
		}
		return copyTypesRow(k), nil
	})
	_, err = conn.CopyFrom(ctx, pgx.Identifier{"ct"}, copyTypesCols, src)
	if pe := wantCode(t, err, "23505"); pe != nil && pe.Where != fmt.Sprintf("COPY ct, line %d", dupAt-rows) {
		t.Errorf("duplicate key context = %q", pe.Where)
	}
	if err := conn.QueryRow(ctx, `SELECT n FROM ct_agg`).Scan(&cnt); err != nil || cnt != rows {
		t.Errorf("after the failed COPY the view counts %d (%v), want %d", cnt, err, rows)
	}
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM ct`).Scan(&cnt); err != nil || cnt != rows {
		t.Errorf("after the failed COPY the table has %d rows (%v), want %d", cnt, err, rows)
	}
	// A duplicate within one COPY's own rows is caught too.
	_, err = conn.CopyFrom(ctx, pgx.Identifier{"ct"}, []string{"id"}, pgx.CopyFromRows([][]any{{int64(-1)}, {int64(-2)}, {int64(-1)}}))
	if pe := wantCode(t, err, "23505"); pe != nil && pe.Where != "COPY ct, line 3" {
		t.Errorf("duplicate within the COPY: context %q", pe.Where)
	}

	// Text COPY through pgconn: a bad value names its line and column.
	pg := conn.PgConn()
	_, err = pg.CopyFrom(ctx, strings.NewReader("-10\t1\n-11\tnope\n-12\t3\n"), `COPY ct (id, i) FROM STDIN`)
	if pe := wantCode(t, err, "22P02"); pe != nil && pe.Where != `COPY ct, line 2, column i: "nope"` {
		t.Errorf("bad value context = %q", pe.Where)
	}
	// The client gives up mid-stream (CopyFail): 57014, nothing kept.
	_, err = pg.CopyFrom(ctx, io.MultiReader(strings.NewReader("-20\t1\n"), errReader{}), `COPY ct (id, i) FROM STDIN`)
	wantCode(t, err, "57014")
	// Column subsets, defaults and CSV through pgconn; the connection is fine.
	tag, err := pg.CopyFrom(ctx, strings.NewReader("id,t\n-30,\"a,b\"\n-31,\n"), `COPY ct (id, t) FROM STDIN WITH (FORMAT csv, HEADER true)`)
	if err != nil || tag.RowsAffected() != 2 {
		t.Fatalf("csv COPY: %v %v", tag, err)
	}
	var tv pgtype.Text
	var dv string
	if err := conn.QueryRow(ctx, `SELECT t, dflt FROM ct WHERE id = -30`).Scan(&tv, &dv); err != nil || tv.String != "a,b" || dv != "dv" {
		t.Errorf("csv row = %v %q (%v)", tv, dv, err)
	}
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM ct WHERE id < 0`).Scan(&cnt); err != nil || cnt != 2 {
		t.Errorf("rows with negative ids = %d (%v), want the 2 of the CSV COPY", cnt, err)
	}

	// COPY TO STDOUT of a table, a materialized view and a query, in binary
	// too: pgx reads the binary back.
	var out bytes.Buffer
	if tag, err := pg.CopyTo(ctx, &out, `COPY ct_agg TO STDOUT WITH (FORMAT csv, HEADER)`); err != nil || tag.String() != "COPY 1" {
		t.Fatalf("COPY ct_agg TO: %v %v", tag, err)
	}
	if want := fmt.Sprintf("n,nt,si,nd\n%d,%d,%d,1\n", rows+2, wantNT+1, wantSI); out.String() != want {
		t.Errorf("COPY ct_agg TO = %q", out.String())
	}
	out.Reset()
	if tag, err := pg.CopyTo(ctx, &out, `COPY (SELECT id FROM ct WHERE id BETWEEN 1 AND 5000 ORDER BY id) TO STDOUT (FORMAT binary)`); err != nil || tag.String() != "COPY 5000" {
		t.Fatalf("binary COPY TO: %v %v", tag, err)
	}
	if !bytes.HasPrefix(out.Bytes(), []byte("PGCOPY\n\xff\r\n\x00")) || out.Len() != 19+5000*(2+4+8)+2 {
		t.Errorf("binary COPY TO: %d bytes", out.Len())
	}
	// Server-side files are refused.
	_, err = conn.Exec(ctx, `COPY ct FROM '/etc/passwd'`)
	wantCode(t, err, "42501")
	_, err = conn.Exec(ctx, `COPY ct TO '/tmp/x'`)
	wantCode(t, err, "42501")
	var one int
	if err := conn.QueryRow(ctx, `SELECT 1`).Scan(&one); err != nil || one != 1 {
		t.Fatalf("connection after the errors: %v", err)
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("client gave up") }

// TestCopyPsqlRoundTrip loads a CSV file with psql's \copy ... FROM (HEADER)
// and writes the table back with \copy (SELECT ...) TO ... CSV HEADER: the
// same bytes.
func TestCopyPsqlRoundTrip(t *testing.T) {
	psql := psqlBinary(t)
	srv := e2etest.StartServer(t)
	dir := t.TempDir()
	run := func(cmds ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		host, port, _ := strings.Cut(srv.Addr, ":")
		args := []string{"-X", "-h", host, "-p", port, "-d", "dev", "-U", "tributary", "-v", "ON_ERROR_STOP=1"}
		for _, c := range cmds {
			args = append(args, "-c", c)
		}
		cmd := exec.CommandContext(ctx, psql, args...)
		cmd.Dir = dir
		cmd.Env = append(cmd.Environ(), "PGCONNECT_TIMEOUT=10", "PAGER=")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("psql %v: %v\n%s", cmds, err, out)
		}
		return string(out)
	}
	var in strings.Builder
	in.WriteString("id,name,amount,at,note\n")
	for i := 1; i <= 2000; i++ {
		note := ""
		switch i % 5 {
		case 1:
			note = `"quoted, with ""quotes"""`
		case 2:
			note = "\"two\nlines\""
		case 3:
			note = "plain é"
		case 4:
			note = `""` // an empty string, not NULL
		}
		fmt.Fprintf(&in, "%d,name %d,%d.%02d,2024-05-%02d 10:%02d:00+00,%s\n", i, i, i, i%100, i%28+1, i%60, note)
	}
	if err := os.WriteFile(filepath.Join(dir, "in.csv"), []byte(in.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	run(`CREATE TABLE p (id int PRIMARY KEY, name text, amount numeric(10,2), at timestamptz, note text)`,
		`CREATE MATERIALIZED VIEW p_sum AS SELECT count(*) AS n, sum(amount) AS s FROM p`)
	if out := run(`\copy p FROM 'in.csv' WITH (FORMAT csv, HEADER)`); !strings.Contains(out, "COPY 2000") {
		t.Errorf("\\copy FROM said %q, want COPY 2000", out)
	}
	run(`\copy (SELECT id, name, amount, at, note FROM p ORDER BY id) TO 'out.csv' CSV HEADER`)
	got, err := os.ReadFile(filepath.Join(dir, "out.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != in.String() {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(in.String(), "\n")
		for i := range min(len(gl), len(wl)) {
			if gl[i] != wl[i] {
				t.Fatalf("out.csv differs from in.csv at line %d:\n got %q\nwant %q", i+1, gl[i], wl[i])
			}
		}
		t.Fatalf("out.csv has %d lines, in.csv %d", len(gl), len(wl))
	}
	if out := run(`SELECT n FROM p_sum`); !strings.Contains(out, "2000") {
		t.Errorf("view after \\copy: %s", out)
	}
}

// copyTextFixture is the table COPY TO STDOUT is compared on.
var copyTextFixture = []string{
	`CREATE TABLE ctext (id int PRIMARY KEY, t text, n numeric(12,4), f double precision, ts timestamptz,
		tsn timestamp, d date, b bytea, ok boolean, iv interval, j jsonb)`,
	`INSERT INTO ctext VALUES
		(1, 'plain', 1.5, 0.1, '2024-01-02 03:04:05.123456+00', '2024-01-02 03:04:05', '2024-01-02', '\x00ff5c', true, '1 day 02:03:04', '{"a": [1, "x"]}'),
		(2, E'tab\there\nnewline\\backslash', -12345678.1234, -1e-10, '1999-12-31 23:59:59+00', '1999-12-31 23:59:59.5', '1999-12-31', '\x', false, '-3 months', '"s"'),
		(3, 'unicode é ü 漢字 😀', 0, 1e300, '2000-02-29 12:00:00+00', '2000-02-29 12:00:00', '2000-02-29', '\x5c6e', NULL, '00:00:00.000001', 'null'),
		(4, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
		(5, '', 100, 'NaN', 'infinity', '-infinity', 'infinity', '\x0a09', true, '1 year 2 mons 3 days', '[]'),
		(6, E'\\N', 3.14159, 2.5, '2024-06-30 00:00:00+00', '2024-06-30 00:00:00', '2024-06-30', '\x5c4e', false, '0', '{}'),
		(7, 'a,b "q" ''s''', 7, 7, '2024-07-07 07:07:07+00', '2024-07-07 07:07:07', '2024-07-07', '\x2c', true, '7 days', '{"k": "v,\"w\""}')`,
}

// TestCopyToMatchesPostgres runs the same table on a private PostgreSQL and
// on Tributary and compares COPY ... TO STDOUT byte for byte, in the text
// and CSV formats (defaults and options).
func TestCopyToMatchesPostgres(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pgDSN := pgtest.StartPostgres(t)
	srv := e2etest.StartServer(t)
	pgc, err := pgx.Connect(ctx, pgDSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pgc.Close(context.Background()) })
	tc := e2etest.Connect(t, ctx, srv)
	for _, c := range []*pgx.Conn{pgc, tc} {
		for _, sql := range copyTextFixture {
			if _, err := c.Exec(ctx, sql); err != nil {
				t.Fatalf("%s: %v", sql, err)
			}
		}
	}
	copyOut := func(c *pgconn.PgConn, sql string) (string, error) {
		var b bytes.Buffer
		tag, err := c.CopyTo(ctx, &b, sql)
		return b.String() + "\n-- " + tag.String(), err
	}
	for _, sql := range []string{
		`COPY ctext TO STDOUT`,
		`COPY (SELECT * FROM ctext ORDER BY id) TO STDOUT`,
		`COPY (SELECT * FROM ctext ORDER BY id) TO STDOUT WITH (FORMAT text, HEADER, DELIMITER '|', NULL 'NULL')`,
		`COPY (SELECT * FROM ctext ORDER BY id) TO STDOUT WITH (FORMAT csv, HEADER)`,
		`COPY (SELECT id, t, b FROM ctext ORDER BY id) TO STDOUT WITH (FORMAT csv, DELIMITER ';', NULL 'N/A', FORCE_QUOTE (t))`,
		`COPY (SELECT t FROM ctext ORDER BY id) TO STDOUT CSV`,
		`COPY (SELECT id, n, ts FROM ctext ORDER BY id) TO STDOUT WITH (FORMAT binary)`,
	} {
		want, err := copyOut(pgc.PgConn(), sql)
		if err != nil {
			t.Fatalf("PostgreSQL %s: %v", sql, err)
		}
		got, err := copyOut(tc.PgConn(), sql)
		if err != nil {
			t.Errorf("%s: %v", sql, err)
			continue
		}
		if !strings.Contains(want, "-- COPY 7") || len(want) < 60 {
			t.Fatalf("PostgreSQL's %s looks wrong: %q", sql, want)
		}
		if sql == `COPY ctext TO STDOUT` { // a table's order is its own: compare sorted lines
			got, want = sortedLines(got), sortedLines(want)
		}
		if got != want {
			t.Errorf("%s differs from PostgreSQL:\n got %q\nwant %q", sql, got, want)
		}
	}
}

func sortedLines(s string) string {
	lines := strings.Split(s, "\n")
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// TestCopyGeneratedColumns: COPY FROM leaves generated columns out of its
// default column list and computes them; naming one is 428C9.
func TestCopyGeneratedColumns(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv := e2etest.StartServer(t)
	conn := e2etest.Connect(t, ctx, srv)
	if _, err := conn.Exec(ctx, "CREATE TABLE cg (id int PRIMARY KEY, a int, s int AS a * 2)"); err != nil {
		t.Fatal(err)
	}
	n, err := conn.CopyFrom(ctx, pgx.Identifier{"cg"}, []string{"id", "a"}, pgx.CopyFromRows([][]any{{1, 5}, {2, 7}}))
	if err != nil || n != 2 {
		t.Fatalf("COPY: %d rows, %v", n, err)
	}
	if _, err := conn.PgConn().CopyFrom(ctx, strings.NewReader("3\t10\n"), "COPY cg FROM STDIN"); err != nil {
		t.Fatalf("COPY without a column list: %v", err)
	}
	var sum int
	if err := conn.QueryRow(ctx, "SELECT sum(s) FROM cg").Scan(&sum); err != nil || sum != 44 {
		t.Fatalf("sum of the generated column: %d, %v (want 44)", sum, err)
	}
	_, err = conn.CopyFrom(ctx, pgx.Identifier{"cg"}, []string{"id", "s"}, pgx.CopyFromRows([][]any{{4, 1}}))
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "428C9" {
		t.Fatalf("COPY naming a generated column: %v, want 428C9", err)
	}
}
