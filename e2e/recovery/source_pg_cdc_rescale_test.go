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
)

// TestPostgresCDCRescaleDuringCopy is issue 13's parallel mode under issue
// 12's online scaling: a CDC table copied in 4 key ranges (its splits,
// shared out by its source actors) while a writer changes the upstream; in
// the copy the table is rescaled five times (ALTER TABLE ... SET
// PARALLELISM among 1 to 4) and Tributary is killed (SIGKILL) once. Each
// rescale moves the ranges to the new actors (rw_source_splits), the
// progress never goes back, and at the end the CDC table equals the
// upstream exactly while the rows read over all runs stay under 1.2x the
// table (every range resumed from its own position).
func TestPostgresCDCRescaleDuringCopy(t *testing.T) {
	t.Parallel() // mostly waiting on the copy and its rescales: overlaps the other long tests
	if testing.Short() {
		t.Skip("copies a PostgreSQL table through rescales and a kill")
	}
	const rows = 200_000
	const ranges = 4
	seed := testseed.Int64(t)
	rng := rand.New(rand.NewSource(seed))
	pg := pgtest.StartWith(t, pgtest.LogicalSettings...)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	up, err := pgx.Connect(ctx, pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close(context.Background())
	for _, s := range []string{
		"CREATE TABLE big (id int8 PRIMARY KEY, v text, n int4)",
		fmt.Sprintf("INSERT INTO big SELECT g, 'row ' || g, g %% 1000 FROM generate_series(1, %d) g", rows),
		"VACUUM ANALYZE big",
		"SELECT pg_stat_reset()",
	} {
		if _, err := up.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	start := time.Now()
	srv := e2etest.StartServer(t)
	conn := e2etest.Connect(t, ctx, srv)
	host, port, _ := net.SplitHostPort(pg.Addr)
	// Throttled so that the rescales and the kill come in the copy (the
	// actors share the rate: the copy's pace does not depend on them).
	for _, s := range []string{"SET background_ddl = true", "SET backfill_rate_limit = 20000",
		fmt.Sprintf(`CREATE TABLE big (id bigint, v varchar, n int, PRIMARY KEY (id)) WITH (connector = 'postgres-cdc',
		hostname = '%s', port = '%s', username = 'postgres', password = '', database.name = 'dev', table.name = 'big',
		backfill.parallelism = '%d', snapshot.batch.size = '1000')`, host, port, ranges)} {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	wconn, err := pgx.Connect(ctx, pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer wconn.Close(context.Background())
	w := &cdcWriter{conn: wconn, rows: rows, stop: make(chan struct{}), done: make(chan struct{})}
	go w.run(ctx, seed)
	stopWriter := func() {
		select {
		case <-w.stop:
		default:
			close(w.stop)
			<-w.done
		}
	}
	defer stopWriter()

	// The copy's progress over the ranges (each a split, a row of
	// rw_cdc_progress): read once every range has reported, it never goes
	// back, across rescales and the kill.
	seen := 0
	// The job's progress (rw_ddl_progress) never goes back across a
	// rescale either (a kill may lose the uncommitted epoch's rows).
	var ddlSeen int64
	progress := func() (copied int, finished, ok bool) {
		if n, running, err := e2etest.BackfillRows(ctx, conn); err == nil && running {
			if n < ddlSeen {
				t.Fatalf("rw_ddl_progress went back from %d to %d rows", ddlSeen, n)
			}
			ddlSeen = n
		}
		r, err := e2etest.Rows(ctx, conn, "SELECT count(*), sum(row_count), bool_and(finished) FROM rw_catalog.rw_cdc_progress WHERE table_name = 'public.big'")
		if err != nil || len(r) != 1 {
			return 0, false, false
		}
		f := strings.Split(r[0], "|")
		if n, _ := strconv.Atoi(f[0]); n != ranges {
			return 0, false, false // not every range has reported since the start
		}
		copied, _ = strconv.Atoi(f[1])
		if copied < seen {
			t.Fatalf("the progress went back from %d to %d rows", seen, copied)
		}
		seen = copied
		return copied, f[2] == "t" || f[2] == "true", true
	}
	// waitCopied waits until want rows are copied; false when the copy
	// finished first.
	waitCopied := func(want int) bool {
		t.Helper()
		deadline := time.Now().Add(2 * time.Minute)
		for {
			copied, finished, ok := progress()
			if ok && finished {
				return false
			}
			if ok && copied >= want {
				return true
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %d rows copied (%d)", want, copied)
			}
			time.Sleep(20 * time.Millisecond) // polling
		}
	}
	// actors is how many actors read the ranges now (rw_source_splits, as
	// each range's reader last reported at a barrier).
	actors := func() (int, error) {
		r, err := e2etest.Rows(ctx, conn, "SELECT count(DISTINCT actor_id) FROM rw_catalog.rw_source_splits WHERE source_name = 'public.big'")
		if err != nil || len(r) != 1 {
			return 0, err
		}
		return strconv.Atoi(r[0])
	}

	// Five rescales and a kill at random points of the copy, in order. On
	// a slow machine the last may come after the copy (a rescale of the
	// stream alone); the first four (the kill among them) must not.
	steps := []string{"2", "1", "kill", "3", "4", "2"}
	for i, step := range steps {
		at := int(float64(rows) * (0.08 + 0.11*float64(i) + 0.05*rng.Float64()))
		if !waitCopied(at) {
			if i < 4 {
				t.Fatalf("the copy finished (%d rows) before step %d (%s): the rescales and the kill must come in it", seen, i, step)
			}
			t.Logf("the copy finished before step %d (%s)", i, step)
		}
		if step == "kill" {
			if err := srv.Kill(); err != nil {
				t.Fatal(err)
			}
			conn.Close(context.Background())
			if err := srv.Restart(); err != nil {
				t.Fatal(err)
			}
			conn = e2etest.Connect(t, ctx, srv)
			ddlSeen = 0
			t.Logf("killed at %d rows copied", seen)
			continue
		}
		began := time.Now()
		if _, err := conn.Exec(ctx, "ALTER TABLE big SET PARALLELISM = "+step); err != nil {
			t.Fatalf("ALTER TABLE big SET PARALLELISM = %s: %v", step, err)
		}
		n, _ := strconv.Atoi(step)
		want := min(n, ranges)
		e2etest.WaitRows(t, ctx, func() (string, error) { a, err := actors(); return strconv.Itoa(a), err }, strconv.Itoa(want), time.Minute)
		t.Logf("rescaled to %s at %d rows copied (ALTER took %v)", step, seen, time.Since(began))
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if _, finished, ok := progress(); ok && finished {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for the copy to finish (%d rows)", seen)
		}
		time.Sleep(50 * time.Millisecond) // polling
	}
	stopWriter()
	if w.err != nil {
		t.Fatalf("writer: %v", w.err)
	}
	t.Logf("copied in %v with %d upstream changes", time.Since(start), w.ops)

	// The rows the upstream served to scans: the copy's chunks over all
	// runs, plus one per writer statement at most (as in
	// TestPostgresCDCSurvivesKills).
	var fetched, seq int64
	for deadline := time.Now().Add(15 * time.Second); ; {
		if err := up.QueryRow(ctx, "SELECT coalesce(idx_tup_fetch, 0), coalesce(seq_tup_read, 0) FROM pg_stat_user_tables WHERE relname = 'big'").Scan(&fetched, &seq); err != nil {
			t.Fatal(err)
		}
		if fetched+seq >= int64(rows) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond) // the backends report their counts when idle
	}
	copied := fetched + seq - int64(w.ops)
	wantN, wantSum, err := tableDigest(ctx, up, "SELECT id, v, n::text FROM big")
	if err != nil {
		t.Fatal(err)
	}
	// Each range's actor writes its own changes: poll until all have
	// caught up with the stream's end.
	for deadline := time.Now().Add(time.Minute); ; {
		gotN, gotSum, err := tableDigest(ctx, conn, "SELECT id, v, n FROM big")
		if err != nil {
			t.Fatal(err)
		}
		if gotN == wantN && gotSum == wantSum {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the CDC table has %d rows (digest %x), the upstream %d (digest %x)", gotN, gotSum, wantN, wantSum)
		}
		time.Sleep(200 * time.Millisecond) // polling
	}
	t.Logf("upstream rows read: %d (%d by index scans, %d sequentially, less the writer's %d statements), table %d rows",
		copied, fetched, seq, w.ops, wantN)
	if float64(copied) > 1.2*float64(wantN) {
		t.Fatalf("the copy read %d rows over all runs for a table of %d: it did not resume", copied, wantN)
	}
}
