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
// hot_agg under a steady INSERT load; the backfill is big_agg, a join of the preloaded
// table big with dim plus an aggregation, created once per backfill phase with a different
// backfill kind or rate limit. Barrier latency comes from rw_catalog.rw_barrier_latency.
const (
	hotView     = `SELECT k, count(*) AS n, sum(v) AS s FROM hot GROUP BY k`
	bigView     = `SELECT dim.grp, count(*) AS n, sum(big.b) AS s FROM big JOIN dim ON big.a = dim.id GROUP BY dim.grp`
	dimRows     = 1000                   // dim(id, grp = id % 10); big.a = big.id % dimRows
	bigLoadRows = 100000                 // rows per INSERT of the preload
	pollEvery   = 100 * time.Millisecond // rw_ddl_progress sampling period
	// The targets for snapshot backfill, as ratios to the baseline.
	targetThroughput = 0.95
	targetBarrierP99 = 1.5
)

// latencyStats summarises latencies in milliseconds.
type latencyStats struct {
	P50 float64 `json:"p50_ms"`
	P99 float64 `json:"p99_ms"`
	Max float64 `json:"max_ms"`
}

// barrierStats summarises the barriers committed during a phase, from rw_barrier_latency.
type barrierStats struct {
	latencyStats
	Count int `json:"barriers"`
	// Truncated is set when the server's history (its last 16384 epochs) no longer
	// reached back to the phase's start: the figures cover only its end.
	Truncated bool `json:"truncated,omitempty"`
}

// backfillStats is what rw_ddl_progress showed of big_agg's backfill during a phase.
type backfillStats struct {
	Snapshot   bool    `json:"streaming_use_snapshot_backfill"`
	RateLimit  int64   `json:"rate_limit"` // rows/s; 0 = unlimited (or adaptive)
	Adaptive   bool    `json:"adaptive,omitempty"`
	TargetMs   int     `json:"target_barrier_latency_ms,omitempty"` // of the adaptive limit
	Type       string  `json:"backfill_type"`                       // as rw_ddl_progress names it
	Rows       int64   `json:"rows"`                                // rows backfilled by the end of the phase (big's and dim's)
	Seconds    float64 `json:"seconds"`                             // from CREATE to the last sample (or to the first sample without the job)
	RowsPerSec float64 `json:"rows_per_sec"`
	Finished   bool    `json:"finished_in_phase"`
	Samples    int     `json:"samples"`
	ViewRows   int     `json:"view_rows_checked"`
	// Of a sink into a table: seconds from the CREATE until the table held
	// every row of big.
	DeliveredSeconds float64 `json:"delivered_seconds,omitempty"`

	create string // the statement that starts the backfill
	total  string // a query counting the rows it backfills
}

// phaseResult is the hot pipeline's figures over one phase.
type phaseResult struct {
	Name       string         `json:"name"`
	Seconds    float64        `json:"seconds"`
	Statements int            `json:"statements"`
	Rows       int64          `json:"rows"`
	RowsPerSec float64        `json:"rows_per_sec"`
	Latency    latencyStats   `json:"insert_latency"`
	Barrier    barrierStats   `json:"barrier_latency"`
	Backfill   *backfillStats `json:"backfill,omitempty"`
}

// isoReport is the whole run.
type isoReport struct {
	Date        string        `json:"date"`
	Cores       int           `json:"cores"`
	BaseRows    int           `json:"base_rows"`
	DimRows     int           `json:"dim_rows"`
	SecondsEach float64       `json:"seconds_per_phase"`
	Writers     int           `json:"writers"`
	Batch       int           `json:"rows_per_insert"`
	HotRate     int           `json:"hot_rate"` // target rows/s into hot; 0 = as fast as INSERTs return
	RateLimit   int64         `json:"rate_limit"`
	TargetMs    int           `json:"target_barrier_latency_ms"`
	LoadSeconds float64       `json:"load_seconds"`
	Phases      []phaseResult `json:"phases"`
	// Ratios of each later phase to the baseline (a).
	Ratios       map[string]ratio `json:"ratios"`
	Targets      []targetCheck    `json:"targets"`
	HotViewRows  int              `json:"hot_view_rows_checked"`
	BigViewRows  int              `json:"big_view_rows_checked"`
	HotTableRows int64            `json:"hot_table_rows"`
}

