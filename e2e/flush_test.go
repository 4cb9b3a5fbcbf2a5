package e2e

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tributary/tributary/e2e/e2etest"
)

// TestFlushBesideBackgroundJobs: FLUSH commits the open epoch, with what
// sinks into tables make of the writes before it, and returns within a
// barrier interval or two while background jobs run: sinks reading a
// bounded source far from its end (unthrottled; one into a table, whose
// paced log reader hurries while a FLUSH waits for it) and two views
// backfilling a table slowly (snapshot and arrangement backfill). It does not wait for
// them (RisingWave's FLUSH does not); their views refuse queries until WAIT
// says they are done.
func TestFlushBesideBackgroundJobs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	srv := e2etest.StartServer(t)
	conn := e2etest.Connect(t, ctx, srv)
	const tableRows = 5000
	const events = 1_000_000_000 // at a few million a second: minutes
	for _, s := range []string{
		"CREATE TABLE t (id int PRIMARY KEY, v int)",
		"INSERT INTO t SELECT g, g FROM generate_series(1, " + strconv.Itoa(tableRows) + ") g",
		"CREATE TABLE src (id int PRIMARY KEY, v int)",
		"CREATE TABLE target (id int PRIMARY KEY, v int)",
		"CREATE SINK into_target INTO target AS SELECT id, v FROM src",
		"CREATE SOURCE bid (auction bigint, bidder bigint, price bigint, channel varchar, url varchar, date_time timestamp, extra varchar) " +
			"WITH (connector = 'nexmark', nexmark.table.type = 'Bid', nexmark.event.num = '" + strconv.Itoa(events) + "', nexmark.min.event.gap.in.ns = '0')",
		"CREATE TABLE per_auction (auction bigint PRIMARY KEY, n bigint)",
		"SET background_ddl = true",
		"CREATE SINK drain AS SELECT auction, price FROM bid WITH (connector = 'blackhole')",
		"CREATE SINK counts INTO per_auction AS SELECT auction, count(*) AS n FROM bid GROUP BY auction",
		"SET backfill_rate_limit = 100",
		"CREATE MATERIALIZED VIEW snap AS SELECT count(*) AS n FROM t",
		"SET streaming_use_snapshot_backfill = false",
		"CREATE MATERIALIZED VIEW arr AS SELECT count(*) AS n FROM t",
		"SET backfill_rate_limit = DEFAULT",
		"SET background_ddl = false",
	} {
		e2etest.MustExec(t, ctx, conn, s)
	}
	read := func() int64 {
		t.Helper()
		var n *int64
		if err := conn.QueryRow(ctx, "SELECT min(rows_read)::bigint FROM rw_catalog.rw_source_splits").Scan(&n); err != nil {
			t.Fatalf("rw_source_splits: %v", err)
		}
		if n == nil {
			return 0
		}
		return *n
	}
	for deadline := time.Now().Add(30 * time.Second); read() == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the source read nothing in 30 s")
		}
	}

	const limit = 10 * time.Second // the barrier interval is 1 s; before the fix FLUSH waited minutes
	for i := 1; i <= 3; i++ {
		e2etest.MustExec(t, ctx, conn, "INSERT INTO src VALUES ($1, $1)", i)
		fctx, fcancel := context.WithTimeout(ctx, limit)
		start := time.Now()
		_, err := conn.Exec(fctx, "FLUSH")
		fcancel()
		if err != nil {
			t.Fatalf("FLUSH %d beside background jobs: %v after %v", i, err, time.Since(start))
		}
		t.Logf("FLUSH %d: %v", i, time.Since(start))
		var n int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM target").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != i {
			t.Fatalf("after FLUSH %d the sink's target has %d rows; want %d", i, n, i)
		}
	}

	// The jobs are still running: the FLUSHes did not wait for them.
	if got := read(); got >= events*46/50 {
		t.Fatalf("the source read all %d bids: the test proves nothing", got)
	}
	var jobs int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM rw_catalog.rw_ddl_progress").Scan(&jobs); err != nil {
		t.Fatal(err)
	}
	if jobs != 4 {
		t.Fatalf("%d background jobs are running; want 4 (the sinks and both views)", jobs)
	}
	var pgErr *pgconn.PgError
	if _, err := e2etest.Rows(ctx, conn, "SELECT n FROM snap"); !errors.As(err, &pgErr) || pgErr.Code != "55000" {
		t.Fatalf("a query of a view still backfilling: %v; want SQLSTATE 55000", err)
	}

	// WAIT still waits for the backfills; the views then have every row.
	e2etest.MustExec(t, ctx, conn, "DROP SINK drain")
	e2etest.MustExec(t, ctx, conn, "DROP SINK counts")
	for _, s := range []string{"ALTER MATERIALIZED VIEW snap SET BACKFILL_RATE_LIMIT = DEFAULT",
		"ALTER MATERIALIZED VIEW arr SET BACKFILL_RATE_LIMIT = DEFAULT", "WAIT"} {
		e2etest.MustExec(t, ctx, conn, s)
	}
	for _, v := range []string{"snap", "arr"} {
		var n int
		if err := conn.QueryRow(ctx, "SELECT n FROM "+v, pgx.QueryExecModeSimpleProtocol).Scan(&n); err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		if n != tableRows {
			t.Fatalf("%s counts %d rows after WAIT; want %d", v, n, tableRows)
		}
	}
}
