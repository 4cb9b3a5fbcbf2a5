package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
)

// The bulk backfill benchmark (issue 19, item 4): a GROUP BY view created over an existing
// table of N rows, on Tributary (a blocking CREATE MATERIALIZED VIEW, which returns once the
// snapshot is read and the view caught up) and on PostgreSQL 15 (CREATE MATERIALIZED VIEW,
// a parallel scan and hash aggregation), side by side in one run. The goal is PostgreSQL's
// time, at most 1.5x of it.

const (
	backfillTable = `CREATE TABLE t (id bigint PRIMARY KEY, k bigint, v bigint)`
	backfillView  = `CREATE MATERIALIZED VIEW g AS SELECT k, count(*) AS n, sum(v) AS s FROM t GROUP BY k`
	backfillLoad  = `INSERT INTO t SELECT g, g %% 1000, g FROM generate_series(%d, %d) g`
	backfillGroup = 1000 // distinct k
	memEvery      = 50 * time.Millisecond
)

// backfillResult is one timed CREATE.
type backfillResult struct {
	System     string  `json:"system"`
	Run        int     `json:"run"`
	Rows       int64   `json:"rows"`
	Seconds    float64 `json:"seconds"`
	PerSec     float64 `json:"rows_per_sec"`
	Ratio      float64 `json:"ratio_vs_postgres,omitempty"` // seconds over PostgreSQL's fastest run
	CPUSecs    float64 `json:"server_cpu_seconds"`          // the server's CPU time during the CREATE
	PeakKB     int64   `json:"peak_kb"`                     // the highest memory sample while the CREATE ran
	LoadSecs   float64 `json:"load_seconds"`                // loading the table (once per system)
	SettleSecs float64 `json:"settle_seconds"`              // then waiting for the server to go idle
	ServerArgs string  `json:"server_args,omitempty"`
}

func backfillMain(ctx context.Context, args []string, out io.Writer) (err error) {
	fs := flag.NewFlagSet("backfill", flag.ContinueOnError)
	rows := fs.Int("rows", 10_000_000, "rows in table t")
	runs := fs.Int("runs", 2, "timed CREATEs per system (a DROP between)")
	loadBatch := fs.Int("load-batch", 1_000_000, "rows per INSERT ... SELECT generate_series into Tributary")
	noPG := fs.Bool("no-pg", false, "skip PostgreSQL")
	serverBin := fs.String("server-bin", "", "prebuilt server binary (default: go build ./cmd/server)")
	serverArgs := fs.String("server-args", "", "extra flags for the started server")
	profile := fs.String("profile", "", "write a CPU profile of the first Tributary CREATE to this file (profiling costs CPU: measure in another run)")
	profileSecs := fs.Duration("profile-seconds", 2*time.Second, "length of the profile, from the start of the CREATE")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	keep := fs.Bool("keep", false, "keep the temporary directory (data, logs)")
	settle := fs.Duration("settle", 3*time.Minute, "after loading, wait up to this long for the server to go idle (Badger's compactions of the load) before the CREATEs (0: no wait)")
	timeout := fs.Duration("timeout", 30*time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *rows <= 0 || *runs <= 0 || *loadBatch <= 0 {
		return errors.New("--rows, --runs and --load-batch must be positive")
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	e, err := newEnv(ctx, *serverBin, *keep)
	if err != nil {
		return err
	}
	defer e.close()

	var results []backfillResult
	pgVersion := ""
	if !*noPG {
		var rs []backfillResult
		rs, pgVersion, err = runBackfillPostgres(ctx, e, int64(*rows), *runs, *settle)
		if err != nil {
			return fmt.Errorf("postgres: %w", err)
		}
		results = append(results, rs...)
	}
	rs, err := runBackfillTributary(ctx, e, strings.Fields(*serverArgs), int64(*rows), *runs, *loadBatch, *settle, *profile, *profileSecs)
	if err != nil {
		return fmt.Errorf("tributary: %w", err)
	}
	results = append(results, rs...)
	pgBest := 0.0
	for _, r := range results {
		if r.System == "postgres" && (pgBest == 0 || r.Seconds < pgBest) {
			pgBest = r.Seconds
		}
	}
	for i := range results {
		if pgBest > 0 {
			results[i].Ratio = results[i].Seconds / pgBest
		}
	}
	if *asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Date     string           `json:"date"`
			Rows     int              `json:"rows"`
			Postgres string           `json:"postgres_version,omitempty"`
			Results  []backfillResult `json:"results"`
		}{time.Now().UTC().Format(time.RFC3339), *rows, pgVersion, results})
	}
	printBackfill(out, results, *rows, pgVersion)
	return nil
}

