package recovery

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tributary/tributary/e2e/e2etest"
	"github.com/tributary/tributary/e2e/pgtest"
	"github.com/tributary/tributary/e2e/testseed"
)

// cdcWriter changes the upstream table while the copy runs: inserts of new
// keys (above the preloaded ones and below them), updates, deletes and key
// moves, one statement each, counted.
type cdcWriter struct {
	conn  *pgx.Conn
	table string // "big" when empty
	rows  int
	ops   int
	stop  chan struct{}
	done  chan struct{}
	err   error
}

func (w *cdcWriter) run(ctx context.Context, seed int64) {
	defer close(w.done)
	rng := rand.New(rand.NewSource(seed))
	next := w.rows + 1
	table := w.table
	if table == "" {
		table = "big"
	}
	for {
		select {
		case <-w.stop:
			return
		case <-ctx.Done():
			return
		case <-time.After(time.Millisecond):
		}
		k := 1 + rng.Intn(w.rows)
		var sql string
		switch rng.Intn(6) {
		case 0:
			sql = fmt.Sprintf("INSERT INTO %s VALUES (%d, 'new %d', %d)", table, next, w.ops, rng.Intn(1000))
			next++
		case 1, 2:
			sql = fmt.Sprintf("UPDATE %s SET v = 'upd %d', n = n + 1 WHERE id = %d", table, w.ops, k)
		case 3:
			sql = fmt.Sprintf("DELETE FROM %s WHERE id = %d", table, k)
		case 4: // a key moves below the copy (from above) or above it
			sql = fmt.Sprintf("UPDATE %s SET id = -id WHERE id = %d", table, k)
		case 5: // below every key case 4 makes (-rows..-1)
			sql = fmt.Sprintf("INSERT INTO %s VALUES (%d, 'low %d', 1)", table, -w.rows-1-w.ops, w.ops)
		}
		if _, err := w.conn.Exec(ctx, sql); err != nil {
			w.err = fmt.Errorf("%s: %w", sql, err)
			return
		}
		w.ops++
	}
}

// tableDigest reads every row of a (id, v, n) table: the count and an
// order-independent sum of the rows' hashes.
func tableDigest(ctx context.Context, conn *pgx.Conn, sql string) (int, uint64, error) {
	rows, err := conn.Query(ctx, sql, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		return 0, 0, err
	}
	defer rows.Close()
	n, sum := 0, uint64(0)
	for rows.Next() {
		vals := rows.RawValues()
		h := fnv.New64a()
		for _, v := range vals {
			if v == nil {
				h.Write([]byte{0xff})
			} else {
				h.Write(v)
			}
			h.Write([]byte{0})
		}
		sum += h.Sum64()
		n++
	}
	return n, sum, rows.Err()
}

// TestPostgresCDCSurvivesKills is issue 13's acceptance run: a large
// upstream table and a writer changing it while a CDC table copies it;
// Tributary is killed (SIGKILL) three times in the copy. Afterwards the
// CDC table equals the upstream exactly, the copy resumed each time (the
// rows the upstream served to index scans stay under 1.2x the table) and
// the progress read after each restart is not below the one before.
func TestPostgresCDCSurvivesKills(t *testing.T) {
	if testing.Short() {
		t.Skip("copies a large PostgreSQL table through three kills")
	}
	t.Parallel() // mostly waits (rate limits, kills, restarts): runs beside the other long tests
	rows := 1_000_000
	if s := strings.TrimSpace(os.Getenv("TRIBUTARY_CDC_ROWS")); s != "" {
		rows, _ = strconv.Atoi(s)
	}
	cdcSurvivesKills(t, rows, "", 0)
}

// TestPostgresCDCParallelSurvivesKills is the same run for a table copied
// in 4 key ranges at once (backfill.parallelism), throttled so that the
// kills come in the copy: every range resumes from its own position.
func TestPostgresCDCParallelSurvivesKills(t *testing.T) {
	if testing.Short() {
		t.Skip("copies a PostgreSQL table through three kills")
	}
	t.Parallel() // mostly waits (rate limits, kills, restarts): runs beside the other long tests
	cdcSurvivesKills(t, 200_000, ", backfill.parallelism = '4', snapshot.batch.size = '1000'", 8_000)
}

