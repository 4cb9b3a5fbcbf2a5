package e2e

import (
	"context"
	"errors"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/tributary/tributary/e2e/e2etest"
	"github.com/tributary/tributary/e2e/testseed"
)

// TestPgxClient is the pgx acceptance check: parameters, binary
// results of every common type, batches, a failing COPY, and errors that keep
// the connection usable.
func TestPgxClient(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv := e2etest.StartServer(t)
	conn := e2etest.Connect(t, ctx, srv)

	mustExec := func(sql string, args ...any) {
		t.Helper()
		if _, err := conn.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	mustExec(`CREATE TABLE t (id bigint PRIMARY KEY, f double precision, n numeric(10,2), b boolean,
		s text, raw bytea, ts timestamptz, d date, iv interval)`)
	mustExec(`INSERT INTO t VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		int64(1), 2.5, "12.34", true, "héllo", []byte{0, 1, 255},
		time.Date(2024, 3, 1, 12, 30, 0, 0, time.UTC), time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC),
		pgtype.Interval{Months: 1, Days: 2, Microseconds: 3_000_000, Valid: true})

	var (
		id  int64
		f   float64
		n   pgtype.Numeric
		b   bool
		s   string
		raw []byte
		ts  time.Time
		d   time.Time
		iv  pgtype.Interval
	)
	// Default mode: prepared statement, binary results.
	err := conn.QueryRow(ctx, `SELECT id, f, n, b, s, raw, ts, d, iv FROM t WHERE id = $1`, int64(1)).
		Scan(&id, &f, &n, &b, &s, &raw, &ts, &d, &iv)
	if err != nil {
		t.Fatalf("QueryRow: %v", err)
	}
	if id != 1 || f != 2.5 || !b || s != "héllo" || string(raw) != "\x00\x01\xff" {
		t.Errorf("scalars = %d %v %v %q %x", id, f, b, s, raw)
	}
	if n.Int.Cmp(big.NewInt(1234)) != 0 || n.Exp != -2 {
		t.Errorf("numeric = %v e%d, want 1234e-2", n.Int, n.Exp)
	}
	if !ts.Equal(time.Date(2024, 3, 1, 12, 30, 0, 0, time.UTC)) {
		t.Errorf("timestamptz = %v", ts)
	}
	if d.Year() != 2024 || d.Month() != 3 || d.Day() != 1 {
		t.Errorf("date = %v", d)
	}
	if iv.Months != 1 || iv.Days != 2 || iv.Microseconds != 3_000_000 {
		t.Errorf("interval = %+v", iv)
	}

	// $1 parameters in expressions, inferred types.
	var sum int64
	if err := conn.QueryRow(ctx, `SELECT $1::int + 1`, 41).Scan(&sum); err != nil || sum != 42 {
		t.Errorf("$1::int + 1 = %d, %v", sum, err)
	}
	var txt string
	if err := conn.QueryRow(ctx, `SELECT $1`, "echo").Scan(&txt); err != nil || txt != "echo" {
		t.Errorf("SELECT $1 = %q, %v", txt, err)
	}

	// Simple protocol gives the same answers.
	var s2 string
	if err := conn.QueryRow(ctx, `SELECT s FROM t WHERE id = $1`, pgx.QueryExecModeSimpleProtocol, int64(1)).Scan(&s2); err != nil || s2 != "héllo" {
		t.Errorf("simple protocol: %q, %v", s2, err)
	}

	// Batch.
	batch := &pgx.Batch{}
	for i := int64(2); i <= 5; i++ {
		batch.Queue(`INSERT INTO t (id, s) VALUES ($1, $2)`, i, "batch")
	}
	batch.Queue(`SELECT count(*) FROM t WHERE s = 'batch'`)
	br := conn.SendBatch(ctx, batch)
	for i := 0; i < 4; i++ {
		if _, err := br.Exec(); err != nil {
			t.Fatalf("batch insert %d: %v", i, err)
		}
	}
	var cnt int64
	if err := br.QueryRow().Scan(&cnt); err != nil || cnt != 4 {
		t.Errorf("batch count = %d, %v", cnt, err)
	}
	if err := br.Close(); err != nil {
		t.Fatalf("batch close: %v", err)
	}

	// A COPY that fails (a duplicate key) leaves the table as it was.
	_, err = conn.CopyFrom(ctx, pgx.Identifier{"t"}, []string{"id"}, pgx.CopyFromRows([][]any{{int64(9)}, {int64(1)}}))
	wantCode(t, err, "23505")

	// Errors carry SQLSTATE (and position for syntax errors); the connection stays usable.
	_, err = conn.Exec(ctx, `SELEC 1`)
	if pe := wantCode(t, err, "42601"); pe != nil && pe.Position != 1 {
		t.Errorf("syntax error position = %d, want 1", pe.Position)
	}
	_, err = conn.Exec(ctx, `SELECT * FROM nosuch`)
	wantCode(t, err, "42P01")
	_, err = conn.Exec(ctx, `SELECT nosuch FROM t`)
	wantCode(t, err, "42703")
	_, err = conn.Exec(ctx, `INSERT INTO t (id) VALUES (1)`)
	wantCode(t, err, "23505")
	_, err = conn.Exec(ctx, `SELECT 2147483647::int + 1`)
	wantCode(t, err, "22003")
	_, err = conn.Exec(ctx, `CREATE UNIQUE INDEX i ON t (s)`)
	wantCode(t, err, "0A000")
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM t`).Scan(&cnt); err != nil || cnt != 5 {
		t.Errorf("after errors: count = %d, %v", cnt, err)
	}
}

func wantCode(t *testing.T, err error, code string) *pgconn.PgError {
	t.Helper()
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		t.Errorf("want SQLSTATE %s, got %v", code, err)
		return nil
	}
	if pe.Code != code {
		t.Errorf("want SQLSTATE %s, got %s: %s", code, pe.Code, pe.Message)
	}
	return pe
}

