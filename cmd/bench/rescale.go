package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
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

// The rescale benchmark (issue 12): how long does ALTER MATERIALIZED VIEW ... SET
// PARALLELISM pause the streaming engine, does the pause grow with the job's state, and what
// does an unrelated running pipeline see meanwhile? For each state size N, on a fresh
// server: table big (N rows) and view big_agg grouping it by its primary key (N groups of
// aggregation state and N rows of view), the hot pipeline of the isolation benchmark
// (table hot, view hot_agg, paced INSERTs) running throughout; a baseline window of the hot
// load alone, then a series of ALTERs of big_agg among parallelism 1-4, each followed by a
// quiet window, then the first query of big_agg, the first DML on big (new groups through
// the rebuilt, cold actors) and a check of big_agg against big.
const (
	rescaleView = `SELECT id, count(*) AS n, sum(v) AS s FROM big GROUP BY id`
	// big_agg has one group per row of big (id is big's key), so its sums equal big's:
	// checked at any size without holding N rows in the bench.
	rescaleViewSums  = `SELECT count(*), sum(n), sum(s), sum(id * s) FROM big_agg`
	rescaleTableSums = `SELECT count(*), count(*), sum(v), sum(id * v) FROM big`
	// rescaleFullCheck is the size up to which big_agg is also compared row by row.
	rescaleFullCheck = 200000
	// Targets of the issue: the pause stays under two barrier intervals and does not grow
	// with state. "Does not grow" is read as: the median ALTER-to-next-commit of the
	// largest state is at most rescaleGrowth times the smallest's plus one barrier interval's
	// tenth (a slack for the phase of the barrier timer, which the ALTER does not reset).
	rescaleGrowth = 1.5
)

// rescaleConfig is what the flags set.
type rescaleConfig struct {
	sizes       []int // rows of big per run
	parallelism []int // big_agg's parallelism after each ALTER, in order
	baseline    time.Duration
	window      time.Duration // quiet hot load after each ALTER before anything else runs
	settle      time.Duration // hot load after a rescale's checks, before the next ALTER
	writers     int
	batch       int
	hotRate     int
	loadBatch   int
	dmlRows     int // rows of the first INSERT into big after each rescale
}

// hotWindow is the hot pipeline's figures over a time window.
type hotWindow struct {
	Seconds    float64      `json:"seconds"`
	Statements int          `json:"statements"`
	RowsPerSec float64      `json:"rows_per_sec"`
	Insert     latencyStats `json:"insert_latency"`
	Barrier    barrierStats `json:"barrier_latency"`
	// MaxCommitGapMs is the longest time between two consecutive committed epochs whose
	// later one committed in the window: during a rebuild no barrier flies, so this (not
	// the barrier latency of the epochs that do commit) shows the engine's pause.
	MaxCommitGapMs float64 `json:"max_commit_gap_ms"`
}

// rescaleStep is one ALTER and what followed it.
type rescaleStep struct {
	From int `json:"from"` // big_agg's materialize parallelism before, from rw_fragments
	To   int `json:"to"`
	// Client round trips: the ALTER, then FLUSH right after it (ALTER+FLUSH is their sum).
	AlterMs float64 `json:"alter_ms"`
	FlushMs float64 `json:"flush_ms"`
	// ServerPauseMs is the server's own "streaming jobs rescheduled pause=" (commit of what
	// was written, stop, rebuild); -1 when the log did not show it.
	ServerPauseMs float64 `json:"server_pause_ms"`
	// NextCommitMs runs from the ALTER's start to the commit of the first epoch committed
	// after the ALTER returned (from rw_barrier_latency): the issue's "time from ALTER to
	// the next committed epoch". NextBarrierMs is that epoch's own barrier latency.
	NextCommitMs  float64   `json:"next_commit_ms"`
	NextBarrierMs float64   `json:"next_barrier_latency_ms"`
	Hot           hotWindow `json:"hot"` // from the ALTER's start over the quiet window
	// After the window, on the rebuilt actors: the first query of big_agg (a point lookup),
	// the first DML on big (an INSERT of dmlRows new ids: each one a group the cold
	// aggregation looks up in storage), and the check of big_agg against big.
	FirstQueryMs float64 `json:"first_query_ms"`
	FirstDMLMs   float64 `json:"first_dml_ms"`
	CheckMs      float64 `json:"check_ms"`
	ViewRows     int64   `json:"view_rows"`
	Fragments    string  `json:"fragments"` // kind:parallelism of big_agg's fragments after the ALTER

	returned time.Time    // when the ALTER returned
	window   timeWindow   // from the ALTER's start, cfg.window long
	hist     []barrierRow // rw_barrier_latency read at the window's end
}

