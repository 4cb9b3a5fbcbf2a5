package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
)

// The isolation benchmark (issue 4): does a backfilling materialized view block or
// backpressure a running pipeline? One server; the hot pipeline is table hot with view
// hot_agg under a steady INSERT load; the backfill is big_agg over the preloaded table big.
const (
	hotView     = `SELECT k, count(*) AS n, sum(v) AS s FROM hot GROUP BY k`
	bigView     = `SELECT a % 1000 AS g, count(*) AS n, sum(b) AS s FROM big GROUP BY a % 1000`
	bigLoadRows = 100000                 // rows per INSERT of the preload
	pollEvery   = 100 * time.Millisecond // rw_ddl_progress sampling period
)

// latencyStats summarises INSERT round trips in milliseconds.
type latencyStats struct {
	P50 float64 `json:"p50_ms"`
	P99 float64 `json:"p99_ms"`
	Max float64 `json:"max_ms"`
}

// backfillStats is what rw_ddl_progress showed of big_agg's backfill during a phase.
type backfillStats struct {
	Type       string  `json:"backfill_type"` // as rw_ddl_progress names it
	RateLimit  int64   `json:"rate_limit"`    // rows/s; 0 = unlimited
	Rows       int64   `json:"rows"`          // rows backfilled by the end of the phase
	Seconds    float64 `json:"seconds"`       // from CREATE to the last sample (or to the first sample without the job)
	RowsPerSec float64 `json:"rows_per_sec"`
	Finished   bool    `json:"finished_in_phase"`
	Samples    int     `json:"samples"`
	ViewRows   int     `json:"view_rows_checked"`
}

// phaseResult is the hot pipeline's figures over one phase.
type phaseResult struct {
	Name       string         `json:"name"`
	Seconds    float64        `json:"seconds"`
	Statements int            `json:"statements"`
	Rows       int64          `json:"rows"`
	RowsPerSec float64        `json:"rows_per_sec"`
	Latency    latencyStats   `json:"latency"`
	Backfill   *backfillStats `json:"backfill,omitempty"`
}

// isoReport is the whole run.
type isoReport struct {
	Date        string        `json:"date"`
	Cores       int           `json:"cores"`
	BaseRows    int           `json:"base_rows"`
	SecondsEach float64       `json:"seconds_per_phase"`
	Writers     int           `json:"writers"`
	Batch       int           `json:"rows_per_insert"`
	Snapshot    bool          `json:"streaming_use_snapshot_backfill"`
	LoadSeconds float64       `json:"load_seconds"`
	Phases      []phaseResult `json:"phases"`
	// Ratios of each backfill phase to the baseline: throughput and p50/p99 latency.
	Ratios       map[string]ratio `json:"ratios"`
	HotViewRows  int              `json:"hot_view_rows_checked"`
	BigViewRows  int              `json:"big_view_rows_checked"`
	HotTableRows int64            `json:"hot_table_rows"`
}

type ratio struct {
	Throughput float64 `json:"throughput"`
	P50        float64 `json:"p50"`
	P99        float64 `json:"p99"`
}

type isoConfig struct {
	baseRows  int
	seconds   time.Duration
	warmup    time.Duration
	writers   int
	batch     int
	rateLimit int64
	snapshot  bool // streaming_use_snapshot_backfill of the backfills
}

