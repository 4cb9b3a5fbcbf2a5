package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"sort"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tributary/tributary/e2e/pgtest"
)

// cdcReport is what bench cdc measured (issue 13).
type cdcReport struct {
	Rows      int     `json:"rows"`
	PGVersion string  `json:"pg_version"`
	LoadSec   float64 `json:"load_seconds"`
	// PostgreSQL's own COPY big TO STDOUT of the same table, rows/s.
	PGCopyRowsPerSec float64 `json:"pg_copy_rows_per_sec"`
	// The CDC table's copy: a blocking CREATE TABLE, rows/s.
	CopySec        float64 `json:"copy_seconds"`
	CopyRowsPerSec float64 `json:"copy_rows_per_sec"`
	CopyVsPG       float64 `json:"copy_vs_pg_copy"`
	// The change stream: Events upstream changes queued in the slot while
	// the table's source was paused, then drained.
	Events          int     `json:"events"`
	EventsPerSec    float64 `json:"events_per_sec"`
	UpstreamPerSec  float64 `json:"upstream_events_per_sec"`
	FreshRate       int     `json:"freshness_background_rate"`
	FreshProbes     int     `json:"freshness_probes"`
	FreshP50Ms      float64 `json:"freshness_p50_ms"`
	FreshP99Ms      float64 `json:"freshness_p99_ms"`
	FreshMaxMs      float64 `json:"freshness_max_ms"`
	ServerArgs      string  `json:"server_args"`
	CopyParallelism int     `json:"copy_parallelism"`
	BarrierInterval string  `json:"barrier_interval"`
}