// cdcSurvivesKills copies a table of rows rows (with the extra WITH
// options opts, at rate rows per second when not 0) through three kills
// under a writer.
func cdcSurvivesKills(t *testing.T, rows int, opts string, rate int) {
	seed := testseed.Int64(t)
	rng := rand.New(rand.NewSource(seed))
	pg := pgtest.StartWith(t, pgtest.LogicalSettings...)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	up, err := pgx.Connect(ctx, pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close(context.Background())
	start := time.Now()
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
	t.Logf("upstream: %d rows in %v", rows, time.Since(start))

	srv := e2etest.StartServer(t)
	conn := e2etest.Connect(t, ctx, srv)
	host, port, _ := net.SplitHostPort(pg.Addr)
	create := fmt.Sprintf(`CREATE TABLE big (id bigint, v varchar, n int, PRIMARY KEY (id)) WITH (connector = 'postgres-cdc',
		hostname = '%s', port = '%s', username = 'postgres', password = '', database.name = 'dev', table.name = 'big'%s)`, host, port, opts)
	// In the background: the kills come while it copies.
	if _, err := conn.Exec(ctx, "SET background_ddl = true"); err != nil {
		t.Fatal(err)
	}
	if rate > 0 {
		if _, err := conn.Exec(ctx, fmt.Sprintf("SET backfill_rate_limit = %d", rate)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := conn.Exec(ctx, create); err != nil {
		t.Fatal(err)
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

	type progress struct {
		rows     int
		finished bool
		lsn      string
		splits   int
	}
	var seen progress // the highest progress read: it never goes back
	readProgress := func() (progress, bool) {
		// A table copied in ranges has a row per range (its splits): read
		// once every range has reported since the start.
		r, err := e2etest.Rows(ctx, conn, "SELECT sum(row_count), bool_and(finished), min(lsn), sum(split_total_count), count(*) FROM rw_catalog.rw_cdc_progress WHERE table_name = 'public.big'")
		if err != nil || len(r) != 1 {
			return progress{}, false
		}
		f := strings.Split(r[0], "|")
		n, _ := strconv.Atoi(f[0])
		splits, _ := strconv.Atoi(f[3])
		if reported, _ := strconv.Atoi(f[4]); reported == 0 || reported > 1 && reported != splits {
			return progress{}, false
		}
		p := progress{rows: n, finished: f[1] == "t" || f[1] == "true", lsn: f[2], splits: splits}
		if p.splits < seen.splits {
			// Not every range has reported since the restart yet (a ranged
			// table's ranges are splits loaded by their actors one by one).
			return progress{}, false
		}
		if p.rows < seen.rows || seen.finished && !p.finished {
			t.Fatalf("the progress went back from %+v to %+v", seen, p)
		}
		seen = p
		return p, true
	}
	waitProgress := func(what string, ok func(progress) bool) progress {
		t.Helper()
		deadline := time.Now().Add(3 * time.Minute)
		for {
			if p, found := readProgress(); found && ok(p) {
				return p
			}
			if time.Now().After(deadline) {
				p, _ := readProgress()
				t.Fatalf("timed out waiting for %s (progress %+v)", what, p)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// Kill at three points of the copy, at random fractions of it.
	marks := []float64{0.1 + 0.15*rng.Float64(), 0.35 + 0.15*rng.Float64(), 0.6 + 0.15*rng.Float64()}
	for i, frac := range marks {
		before := waitProgress(fmt.Sprintf("%.0f%% of the copy", frac*100), func(p progress) bool {
			return p.finished || p.rows >= int(frac*float64(rows))
		})
		if before.finished {
			t.Fatalf("the copy finished before kill %d: use a larger table", i+1)
		}
		if err := srv.Kill(); err != nil {
			t.Fatal(err)
		}
		conn.Close(context.Background())
		if err := srv.Restart(); err != nil {
			t.Fatal(err)
		}
		conn = e2etest.Connect(t, ctx, srv)
		after := waitProgress("the progress after the restart", func(progress) bool { return true })
		if after.rows < before.rows {
			t.Fatalf("kill %d: the progress went back from %d to %d rows", i+1, before.rows, after.rows)
		}
		t.Logf("kill %d at %d rows copied (progress after the restart: %d rows, lsn %s)", i+1, before.rows, after.rows, after.lsn)
	}
	final := waitProgress("the end of the copy", func(p progress) bool { return p.finished })
	if opts != "" && final.splits < 2 {
		t.Fatalf("a parallel copy in %d ranges", final.splits)
	}
	stopWriter()
	if w.err != nil {
		t.Fatalf("writer: %v", w.err)
	}
	// A last row: once it is in, every change before it is.
	if _, err := up.Exec(ctx, "INSERT INTO big VALUES (0, 'sentinel', 0)"); err != nil {
		t.Fatal(err)
	}
	e2etest.WaitRows(t, ctx, e2etest.QueryText(ctx, conn, "SELECT count(*) FROM big WHERE id = 0"), "1", 2*time.Minute)
	t.Logf("copied in %v with %d upstream changes; %d rows copied (committed)", time.Since(start), w.ops, final.rows)

	// The rows the upstream served to scans (read before the digests scan
	// the table): the copy's chunks over all runs, plus one per writer
	// statement at most. Backends report their counts within a second or
	// so of going idle: wait until they cover the table once.
	var fetched, seq int64
	for deadline := time.Now().Add(15 * time.Second); ; {
		if err := up.QueryRow(ctx, "SELECT coalesce(idx_tup_fetch, 0), coalesce(seq_tup_read, 0) FROM pg_stat_user_tables WHERE relname = 'big'").Scan(&fetched, &seq); err != nil {
			t.Fatal(err)
		}
		if fetched+seq >= int64(rows) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("upstream: %d rows fetched by index scans, %d by sequential scans", fetched, seq)
	fetched += seq
	copied := fetched - int64(w.ops)
	wantN, wantSum, err := tableDigest(ctx, up, "SELECT id, v, n::text FROM big")
	if err != nil {
		t.Fatal(err)
	}
	gotN, gotSum, err := tableDigest(ctx, conn, "SELECT id, v, n FROM big")
	if err != nil {
		t.Fatal(err)
	}
	if gotN != wantN || gotSum != wantSum {
		t.Fatalf("the CDC table has %d rows (digest %x), the upstream %d (digest %x)", gotN, gotSum, wantN, wantSum)
	}
	t.Logf("upstream rows read: %d (%d less the writer's %d statements), table %d rows", fetched, copied, w.ops, wantN)
	if float64(copied) > 1.2*float64(wantN) {
		t.Fatalf("the copy read %d rows over all runs for a table of %d: it did not resume", copied, wantN)
	}
}