func isolationMain(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("isolation", flag.ContinueOnError)
	baseRows := fs.Int("base-rows", 1000000, "rows of table big loaded before the phases (what big_agg backfills)")
	seconds := fs.Float64("seconds", 10, "length of each measured phase (a backfill phase ends earlier when its backfill finishes)")
	writers := fs.Int("writers", 2, "client goroutines inserting into hot, one connection each")
	batch := fs.Int("batch", 100, "rows per INSERT into hot")
	rateLimit := fs.Int64("rate-limit", 100000, "backfill_rate_limit of the limited phase (rows/s)")
	kind := fs.String("backfill", "arrangement", "backfill kind of big_agg: arrangement or snapshot (sets streaming_use_snapshot_backfill)")
	warmup := fs.Duration("warmup", time.Second, "unmeasured hot load before the first phase")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	serverBin := fs.String("server-bin", "", "prebuilt server binary (default: go build ./cmd/server)")
	serverArgs := fs.String("server-args", "", "extra flags for the started server")
	timeout := fs.Duration("timeout", time.Hour, "give up after this long")
	keep := fs.Bool("keep", false, "keep the temporary directory (data, logs)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *baseRows <= 0 || *seconds <= 0 || *writers <= 0 || *batch <= 0 || *rateLimit <= 0 || *warmup < 0 {
		return errors.New("--base-rows, --seconds, --writers, --batch and --rate-limit must be positive")
	}
	if *kind != "arrangement" && *kind != "snapshot" {
		return fmt.Errorf("--backfill: %q is neither arrangement nor snapshot", *kind)
	}
	cfg := isoConfig{baseRows: *baseRows, seconds: time.Duration(*seconds * float64(time.Second)),
		warmup: *warmup, writers: *writers, batch: *batch, rateLimit: *rateLimit, snapshot: *kind == "snapshot"}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	e, err := newEnv(ctx, *serverBin, *keep)
	if err != nil {
		return err
	}
	defer e.close()
	dir, err := e.subdir("isolation")
	if err != nil {
		return err
	}
	srv, err := startTributary(ctx, e.bin, dir, strings.Fields(*serverArgs))
	if err != nil {
		return err
	}
	rep, err := runIsolation(ctx, srv.DSN(), cfg)
	if stopErr := srv.Stop(); err == nil {
		err = stopErr
	}
	if err != nil {
		return fmt.Errorf("isolation: %w", err)
	}
	if *asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	printIsolation(out, rep)
	return nil
}

// runIsolation runs every phase against the server at dsn and checks both views.
func runIsolation(ctx context.Context, dsn string, cfg isoConfig) (*isoReport, error) {
	rep := &isoReport{Date: time.Now().UTC().Format(time.RFC3339), Cores: runtime.GOMAXPROCS(0),
		BaseRows: cfg.baseRows, SecondsEach: cfg.seconds.Seconds(), Writers: cfg.writers, Batch: cfg.batch,
		Snapshot: cfg.snapshot, Ratios: map[string]ratio{}}
	ctl, err := connect(ctx, dsn)
	if err != nil {
		return nil, err
	}
	defer ctl.Close(context.Background())
	ws := make([]*pgx.Conn, cfg.writers)
	for i := range ws {
		if ws[i], err = connect(ctx, dsn); err != nil {
			return nil, err
		}
		defer ws[i].Close(context.Background())
	}
	for _, s := range []string{
		`CREATE TABLE hot (id bigint PRIMARY KEY, k bigint, v bigint)`,
		`CREATE MATERIALIZED VIEW hot_agg AS ` + hotView,
		`CREATE TABLE big (id bigint PRIMARY KEY, a bigint, b bigint)`,
	} {
		if err := execSQL(ctx, ctl, s); err != nil {
			return nil, err
		}
	}
	fmt.Fprintf(os.Stderr, "bench: isolation: loading %d rows into big\n", cfg.baseRows)
	start := time.Now()
	for lo := 0; lo < cfg.baseRows; lo += bigLoadRows {
		hi := min(lo+bigLoadRows, cfg.baseRows) - 1
		if err := execSQL(ctx, ctl, fmt.Sprintf(`INSERT INTO big SELECT g, (g::bigint * 7919) %% 1000003, g %% 1000 FROM generate_series(%d, %d) AS g`, lo, hi)); err != nil {
			return nil, err
		}
	}
	if err := execSQL(ctx, ctl, "FLUSH"); err != nil {
		return nil, err
	}
	rep.LoadSeconds = time.Since(start).Seconds()

	h := &hotLoad{conns: ws, batch: cfg.batch}
	if cfg.warmup > 0 {
		if _, err := h.measure(ctx, ctl, "warm-up", cfg.warmup, nil); err != nil {
			return nil, err
		}
	}
	base, err := h.measure(ctx, ctl, "(a) baseline", cfg.seconds, nil)
	if err != nil {
		return nil, err
	}
	rep.Phases = append(rep.Phases, base)
	for _, limit := range []int64{0, cfg.rateLimit} {
		name := "(b) backfill, unlimited"
		if limit > 0 {
			name = fmt.Sprintf("(c) backfill, limit %d rows/s", limit)
		}
		p, err := backfillPhase(ctx, ctl, h, name, cfg, limit)
		if err != nil {
			return nil, err
		}
		rep.Phases = append(rep.Phases, p)
		rep.BigViewRows = p.Backfill.ViewRows
		rep.Ratios[name] = ratio{
			Throughput: p.RowsPerSec / base.RowsPerSec,
			P50:        p.Latency.P50 / base.Latency.P50,
			P99:        p.Latency.P99 / base.Latency.P99,
		}
	}
	// A second baseline shows drift (a bigger hot table, compaction of the backfill's writes).
	after, err := h.measure(ctx, ctl, "(a') baseline after", cfg.seconds, nil)
	if err != nil {
		return nil, err
	}
	rep.Phases = append(rep.Phases, after)
	if err := execSQL(ctx, ctl, "FLUSH"); err != nil {
		return nil, err
	}
	if rep.HotViewRows, err = checkEqual(ctx, ctl, "SELECT * FROM hot_agg", hotView); err != nil {
		return nil, fmt.Errorf("hot_agg: %w", err)
	}
	if err := ctl.QueryRow(ctx, "SELECT count(*) FROM hot", pgx.QueryExecModeSimpleProtocol).Scan(&rep.HotTableRows); err != nil {
		return nil, fmt.Errorf("count hot: %w", err)
	}
	if rep.HotTableRows != h.next.Load() {
		return nil, fmt.Errorf("hot has %d rows, the writers inserted %d", rep.HotTableRows, h.next.Load())
	}
	return rep, nil
}