// rescaleRun is one state size on its own server.
type rescaleRun struct {
	Rows          int           `json:"rows"`
	LoadSeconds   float64       `json:"load_seconds"`
	CreateSeconds float64       `json:"create_seconds"` // blocking CREATE MATERIALIZED VIEW big_agg (backfill)
	Baseline      hotWindow     `json:"baseline"`
	During        hotWindow     `json:"during"` // the union of the steps' windows
	Steps         []rescaleStep `json:"rescales"`
	// Medians and maxima over the steps.
	MedianNextCommitMs float64 `json:"median_next_commit_ms"`
	MaxNextCommitMs    float64 `json:"max_next_commit_ms"`
	MedianAlterMs      float64 `json:"median_alter_ms"`
	HotViewRows        int     `json:"hot_view_rows_checked"`
	HotTableRows       int64   `json:"hot_table_rows"`

	baseHist []barrierRow // rw_barrier_latency read at the baseline's end
}

// rescaleReport is the whole run.
type rescaleReport struct {
	Date              string        `json:"date"`
	Cores             int           `json:"cores"`
	BarrierIntervalMs int           `json:"barrier_interval_ms"`
	Writers           int           `json:"writers"`
	Batch             int           `json:"rows_per_insert"`
	HotRate           int           `json:"hot_rate"`
	WindowSeconds     float64       `json:"window_seconds"`
	Runs              []rescaleRun  `json:"runs"`
	Targets           []targetCheck `json:"targets"`
}

func rescaleMain(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("rescale", flag.ContinueOnError)
	rows := fs.String("rows", "1000000,10000000", "rows of big (and groups of big_agg), one fresh server per size")
	par := fs.String("parallelism", "4,1,3,2,4,1", "big_agg's parallelism after each ALTER, in order (the server starts it at its default, the cores)")
	baseline := fs.Duration("baseline", 10*time.Second, "hot load alone before the first ALTER")
	window := fs.Duration("window", 3*time.Second, "hot load measured after each ALTER before the checks run")
	settle := fs.Duration("settle", time.Second, "hot load after each rescale's checks, before the next ALTER")
	writers := fs.Int("writers", 2, "client goroutines inserting into hot, one connection each")
	batch := fs.Int("batch", 100, "rows per INSERT into hot")
	hotRate := fs.Int("hot-rate", 20000, "rows/s the writers together insert into hot, paced (0: as fast as INSERTs return)")
	loadBatch := fs.Int("load-batch", 1000000, "rows per INSERT of big's load")
	dmlRows := fs.Int("dml-rows", 1000, "rows of the first INSERT into big after each rescale")
	asJSON := fs.Bool("json", false, "print JSON instead of tables")
	serverBin := fs.String("server-bin", "", "prebuilt server binary (default: go build ./cmd/server)")
	serverArgs := fs.String("server-args", "", "extra flags for the started servers (the bench adds --log-level info first, for the server's pause)")
	timeout := fs.Duration("timeout", 2*time.Hour, "give up after this long")
	keep := fs.Bool("keep", false, "keep the temporary directory (data, logs)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	sizes, err := parseInts(*rows)
	if err != nil {
		return fmt.Errorf("--rows: %w", err)
	}
	ps, err := parseInts(*par)
	if err != nil {
		return fmt.Errorf("--parallelism: %w", err)
	}
	if *baseline <= 0 || *window <= 0 || *settle < 0 || *writers <= 0 || *batch <= 0 || *loadBatch <= 0 || *dmlRows <= 0 || *timeout <= 0 {
		return errors.New("--baseline, --window, --writers, --batch, --load-batch, --dml-rows and --timeout must be positive, --settle not negative")
	}
	if *hotRate < 0 {
		return errors.New("--hot-rate must not be negative")
	}
	cfg := rescaleConfig{sizes: sizes, parallelism: ps, baseline: *baseline, window: *window, settle: *settle,
		writers: *writers, batch: *batch, hotRate: *hotRate, loadBatch: *loadBatch, dmlRows: *dmlRows}

	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	e, err := newEnv(ctx, *serverBin, *keep)
	if err != nil {
		return err
	}
	defer e.close()
	rep := newRescaleReport(cfg)
	for _, n := range cfg.sizes {
		dir, err := e.subdir(fmt.Sprintf("rescale-%d", n))
		if err != nil {
			return err
		}
		srv, err := startTributary(ctx, e.bin, dir, append([]string{"--log-level", "info"}, strings.Fields(*serverArgs)...))
		if err != nil {
			return err
		}
		run, err := runRescale(ctx, srv.DSN(), srv.LogPath, n, cfg, rep)
		if stopErr := srv.Stop(); err == nil {
			err = stopErr
		}
		if err != nil {
			return fmt.Errorf("rescale, %d rows: %w (server log %s)", n, err, srv.LogPath)
		}
		rep.Runs = append(rep.Runs, *run)
	}
	rep.judge()
	if *asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(rep)
	}
	printRescale(out, rep)
	return nil
}