func printBackfill(out io.Writer, results []backfillResult, rows int, pgVersion string) {
	fmt.Fprintf(out, "backfill benchmark, %s: %s over t (id bigint PRIMARY KEY, k bigint, v bigint), %d rows, %d groups\n",
		time.Now().UTC().Format("2006-01-02"), backfillView, rows, backfillGroup)
	if pgVersion != "" {
		fmt.Fprintf(out, "PostgreSQL %s; ratio is seconds over PostgreSQL's fastest run\n", pgVersion)
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "system\trun\tseconds\trows/s\tvs PostgreSQL\tserver CPU s\tpeak MiB\tload s\tsettle s\t")
	for _, r := range results {
		ratio := "-"
		if r.Ratio > 0 {
			ratio = fmt.Sprintf("%.2fx", r.Ratio)
		}
		fmt.Fprintf(tw, "%s\t%d\t%.2f\t%.0f\t%s\t%.2f\t%.0f\t%.1f\t%.1f\t\n", r.System, r.Run, r.Seconds, r.PerSec, ratio, r.CPUSecs, float64(r.PeakKB)/1024, r.LoadSecs, r.SettleSecs)
	}
	_ = tw.Flush() // errors of out surface on the caller's writes
	fmt.Fprintln(out, "peak MiB: the highest proportional set size (Pss) sampled every 50 ms while the CREATE ran, of the server "+
		"process (Tributary) or of the postmaster and all its children (PostgreSQL; shared buffers counted once); "+
		"server CPU s: user+system time of the server process (Tributary) or of the postmaster and its children, "+
		"exited parallel workers included (PostgreSQL); settle s: after the load, the wait until the server used under "+
		"5% of a core for 2 s in a row (Badger compacts a fresh load for tens of seconds); every view was checked: the groups, sum(n) and sum(s)")
}

// runBackfillPostgres loads t in one INSERT on a fresh cluster (fsync, synchronous_commit and
// full_page_writes off), VACUUM ANALYZEs it, waits for the cluster to settle, and times the
// CREATEs.
func runBackfillPostgres(ctx context.Context, e *env, rows int64, runs int, settle time.Duration) (rs []backfillResult, version string, err error) {
	settings := append(append([]string{}, pgSettings...), "synchronous_commit=off", "full_page_writes=off")
	cluster, version, err := launchPostgres(ctx, e, settings, "fsync", "synchronous_commit")
	if err != nil {
		return nil, "", err
	}
	defer func() {
		if stopErr := cluster.Stop(); stopErr != nil && err == nil {
			err = stopErr
		}
		if err == nil {
			err = e.clearPostgres(cluster)
		}
	}()
	conn, err := connect(ctx, cluster.DSN())
	if err != nil {
		return nil, "", err
	}
	defer conn.Close(context.Background())
	fmt.Fprintf(os.Stderr, "bench: postgres: loading %d rows\n", rows)
	start := time.Now()
	for _, s := range []string{backfillTable, fmt.Sprintf(backfillLoad, 1, rows), "VACUUM ANALYZE t"} {
		if err := execSQL(ctx, conn, s); err != nil {
			return nil, "", err
		}
	}
	load := time.Since(start).Seconds()
	pgCPU := func() (float64, error) { return postmasterCPU(cluster.DataDir) }
	settled, err := settleCPU(ctx, pgCPU, settle)
	if err != nil {
		return nil, "", err
	}
	rs, err = timeBackfill(ctx, conn, "postgres", rows, runs, func() (int64, error) { return postmasterPss(cluster.DataDir) }, pgCPU)
	for i := range rs {
		rs[i].LoadSecs, rs[i].SettleSecs = load, settled
	}
	return rs, version, err
}

