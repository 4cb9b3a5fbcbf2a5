package e2e

import (
	"context"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/e2e/e2etest"
	"github.com/tributary/tributary/e2e/testseed"
)

// TestAlterDuringBlockingCreate: an ALTER ... SET PARALLELISM in one session
// while another session's blocking CREATE backfills returns without waiting
// for it, and the CREATE goes on (on the rebuilt engine) to a correct view.
func TestAlterDuringBlockingCreate(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv := e2etest.StartServer(t)
	a, b := e2etest.Connect(t, ctx, srv), e2etest.Connect(t, ctx, srv)
	for _, s := range []string{
		"CREATE TABLE t (id int PRIMARY KEY, g int, v int)",
		"INSERT INTO t SELECT i, i % 17, i FROM generate_series(1, 20000) i",
		"CREATE MATERIALIZED VIEW other AS SELECT g, count(*) AS n FROM t GROUP BY g",
		"SET backfill_rate_limit = 4000",
	} {
		if _, err := a.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	created := make(chan error, 1)
	go func() {
		_, err := a.Exec(ctx, "CREATE MATERIALIZED VIEW big AS SELECT g, count(*) AS n, sum(v) AS s FROM t GROUP BY g")
		created <- err
	}()
	// Wait until the CREATE is backfilling, then rescale another job.
	e2etest.WaitRows(t, ctx, func() (string, error) {
		rows, err := e2etest.Rows(ctx, b, "SELECT count(*) FROM rw_catalog.rw_ddl_progress")
		return strings.Join(rows, ""), err
	}, "1", 30*time.Second)
	percent := func() float64 {
		t.Helper()
		rows := e2etest.MustRows(t, ctx, b, "SELECT progress FROM rw_catalog.rw_ddl_progress")
		if len(rows) != 1 {
			return -1 // done
		}
		var p float64
		if _, err := fmt.Sscanf(rows[0], "%f%%", &p); err != nil {
			t.Fatalf("progress %q: %v", rows[0], err)
		}
		return p
	}
	// Let it make some progress first, so that a reset would show.
	for deadline := time.Now().Add(30 * time.Second); percent() < 5; {
		if time.Now().After(deadline) {
			t.Fatal("the backfill made no progress")
		}
		time.Sleep(20 * time.Millisecond)
	}
	before := percent()
	start := time.Now()
	if _, err := b.Exec(ctx, "ALTER MATERIALIZED VIEW other SET PARALLELISM = 3"); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if after := percent(); after >= 0 && after < before {
		t.Errorf("the backfill's progress went from %.2f%% to %.2f%% across the rescale", before, after)
	}
	select {
	case err := <-created:
		t.Fatalf("the CREATE returned (%v) before the ALTER could be checked: make the backfill slower", err)
	default:
	}
	if took > 2*time.Second {
		t.Errorf("the ALTER took %v: it waited for the blocking CREATE", took)
	}
	select {
	case err := <-created:
		if err != nil {
			t.Fatalf("the blocking CREATE failed after the rescale: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the blocking CREATE did not return")
	}
	e2etest.CheckView(t, ctx, b, "SELECT * FROM big", e2etest.MustRows(t, ctx, b, "SELECT g, count(*), sum(v) FROM t GROUP BY g"))
}

// TestRescaleMidBackfill is issue 12's backfill check: a background view
// backfilling 30,000 rows at a limited rate is rescaled among 1-4 actors
// six times mid-way, for both backfill kinds; rw_ddl_progress sampled
// around every rescale never goes back, the view ends equal to its query,
// and the backfills read under 1.2x their input in total
// (tributary_backfill_rows_read_total).
func TestRescaleMidBackfill(t *testing.T) {
	if testing.Short() {
		t.Skip("backfills at a limited rate")
	}
	for _, snapshot := range []bool{true, false} {
		t.Run(fmt.Sprintf("streaming_use_snapshot_backfill=%t", snapshot), func(t *testing.T) { rescaleMidBackfill(t, snapshot) })
	}
}

func rescaleMidBackfill(t *testing.T, snapshot bool) {
	seed := testseed.Int64(t)
	rng := rand.New(rand.NewSource(seed))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv := e2etest.StartServer(t)
	conn := e2etest.Connect(t, ctx, srv)
	const rows = 30000
	for _, s := range []string{
		"CREATE TABLE bt (id int PRIMARY KEY, g int, v int)",
		fmt.Sprintf("INSERT INTO bt SELECT i, i %% 13, i FROM generate_series(1, %d) i", rows),
		fmt.Sprintf("SET streaming_use_snapshot_backfill = %t", snapshot),
		"SET background_ddl = true",
		"SET backfill_rate_limit = 6000",
		"CREATE MATERIALIZED VIEW bmv AS SELECT g, count(*) AS n, sum(v) AS s FROM bt GROUP BY g",
	} {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	last := int64(0)
	sample := func(when string) bool {
		t.Helper()
		n, ok, err := e2etest.BackfillRows(ctx, conn)
		if err != nil {
			t.Fatalf("%s: rw_ddl_progress: %v", when, err)
		}
		if !ok {
			return false // finished
		}
		if n < last {
			t.Fatalf("%s: backfill progress went back from %d to %d rows", when, last, n)
		}
		last = n
		return true
	}
	rescales := 0
	for rescales < 6 {
		if !sample(fmt.Sprintf("before rescale %d", rescales+1)) {
			t.Fatalf("the backfill finished after %d rescales: slow it down", rescales)
		}
		p := 1 + rng.Intn(4)
		if _, err := conn.Exec(ctx, fmt.Sprintf("ALTER MATERIALIZED VIEW bmv SET PARALLELISM = %d", p)); err != nil {
			t.Fatal(err)
		}
		rescales++
		sample(fmt.Sprintf("after rescale %d to %d", rescales, p))
		time.Sleep(time.Duration(200+rng.Intn(300)) * time.Millisecond)
	}
	t.Logf("%d rescales; %d of %d rows backfilled at the last sample", rescales, last, rows)
	for _, s := range []string{"ALTER MATERIALIZED VIEW bmv SET BACKFILL_RATE_LIMIT = DEFAULT", "WAIT", "FLUSH"} {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	e2etest.CheckView(t, ctx, conn, "SELECT * FROM bmv", e2etest.MustRows(t, ctx, conn, "SELECT g, count(*), sum(v) FROM bt GROUP BY g"))
	read := samples(scrapeMetrics(t, ctx, srv), "tributary_backfill_rows_read_total", nil)
	if len(read) != 1 {
		t.Fatalf("tributary_backfill_rows_read_total: %v", read)
	}
	t.Logf("backfills read %.0f rows for a %d-row table (%.3fx)", read[0], rows, read[0]/rows)
	if read[0] < rows || read[0] > 1.2*rows {
		t.Fatalf("backfills read %.0f rows in total for a %d-row table: want at least 1x and under 1.2x", read[0], rows)
	}
}