func newRescaleReport(cfg rescaleConfig) *rescaleReport {
	return &rescaleReport{Date: time.Now().UTC().Format(time.RFC3339), Cores: runtime.GOMAXPROCS(0), BarrierIntervalMs: 1000,
		Writers: cfg.writers, Batch: cfg.batch, HotRate: cfg.hotRate, WindowSeconds: cfg.window.Seconds()}
}

// hotSample is one INSERT into hot: when it was sent and its round trip.
type hotSample struct {
	at time.Time
	d  time.Duration
}

// runRescale measures one state size against the server at dsn (whose log is logPath) and
// records the barrier interval it reads in rep.
func runRescale(ctx context.Context, dsn, logPath string, n int, cfg rescaleConfig, rep *rescaleReport) (*rescaleRun, error) {
	run := &rescaleRun{Rows: n}
	ctl, err := connect(ctx, dsn)
	if err != nil {
		return nil, err
	}
	defer ctl.Close(context.Background())
	var interval string
	if err := ctl.QueryRow(ctx, "SHOW barrier_interval_ms", pgx.QueryExecModeSimpleProtocol).Scan(&interval); err == nil {
		if ms, err := strconv.Atoi(interval); err == nil {
			rep.BarrierIntervalMs = ms
		}
	}
	h, closeHot, err := newHotLoad(ctx, dsn, ctl, cfg.writers, cfg.batch, cfg.hotRate)
	if err != nil {
		return nil, err
	}
	defer closeHot()

	fmt.Fprintf(os.Stderr, "bench: rescale: loading %d rows into big\n", n)
	start := time.Now()
	if err := execSQL(ctx, ctl, `CREATE TABLE big (id bigint PRIMARY KEY, v bigint)`); err != nil {
		return nil, err
	}
	for lo := 0; lo < n; lo += cfg.loadBatch {
		hi := min(lo+cfg.loadBatch, n) - 1
		if err := execSQL(ctx, ctl, fmt.Sprintf(`INSERT INTO big SELECT g, g %% 1000 FROM generate_series(%d, %d) AS g`, lo, hi)); err != nil {
			return nil, err
		}
	}
	if err := execSQL(ctx, ctl, "FLUSH"); err != nil {
		return nil, err
	}
	run.LoadSeconds = time.Since(start).Seconds()
	fmt.Fprintf(os.Stderr, "bench: rescale: CREATE MATERIALIZED VIEW big_agg (%d groups)\n", n)
	start = time.Now()
	if err := execSQL(ctx, ctl, "CREATE MATERIALIZED VIEW big_agg AS "+rescaleView); err != nil {
		return nil, err
	}
	run.CreateSeconds = time.Since(start).Seconds()
	var job int64
	if err := ctl.QueryRow(ctx, `SELECT id FROM rw_catalog.rw_materialized_views WHERE name = 'big_agg'`,
		pgx.QueryExecModeSimpleProtocol).Scan(&job); err != nil {
		return nil, fmt.Errorf("big_agg's id: %w", err)
	}

	// The hot writers run from here to the end of the last rescale.
	var stop atomic.Bool
	samples := make([][]hotSample, len(h.conns))
	errs := make([]error, len(h.conns))
	var wg sync.WaitGroup
	var interval0 time.Duration
	if h.rate > 0 {
		interval0 = time.Duration(float64(time.Second) * float64(len(h.conns)*h.batch) / float64(h.rate))
	}
	loadStart := time.Now()
	for i, conn := range h.conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			first := loadStart.Add(interval0 * time.Duration(i) / time.Duration(len(h.conns)))
			samples[i], errs[i] = writeHot(ctx, h, conn, first, interval0, &stop)
			if errs[i] != nil {
				stop.Store(true)
			}
		}()
	}
	stepErr := rescaleSteps(ctx, ctl, logPath, job, n, loadStart, cfg, run, &stop)
	stop.Store(true)
	wg.Wait()
	if err := errors.Join(append(errs, stepErr)...); err != nil {
		return nil, err
	}
	var all []hotSample
	for _, s := range samples {
		all = append(all, s...)
	}
	run.Baseline = hotStats(all, []histWindow{{timeWindow{loadStart, loadStart.Add(cfg.baseline)}, run.baseHist}}, h.batch)
	var during []histWindow
	for i := range run.Steps {
		st := &run.Steps[i]
		w := histWindow{st.window, st.hist}
		during = append(during, w)
		st.Hot = hotStats(all, []histWindow{w}, h.batch)
		if len(st.hist) == 0 || (len(st.hist) >= barrierHistoryLen && st.hist[0].committed.After(st.returned)) {
			return nil, fmt.Errorf("rw_barrier_latency read %v after the ALTER to %d no longer reaches back to it", cfg.window, st.To)
		}
		st.NextCommitMs, st.NextBarrierMs = -1, -1
		for _, b := range st.hist {
			if b.committed.After(st.returned) {
				st.NextCommitMs = ms(b.committed.Sub(st.window.from))
				st.NextBarrierMs = b.latencyMs
				break
			}
		}
		if st.NextCommitMs < 0 {
			return nil, fmt.Errorf("no epoch committed within %v after the ALTER to %d (rw_barrier_latency)", cfg.window, st.To)
		}
	}
	run.During = hotStats(all, during, h.batch)
	var next, alter []float64
	for _, st := range run.Steps {
		next = append(next, st.NextCommitMs)
		alter = append(alter, st.AlterMs)
	}
	run.MedianNextCommitMs, run.MaxNextCommitMs = median(next), slices.Max(next)
	run.MedianAlterMs = median(alter)

	if err := execSQL(ctx, ctl, "FLUSH"); err != nil {
		return nil, err
	}
	if run.HotViewRows, err = checkEqual(ctx, ctl, "SELECT * FROM hot_agg", hotView); err != nil {
		return nil, fmt.Errorf("hot_agg: %w", err)
	}
	if err := ctl.QueryRow(ctx, "SELECT count(*) FROM hot", pgx.QueryExecModeSimpleProtocol).Scan(&run.HotTableRows); err != nil {
		return nil, fmt.Errorf("count hot: %w", err)
	}
	if run.HotTableRows != h.next.Load() {
		return nil, fmt.Errorf("hot has %d rows, the writers inserted %d", run.HotTableRows, h.next.Load())
	}
	return run, nil
}

