package recovery

import (
	"context"
	"fmt"
	"math/rand"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tributary/tributary/e2e/e2etest"
	"github.com/tributary/tributary/e2e/pgtest"
	"github.com/tributary/tributary/e2e/testseed"
	"github.com/tributary/tributary/e2e/testserver"
)

// TestPostgresCDCSharedSourceSurvivesKills: two tables of one CDC source
// (one slot, one stream) under upstream writers. The small one is copied
// first and follows the stream; the large one joins later and is killed
// (SIGKILL) three times in its copy. Afterwards both equal the upstream
// exactly, the large one's copy resumed each time (rows read upstream stay
// under 1.2x the table), its progress never went back and the small one's
// stayed finished.
func TestPostgresCDCSharedSourceSurvivesKills(t *testing.T) {
	if testing.Short() {
		t.Skip("copies a PostgreSQL table through three kills")
	}
	t.Parallel() // mostly waits (rate limits, kills, restarts): runs beside the other long tests
	const bigRows, smallRows = 200_000, 20_000
	seed := testseed.Int64(t)
	rng := rand.New(rand.NewSource(seed))
	pg := pgtest.StartWith(t, pgtest.LogicalSettings...)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	up, err := pgx.Connect(ctx, pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close(context.Background())
	for _, s := range []string{
		"CREATE TABLE big (id int8 PRIMARY KEY, v text, n int4)",
		fmt.Sprintf("INSERT INTO big SELECT g, 'row ' || g, g %% 1000 FROM generate_series(1, %d) g", bigRows),
		"CREATE TABLE small (id int8 PRIMARY KEY, v text, n int4)",
		fmt.Sprintf("INSERT INTO small SELECT g, CASE WHEN g %% 7 = 0 THEN NULL ELSE 'small ' || g END, g %% 10 FROM generate_series(1, %d) g", smallRows),
		"VACUUM ANALYZE big", "VACUUM ANALYZE small",
		"SELECT pg_stat_reset()",
	} {
		if _, err := up.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	// Short epochs: a kill loses at most one epoch's copied rows.
	srv := testserver.StartWith(t, testserver.Build(t), t.TempDir(), testserver.Options{Args: []string{"--barrier-interval-ms", "250"}})
	conn := e2etest.Connect(t, ctx, srv)
	host, port, _ := net.SplitHostPort(pg.Addr)
	exec := func(sql string) {
		t.Helper()
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	exec(fmt.Sprintf(`CREATE SOURCE pg WITH (connector = 'postgres-cdc', hostname = '%s', port = '%s', username = 'postgres', database.name = 'dev')`, host, port))
	exec(`CREATE TABLE small (id bigint, v varchar, n int, PRIMARY KEY (id)) FROM pg TABLE 'public.small'`) // blocking: copied when it returns

	writers := []*cdcWriter{}
	for i, table := range []string{"small", "big"} {
		wconn, err := pgx.Connect(ctx, pg.DSN())
		if err != nil {
			t.Fatal(err)
		}
		defer wconn.Close(context.Background())
		rows := smallRows
		if table == "big" {
			rows = bigRows
		}
		w := &cdcWriter{conn: wconn, table: table, rows: rows, stop: make(chan struct{}), done: make(chan struct{})}
		go w.run(ctx, seed+int64(i))
		writers = append(writers, w)
	}
	stopWriters := func() {
		for _, w := range writers {
			select {
			case <-w.stop:
			default:
				close(w.stop)
				<-w.done
			}
			if w.err != nil {
				t.Fatalf("writer of %s: %v", w.table, w.err)
			}
		}
	}
	defer stopWriters()

	// The large table joins while the stream flows for the small one, in
	// the background and throttled, so that the kills come in its copy.
	exec("SET background_ddl = true")
	exec("SET backfill_rate_limit = 20000")
	exec(`CREATE TABLE big (id bigint, v varchar, n int, PRIMARY KEY (id)) FROM pg TABLE 'big'`)
	// Its copy is a job of its own (the small table's is done).
	e2etest.WaitRows(t, ctx, e2etest.QueryText(ctx, conn, "SELECT string_agg(ddl_statement || ' ' || backfill_type, ',') FROM rw_catalog.rw_ddl_progress"),
		"CREATE TABLE big (source) CdcBackfill", 30*time.Second)
	// A view over it sees each copied row once (a row written twice would count twice).
	exec("SET background_ddl = false")
	exec("SET backfill_rate_limit = DEFAULT")
	exec("CREATE MATERIALIZED VIEW big_stats AS SELECT count(*) AS c, sum(n) AS s FROM big")

	type progress struct {
		rows     int
		finished bool
	}
	readProgress := func(table string) (progress, bool) {
		r, err := e2etest.Rows(ctx, conn, "SELECT row_count, finished FROM rw_catalog.rw_cdc_progress WHERE table_name = 'public."+table+"'")
		if err != nil || len(r) != 1 {
			return progress{}, false
		}
		f := strings.Split(r[0], "|")
		n, _ := strconv.Atoi(f[0])
		return progress{rows: n, finished: f[1] == "t" || f[1] == "true"}, true
	}
	waitProgress := func(table, what string, ok func(progress) bool) progress {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for {
			if p, found := readProgress(table); found && ok(p) {
				return p
			}
			if time.Now().After(deadline) {
				p, _ := readProgress(table)
				t.Fatalf("timed out waiting for %s (progress of %s %+v)", what, table, p)
			}
			time.Sleep(20 * time.Millisecond) // polling
		}
	}
	marks := []float64{0.1 + 0.1*rng.Float64(), 0.35 + 0.1*rng.Float64(), 0.6 + 0.1*rng.Float64()}
	for i, frac := range marks {
		before := waitProgress("big", fmt.Sprintf("%.0f%% of the copy", frac*100), func(p progress) bool {
			return p.finished || p.rows >= int(frac*bigRows)
		})
		if before.finished {
			t.Fatalf("the copy finished before kill %d: lower the rate", i+1)
		}
		if err := srv.Kill(); err != nil {
			t.Fatal(err)
		}
		conn.Close(context.Background())
		if err := srv.Restart(); err != nil {
			t.Fatal(err)
		}
		conn = e2etest.Connect(t, ctx, srv)
		after := waitProgress("big", "the progress after the restart", func(progress) bool { return true })
		if after.rows < before.rows {
			t.Fatalf("kill %d: the progress went back from %d to %d rows", i+1, before.rows, after.rows)
		}
		if p := waitProgress("small", "the small table's progress", func(progress) bool { return true }); !p.finished || p.rows != smallRows {
			t.Fatalf("kill %d: the small table's progress is %+v, want finished with %d rows", i+1, p, smallRows)
		}
		t.Logf("kill %d at %d rows copied (after the restart: %d)", i+1, before.rows, after.rows)
	}
	exec("ALTER TABLE big SET BACKFILL_RATE_LIMIT = DEFAULT")
	waitProgress("big", "the end of the copy", func(p progress) bool { return p.finished })
	stopWriters()
	// Last rows: once they are in, every change before them is.
	for _, table := range []string{"big", "small"} {
		if _, err := up.Exec(ctx, "INSERT INTO "+table+" VALUES (0, 'sentinel', 0)"); err != nil {
			t.Fatal(err)
		}
		e2etest.WaitRows(t, ctx, e2etest.QueryText(ctx, conn, "SELECT count(*) FROM "+table+" WHERE id = 0"), "1", time.Minute)
	}
	// The rows the upstream served to scans of big: its copy's chunks over
	// all runs, plus one per writer statement at most (reported by the
	// backends within a second or so of going idle).
	var fetched, seq int64
	for deadline := time.Now().Add(15 * time.Second); ; {
		if err := up.QueryRow(ctx, "SELECT coalesce(idx_tup_fetch, 0), coalesce(seq_tup_read, 0) FROM pg_stat_user_tables WHERE relname = 'big'").Scan(&fetched, &seq); err != nil {
			t.Fatal(err)
		}
		if fetched+seq >= bigRows || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond) // polling
	}
	copied := fetched + seq - int64(writers[1].ops)
	for _, table := range []string{"big", "small"} {
		wantN, wantSum, err := tableDigest(ctx, up, "SELECT id, v, n::text FROM "+table)
		if err != nil {
			t.Fatal(err)
		}
		gotN, gotSum, err := tableDigest(ctx, conn, "SELECT id, v, n FROM "+table)
		if err != nil {
			t.Fatal(err)
		}
		if gotN != wantN || gotSum != wantSum {
			t.Fatalf("table %s has %d rows (digest %x), the upstream %d (digest %x)", table, gotN, gotSum, wantN, wantSum)
		}
		t.Logf("%s: %d rows equal upstream (writer: %d statements)", table, wantN, map[string]int{"small": writers[0].ops, "big": writers[1].ops}[table])
	}
	var want, got string
	if err := up.QueryRow(ctx, "SELECT count(*) || ' ' || sum(n) FROM big").Scan(&want); err != nil {
		t.Fatal(err)
	}
	e2etest.WaitRows(t, ctx, e2etest.QueryText(ctx, conn, "SELECT c || ' ' || s FROM big_stats"), want, 30*time.Second)
	if err := conn.QueryRow(ctx, "SELECT c || ' ' || s FROM big_stats").Scan(&got); err != nil || got != want {
		t.Fatalf("the view on big says %q (%v), the upstream %q", got, err, want)
	}
	t.Logf("upstream rows read from big: %d (%d less the writer's statements)", fetched+seq, copied)
	if float64(copied) > 1.2*bigRows {
		t.Fatalf("the copy read %d rows over all runs for a table of %d: it did not resume", copied, bigRows)
	}
	// One slot for the source.
	var slots int
	if err := up.QueryRow(ctx, "SELECT count(*) FROM pg_replication_slots").Scan(&slots); err != nil || slots != 1 {
		t.Fatalf("upstream replication slots: %d (%v), want 1", slots, err)
	}
}