func cdcMain(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("cdc", flag.ContinueOnError)
	rows := fs.Int("rows", 10_000_000, "rows of the upstream table copied")
	events := fs.Int("events", 1_000_000, "upstream row changes (updates) drained from the slot for the change-stream rate")
	rate := fs.Int("rate", 20_000, "background upstream inserts per second while freshness is probed")
	seconds := fs.Int("seconds", 30, "how long freshness is probed")
	parallel := fs.Int("copy-parallelism", 1, "backfill.parallelism of the CDC table: key ranges copied at once")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	serverBin := fs.String("server-bin", "", "prebuilt server binary (default: go build ./cmd/server)")
	serverArgs := fs.String("server-args", "", "extra flags for the started server")
	timeout := fs.Duration("timeout", time.Hour, "give up after this long")
	keep := fs.Bool("keep", false, "keep the temporary directory (data, logs)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *rows <= 0 || *events <= 0 || *rate <= 0 || *seconds <= 0 {
		return errors.New("--rows, --events, --rate and --seconds must be positive")
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	e, err := newEnv(ctx, *serverBin, *keep)
	if err != nil {
		return err
	}
	defer e.close()
	r, err := runCDC(ctx, e, *rows, *events, *rate, time.Duration(*seconds)*time.Second, *serverArgs, *parallel)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	printCDC(out, r)
	return nil
}

func runCDC(ctx context.Context, e *env, rows, events, rate int, probeFor time.Duration, serverArgs string, parallel int) (r *cdcReport, err error) {
	r = &cdcReport{Rows: rows, Events: events, FreshRate: rate, ServerArgs: serverArgs, CopyParallelism: parallel}
	dir, err := e.subdir("postgres")
	if err != nil {
		return nil, err
	}
	cluster, err := pgtest.Launch(dir, append(append([]string{}, pgSettings...), pgtest.LogicalSettings...))
	if err != nil {
		return nil, err
	}
	defer func() {
		if stopErr := cluster.Stop(); stopErr != nil && err == nil {
			err = stopErr
		}
	}()
	up, err := connect(ctx, cluster.DSN())
	if err != nil {
		return nil, err
	}
	defer up.Close(context.Background())
	if err := up.QueryRow(ctx, "SHOW server_version").Scan(&r.PGVersion); err != nil {
		return nil, fmt.Errorf("postgres version: %w", err)
	}

	fmt.Fprintf(os.Stderr, "bench: loading %d upstream rows\n", rows)
	began := time.Now()
	for _, s := range []string{
		"CREATE TABLE big (id int8 PRIMARY KEY, k int4 NOT NULL, v text, ts timestamptz)",
		fmt.Sprintf("INSERT INTO big SELECT g, g %% 1000, 'value ' || g, timestamptz '2024-01-01 00:00:00+00' + g * interval '1 second' FROM generate_series(1, %d) g", rows),
		"VACUUM ANALYZE big",
		"CHECKPOINT",
	} {
		if _, err := up.Exec(ctx, s); err != nil {
			return nil, fmt.Errorf("upstream: %s: %w", firstWords(s), err)
		}
	}
	r.LoadSec = time.Since(began).Seconds()
	// Both copies run on a quiet machine: the load's dirty pages (a few GB of table and WAL)
	// are written out now, not by the kernel while one of them runs.
	syscall.Sync()

	// PostgreSQL's own COPY of the same table (warm: VACUUM read it).
	fmt.Fprintln(os.Stderr, "bench: COPY big TO STDOUT")
	began = time.Now()
	tag, err := up.PgConn().CopyTo(ctx, io.Discard, "COPY big TO STDOUT")
	if err != nil {
		return nil, fmt.Errorf("upstream: COPY TO STDOUT: %w", err)
	}
	r.PGCopyRowsPerSec = float64(tag.RowsAffected()) / time.Since(began).Seconds()

	tdir, err := e.subdir("tributary")
	if err != nil {
		return nil, err
	}
	srv, err := startTributary(ctx, e.bin, tdir, strings.Fields(serverArgs))
	if err != nil {
		return nil, err
	}
	defer func() {
		if stopErr := srv.Stop(); stopErr != nil && err == nil {
			err = stopErr
		}
	}()
	conn, err := connect(ctx, srv.DSN())
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.Background())
	if err := conn.QueryRow(ctx, "SHOW barrier_interval_ms").Scan(&r.BarrierInterval); err != nil {
		r.BarrierInterval = "default"
	}

	// The copy: a blocking CREATE returns once every row is in.
	host, port, _ := net.SplitHostPort(cluster.Addr)
	fmt.Fprintln(os.Stderr, "bench: CREATE TABLE big ... WITH (connector = 'postgres-cdc')")
	began = time.Now()
	if _, err := conn.Exec(ctx, fmt.Sprintf(`CREATE TABLE big (id bigint, k int, v varchar, ts timestamptz, PRIMARY KEY (id))
		WITH (connector = 'postgres-cdc', hostname = '%s', port = '%s', username = 'postgres', database.name = 'dev', table.name = 'big', backfill.parallelism = '%d')`, host, port, parallel)); err != nil {
		return nil, fmt.Errorf("create the CDC table: %w", err)
	}
	r.CopySec = time.Since(began).Seconds()
	r.CopyRowsPerSec = float64(rows) / r.CopySec
	r.CopyVsPG = r.CopyRowsPerSec / r.PGCopyRowsPerSec
	var n int64
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM big").Scan(&n); err != nil || n != int64(rows) {
		return nil, fmt.Errorf("the CDC table has %d rows after its CREATE, want %d (%v)", n, rows, err)
	}

	// The change stream: changes queued in the slot while the source is
	// paused, then drained at the table's pace.
	fmt.Fprintf(os.Stderr, "bench: %d upstream updates, then drained\n", events)
	if _, err := conn.Exec(ctx, "ALTER TABLE big SET SOURCE_RATE_LIMIT = 0"); err != nil {
		return nil, err
	}
	began = time.Now()
	const perStatement = 10_000
	for lo := 0; lo < events; lo += perStatement {
		hi := min(lo+perStatement, events)
		if _, err := up.Exec(ctx, "UPDATE big SET k = k + 1 WHERE id > $1 AND id <= $2", lo, hi); err != nil {
			return nil, fmt.Errorf("upstream updates: %w", err)
		}
	}
	if _, err := up.Exec(ctx, "INSERT INTO big VALUES (-1, 0, 'sentinel', now())"); err != nil {
		return nil, err
	}
	r.UpstreamPerSec = float64(events) / time.Since(began).Seconds()
	began = time.Now()
	if _, err := conn.Exec(ctx, "ALTER TABLE big SET SOURCE_RATE_LIMIT = DEFAULT"); err != nil {
		return nil, err
	}
	if err := waitVisible(ctx, conn, -1, 10*time.Minute); err != nil {
		return nil, fmt.Errorf("drain the change stream: %w", err)
	}
	r.EventsPerSec = float64(events+1) / time.Since(began).Seconds()

	// Freshness: probes inserted upstream one at a time under a background
	// load, each timed from its commit until a query on Tributary sees it.
	fmt.Fprintf(os.Stderr, "bench: freshness for %v under %d inserts/s\n", probeFor, rate)
	lat, err := cdcFreshness(ctx, cluster.DSN(), up, conn, rate, probeFor)
	if err != nil {
		return nil, err
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	r.FreshProbes = len(lat)
	pct := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))]) / float64(time.Millisecond)
	}
	r.FreshP50Ms, r.FreshP99Ms, r.FreshMaxMs = pct(0.5), pct(0.99), pct(1)
	return r, nil
}

