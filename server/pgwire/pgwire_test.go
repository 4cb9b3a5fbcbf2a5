package pgwire

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/tributary/tributary/sql/types"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testServer is a Server on 127.0.0.1:0 backed by a testEngine.
type testServer struct {
	*Server
	e    *testEngine
	addr string
	logs *testLog
	// expectedPanics is how many handler panics the test provokes.
	expectedPanics int
}

// testLog is a slog handler that keeps records so tests can assert on them
// (e.g. that a panic was logged) and fails the test on unexpected panics.
type testLog struct {
	mu      sync.Mutex
	records []string
}

func (l *testLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *testLog) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Level.String() + " " + r.Message)
	r.Attrs(func(a slog.Attr) bool {
		if a.Key != "stack" {
			fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		}
		return true
	})
	l.mu.Lock()
	defer l.mu.Unlock()
	l.records = append(l.records, b.String())
	return nil
}
func (l *testLog) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *testLog) WithGroup(string) slog.Handler      { return l }

func (l *testLog) count(substr string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, r := range l.records {
		if strings.Contains(r, substr) {
			n++
		}
	}
	return n
}

func startServer(t testing.TB, cfg Config) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{e: newTestEngine(), addr: ln.Addr().String(), logs: &testLog{}}
	cfg.Logger = slog.New(ts.logs)
	ts.Server = NewServer(cfg, ts.e.factory)
	done := make(chan error, 1)
	go func() { done <- ts.Serve(ln) }()
	t.Cleanup(func() {
		if err := ts.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
		// Invariants: every Result and every Session was closed.
		if n := ts.e.openResults.Load(); n != 0 {
			t.Errorf("%d results left open", n)
		}
		if n := ts.e.sessions.Load(); n != 0 {
			t.Errorf("%d sessions left open", n)
		}
		if n := ts.logs.count("panic in connection handler"); n != ts.expectedPanics {
			t.Errorf("%d handler panics logged, want %d", n, ts.expectedPanics)
		}
	})
	return ts
}