// rescaleSteps waits out the baseline, then runs every ALTER of cfg.parallelism with its
// window and checks, appending to run.Steps. It returns early when stop is set (a writer
// failed).
func rescaleSteps(ctx context.Context, ctl *pgx.Conn, logPath string, job int64, n int, loadStart time.Time, cfg rescaleConfig,
	run *rescaleRun, stop *atomic.Bool) error {
	fmt.Fprintf(os.Stderr, "bench: rescale: %d rows: baseline %v\n", n, cfg.baseline)
	waitUntil(ctx, loadStart.Add(cfg.baseline), stop)
	// rw_barrier_latency keeps the last 16384 epochs, about 80 s of the hot load's early
	// barriers: each window's are read at its end, before the checks.
	var err error
	if run.baseHist, err = barrierHistory(ctx, ctl); err != nil {
		return err
	}
	nextID := int64(n) // the first id of the next DML's rows
	for _, p := range cfg.parallelism {
		if stop.Load() || ctx.Err() != nil {
			return ctx.Err()
		}
		from, _, err := fragmentsOf(ctx, ctl, job)
		if err != nil {
			return err
		}
		pauses, err := serverPauses(logPath)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "bench: rescale: %d rows: parallelism %d -> %d\n", n, from, p)
		st := rescaleStep{From: from, To: p, ServerPauseMs: -1}
		t0 := time.Now()
		if err := execSQL(ctx, ctl, fmt.Sprintf("ALTER MATERIALIZED VIEW big_agg SET PARALLELISM = %d", p)); err != nil {
			return err
		}
		st.returned = time.Now()
		if err := execSQL(ctx, ctl, "FLUSH"); err != nil {
			return err
		}
		st.AlterMs, st.FlushMs = ms(st.returned.Sub(t0)), ms(time.Since(st.returned))
		st.window = timeWindow{t0, t0.Add(cfg.window)}
		after, err := serverPauses(logPath)
		if err != nil {
			return err
		}
		if len(after) == len(pauses)+1 {
			st.ServerPauseMs = ms(after[len(after)-1])
		}
		waitUntil(ctx, st.window.to, stop)
		if st.hist, err = barrierHistory(ctx, ctl); err != nil {
			return err
		}

		to, frags, err := fragmentsOf(ctx, ctl, job)
		if err != nil {
			return err
		}
		st.Fragments = frags
		if to != p {
			return fmt.Errorf("after ALTER ... SET PARALLELISM = %d rw_fragments shows big_agg's materialize at %d (%s)", p, to, frags)
		}
		// The first query: a point lookup of a row loaded before the rescales.
		probe := int64(n / 2)
		t := time.Now()
		var gotN, gotS int64
		if err := ctl.QueryRow(ctx, fmt.Sprintf("SELECT n, s FROM big_agg WHERE id = %d", probe), pgx.QueryExecModeSimpleProtocol).Scan(&gotN, &gotS); err != nil {
			return fmt.Errorf("first query of big_agg after the rescale to %d: %w", p, err)
		}
		st.FirstQueryMs = ms(time.Since(t))
		if gotN != 1 || gotS != probe%1000 {
			return fmt.Errorf("after the rescale to %d big_agg's row %d is (n %d, s %d), want (1, %d)", p, probe, gotN, gotS, probe%1000)
		}
		t = time.Now()
		if err := execSQL(ctx, ctl, fmt.Sprintf(`INSERT INTO big SELECT g, g %% 1000 FROM generate_series(%d, %d) AS g`,
			nextID, nextID+int64(cfg.dmlRows)-1)); err != nil {
			return fmt.Errorf("first DML after the rescale to %d: %w", p, err)
		}
		st.FirstDMLMs = ms(time.Since(t))
		nextID += int64(cfg.dmlRows)
		t = time.Now()
		rows, err := checkBigAgg(ctx, ctl, nextID)
		if err != nil {
			return fmt.Errorf("after the rescale to %d: %w", p, err)
		}
		st.CheckMs, st.ViewRows = ms(time.Since(t)), rows
		if rows != nextID {
			return fmt.Errorf("after the rescale to %d big_agg has %d rows, big %d", p, rows, nextID)
		}
		run.Steps = append(run.Steps, st)
		waitUntil(ctx, time.Now().Add(cfg.settle), stop)
	}
	return nil
}