// cdcFreshness runs a background writer of rate inserts a second on its
// own connection and probes until d passes: each probe row is inserted,
// then looked up on Tributary every 2 ms until seen.
func cdcFreshness(ctx context.Context, dsn string, up, conn *pgx.Conn, rate int, d time.Duration) ([]time.Duration, error) {
	wconn, err := connect(ctx, dsn)
	if err != nil {
		return nil, err
	}
	defer wconn.Close(context.Background())
	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var werr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		const tick = 10 * time.Millisecond
		per := max(rate/100, 1)
		next := int64(1_000_000_000)
		t := time.NewTicker(tick)
		defer t.Stop()
		for {
			select {
			case <-wctx.Done():
				return
			case <-t.C:
			}
			if _, err := wconn.Exec(wctx, "INSERT INTO big SELECT g, 1, 'load', now() FROM generate_series($1::int8, $2::int8) g", next, next+int64(per)-1); err != nil {
				if wctx.Err() == nil {
					werr = fmt.Errorf("background writer: %w", err)
				}
				return
			}
			next += int64(per)
		}
	}()
	defer func() { stop(); wg.Wait() }()
	var lat []time.Duration
	deadline := time.Now().Add(d)
	for id := int64(-2); time.Now().Before(deadline); id-- {
		if _, err := up.Exec(ctx, "INSERT INTO big VALUES ($1, 0, 'probe', now())", id); err != nil {
			return nil, fmt.Errorf("probe: %w", err)
		}
		began := time.Now()
		if err := waitVisible(ctx, conn, id, time.Minute); err != nil {
			return nil, fmt.Errorf("probe %d: %w", id, err)
		}
		lat = append(lat, time.Since(began))
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	stop()
	wg.Wait()
	if werr != nil {
		return nil, werr
	}
	return lat, nil
}

// waitVisible polls Tributary every 2 ms until table big has row id.
func waitVisible(ctx context.Context, conn *pgx.Conn, id int64, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		var n int64
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM big WHERE id = $1", id).Scan(&n); err != nil {
			return err
		}
		if n == 1 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("row %d not visible after %v", id, limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
	}
}

func firstWords(s string) string {
	f := strings.Fields(s)
	return strings.Join(f[:min(3, len(f))], " ")
}

func printCDC(out io.Writer, r *cdcReport) {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "PostgreSQL %s, %d rows (id int8 key, int4, text, timestamptz), loaded in %.0f s\n", r.PGVersion, r.Rows, r.LoadSec)
	fmt.Fprintf(w, "PostgreSQL COPY big TO STDOUT\t%.0f rows/s\n", r.PGCopyRowsPerSec)
	fmt.Fprintf(w, "CDC table copy (blocking CREATE, %d key ranges)\t%.0f rows/s\t%.1f s\t%.2fx COPY\n", r.CopyParallelism, r.CopyRowsPerSec, r.CopySec, r.CopyVsPG)
	fmt.Fprintf(w, "change stream, %d updates drained from the slot\t%.0f events/s\t(upstream wrote %.0f/s)\n", r.Events, r.EventsPerSec, r.UpstreamPerSec)
	fmt.Fprintf(w, "freshness under %d inserts/s, %d probes\tp50 %.0f ms\tp99 %.0f ms\tmax %.0f ms\n", r.FreshRate, r.FreshProbes, r.FreshP50Ms, r.FreshP99Ms, r.FreshMaxMs)
	fmt.Fprintf(w, "goal: copy >= 0.5x PostgreSQL's COPY\t%s\n", map[bool]string{true: "met", false: "NOT met"}[r.CopyVsPG >= 0.5])
	w.Flush()
}