type ratio struct {
	Throughput float64 `json:"throughput"`
	InsertP50  float64 `json:"insert_p50"`
	InsertP99  float64 `json:"insert_p99"`
	BarrierP50 float64 `json:"barrier_p50"`
	BarrierP99 float64 `json:"barrier_p99"`
}

// targetCheck is one of the acceptance targets and whether this run met it.
type targetCheck struct {
	Target string `json:"target"`
	Got    string `json:"got"`
	Met    bool   `json:"met"`
}

// isoPhase is one phase after the baseline: a backfill of big_agg (backfill set) or
// the baseline again.
type isoPhase struct {
	key      string // its --phases name
	name     string
	backfill bool
	snapshot bool   // streaming_use_snapshot_backfill
	limit    string // backfill_rate_limit: "default", rows/s or "adaptive"
	into     bool   // CREATE SINK big_into INTO big_copy instead of big_agg
}

// phaseKeys are the --phases names, in the order the phases run. The phases
// with the issues' targets run first (snapshot backfill, then the sink into
// a table): every backfill phase leaves a dropped 5M-row state behind for
// Badger to compact while the later phases run.
var phaseKeys = []string{"snapshot", "into", "unlimited", "limited", "adaptive", "after"}

// phasesOf returns the phases named in keys (comma-separated, any order), in run order.
func phasesOf(keys string, cfg isoConfig) ([]isoPhase, error) {
	all := []isoPhase{
		{key: "snapshot", name: "(e) snapshot, unlimited", backfill: true, snapshot: true, limit: "default"},
		{key: "into", name: "(f) sink into table, snapshot", backfill: true, snapshot: true, limit: "default", into: true},
		{key: "unlimited", name: "(b) arrangement, unlimited", backfill: true, limit: "default"},
		{key: "limited", name: fmt.Sprintf("(c) arrangement, limit %d rows/s", cfg.rateLimit), backfill: true,
			limit: strconv.FormatInt(cfg.rateLimit, 10)},
		{key: "adaptive", name: fmt.Sprintf("(d) arrangement, adaptive (target %d ms)", cfg.targetMs), backfill: true,
			limit: "adaptive"},
		{key: "after", name: "(a') baseline after"},
	}
	want := map[string]bool{}
	for _, k := range strings.Split(keys, ",") {
		k = strings.TrimSpace(k)
		if !slices.Contains(phaseKeys, k) {
			return nil, fmt.Errorf("unknown phase %q (phases: %s)", k, strings.Join(phaseKeys, ","))
		}
		want[k] = true
	}
	var out []isoPhase
	for _, p := range all {
		if want[p.key] {
			out = append(out, p)
		}
	}
	return out, nil
}

type isoConfig struct {
	baseRows  int
	seconds   time.Duration
	warmup    time.Duration
	writers   int
	batch     int
	hotRate   int // rows/s of all writers together; 0 = unpaced
	rateLimit int64
	targetMs  int
	phases    []isoPhase // after the baseline (a), which always runs
}