// checkBigAgg compares big_agg with big by sums (and row by row up to rescaleFullCheck
// rows) and returns big_agg's row count.
func checkBigAgg(ctx context.Context, ctl *pgx.Conn, rows int64) (int64, error) {
	got, err := textRows(ctx, ctl, rescaleViewSums)
	if err != nil {
		return 0, err
	}
	want, err := textRows(ctx, ctl, rescaleTableSums)
	if err != nil {
		return 0, err
	}
	if len(got) != 1 || len(want) != 1 || got[0] != want[0] {
		return 0, fmt.Errorf("big_agg's count, sum(n), sum(s), sum(id * s) are %q, big's %q", got, want)
	}
	if rows <= rescaleFullCheck {
		if _, err := checkEqual(ctx, ctl, "SELECT * FROM big_agg", rescaleView); err != nil {
			return 0, fmt.Errorf("big_agg: %w", err)
		}
	}
	n, err := strconv.ParseInt(strings.SplitN(got[0], "|", 2)[0], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("big_agg's count %q: %w", got[0], err)
	}
	return n, nil
}

// fragmentsOf reads job's fragments from rw_fragments: the materialize fragment's
// parallelism and every fragment as kind:parallelism.
func fragmentsOf(ctx context.Context, ctl *pgx.Conn, job int64) (int, string, error) {
	rows, err := ctl.Query(ctx, fmt.Sprintf(`SELECT kind, parallelism FROM rw_catalog.rw_fragments WHERE job_id = %d ORDER BY fragment_id`, job),
		pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		return 0, "", fmt.Errorf("rw_fragments: %w", err)
	}
	defer rows.Close()
	mat := 0
	var parts []string
	for rows.Next() {
		var kind string
		var p int
		if err := rows.Scan(&kind, &p); err != nil {
			return 0, "", fmt.Errorf("rw_fragments: %w", err)
		}
		if kind == "StreamMaterialize" {
			mat = p
		}
		parts = append(parts, fmt.Sprintf("%s:%d", strings.TrimPrefix(kind, "Stream"), p))
	}
	if err := rows.Err(); err != nil {
		return 0, "", fmt.Errorf("rw_fragments: %w", err)
	}
	if mat == 0 {
		return 0, "", fmt.Errorf("rw_fragments lists no materialize fragment of job %d: %v", job, parts)
	}
	return mat, strings.Join(parts, " "), nil
}