// backfillPhase creates big_agg in the background with the given rate limit (0: unlimited)
// and measures the hot load until the backfill finishes or cfg.seconds pass. Afterwards it
// lifts the limit, waits for the backfill, checks big_agg and drops it.
func backfillPhase(ctx context.Context, ctl *pgx.Conn, h *hotLoad, name string, cfg isoConfig, limit int64) (phaseResult, error) {
	rate := "DEFAULT"
	if limit > 0 {
		rate = strconv.FormatInt(limit, 10)
	}
	for _, s := range []string{"SET background_ddl = true", "SET backfill_rate_limit = " + rate,
		fmt.Sprintf("SET streaming_use_snapshot_backfill = %t", cfg.snapshot)} {
		if err := execSQL(ctx, ctl, s); err != nil {
			return phaseResult{}, err
		}
	}
	bf := &backfillStats{RateLimit: limit}
	p, err := h.measure(ctx, ctl, name, cfg.seconds, bf)
	if err != nil {
		return p, err
	}
	if !bf.Finished {
		for _, s := range []string{"ALTER MATERIALIZED VIEW big_agg SET BACKFILL_RATE_LIMIT = DEFAULT", "WAIT"} {
			if err := execSQL(ctx, ctl, s); err != nil {
				return p, err
			}
		}
	}
	if err := execSQL(ctx, ctl, "FLUSH"); err != nil {
		return p, err
	}
	if bf.ViewRows, err = checkEqual(ctx, ctl, "SELECT * FROM big_agg", bigView); err != nil {
		return p, fmt.Errorf("big_agg after %s: %w", name, err)
	}
	return p, execSQL(ctx, ctl, "DROP MATERIALIZED VIEW big_agg")
}

// hotLoad drives the hot pipeline: each connection inserts batch rows per statement with
// fresh ids, as fast as its statements return.
type hotLoad struct {
	conns []*pgx.Conn
	batch int
	next  atomic.Int64 // the next unused id of hot
}