// runBackfillTributary loads t on a fresh server in loadBatch-row INSERT ... SELECTs, FLUSHes,
// waits for the server to settle, and times the CREATEs (profiling the first when profile is
// set).
func runBackfillTributary(ctx context.Context, e *env, args []string, rows int64, runs, loadBatch int, settle time.Duration, profile string, profileSecs time.Duration) (rs []backfillResult, err error) {
	srv, conn, stopServer, err := startConnected(ctx, e, "tributary", args)
	if err != nil {
		return nil, err
	}
	defer func() {
		if stopErr := stopServer(); stopErr != nil && err == nil {
			err = stopErr
		}
	}()
	fmt.Fprintf(os.Stderr, "bench: tributary: loading %d rows\n", rows)
	start := time.Now()
	if err := loadBackfillTable(ctx, conn, rows, loadBatch); err != nil {
		return nil, err
	}
	load := time.Since(start).Seconds()
	srvCPU := func() (float64, error) { own, _, _, err := procStat(srv.Pid()); return own, err }
	settled, err := settleCPU(ctx, srvCPU, settle)
	if err != nil {
		return nil, err
	}
	var stopProfile func() error
	if profile != "" {
		stopProfile = fetchProfile(ctx, srv.HTTPAddr, profileSecs, profile)
	}
	rs, err = timeBackfill(ctx, conn, "tributary", rows, runs, func() (int64, error) { return pssKB(srv.Pid()) }, srvCPU)
	if stopProfile != nil {
		if perr := stopProfile(); perr != nil && err == nil {
			err = perr
		}
	}
	for i := range rs {
		rs[i].LoadSecs, rs[i].SettleSecs = load, settled
		rs[i].ServerArgs = strings.Join(args, " ")
	}
	return rs, err
}

// settleCPU waits until cpu (a server's CPU seconds) grows by less than 0.05 s a second for 2
// seconds in a row, or limit has passed (0: no wait), and returns the seconds it waited.
func settleCPU(ctx context.Context, cpu func() (float64, error), limit time.Duration) (float64, error) {
	start := time.Now()
	if limit <= 0 {
		return 0, nil
	}
	prev, err := cpu()
	if err != nil {
		return 0, err
	}
	quiet := 0
	for quiet < 2 && time.Since(start) < limit {
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(time.Second):
		}
		now, err := cpu()
		if err != nil {
			return 0, err
		}
		if now-prev < 0.05 {
			quiet++
		} else {
			quiet = 0
		}
		prev = now
	}
	return time.Since(start).Seconds(), nil
}

// loadBackfillTable creates t and fills it with rows 1..rows in batches, then FLUSHes (a
// Tributary statement).
func loadBackfillTable(ctx context.Context, conn *pgx.Conn, rows int64, batch int) error {
	if err := execSQL(ctx, conn, backfillTable); err != nil {
		return err
	}
	for lo := int64(1); lo <= rows; lo += int64(batch) {
		hi := min(lo+int64(batch)-1, rows)
		if err := execSQL(ctx, conn, fmt.Sprintf(backfillLoad, lo, hi)); err != nil {
			return err
		}
	}
	return execSQL(ctx, conn, "FLUSH")
}