var pauseLine = regexp.MustCompile(`msg="streaming jobs rescheduled" pause=(\S+)`)

// serverPauses reads every "streaming jobs rescheduled pause=" of the server's log, in order.
func serverPauses(logPath string) ([]time.Duration, error) {
	f, err := os.Open(logPath)
	if err != nil {
		return nil, fmt.Errorf("server log: %w", err)
	}
	defer f.Close()
	var out []time.Duration
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		if m := pauseLine.FindStringSubmatch(sc.Text()); m != nil {
			d, err := time.ParseDuration(m[1])
			if err != nil {
				return nil, fmt.Errorf("server log: pause %q: %w", m[1], err)
			}
			out = append(out, d)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("server log: %w", err)
	}
	return out, nil
}

// writeHot is hotLoad.write recording when each statement was sent.
func writeHot(ctx context.Context, h *hotLoad, conn *pgx.Conn, first time.Time, interval time.Duration, stop *atomic.Bool) ([]hotSample, error) {
	var out []hotSample
	next := first
	for !stop.Load() {
		if interval > 0 {
			if waitUntil(ctx, next, stop); stop.Load() || ctx.Err() != nil {
				break
			}
			next = next.Add(interval)
			if now := time.Now(); next.Before(now) {
				next = now
			}
		}
		hi := h.next.Add(int64(h.batch)) - 1
		lo := hi - int64(h.batch) + 1
		t := time.Now()
		if err := execSQL(ctx, conn, fmt.Sprintf(`INSERT INTO hot SELECT g, g %% 1000, g %% 97 FROM generate_series(%d, %d) AS g`, lo, hi)); err != nil {
			return out, err
		}
		out = append(out, hotSample{t, time.Since(t)})
	}
	return out, ctx.Err()
}