// measure runs the load for d. With bf set it first creates big_agg (background DDL), ends
// early when rw_ddl_progress no longer lists the job, and fills bf from its samples.
func (h *hotLoad) measure(ctx context.Context, ctl *pgx.Conn, name string, d time.Duration, bf *backfillStats) (phaseResult, error) {
	fmt.Fprintf(os.Stderr, "bench: isolation: %s\n", name)
	r := phaseResult{Name: name, Backfill: bf}
	var stop atomic.Bool
	lat := make([][]time.Duration, len(h.conns))
	errs := make([]error, len(h.conns))
	var wg sync.WaitGroup
	start := time.Now()
	for i, conn := range h.conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat[i], errs[i] = h.write(ctx, conn, &stop)
			if errs[i] != nil {
				stop.Store(true) // the others stop too
			}
		}()
	}
	var pollErr error
	if bf != nil {
		pollErr = pollBackfill(ctx, ctl, start, d, &stop, bf)
	} else {
		waitUntil(ctx, start.Add(d), &stop)
	}
	stop.Store(true)
	wg.Wait()
	elapsed := time.Since(start)
	if err := errors.Join(append(errs, pollErr)...); err != nil {
		return r, fmt.Errorf("%s: %w", name, err)
	}
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	r.Seconds = elapsed.Seconds()
	r.Statements = len(all)
	r.Rows = int64(len(all) * h.batch)
	r.RowsPerSec = float64(r.Rows) / r.Seconds
	r.Latency = latencies(all)
	return r, nil
}

// write inserts until stop is set and returns each statement's round trip.
func (h *hotLoad) write(ctx context.Context, conn *pgx.Conn, stop *atomic.Bool) ([]time.Duration, error) {
	var lat []time.Duration
	for !stop.Load() {
		hi := h.next.Add(int64(h.batch)) - 1
		lo := hi - int64(h.batch) + 1
		sql := fmt.Sprintf(`INSERT INTO hot SELECT g, g %% 1000, g %% 97 FROM generate_series(%d, %d) AS g`, lo, hi)
		t := time.Now()
		if err := execSQL(ctx, conn, sql); err != nil {
			return lat, err
		}
		lat = append(lat, time.Since(t))
	}
	return lat, nil
}

// waitUntil returns at deadline, when stop is set (a writer failed), or when ctx ends.
func waitUntil(ctx context.Context, deadline time.Time, stop *atomic.Bool) {
	for !stop.Load() && ctx.Err() == nil {
		left := time.Until(deadline)
		if left <= 0 {
			return
		}
		time.Sleep(min(left, pollEvery)) // polls stop; the deadline is the measure's end
	}
}

// pollBackfill creates big_agg (background DDL returns at once), then samples its progress
// every pollEvery until the job is gone from rw_ddl_progress or d has passed since start.
func pollBackfill(ctx context.Context, ctl *pgx.Conn, start time.Time, d time.Duration, stop *atomic.Bool, bf *backfillStats) error {
	created := time.Now()
	if err := execSQL(ctx, ctl, "CREATE MATERIALIZED VIEW big_agg AS "+bigView); err != nil {
		return err
	}
	deadline := start.Add(d)
	for !stop.Load() {
		rows, kind, running, err := backfillProgress(ctx, ctl)
		if err != nil {
			return err
		}
		bf.Samples++
		bf.Seconds = time.Since(created).Seconds()
		if !running {
			bf.Finished = true
			var total int64
			if err := ctl.QueryRow(ctx, "SELECT count(*) FROM big", pgx.QueryExecModeSimpleProtocol).Scan(&total); err != nil {
				return fmt.Errorf("count big: %w", err)
			}
			bf.Rows = total
			break
		}
		bf.Rows, bf.Type = rows, kind
		if !time.Now().Before(deadline) {
			break
		}
		waitUntil(ctx, time.Now().Add(pollEvery), stop)
	}
	if bf.Seconds > 0 {
		bf.RowsPerSec = float64(bf.Rows) / bf.Seconds
	}
	return ctx.Err()
}