// TestGarbageOnSocket writes random bytes at the server and checks it still serves.
func TestGarbageOnSocket(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv := e2etest.StartServer(t)
	seed := testseed.Int64(t)
	rng := newRand(seed)
	for i := 0; i < 50; i++ {
		nc, err := net.DialTimeout("tcp", srv.Addr, 5*time.Second)
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		buf := make([]byte, 1+rng.Intn(512))
		rng.Read(buf)
		if i%2 == 0 { // a valid startup length prefix followed by junk
			buf = append([]byte{0, 0, 0, byte(8 + rng.Intn(200)), 0, 3, 0, 0}, buf...)
		}
		_ = nc.SetDeadline(time.Now().Add(2 * time.Second))
		_, _ = nc.Write(buf)
		_, _ = nc.Read(make([]byte, 256))
		nc.Close()
	}
	conn := e2etest.Connect(t, ctx, srv)
	var one int
	if err := conn.QueryRow(ctx, `SELECT 1`).Scan(&one); err != nil || one != 1 {
		t.Fatalf("server unusable after garbage: %v", err)
	}
}

// TestCancelLongQuery cancels a running query with a CancelRequest on the
// wire (what Ctrl-C in psql sends) and checks SQLSTATE 57014 and that the
// connection stays usable.
func TestCancelLongQuery(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv := e2etest.StartServer(t)
	conn := e2etest.Connect(t, ctx, srv)
	done := make(chan error, 1)
	go func() {
		var n int64
		done <- conn.QueryRow(ctx, `SELECT count(*) FROM generate_series(1, 2000000000) AS g`).Scan(&n)
	}()
	// Cancel until the query reports it (the first request may arrive before it starts).
	var err error
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
wait:
	for {
		select {
		case err = <-done:
			break wait
		case <-tick.C:
			if cerr := conn.PgConn().CancelRequest(ctx); cerr != nil {
				t.Fatalf("cancel request: %v", cerr)
			}
		case <-ctx.Done():
			t.Fatal("query neither finished nor was cancelled")
		}
	}
	wantCode(t, err, "57014")
	var n int64
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM generate_series(1, 10) AS g`).Scan(&n); err != nil || n != 10 {
		t.Fatalf("after cancel: %d, %v", n, err)
	}
}