func isolationMain(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("isolation", flag.ContinueOnError)
	baseRows := fs.Int("base-rows", 5000000, "rows of table big loaded before the phases (what big_agg backfills, with dim's 1,000)")
	seconds := fs.Float64("seconds", 10, "length of each measured phase (a backfill phase ends earlier when its backfill finishes)")
	writers := fs.Int("writers", 2, "client goroutines inserting into hot, one connection each")
	batch := fs.Int("batch", 100, "rows per INSERT into hot")
	hotRate := fs.Int("hot-rate", 20000, "rows/s the writers together insert into hot, paced (0: each writer as fast as its INSERTs return)")
	rateLimit := fs.Int64("rate-limit", 100000, "backfill_rate_limit of the limited phase (rows/s)")
	targetMs := fs.Int("target-ms", 2000, "backfill_target_barrier_latency_ms of the adaptive phase")
	phases := fs.String("phases", strings.Join(phaseKeys, ","), "phases after the baseline (a), comma-separated: "+strings.Join(phaseKeys, ","))
	warmup := fs.Duration("warmup", time.Second, "unmeasured hot load before the first phase")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	serverBin := fs.String("server-bin", "", "prebuilt server binary (default: go build ./cmd/server)")
	serverArgs := fs.String("server-args", "", "extra flags for the started server")
	timeout := fs.Duration("timeout", time.Hour, "give up after this long")
	keep := fs.Bool("keep", false, "keep the temporary directory (data, logs)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *baseRows <= 0 || *seconds <= 0 || *writers <= 0 || *batch <= 0 || *rateLimit <= 0 || *targetMs <= 0 || *warmup < 0 {
		return errors.New("--base-rows, --seconds, --writers, --batch, --rate-limit and --target-ms must be positive")
	}
	if *hotRate < 0 {
		return errors.New("--hot-rate must not be negative")
	}
	cfg := isoConfig{baseRows: *baseRows, seconds: time.Duration(*seconds * float64(time.Second)),
		warmup: *warmup, writers: *writers, batch: *batch, hotRate: *hotRate, rateLimit: *rateLimit, targetMs: *targetMs}
	var err error
	if cfg.phases, err = phasesOf(*phases, cfg); err != nil {
		return fmt.Errorf("--phases: %w", err)
	}
	var rep *isoReport
	err = onOneServer(ctx, *timeout, *serverBin, *keep, "isolation", *serverArgs, func(ctx context.Context, srv *tributaryServer) (err error) {
		rep, err = runIsolation(ctx, srv.DSN(), cfg)
		return err
	})
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
		BaseRows: cfg.baseRows, DimRows: dimRows, SecondsEach: cfg.seconds.Seconds(), Writers: cfg.writers,
		Batch: cfg.batch, HotRate: cfg.hotRate, RateLimit: cfg.rateLimit, TargetMs: cfg.targetMs, Ratios: map[string]ratio{}}
	ctl, err := connect(ctx, dsn)
	if err != nil {
		return nil, err
	}
	defer ctl.Close(context.Background())
	h, closeHot, err := newHotLoad(ctx, dsn, ctl, cfg.writers, cfg.batch, cfg.hotRate)
	if err != nil {
		return nil, err
	}
	defer closeHot()
	for _, s := range []string{
		`CREATE TABLE dim (id bigint PRIMARY KEY, grp bigint)`,
		`CREATE TABLE big (id bigint PRIMARY KEY, a bigint, b bigint)`,
		fmt.Sprintf(`INSERT INTO dim SELECT g, g %% 10 FROM generate_series(0, %d) AS g`, dimRows-1),
	} {
		if err := execSQL(ctx, ctl, s); err != nil {
			return nil, err
		}
	}
	fmt.Fprintf(os.Stderr, "bench: isolation: loading %d rows into big\n", cfg.baseRows)
	start := time.Now()
	for lo := 0; lo < cfg.baseRows; lo += bigLoadRows {
		hi := min(lo+bigLoadRows, cfg.baseRows) - 1
		if err := execSQL(ctx, ctl, fmt.Sprintf(`INSERT INTO big SELECT g, g %% %d, (g::bigint * 7919) %% 1000003 FROM generate_series(%d, %d) AS g`,
			dimRows, lo, hi)); err != nil {
			return nil, err
		}
	}
	if err := execSQL(ctx, ctl, "FLUSH"); err != nil {
		return nil, err
	}
	rep.LoadSeconds = time.Since(start).Seconds()

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
	for _, ph := range cfg.phases {
		var p phaseResult
		if ph.backfill {
			p, err = backfillPhase(ctx, ctl, h, ph, cfg)
		} else {
			// A second baseline shows drift (a bigger hot table, compaction of the backfills' writes).
			p, err = h.measure(ctx, ctl, ph.name, cfg.seconds, nil)
		}
		if err != nil {
			return nil, err
		}
		rep.Phases = append(rep.Phases, p)
		if p.Backfill != nil && !ph.into {
			rep.BigViewRows = p.Backfill.ViewRows
		}
		rep.Ratios[p.Name] = ratio{
			Throughput: p.RowsPerSec / base.RowsPerSec,
			InsertP50:  p.Latency.P50 / base.Latency.P50,
			InsertP99:  p.Latency.P99 / base.Latency.P99,
			BarrierP50: p.Barrier.P50 / base.Barrier.P50,
			BarrierP99: p.Barrier.P99 / base.Barrier.P99,
		}
		switch ph.key {
		case "snapshot":
			q := rep.Ratios[p.Name]
			rep.Targets = append(rep.Targets,
				targetCheck{Target: fmt.Sprintf("snapshot backfill keeps >= %.0f%% of the hot throughput", 100*targetThroughput),
					Got: fmt.Sprintf("%.2fx", q.Throughput), Met: q.Throughput >= targetThroughput},
				targetCheck{Target: fmt.Sprintf("snapshot backfill: barrier p99 <= %.1fx baseline", targetBarrierP99),
					Got: fmt.Sprintf("%.2fx (%.1f ms vs %.1f ms)", q.BarrierP99, p.Barrier.P99, base.Barrier.P99), Met: q.BarrierP99 <= targetBarrierP99})
		case "into":
			q := rep.Ratios[p.Name]
			rep.Targets = append(rep.Targets,
				targetCheck{Target: "sink into table backfill keeps >= 90% of the hot throughput",
					Got: fmt.Sprintf("%.2fx (big_copy held all rows %.1f s after the CREATE)", q.Throughput, p.Backfill.DeliveredSeconds), Met: q.Throughput >= 0.9})
		case "adaptive":
			rep.Targets = append(rep.Targets,
				targetCheck{Target: fmt.Sprintf("adaptive: barrier p99 < its target %d ms", cfg.targetMs),
					Got: fmt.Sprintf("%.1f ms", p.Barrier.P99), Met: p.Barrier.P99 < float64(cfg.targetMs)})
		}
	}
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