type timeWindow struct{ from, to time.Time }

func (w timeWindow) has(t time.Time) bool { return !t.Before(w.from) && !t.After(w.to) }

// histWindow is a time window with rw_barrier_latency as read at its end.
type histWindow struct {
	timeWindow
	hist []barrierRow
}

// hotStats summarises the INSERTs sent and the epochs committed within the windows
// (disjoint), each window's epochs from its own reading of rw_barrier_latency.
func hotStats(samples []hotSample, ws []histWindow, batch int) hotWindow {
	var r hotWindow
	var ins, bar []time.Duration
	for _, w := range ws {
		r.Seconds += w.to.Sub(w.from).Seconds()
		for _, s := range samples {
			if w.has(s.at) {
				ins = append(ins, s.d)
			}
		}
		for i, b := range w.hist {
			if !w.has(b.committed) {
				continue
			}
			bar = append(bar, time.Duration(b.latencyMs*float64(time.Millisecond)))
			if i > 0 {
				r.MaxCommitGapMs = math.Max(r.MaxCommitGapMs, ms(b.committed.Sub(w.hist[i-1].committed)))
			}
		}
		if len(w.hist) >= barrierHistoryLen && w.hist[0].committed.After(w.from) {
			r.Barrier.Truncated = true
		}
	}
	r.Statements = len(ins)
	r.RowsPerSec = float64(len(ins)*batch) / r.Seconds
	r.Insert = latencies(ins)
	r.Barrier.latencyStats, r.Barrier.Count = latencies(bar), len(bar)
	return r
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// judge records the targets: every ALTER's next commit and every window's longest
// commit gap under two barrier intervals, and the pause not growing with state.
func (r *rescaleReport) judge() {
	limit := 2 * float64(r.BarrierIntervalMs)
	for _, run := range r.Runs {
		r.Targets = append(r.Targets, targetCheck{
			Target: fmt.Sprintf("%d rows: ALTER to the next committed epoch < 2 barrier intervals (%.0f ms), every ALTER", run.Rows, limit),
			Got:    fmt.Sprintf("median %.0f ms, max %.0f ms", run.MedianNextCommitMs, run.MaxNextCommitMs),
			Met:    run.MaxNextCommitMs < limit,
		}, targetCheck{
			Target: fmt.Sprintf("%d rows: the hot pipeline's longest gap between commits around the rescales < %.0f ms", run.Rows, limit),
			Got:    fmt.Sprintf("%.0f ms (baseline %.0f ms)", run.During.MaxCommitGapMs, run.Baseline.MaxCommitGapMs),
			Met:    run.During.MaxCommitGapMs < limit,
		})
	}
	if len(r.Runs) < 2 {
		return
	}
	lo, hi := r.Runs[0], r.Runs[0]
	for _, run := range r.Runs {
		if run.Rows < lo.Rows {
			lo = run
		}
		if run.Rows > hi.Rows {
			hi = run
		}
	}
	bound := rescaleGrowth*lo.MedianNextCommitMs + float64(r.BarrierIntervalMs)/10
	r.Targets = append(r.Targets, targetCheck{
		Target: fmt.Sprintf("the pause does not grow with state: median ALTER to next commit at %d rows <= %.1fx that at %d rows + %d ms",
			hi.Rows, rescaleGrowth, lo.Rows, r.BarrierIntervalMs/10),
		Got: fmt.Sprintf("%.0f ms vs %.0f ms (ALTER alone: %.1f ms vs %.1f ms)", hi.MedianNextCommitMs, lo.MedianNextCommitMs,
			hi.MedianAlterMs, lo.MedianAlterMs),
		Met: hi.MedianNextCommitMs <= bound,
	})
}

func printRescale(out io.Writer, r *rescaleReport) {
	pace := "as fast as INSERTs return"
	if r.HotRate > 0 {
		pace = fmt.Sprintf("paced at %d rows/s", r.HotRate)
	}
	fmt.Fprintf(out, "rescale benchmark, %s: big_agg = %s; hot: %d writers x INSERT of %d rows into hot (view hot_agg), %s; barrier interval %d ms; %d cores\n",
		r.Date[:10], rescaleView, r.Writers, r.Batch, pace, r.BarrierIntervalMs, r.Cores)
	for _, run := range r.Runs {
		fmt.Fprintf(out, "\n%d rows of state: load %.1f s, CREATE MATERIALIZED VIEW big_agg %.1f s\n", run.Rows, run.LoadSeconds, run.CreateSeconds)
		tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "ALTER\tALTER ms\tserver pause ms\t+FLUSH ms\tto next commit ms\tits barrier ms\thot barrier p50/p99/max ms\thot commit gap ms\thot INSERT p99/max ms\tfirst query ms\tfirst DML ms\tcheck s\t\n")
		for _, st := range run.Steps {
			pause := "-"
			if st.ServerPauseMs >= 0 {
				pause = fmt.Sprintf("%.2f", st.ServerPauseMs)
			}
			fmt.Fprintf(tw, "%d -> %d\t%.1f\t%s\t%.1f\t%.0f\t%.1f\t%.1f / %.1f / %.1f\t%.0f\t%.1f / %.1f\t%.0f\t%.0f\t%.1f\t\n",
				st.From, st.To, st.AlterMs, pause, st.AlterMs+st.FlushMs, st.NextCommitMs, st.NextBarrierMs,
				st.Hot.Barrier.P50, st.Hot.Barrier.P99, st.Hot.Barrier.Max, st.Hot.MaxCommitGapMs, st.Hot.Insert.P99, st.Hot.Insert.Max,
				st.FirstQueryMs, st.FirstDMLMs, st.CheckMs/1000)
		}
		_ = tw.Flush() // errors of out surface on the caller's writes
		tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "hot pipeline\tseconds\trows/s\tbarriers\tbarrier p50 ms\tp99 ms\tmax ms\tlongest commit gap ms\tINSERT p50 ms\tp99 ms\tmax ms\t\n")
		for _, w := range []struct {
			name string
			h    hotWindow
		}{{"baseline (no rescale)", run.Baseline}, {fmt.Sprintf("%.0f s after each ALTER", r.WindowSeconds), run.During}} {
			fmt.Fprintf(tw, "%s\t%.1f\t%.0f\t%d\t%.1f\t%.1f\t%.1f\t%.0f\t%.1f\t%.1f\t%.1f\t\n", w.name, w.h.Seconds, w.h.RowsPerSec,
				w.h.Barrier.Count, w.h.Barrier.P50, w.h.Barrier.P99, w.h.Barrier.Max, w.h.MaxCommitGapMs, w.h.Insert.P50, w.h.Insert.P99, w.h.Insert.Max)
		}
		_ = tw.Flush()
		if run.Baseline.Barrier.Truncated || run.During.Barrier.Truncated {
			fmt.Fprintln(out, "warning: rw_barrier_latency no longer reached back to a window's start: its barrier figures cover only the end")
		}
		fmt.Fprintf(out, "checked after every ALTER: rw_fragments shows the new parallelism, big_agg equals its query (%d rows at the end); hot_agg equals its query, hot has the %d rows inserted\n",
			run.Steps[len(run.Steps)-1].ViewRows, run.HotTableRows)
	}
	fmt.Fprintln(out)
	for _, t := range r.Targets {
		met := "not met"
		if t.Met {
			met = "met"
		}
		fmt.Fprintf(out, "target: %s: %s, %s\n", t.Target, t.Got, met)
	}
}