// backfillProgress reads the one running job's rows ("12.50% (125/1000)" or "(125/?)")
// and backfill type from rw_ddl_progress; running is false when no job is listed.
func backfillProgress(ctx context.Context, conn *pgx.Conn) (rows int64, kind string, running bool, err error) {
	var progress string
	err = conn.QueryRow(ctx, `SELECT progress, backfill_type FROM rw_catalog.rw_ddl_progress`,
		pgx.QueryExecModeSimpleProtocol).Scan(&progress, &kind)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, "", false, nil
	}
	if err != nil {
		return 0, "", false, fmt.Errorf("rw_ddl_progress: %w", err)
	}
	rows, err = parseProgress(progress)
	return rows, kind, true, err
}

func parseProgress(s string) (int64, error) {
	open, slash := strings.LastIndexByte(s, '('), strings.LastIndexByte(s, '/')
	if open < 0 || slash < open {
		return 0, fmt.Errorf("rw_ddl_progress: unexpected progress %q", s)
	}
	n, err := strconv.ParseInt(s[open+1:slash], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("rw_ddl_progress: progress %q: %w", s, err)
	}
	return n, nil
}

// latencies returns the p50, p99 and maximum of ds in milliseconds (nearest rank); it sorts ds.
func latencies(ds []time.Duration) latencyStats {
	if len(ds) == 0 {
		return latencyStats{}
	}
	slices.Sort(ds)
	rank := func(p float64) float64 {
		i := int(p*float64(len(ds))+0.999999) - 1
		return float64(ds[max(0, min(i, len(ds)-1))]) / 1e6
	}
	return latencyStats{P50: rank(0.50), P99: rank(0.99), Max: float64(ds[len(ds)-1]) / 1e6}
}

// checkEqual compares a view's rows with its query's as sorted text rows and returns their number.
func checkEqual(ctx context.Context, conn *pgx.Conn, view, query string) (int, error) {
	got, err := textRows(ctx, conn, view)
	if err != nil {
		return 0, err
	}
	want, err := textRows(ctx, conn, query)
	if err != nil {
		return 0, err
	}
	if len(got) != len(want) {
		return 0, fmt.Errorf("view has %d rows, its query %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			return 0, fmt.Errorf("view differs from its query: first difference (sorted) %q vs %q", got[i], want[i])
		}
	}
	if len(got) == 0 {
		return 0, errors.New("view is empty")
	}
	return len(got), nil
}

func printIsolation(out io.Writer, r *isoReport) {
	fmt.Fprintf(out, "isolation benchmark, %s: %d writers x INSERT of %d rows into hot (view hot_agg); big has %d rows (loaded in %.1f s); %d cores; streaming_use_snapshot_backfill = %t\n",
		r.Date[:10], r.Writers, r.Batch, r.BaseRows, r.LoadSeconds, r.Cores, r.Snapshot)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "phase\tseconds\tstatements\thot rows/s\tp50 ms\tp99 ms\tmax ms\tbackfilled rows\tbackfill rows/s\tfinished\tbackfill type\t")
	for _, p := range r.Phases {
		bRows, bRate, done, kind := "-", "-", "-", "-"
		if b := p.Backfill; b != nil {
			bRows, bRate, done = strconv.FormatInt(b.Rows, 10), fmt.Sprintf("%.0f", b.RowsPerSec), strconv.FormatBool(b.Finished)
			if b.Type != "" {
				kind = b.Type
			}
		}
		fmt.Fprintf(tw, "%s\t%.1f\t%d\t%.0f\t%.2f\t%.2f\t%.2f\t%s\t%s\t%s\t%s\t\n", p.Name, p.Seconds, p.Statements, p.RowsPerSec,
			p.Latency.P50, p.Latency.P99, p.Latency.Max, bRows, bRate, done, kind)
	}
	_ = tw.Flush() // errors of out surface on the caller's writes
	for _, p := range r.Phases {
		if q, ok := r.Ratios[p.Name]; ok {
			fmt.Fprintf(out, "%s / (a): throughput %.2fx, p50 %.2fx, p99 %.2fx\n", p.Name, q.Throughput, q.P50, q.P99)
		}
	}
	fmt.Fprintf(out, "checked: big_agg equals its query after each backfill (%d rows); hot_agg equals its query (%d rows over %d hot rows)\n",
		r.BigViewRows, r.HotViewRows, r.HotTableRows)
}
