package recovery

import (
	"context"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/tributary/tributary/e2e/pgtest"
	"github.com/tributary/tributary/e2e/testseed"

	"github.com/tributary/tributary/e2e/e2etest"
)

// TestPostgresSinkSurvivesKills: an upsert sink of an aggregating view into a
// real PostgreSQL table (decoupled, the default for postgres), under random
// DML with Tributary killed (SIGKILL) at random points ten times; afterwards
// the PostgreSQL table equals the view.
func TestPostgresSinkSurvivesKills(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL and kills a server ten times")
	}
	pgDSN := pgtest.StartPostgres(t)
	seed := testseed.Int64(t)
	rng := rand.New(rand.NewSource(seed))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pg, err := pgx.Connect(ctx, pgDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close(context.Background())
	if _, err := pg.Exec(ctx, "CREATE TABLE agg (g int PRIMARY KEY, n bigint NOT NULL, total bigint)"); err != nil {
		t.Fatal(err)
	}
	pc, err := pgx.ParseConfig(pgDSN)
	if err != nil {
		t.Fatal(err)
	}
	srv := e2etest.StartServer(t)
	conn := e2etest.Connect(t, ctx, srv)
	with := fmt.Sprintf("connector = 'postgres', host = '%s', port = '%d', user = '%s', password = '%s', database = '%s', table = 'agg', type = 'upsert', primary_key = 'g'",
		pc.Host, pc.Port, pc.User, pc.Password, pc.Database)
	// A wrong target is refused at CREATE time.
	if _, err := conn.Exec(ctx, "CREATE TABLE t0 (id int PRIMARY KEY, x varchar)"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE SINK bad AS SELECT x AS g FROM t0 WITH ("+with+")"); err == nil {
		t.Fatal("a sink of a varchar column into an int column was created")
	}
	for _, s := range []string{
		"CREATE TABLE t (id int PRIMARY KEY, g int, v int)",
		"INSERT INTO t SELECT i, i % 17, i FROM generate_series(1, 3000) i",
		"CREATE MATERIALIZED VIEW m AS SELECT g, count(*) AS n, sum(v) AS total FROM t GROUP BY g",
		"CREATE SINK s FROM m WITH (" + with + ")",
	} {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	conn = killUnderDML(t, ctx, srv, conn, rng, 10)
	if _, err := conn.Exec(ctx, "FLUSH"); err != nil {
		t.Fatal(err)
	}
	want, err := e2etest.Rows(ctx, conn, "SELECT g, n, total FROM m")
	if err != nil {
		t.Fatal(err)
	}
	// Delivery runs behind the commits: poll PostgreSQL until it catches up.
	var got []string
	for deadline := time.Now().Add(30 * time.Second); ; {
		if got, err = e2etest.Rows(ctx, pg, "SELECT g, n, total FROM agg"); err != nil {
			t.Fatal(err)
		}
		if strings.Join(got, "\n") == strings.Join(want, "\n") {
			break
		}
		if time.Now().After(deadline) {
			onlyPG, onlyView := e2etest.MultisetDiff(got, want)
			stores, _ := e2etest.Rows(ctx, conn, "SELECT * FROM rw_catalog.rw_sink_log_store")
			events, _ := e2etest.Rows(ctx, conn, "SELECT * FROM rw_catalog.rw_event_logs")
			t.Fatalf("PostgreSQL differs from the view after 10 kills:\nonly in PostgreSQL: %v\nonly in the view: %v\nlog stores: %v\nsink events: %v",
				onlyPG, onlyView, stores, events)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("PostgreSQL holds the view's %d rows", len(want))
}
