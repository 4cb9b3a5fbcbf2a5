package e2e

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tributary/tributary/e2e/e2etest"
	"github.com/tributary/tributary/e2e/testserver"
)

// TestBackfillLevers checks the user's levers on a running backfill through
// pgx: ALTER ... SET BACKFILL_RATE_LIMIT takes effect within two barrier
// intervals, a blocking CREATE reports progress as NOTICEs, and a context
// cancel (a CancelRequest) of a blocking CREATE leaves nothing behind.
func TestBackfillLevers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs rate-limited backfills for about 15 s")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srv := e2etest.StartServer(t) // barrier interval: the default 1 s
	const interval = time.Second
	conn := e2etest.Connect(t, ctx, srv)
	exec := func(sql string) {
		t.Helper()
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	const rows = 500_000
	exec(`CREATE TABLE t (id int PRIMARY KEY, a int, b int)`)
	exec(`INSERT INTO t SELECT g, g % 100, g FROM generate_series(1, 500000) AS g`)

	t.Run("alter rate limit", func(t *testing.T) {
		exec(`SET background_ddl = true`)
		exec(`SET backfill_rate_limit = 10000`)
		exec(`CREATE MATERIALIZED VIEW ra AS SELECT a, count(*) AS c FROM t GROUP BY a`)
		progress := func() int64 {
			t.Helper()
			n, running, err := e2etest.BackfillRows(ctx, conn)
			if err != nil {
				t.Fatal(err)
			}
			if !running {
				return rows
			}
			return n
		}
		// Before: the rate over two barrier intervals, once the job is reading.
		for deadline := time.Now().Add(10 * time.Second); progress() == 0; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the backfill did not start\n%s", testserver.Tail(srv.LogPath, 30))
			}
		}
		r0, t0 := progress(), time.Now()
		time.Sleep(2 * interval)
		r1, t1 := progress(), time.Now()
		before := float64(r1-r0) / t1.Sub(t0).Seconds()
		// After: from the moment ALTER is sent, over the next two barrier intervals.
		exec(`ALTER MATERIALIZED VIEW ra SET BACKFILL_RATE_LIMIT = 200000`)
		time.Sleep(2*interval - time.Since(t1))
		r2, t2 := progress(), time.Now()
		after := float64(r2-r1) / t2.Sub(t1).Seconds()
		t.Logf("backfill rows/s: %.0f at limit 10000, %.0f in the two barrier intervals after ALTER to 200000", before, after)
		if before > 15000 {
			t.Fatalf("%.0f rows/s at backfill_rate_limit = 10000", before)
		}
		if after < 3*before || after < 30000 {
			t.Fatalf("ALTER did not take effect within two barrier intervals: %.0f rows/s before, %.0f after", before, after)
		}
		exec(`ALTER MATERIALIZED VIEW ra SET BACKFILL_RATE_LIMIT = DEFAULT`)
		exec(`WAIT`)
		exec(`RESET backfill_rate_limit`)
		exec(`SET background_ddl = false`)
	})

	t.Run("progress notices", func(t *testing.T) {
		var mu sync.Mutex
		var notices []string
		cfg, err := pgx.ParseConfig(srv.DSN())
		if err != nil {
			t.Fatal(err)
		}
		cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
			mu.Lock()
			notices = append(notices, n.Message)
			mu.Unlock()
		}
		c, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		// About 6 s at 80,000 rows/s: progress is reported every 5 s.
		for _, sql := range []string{`SET backfill_rate_limit = 80000`,
			`CREATE MATERIALIZED VIEW rn AS SELECT a, sum(b) AS s FROM t GROUP BY a`} {
			if _, err := c.Exec(ctx, sql); err != nil {
				t.Fatalf("%s: %v", sql, err)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		found := false
		for _, n := range notices {
			found = found || strings.Contains(n, `materialized view "rn": backfilled`)
		}
		if !found {
			t.Fatalf("no progress NOTICE from a 6 s blocking CREATE; notices: %q", notices)
		}
	})

	t.Run("cancel blocking create", func(t *testing.T) {
		exec(`SET backfill_rate_limit = 10000`)
		cctx, ccancel := context.WithTimeout(ctx, 1500*time.Millisecond)
		_, err := conn.Exec(cctx, `CREATE MATERIALIZED VIEW rc AS SELECT a, count(*) AS c FROM t GROUP BY a`)
		ccancel()
		if err == nil {
			t.Fatal("a 50 s blocking CREATE finished within 1.5 s")
		}
		// pgx sends the CancelRequest and closes the connection without waiting
		// for the server's answer, so the server's clean-up may still be under
		// way: poll (bounded) until the view and its job are gone.
		c := e2etest.Connect(t, ctx, srv)
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			var pgErr *pgconn.PgError
			_, err = c.Exec(ctx, `SELECT count(*) FROM rc`)
			gone := errors.As(err, &pgErr) && pgErr.Code == "42P01"
			n, running, perr := e2etest.BackfillRows(ctx, c)
			if perr != nil {
				t.Fatal(perr)
			}
			if gone && !running {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("10 s after cancel: SELECT from the view gives %v (want 42P01), job running %v at %d rows", err, running, n)
			}
		}
		// The name is free and the view builds in full.
		if _, err := c.Exec(ctx, `CREATE MATERIALIZED VIEW rc AS SELECT a, count(*) AS c FROM t GROUP BY a`); err != nil {
			t.Fatal(err)
		}
		var total int64
		if err := c.QueryRow(ctx, `SELECT sum(c) FROM rc`).Scan(&total); err != nil || total != rows {
			t.Fatalf("rebuilt view counts %d rows (err %v), want %d", total, err, rows)
		}
	})
}