// backfillPhase creates big_agg in the background as ph says and measures the hot load until
// the backfill finishes or cfg.seconds pass. Afterwards it lifts any limit, waits for the
// backfill, checks big_agg and drops it.
func backfillPhase(ctx context.Context, ctl *pgx.Conn, h *hotLoad, ph isoPhase, cfg isoConfig) (phaseResult, error) {
	// Every setting is set each time: snapshot backfill is the server's default.
	rate := ph.limit
	if rate == "adaptive" {
		rate = "'adaptive'"
	}
	for _, s := range []string{"SET background_ddl = true", "SET backfill_rate_limit = " + rate,
		fmt.Sprintf("SET streaming_use_snapshot_backfill = %t", ph.snapshot),
		fmt.Sprintf("SET backfill_target_barrier_latency_ms = %d", cfg.targetMs)} {
		if err := execSQL(ctx, ctl, s); err != nil {
			return phaseResult{}, err
		}
	}
	bf := &backfillStats{Snapshot: ph.snapshot, Adaptive: ph.limit == "adaptive",
		create: "CREATE MATERIALIZED VIEW big_agg AS " + bigView, total: "SELECT (SELECT count(*) FROM big) + (SELECT count(*) FROM dim)"}
	if ph.into {
		if err := execSQL(ctx, ctl, "CREATE TABLE big_copy (id bigint PRIMARY KEY, a bigint, b bigint)"); err != nil {
			return phaseResult{}, err
		}
		bf.create, bf.total = "CREATE SINK big_into INTO big_copy AS SELECT id, a, b FROM big", "SELECT count(*) FROM big"
	}
	created := time.Now()
	if bf.Adaptive {
		bf.TargetMs = cfg.targetMs
	} else if n, err := strconv.ParseInt(ph.limit, 10, 64); err == nil {
		bf.RateLimit = n
	}
	p, err := h.measure(ctx, ctl, ph.name, cfg.seconds, bf)
	if err != nil {
		return p, err
	}
	if ph.into {
		return p, finishInto(ctx, ctl, bf, created)
	}
	if !bf.Finished {
		stmts := []string{"WAIT"}
		if ph.limit != "default" {
			stmts = []string{"ALTER MATERIALIZED VIEW big_agg SET BACKFILL_RATE_LIMIT = DEFAULT", "WAIT"}
		}
		for _, s := range stmts {
			if err := execSQL(ctx, ctl, s); err != nil {
				return p, err
			}
		}
	}
	if err := execSQL(ctx, ctl, "FLUSH"); err != nil {
		return p, err
	}
	if bf.ViewRows, err = checkEqual(ctx, ctl, "SELECT * FROM big_agg", bigView); err != nil {
		return p, fmt.Errorf("big_agg after %s: %w", ph.name, err)
	}
	return p, execSQL(ctx, ctl, "DROP MATERIALIZED VIEW big_agg")
}

