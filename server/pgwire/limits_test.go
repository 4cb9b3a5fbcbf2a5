package pgwire

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestMaxConnections: past MaxConnections a client is refused with FATAL
// 53300, a connection counts from accept (one that has sent nothing yet holds
// a slot), a closed connection frees its slot, and a cancel request is still
// served when every slot is taken.
func TestMaxConnections(t *testing.T) {
	ts := startServer(t, Config{MaxConnections: 2})
	ctx := testCtx(t)
	refused := func(what string) {
		t.Helper()
		c, err := pgx.Connect(ctx, ts.url("db"))
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "53300" || pe.Message != "sorry, too many clients already" || pe.Severity != "FATAL" {
			t.Errorf("%s: want FATAL 53300, got %v", what, err)
		}
		if err == nil {
			_ = c.Close(ctx)
		}
	}
	c1 := connect(t, ts, pgx.QueryExecModeCacheStatement)
	raw, err := net.Dial("tcp", ts.addr) // no startup message yet
	if err != nil {
		t.Fatal(err)
	}
	refused("a third connection beside one in startup")
	_ = raw.Close()
	var c2 *pgx.Conn
	if !waitFor(func() bool {
		c2, err = pgx.Connect(ctx, ts.url("db"))
		return err == nil
	}) {
		t.Fatalf("the slot of a closed connection was not freed: %v", err)
	}
	defer c2.Close(ctx)
	refused("a third connection")

	// A cancel request is served although every slot is taken.
	go func() {
		select {
		case <-ts.e.sleeping:
			_ = c1.PgConn().CancelRequest(ctx)
		case <-ctx.Done():
		}
	}()
	var x int32
	err = c1.QueryRow(ctx, "select sleep").Scan(&x)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "57014" {
		t.Fatalf("cancel with every slot taken: %v, want 57014", err)
	}
	if err := c2.QueryRow(ctx, "select $1::int", 3).Scan(&x); err != nil || x != 3 {
		t.Fatalf("after refusals: %d %v", x, err)
	}
}

// TestStartupTimeout: a client that does not finish its startup message in
// StartupTimeout is disconnected.
func TestStartupTimeout(t *testing.T) {
	ts := startServer(t, Config{StartupTimeout: 200 * time.Millisecond, MaxConnections: 1})
	raw, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Write([]byte{0, 0, 0, 40}); err != nil { // half a length, then silence
		t.Fatal(err)
	}
	_ = raw.SetReadDeadline(time.Now().Add(10 * time.Second))
	start := time.Now()
	if _, err := raw.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("read: %v, want EOF", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("closed after %v", d)
	}
	// Its slot is free again.
	if !waitFor(func() bool {
		c, err := pgx.Connect(context.Background(), ts.url("db"))
		if err == nil {
			_ = c.Close(context.Background())
		}
		return err == nil
	}) {
		t.Fatal("the timed-out connection's slot was not freed")
	}
}
