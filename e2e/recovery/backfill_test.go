package recovery

import (
	"context"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tributary/tributary/e2e/e2etest"
	"github.com/tributary/tributary/e2e/testseed"
	"github.com/tributary/tributary/e2e/testserver"
)

// TestBackfillResume backfills 1,000,000 rows at backfill_rate_limit = 50000,
// SIGKILLs the server three times mid-backfill, and checks the job resumes
// from its committed position (it never falls back to the start), completes,
// and yields the right answer; for both backfill kinds.
func TestBackfillResume(t *testing.T) {
	if testing.Short() {
		t.Skip("backfills 1M rows at a limited rate (about 30 s per kind)")
	}
	t.Parallel() // mostly waits (rate limits, kills, restarts): runs beside the other long tests
	for _, snapshot := range []bool{true, false} {
		t.Run(fmt.Sprintf("streaming_use_snapshot_backfill=%t", snapshot), func(t *testing.T) { backfillResume(t, snapshot) })
	}
}

func backfillResume(t *testing.T, snapshot bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	seed := testseed.Int64(t)
	rng := rand.New(rand.NewSource(seed))
	srv := e2etest.StartServer(t)
	conn := e2etest.Connect(t, ctx, srv)
	for _, sql := range []string{
		`CREATE TABLE t (id int PRIMARY KEY, a int, b int)`,
		`INSERT INTO t SELECT g, g % 1000, g FROM generate_series(1, 1000000) AS g`,
		`SET background_ddl = true`,
		`SET backfill_rate_limit = 50000`,
		fmt.Sprintf(`SET streaming_use_snapshot_backfill = %t`, snapshot),
		`CREATE MATERIALIZED VIEW m AS SELECT a, count(*) AS c, sum(b) AS s FROM t GROUP BY a`,
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	conn.Close(ctx)
	var reread int64
	for kill := 0; kill < 3; kill++ {
		time.Sleep(time.Duration(2000+rng.Intn(2000)) * time.Millisecond)
		c, err := pgx.Connect(ctx, srv.DSN())
		if err != nil {
			t.Fatal(err)
		}
		before, running, err := e2etest.BackfillRows(ctx, c)
		c.Close(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !running {
			t.Fatalf("kill %d: the backfill already finished (rate limit not applied?)", kill)
		}
		if err := srv.Kill(); err != nil {
			t.Fatal(err)
		}
		if err := srv.Restart(); err != nil {
			t.Fatal(err)
		}
		c, err = pgx.Connect(ctx, srv.DSN())
		if err != nil {
			t.Fatal(err)
		}
		// The resumed job reports its committed position at its first barrier.
		var after int64
		for deadline := time.Now().Add(20 * time.Second); ; {
			n, ok, err := e2etest.BackfillRows(ctx, c)
			if err != nil {
				t.Fatal(err)
			}
			if ok && n > 0 {
				after = n
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("kill %d: the job did not resume (last progress %d, running %v)\n%s", kill, n, ok, testserver.Tail(srv.LogPath, 30))
			}
			time.Sleep(20 * time.Millisecond)
		}
		c.Close(ctx)
		if after < before/2 {
			t.Fatalf("kill %d: backfill restarted from %d rows after reaching %d", kill, after, before)
		}
		if before > after {
			reread += before - after
		}
		t.Logf("kill %d: %d rows backfilled before, resumed at %d", kill, before, after)
	}
	c, err := pgx.Connect(ctx, srv.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, `ALTER MATERIALIZED VIEW m SET BACKFILL_RATE_LIMIT = DEFAULT`); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, `WAIT`); err != nil {
		t.Fatal(err)
	}
	if float64(1_000_000+reread) > 1.2*1_000_000 {
		t.Fatalf("snapshot rows read %d exceed 1.2x the table", 1_000_000+reread)
	}
	t.Logf("snapshot rows read: about %d for a 1,000,000-row table", 1_000_000+reread)
	got, err := e2etest.Rows(ctx, c, `SELECT * FROM m`)
	if err != nil {
		t.Fatal(err)
	}
	want, err := e2etest.Rows(ctx, c, `SELECT a, count(*), sum(b) FROM t GROUP BY a`)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("after resumed backfill: %d rows, want %d (first: %v vs %v)", len(got), len(want), e2etest.Head(got), e2etest.Head(want))
	}
}