// finishInto waits until big_copy holds every row of big (the sink's
// backfill, then its delivery into the table), checks it and drops both.
func finishInto(ctx context.Context, ctl *pgx.Conn, bf *backfillStats, created time.Time) error {
	if err := execSQL(ctx, ctl, "WAIT"); err != nil {
		return err
	}
	var want, got int64
	if err := ctl.QueryRow(ctx, "SELECT count(*) FROM big", pgx.QueryExecModeSimpleProtocol).Scan(&want); err != nil {
		return fmt.Errorf("count big: %w", err)
	}
	for deadline := time.Now().Add(10 * time.Minute); ; {
		if err := ctl.QueryRow(ctx, "SELECT count(*) FROM big_copy", pgx.QueryExecModeSimpleProtocol).Scan(&got); err != nil {
			return fmt.Errorf("count big_copy: %w", err)
		}
		if got == want {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("big_copy holds %d of big's %d rows 10 minutes after the sink was created", got, want)
		}
		waitUntil(ctx, time.Now().Add(pollEvery), new(atomic.Bool))
	}
	bf.DeliveredSeconds = time.Since(created).Seconds()
	// Equal counts and sums per column (millions of rows: not row by row).
	const sums = "SELECT count(*), sum(id), sum(a), sum(b) FROM "
	n, err := checkEqual(ctx, ctl, sums+"big_copy", sums+"big")
	if err != nil {
		return fmt.Errorf("big_copy: %w", err)
	}
	bf.ViewRows = n
	for _, s := range []string{"DROP SINK big_into", "DROP TABLE big_copy"} {
		if err := execSQL(ctx, ctl, s); err != nil {
			return err
		}
	}
	return nil
}

// newHotLoad creates the hot pipeline (table hot, view hot_agg) through ctl
// and connects its writers; the returned function closes them.
func newHotLoad(ctx context.Context, dsn string, ctl *pgx.Conn, writers, batch, rate int) (*hotLoad, func(), error) {
	ws := make([]*pgx.Conn, 0, writers)
	closeAll := func() {
		for _, w := range ws {
			w.Close(context.Background())
		}
	}
	for i := 0; i < writers; i++ {
		w, err := connect(ctx, dsn)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		ws = append(ws, w)
	}
	for _, s := range []string{
		`CREATE TABLE hot (id bigint PRIMARY KEY, k bigint, v bigint)`,
		`CREATE MATERIALIZED VIEW hot_agg AS ` + hotView,
	} {
		if err := execSQL(ctx, ctl, s); err != nil {
			closeAll()
			return nil, nil, err
		}
	}
	return &hotLoad{conns: ws, batch: batch, rate: rate}, closeAll, nil
}