// timeBackfill times runs CREATEs of the view on conn (a DROP after each), sampling memory
// with mem while each runs and reading the server's CPU seconds with cpu before and after it
// (either nil: none), and checks the view after each.
func timeBackfill(ctx context.Context, conn *pgx.Conn, system string, rows int64, runs int, mem func() (int64, error), cpu func() (float64, error)) ([]backfillResult, error) {
	var rs []backfillResult
	for run := 1; run <= runs; run++ {
		fmt.Fprintf(os.Stderr, "bench: %s: CREATE %d of %d\n", system, run, runs)
		r := backfillResult{System: system, Run: run, Rows: rows}
		var cpu0 float64
		if cpu != nil {
			var err error
			if cpu0, err = cpu(); err != nil {
				return rs, err
			}
		}
		stop := sampleMax(mem, &r.PeakKB)
		start := time.Now()
		err := execSQL(ctx, conn, backfillView)
		elapsed := time.Since(start)
		if serr := stop(); err == nil {
			err = serr
		}
		if err != nil {
			return rs, err
		}
		if cpu != nil {
			cpu1, err := cpu()
			if err != nil {
				return rs, err
			}
			r.CPUSecs = cpu1 - cpu0
		}
		if err := checkBackfillView(ctx, conn, rows); err != nil {
			return rs, fmt.Errorf("run %d: %w", run, err)
		}
		if err := execSQL(ctx, conn, "DROP MATERIALIZED VIEW g"); err != nil {
			return rs, err
		}
		r.Seconds = elapsed.Seconds()
		r.PerSec = float64(rows) / r.Seconds
		rs = append(rs, r)
	}
	return rs, nil
}

// checkBackfillView checks that g holds min(rows, 1000) groups whose counts add up to rows and
// whose sums to 1+...+rows.
func checkBackfillView(ctx context.Context, conn *pgx.Conn, rows int64) error {
	var groups, n int64
	var s string // sum(s) may pass int64 for big tables: compare as text
	err := conn.QueryRow(ctx, "SELECT count(*), sum(n)::bigint, sum(s)::text FROM g", pgx.QueryExecModeSimpleProtocol).Scan(&groups, &n, &s)
	if err != nil {
		return fmt.Errorf("read the view: %w", err)
	}
	wantS := strconv.FormatUint(uint64(rows)*uint64(rows+1)/2, 10)
	if groups != min(rows, backfillGroup) || n != rows || s != wantS {
		return fmt.Errorf("view g has %d groups, sum(n) %d, sum(s) %s; want %d, %d, %s", groups, n, s, min(rows, backfillGroup), rows, wantS)
	}
	return nil
}

// sampleMax calls mem every memEvery until the returned stop is called, keeping the highest
// value in *peak; stop returns the first sampling error. A nil mem samples nothing.
func sampleMax(mem func() (int64, error), peak *int64) (stop func() error) {
	if mem == nil {
		return func() error { return nil }
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	var firstErr error
	sample := func() {
		v, err := mem()
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			return
		}
		*peak = max(*peak, v)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(memEvery)
		defer t.Stop()
		for {
			sample()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() error {
		close(done)
		wg.Wait()
		sample() // one at the end: a short CREATE may finish between ticks
		return firstErr
	}
}

// postmasterPss is the proportional set size, in kB, of the PostgreSQL cluster in dataDir: its
// postmaster and every child (backends, parallel workers, background processes), so that shared
// buffers count once.
func postmasterPss(dataDir string) (int64, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return 0, fmt.Errorf("postmaster pid: %w", err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		return 0, fmt.Errorf("postmaster pid %q: %w", line, err)
	}
	total, err := pssKB(pid)
	if err != nil {
		return 0, err
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, fmt.Errorf("read /proc: %w", err)
	}
	for _, e := range ents {
		child, err := strconv.Atoi(e.Name())
		if err != nil || child == pid {
			continue
		}
		if _, _, ppid, err := procStat(child); err != nil || ppid != pid {
			continue // gone meanwhile, or not a child
		}
		if kb, err := pssKB(child); err == nil { // a parallel worker may exit meanwhile
			total += kb
		}
	}
	return total, nil
}

// pssKB reads the Pss line of /proc/<pid>/smaps_rollup.
func pssKB(pid int) (int64, error) {
	path := fmt.Sprintf("/proc/%d/smaps_rollup", pid)
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", path, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		rest, ok := strings.CutPrefix(line, "Pss:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("%s: unexpected line %q", path, line)
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: Pss: %w", path, err)
		}
		return n, nil
	}
	return 0, fmt.Errorf("%s: no Pss line", path)
}