func (ts *testServer) url(db string) string {
	return "postgres://tester@" + ts.addr + "/" + db + "?sslmode=disable&connect_timeout=10"
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func connect(t testing.TB, ts *testServer, mode pgx.QueryExecMode) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(ts.url("db"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.DefaultQueryExecMode = mode
	c, err := pgx.ConnectConfig(testCtx(t), cfg)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

var modes = []pgx.QueryExecMode{
	pgx.QueryExecModeCacheStatement, pgx.QueryExecModeCacheDescribe, pgx.QueryExecModeDescribeExec,
	pgx.QueryExecModeExec, pgx.QueryExecModeSimpleProtocol,
}

func TestConnectParameterStatus(t *testing.T) {
	ts := startServer(t, Config{})
	c := connect(t, ts, pgx.QueryExecModeCacheStatement)
	pc := c.PgConn()
	want := map[string]string{
		"server_version": "15.0", "server_encoding": "UTF8", "client_encoding": "UTF8", "DateStyle": "ISO, MDY",
		"IntervalStyle": "postgres", "integer_datetimes": "on", "standard_conforming_strings": "on",
		"TimeZone": "UTC", "is_superuser": "on", "session_authorization": "tester", "application_name": "",
	}
	for k, v := range want {
		if got := pc.ParameterStatus(k); got != v {
			t.Errorf("ParameterStatus(%s) = %q, want %q", k, got, v)
		}
	}
	if pc.PID() == 0 || len(pc.SecretKey()) != 4 {
		t.Errorf("BackendKeyData pid=%d key=%x", pc.PID(), pc.SecretKey())
	}
	if pc.TxStatus() != 'I' {
		t.Errorf("TxStatus = %c", pc.TxStatus())
	}
}

func TestConnectSSLPreferFallsBack(t *testing.T) {
	ts := startServer(t, Config{ServerVersion: "15.0-test"})
	c, err := pgx.Connect(testCtx(t), "postgres://tester@"+ts.addr+"/db?sslmode=prefer&application_name=app1")
	if err != nil {
		t.Fatalf("connect with sslmode=prefer: %v", err)
	}
	defer c.Close(context.Background())
	if v := c.PgConn().ParameterStatus("server_version"); v != "15.0-test" {
		t.Errorf("server_version %q", v)
	}
	if v := c.PgConn().ParameterStatus("application_name"); v != "app1" {
		t.Errorf("application_name %q", v)
	}
}

func TestUnknownDatabase(t *testing.T) {
	ts := startServer(t, Config{})
	_, err := pgx.Connect(testCtx(t), ts.url("nosuchdb"))
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "3D000" || pe.Severity != "FATAL" {
		t.Fatalf("err = %v, want FATAL 3D000", err)
	}
}

func TestQueryRowParams(t *testing.T) {
	ts := startServer(t, Config{})
	for _, mode := range modes[:4] { // the simple protocol cannot send $n to the server
		t.Run(mode.String(), func(t *testing.T) {
			c := connect(t, ts, mode)
			ctx := testCtx(t)
			for i, in := range []int32{41, 1, -5} {
				var n int32
				var s string
				if err := c.QueryRow(ctx, "select $1::int + 1, $2::text", in, fmt.Sprint("hi", i)).Scan(&n, &s); err != nil {
					t.Fatalf("query %d: %v", i, err)
				}
				if n != in+1 || s != fmt.Sprint("hi", i) {
					t.Fatalf("got %d %q", n, s)
				}
			}
			var b bool
			if err := c.QueryRow(ctx, "select $1 = 'a'", "a").Scan(&b); err != nil || !b {
				t.Fatalf("select $1 = 'a': %v %v", b, err)
			}
		})
	}
}

func TestSimpleProtocol(t *testing.T) {
	ts := startServer(t, Config{})
	c := connect(t, ts, pgx.QueryExecModeSimpleProtocol)
	var n int32
	if err := c.QueryRow(testCtx(t), "select  '7' ::int").Scan(&n); err != nil || n != 7 {
		t.Fatalf("got %d, %v", n, err)
	}
}

// wantTypes checks one row of "select types" (or its echo) as pgx decodes it.
func scanTypes(t *testing.T, row pgx.Row) {
	t.Helper()
	var (
		i8   int64
		f8   float64
		num  pgtype.Numeric
		b    bool
		txt  string
		by   []byte
		tstz time.Time
		d    time.Time
		iv   pgtype.Interval
		tm   pgtype.Time
		j    map[string]any
		i2   int16
		i4   int32
		f4   float32
		ts   time.Time
	)
	if err := row.Scan(&i8, &f8, &num, &b, &txt, &by, &tstz, &d, &iv, &tm, &j, &i2, &i4, &f4, &ts); err != nil {
		t.Fatalf("scan: %v", err)
	}
	check := func(name string, got, want any) {
		t.Helper()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	check("int8", i8, int64(-9007199254740993))
	check("float8", f8, 3.25)
	nv, _ := num.Value()
	check("numeric", nv, "-12345.678900")
	check("bool", b, true)
	check("text", txt, "héllo")
	check("bytea", by, []byte{0, 1, 0xff})
	check("timestamptz", tstz.UTC(), time.Date(2024, 2, 29, 12, 34, 56, 789012000, time.UTC))
	check("date", d, time.Date(1999, 12, 31, 0, 0, 0, 0, time.UTC))
	check("interval", iv, pgtype.Interval{Months: 14, Days: 3, Microseconds: 14706500000, Valid: true})
	check("time", tm, pgtype.Time{Microseconds: 47655500000, Valid: true})
	check("jsonb", j, map[string]any{"a": []any{1.0, 2.5, nil}, "bb": "x"})
	check("int2", i2, int16(-32768))
	check("int4", i4, int32(2147483647))
	check("float4", f4, float32(1.5))
	check("timestamp", ts, time.Date(1969, 7, 20, 20, 17, 40, 0, time.UTC))
}

func TestTypesRoundTrip(t *testing.T) {
	ts := startServer(t, Config{})
	for _, mode := range modes {
		t.Run(mode.String(), func(t *testing.T) {
			c := connect(t, ts, mode)
			ctx := testCtx(t)
			rows, err := c.Query(ctx, "select types")
			if err != nil {
				t.Fatal(err)
			}
			if !rows.Next() {
				t.Fatalf("no row: %v", rows.Err())
			}
			scanTypes(t, rows)
			if !rows.Next() {
				t.Fatalf("no NULL row: %v", rows.Err())
			}
			vals, err := rows.Values()
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range vals {
				if v != nil {
					t.Errorf("column %d: %v, want NULL", i, v)
				}
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			if tag := rows.CommandTag().String(); tag != "SELECT 2" {
				t.Errorf("tag %q", tag)
			}
			// Binary results were requested where pgx can decode them.
			if mode == pgx.QueryExecModeCacheStatement {
				for i, f := range rows.FieldDescriptions() {
					id := typesCols[i].Type.ID // pgx reads varchar and jsonb as text
					if want := int16(1); id != types.Varchar && id != types.Jsonb && f.Format != want {
						t.Errorf("column %s format %d", f.Name, f.Format)
					}
				}
			}
			if mode == pgx.QueryExecModeSimpleProtocol {
				return
			}
			// Parameters of every type in this mode's format, echoed back.
			row := c.QueryRow(ctx, "select echo($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15)",
				int64(-9007199254740993), 3.25, "-12345.678900", true, "héllo", []byte{0, 1, 0xff},
				time.Date(2024, 2, 29, 12, 34, 56, 789012000, time.UTC), time.Date(1999, 12, 31, 0, 0, 0, 0, time.UTC),
				pgtype.Interval{Months: 14, Days: 3, Microseconds: 14706500000, Valid: true},
				pgtype.Time{Microseconds: 47655500000, Valid: true}, `{"bb": "x", "a": [1, 2.5, null]}`,
				int16(-32768), int32(2147483647), float32(1.5), time.Date(1969, 7, 20, 20, 17, 40, 0, time.UTC))
			scanTypes(t, row)
		})
	}
}

func TestNumericBinaryEdgeCases(t *testing.T) {
	// Encode with rowEncoder, decode with pgtype, and decode our own output back.
	m := pgtype.NewMap()
	var e rowEncoder
	for _, s := range []string{
		"0", "0.00", "1", "-1", "10000", "9999", "12345678", "0.0001", "0.00001", "1.5", "-0.5",
		"1E+20", "1.23E+9", "123456789.987654321", "-0.000000000123", "1E-30", "100000000", "NaN", "Infinity", "-Infinity",
	} {
		d := dec(s)
		if s == "NaN" || strings.HasSuffix(s, "Infinity") {
			var err error
			d, err = types.ParseText(types.TNumeric, s)
			if err != nil {
				t.Fatal(err)
			}
		}
		buf, err := e.appendNumeric(nil, &d.Dec)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		var n pgtype.Numeric
		if err := m.Scan(pgtype.NumericOID, pgtype.BinaryFormatCode, buf, &n); err != nil {
			t.Fatalf("%s: pgtype scan: %v", s, err)
		}
		got, _ := n.Value()
		want := types.FormatText(types.TNumeric, &d)
		if got != want && s != "0.00" { // pgtype drops the display scale of zero

			t.Errorf("%s: pgtype decoded %v, want %s", s, got, want)
		}
		back, err := decodeBinary(types.TNumeric, buf, 0)
		if err != nil {
			t.Fatalf("%s: decode: %v", s, err)
		}
		if g := types.FormatText(types.TNumeric, &back); g != want {
			t.Errorf("%s: round trip %s, want %s", s, g, want)
		}
	}
}

func TestErrorKeepsConnectionUsable(t *testing.T) {
	ts := startServer(t, Config{})
	for _, mode := range modes {
		t.Run(mode.String(), func(t *testing.T) {
			c := connect(t, ts, mode)
			ctx := testCtx(t)
			_, err := c.Exec(ctx, "select * from nosuch")
			var pe *pgconn.PgError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want PgError", err)
			}
			if pe.Code != "42P01" || pe.Position != 15 || pe.Message != `relation "nosuch" does not exist` || pe.Severity != "ERROR" {
				t.Errorf("PgError = %+v", pe)
			}
			// An error after some rows were sent, through a %w wrapper.
			rows, _ := c.Query(ctx, "select 1/0")
			for rows.Next() {
			}
			if !errors.As(rows.Err(), &pe) || pe.Code != "22012" || pe.Message != "division by zero" {
				t.Errorf("1/0: %v", rows.Err())
			}
			var n int32
			if err := c.QueryRow(ctx, "select  '7' ::int").Scan(&n); err != nil || n != 7 {
				t.Fatalf("after error: %d %v", n, err)
			}
		})
	}
}

func TestBatch(t *testing.T) {
	ts := startServer(t, Config{})
	for _, mode := range modes {
		t.Run(mode.String(), func(t *testing.T) {
			c := connect(t, ts, mode)
			ctx := testCtx(t)
			b := &pgx.Batch{}
			b.Queue("create temp table tt(a int, b text, c timestamptz, d numeric)")
			if mode != pgx.QueryExecModeSimpleProtocol {
				b.Queue("select $1::int", 5)
				b.Queue("insert into tt values ($1,$2,now(),$3)", 1, "b", "1.5")
			}
			b.Queue("select a,b,c,d from tt")
			br := c.SendBatch(ctx, b)
			if tag, err := br.Exec(); err != nil || tag.String() != "CREATE TABLE" {
				t.Fatalf("create: %v %v", tag, err)
			}
			if mode != pgx.QueryExecModeSimpleProtocol {
				var n int32
				if err := br.QueryRow().Scan(&n); err != nil || n != 5 {
					t.Fatalf("select: %d %v", n, err)
				}
				if tag, err := br.Exec(); err != nil || tag.String() != "INSERT 0 1" {
					t.Fatalf("insert: %v %v", tag, err)
				}
			}
			var a int32
			var s string
			var tstz time.Time
			var d pgtype.Numeric
			if err := br.QueryRow().Scan(&a, &s, &tstz, &d); err != nil {
				t.Fatalf("select tt: %v", err)
			}
			if dv, _ := d.Value(); a != 1 || s != "b" || dv != "1.5" || !tstz.Equal(time.Date(2026, 11, 29, 16, 5, 29, 638900000, time.UTC)) {
				t.Errorf("row %d %q %v %v", a, s, tstz, dv)
			}
			if err := br.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestBatchErrorSkipsRest(t *testing.T) {
	ts := startServer(t, Config{})
	c := connect(t, ts, pgx.QueryExecModeCacheStatement)
	ctx := testCtx(t)
	if _, err := c.Exec(ctx, "select $1::int", 1); err != nil { // prepare it
		t.Fatal(err)
	}
	b := &pgx.Batch{}
	b.Queue("select $1::int", 1)
	b.Queue("select 1/0")
	b.Queue("select $1::int", 2)
	br := c.SendBatch(ctx, b)
	var n int32
	if err := br.QueryRow().Scan(&n); err != nil || n != 1 {
		t.Fatalf("first: %d %v", n, err)
	}
	_, err := br.Exec()
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "22012" {
		t.Fatalf("second: %v", err)
	}
	if err := br.QueryRow().Scan(&n); err == nil {
		t.Fatalf("third ran after an error in the same batch")
	}
	_ = br.Close()
	if err := c.QueryRow(ctx, "select $1::int", 3).Scan(&n); err != nil || n != 3 {
		t.Fatalf("after batch: %d %v", n, err)
	}
}

func TestTransactionStatus(t *testing.T) {
	ts := startServer(t, Config{})
	c := connect(t, ts, pgx.QueryExecModeCacheStatement)
	ctx := testCtx(t)
	pc := c.PgConn()
	if _, err := c.Exec(ctx, "begin"); err != nil || pc.TxStatus() != 'T' {
		t.Fatalf("begin: %v %c", err, pc.TxStatus())
	}
	if _, err := c.Exec(ctx, "fail"); err == nil || pc.TxStatus() != 'E' {
		t.Fatalf("fail: %v %c", err, pc.TxStatus())
	}
	_, err := c.Exec(ctx, "select  '7' ::int")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "25P02" {
		t.Fatalf("in failed tx: %v", err)
	}
	if tag, err := c.Exec(ctx, "commit"); err != nil || tag.String() != "ROLLBACK" || pc.TxStatus() != 'I' {
		t.Fatalf("commit: %v %v %c", tag, err, pc.TxStatus())
	}
}

func TestCancelRequest(t *testing.T) {
	ts := startServer(t, Config{})
	c := connect(t, ts, pgx.QueryExecModeCacheStatement)
	ctx := testCtx(t)
	go func() {
		select {
		case <-ts.e.sleeping:
			_ = c.PgConn().CancelRequest(ctx)
		case <-ctx.Done():
		}
	}()
	var x int32
	err := c.QueryRow(context.Background(), "select sleep").Scan(&x)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "57014" {
		t.Fatalf("err = %v, want 57014", err)
	}
	if err := c.QueryRow(ctx, "select $1::int", 9).Scan(&x); err != nil || x != 9 {
		t.Fatalf("after cancel: %d %v", x, err)
	}
}

func TestCancelByContext(t *testing.T) {
	ts := startServer(t, Config{})
	cfg, err := pgx.ParseConfig(ts.url("db"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.BuildContextWatcherHandler = func(pc *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: pc, DeadlineDelay: 20 * time.Second}
	}
	c, err := pgx.ConnectConfig(testCtx(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	for _, q := range []string{"select sleep", "select sleep"} { // twice: the conn stays usable
		qctx, cancel := context.WithCancel(testCtx(t))
		go func() {
			select {
			case <-ts.e.sleeping:
				cancel()
			case <-qctx.Done():
			}
		}()
		var x int32
		err = c.QueryRow(qctx, q).Scan(&x)
		cancel()
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "57014" {
			t.Fatalf("err = %v, want 57014", err)
		}
	}
	var x int32
	if err := c.QueryRow(testCtx(t), "select $1::int", 4).Scan(&x); err != nil || x != 4 {
		t.Fatalf("after cancel: %d %v", x, err)
	}
}

func TestCancelWrongSecretIgnored(t *testing.T) {
	ts := startServer(t, Config{})
	c := connect(t, ts, pgx.QueryExecModeCacheStatement)
	pid := c.PgConn().PID()
	key := c.PgConn().SecretKey()
	key[0] ^= 0xff
	ts.cancelRequest(pid, uint32(key[0])<<24|uint32(key[1])<<16|uint32(key[2])<<8|uint32(key[3]))
	if ts.logs.count("wrong secret key") != 1 {
		t.Errorf("wrong key not logged")
	}
}

func TestCopyFromRefused(t *testing.T) {
	ts := startServer(t, Config{})
	c := connect(t, ts, pgx.QueryExecModeCacheStatement)
	ctx := testCtx(t)
	rows := make([][]any, 1000)
	for i := range rows {
		rows[i] = []any{int32(i)}
	}
	_, err := c.CopyFrom(ctx, pgx.Identifier{"t"}, []string{"a"}, pgx.CopyFromRows(rows))
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "0A000" {
		t.Fatalf("CopyFrom err = %v, want 0A000", err)
	}
	var x int32
	if err := c.QueryRow(ctx, "select $1::int", 1).Scan(&x); err != nil || x != 1 {
		t.Fatalf("after copy: %d %v", x, err)
	}
}

func TestNotice(t *testing.T) {
	ts := startServer(t, Config{})
	var mu sync.Mutex
	var notices []string
	cfg, err := pgx.ParseConfig(ts.url("db"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		mu.Lock()
		defer mu.Unlock()
		notices = append(notices, n.Severity+" "+n.Code+" "+n.Message)
	}
	c, err := pgx.ConnectConfig(testCtx(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	var x int32
	if err := c.QueryRow(testCtx(t), "select notice").Scan(&x); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(notices) != 1 || notices[0] != "NOTICE 00000 progress 50%" {
		t.Fatalf("notices %q", notices)
	}
}

func TestPanicClosesOnlyThatConnection(t *testing.T) {
	// A panic outside statement work (here, while a session is created)
	// ends that connection alone with FATAL XX000.
	ts := startServer(t, Config{})
	ts.expectedPanics = 1
	other := connect(t, ts, pgx.QueryExecModeCacheStatement)
	ts.e.panicOnConnect.Store(true)
	_, err := pgx.Connect(testCtx(t), ts.url("dev"))
	ts.e.panicOnConnect.Store(false)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "XX000" || pe.Severity != "FATAL" {
		t.Fatalf("err = %v, want FATAL XX000", err)
	}
	var x int32
	if err := other.QueryRow(testCtx(t), "select $1::int", 2).Scan(&x); err != nil || x != 2 {
		t.Fatalf("other conn: %d %v", x, err)
	}
	if !waitFor(func() bool { return ts.e.sessions.Load() == 1 }) {
		t.Fatalf("sessions open: %d, want 1", ts.e.sessions.Load())
	}
}

// TestPanicFailsOnlyThatStatement: a panic while a statement runs is ERROR
// XX000 for that statement, in the simple and the extended protocol; the
// session goes on, and a transaction block it was in is failed.
func TestPanicFailsOnlyThatStatement(t *testing.T) {
	ts := startServer(t, Config{})
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
		c := connect(t, ts, mode)
		_, err := c.Exec(testCtx(t), "select panic")
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "XX000" || pe.Severity != "ERROR" || !strings.Contains(pe.Message, "boom") {
			t.Fatalf("%v: err = %v, want ERROR XX000", mode, err)
		}
		var x int32
		if err := c.QueryRow(testCtx(t), "select notice").Scan(&x); err != nil || x != 1 {
			t.Fatalf("%v: same conn after the panic: %d %v", mode, x, err)
		}
		if _, err := c.Exec(testCtx(t), "begin"); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Exec(testCtx(t), "select panic"); !errors.As(err, &pe) || pe.Code != "XX000" {
			t.Fatalf("%v: err = %v, want XX000", mode, err)
		}
		if st := c.PgConn().TxStatus(); st != 'E' {
			t.Fatalf("%v: transaction status %c after a panic in a block, want E", mode, st)
		}
		tag, err := c.Exec(testCtx(t), "commit")
		if err != nil || tag.String() != "ROLLBACK" {
			t.Fatalf("%v: commit = %q %v, want ROLLBACK", mode, tag, err)
		}
	}
	if n := ts.logs.count("panic in statement"); n != 4 {
		t.Errorf("%d statement panics logged, want 4", n)
	}
	if n := ts.e.sessions.Load(); n != 2 {
		t.Errorf("sessions open: %d, want 2", n)
	}
}

// waitFor polls cond for up to 10s.
func waitFor(cond func() bool) bool {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(5 * time.Millisecond)
	}
	return cond()
}

func TestServerCloseInterruptsRunningQuery(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := newTestEngine()
	s := NewServer(Config{Logger: slog.New(&testLog{})}, e.factory)
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	c, err := pgx.Connect(testCtx(t), "postgres://tester@"+ln.Addr().String()+"/db?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	qerr := make(chan error, 1)
	go func() {
		var x int32
		qerr <- c.QueryRow(context.Background(), "select sleep").Scan(&x)
	}()
	<-e.sleeping
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if err := <-qerr; err == nil {
		t.Fatal("query survived Close")
	}
	_ = c.Close(context.Background())
	if e.sessions.Load() != 0 || e.openResults.Load() != 0 {
		t.Fatalf("sessions %d results %d left open", e.sessions.Load(), e.openResults.Load())
	}
	if err := s.Serve(ln); err != nil { // after Close, Serve returns at once
		t.Fatal(err)
	}
}