// hotLoad drives the hot pipeline: each connection inserts batch rows per statement with
// fresh ids, paced so that all together send rate rows/s (0: as fast as statements return).
type hotLoad struct {
	conns []*pgx.Conn
	batch int
	rate  int
	next  atomic.Int64 // the next unused id of hot
}

// measure runs the load for d, then reads the barriers committed meanwhile from
// rw_barrier_latency. With bf set it first creates big_agg (background DDL), ends early
// when rw_ddl_progress no longer lists the job, and fills bf from its samples.
func (h *hotLoad) measure(ctx context.Context, ctl *pgx.Conn, name string, d time.Duration, bf *backfillStats) (phaseResult, error) {
	fmt.Fprintf(os.Stderr, "bench: isolation: %s\n", name)
	r := phaseResult{Name: name, Backfill: bf}
	var stop atomic.Bool
	lat := make([][]time.Duration, len(h.conns))
	errs := make([]error, len(h.conns))
	var wg sync.WaitGroup
	// With a rate, each writer sends one statement every interval, the writers staggered
	// evenly; a statement that takes longer delays its writer's next one (no catch-up burst).
	var interval time.Duration
	if h.rate > 0 {
		interval = time.Duration(float64(time.Second) * float64(len(h.conns)*h.batch) / float64(h.rate))
	}
	start := time.Now()
	for i, conn := range h.conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			first := start.Add(interval * time.Duration(i) / time.Duration(len(h.conns)))
			lat[i], errs[i] = h.write(ctx, conn, first, interval, &stop)
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
	end := time.Now()
	if err := errors.Join(append(errs, pollErr)...); err != nil {
		return r, fmt.Errorf("%s: %w", name, err)
	}
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	r.Seconds = end.Sub(start).Seconds()
	r.Statements = len(all)
	r.Rows = int64(len(all) * h.batch)
	r.RowsPerSec = float64(r.Rows) / r.Seconds
	r.Latency = latencies(all)
	hist, err := barrierHistory(ctx, ctl)
	if err != nil {
		return r, fmt.Errorf("%s: %w", name, err)
	}
	r.Barrier = barrierWindow(hist, start, end)
	if r.Barrier.Truncated {
		fmt.Fprintf(os.Stderr, "bench: isolation: %s: rw_barrier_latency no longer reaches back to the phase's start; its barrier figures cover only the end\n", name)
	}
	return r, nil
}

// write inserts until stop is set and returns each statement's round trip. With interval > 0
// it sends its first statement at first and then one every interval.
func (h *hotLoad) write(ctx context.Context, conn *pgx.Conn, first time.Time, interval time.Duration, stop *atomic.Bool) ([]time.Duration, error) {
	var lat []time.Duration
	next := first
	for !stop.Load() {
		if interval > 0 {
			if waitUntil(ctx, next, stop); stop.Load() || ctx.Err() != nil {
				break
			}
			next = next.Add(interval)
			if now := time.Now(); next.Before(now) {
				next = now // behind schedule: send the next one at once, then keep the pace from there
			}
		}
		hi := h.next.Add(int64(h.batch)) - 1
		lo := hi - int64(h.batch) + 1
		sql := fmt.Sprintf(`INSERT INTO hot SELECT g, g %% 1000, g %% 97 FROM generate_series(%d, %d) AS g`, lo, hi)
		t := time.Now()
		if err := execSQL(ctx, conn, sql); err != nil {
			return lat, err
		}
		lat = append(lat, time.Since(t))
	}
	return lat, ctx.Err()
}

// barrierRow is one row of rw_catalog.rw_barrier_latency.
type barrierRow struct {
	committed time.Time
	latencyMs float64
}

// barrierHistoryLen is how many epochs rw_barrier_latency keeps (the coordinator's ring).
const barrierHistoryLen = 16384

// barrierHistory reads rw_catalog.rw_barrier_latency, oldest epoch first.
func barrierHistory(ctx context.Context, conn *pgx.Conn) ([]barrierRow, error) {
	rows, err := conn.Query(ctx, `SELECT committed_at, latency_ms FROM rw_catalog.rw_barrier_latency ORDER BY epoch`,
		pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		return nil, fmt.Errorf("rw_barrier_latency: %w", err)
	}
	var out []barrierRow
	for rows.Next() {
		var b barrierRow
		if err := rows.Scan(&b.committed, &b.latencyMs); err != nil {
			rows.Close()
			return nil, fmt.Errorf("rw_barrier_latency: %w", err)
		}
		out = append(out, b)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("rw_barrier_latency: %w", err)
	}
	return out, nil
}

// barrierWindow summarises the barriers of hist (oldest first) committed in [from, to].
func barrierWindow(hist []barrierRow, from, to time.Time) barrierStats {
	var ds []time.Duration
	for _, b := range hist {
		if !b.committed.Before(from) && !b.committed.After(to) {
			ds = append(ds, time.Duration(b.latencyMs*float64(time.Millisecond)))
		}
	}
	s := barrierStats{latencyStats: latencies(ds), Count: len(ds)}
	s.Truncated = len(hist) >= barrierHistoryLen && hist[0].committed.After(from)
	return s
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
	if err := execSQL(ctx, ctl, bf.create); err != nil {
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
			// The job's progress counts every upstream's rows.
			if err := ctl.QueryRow(ctx, bf.total, pgx.QueryExecModeSimpleProtocol).Scan(&total); err != nil {
				return fmt.Errorf("count the backfilled rows: %w", err)
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
	pace := "as fast as INSERTs return"
	if r.HotRate > 0 {
		pace = fmt.Sprintf("paced at %d rows/s", r.HotRate)
	}
	fmt.Fprintf(out, "isolation benchmark, %s: %d writers x INSERT of %d rows into hot (view hot_agg), %s; big_agg = big (%d rows) JOIN dim (%d rows) GROUP BY grp, loaded in %.1f s; %d cores\n",
		r.Date[:10], r.Writers, r.Batch, pace, r.BaseRows, r.DimRows, r.LoadSeconds, r.Cores)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "phase\tseconds\thot rows/s\tINSERT p50 ms\tp99 ms\tbarriers\tbarrier p50 ms\tp99 ms\tmax ms\tbackfilled rows\tbackfill rows/s\tbackfill type\tvs (a): rows/s\tbarrier p50\tp99\t")
	for _, p := range r.Phases {
		bRows, bRate, kind := "-", "-", "-"
		if b := p.Backfill; b != nil {
			bRows, bRate = strconv.FormatInt(b.Rows, 10), fmt.Sprintf("%.0f", b.RowsPerSec)
			if b.Finished {
				bRows += " (done)"
			}
			if b.Type != "" {
				kind = b.Type
			}
		}
		thr, b50, b99 := "-", "-", "-"
		if q, ok := r.Ratios[p.Name]; ok {
			thr, b50, b99 = fmt.Sprintf("%.2fx", q.Throughput), fmt.Sprintf("%.2fx", q.BarrierP50), fmt.Sprintf("%.2fx", q.BarrierP99)
		}
		fmt.Fprintf(tw, "%s\t%.1f\t%.0f\t%.2f\t%.2f\t%d\t%.2f\t%.2f\t%.2f\t%s\t%s\t%s\t%s\t%s\t%s\t\n", p.Name, p.Seconds, p.RowsPerSec,
			p.Latency.P50, p.Latency.P99, p.Barrier.Count, p.Barrier.P50, p.Barrier.P99, p.Barrier.Max, bRows, bRate, kind, thr, b50, b99)
	}
	_ = tw.Flush() // errors of out surface on the caller's writes
	for _, t := range r.Targets {
		met := "not met"
		if t.Met {
			met = "met"
		}
		fmt.Fprintf(out, "target: %s: %s, %s\n", t.Target, t.Got, met)
	}
	fmt.Fprintf(out, "checked: big_agg equals its query after each backfill (%d rows); hot_agg equals its query (%d rows over %d hot rows)\n",
		r.BigViewRows, r.HotViewRows, r.HotTableRows)
}
