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
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
)

// The sinks benchmark: does a slow sink slow its upstream? One server; the hot pipeline of
// the isolation benchmark (table hot, view hot_agg, a paced INSERT load) runs alone (a), with
// a coupled blackhole sink that sleeps blackhole.delay_ms in every epoch commit (b), and with
// the same sink decoupled by a log store (c), after which the log store must drain to 0.
// Phase (d) pauses a decoupled sink (SINK_RATE_LIMIT = 0), inserts lag-rows rows into its
// table while sampling the server's RSS, reads the lag from rw_catalog.rw_sink_log_store,
// then lifts the pause and times the drain.
const (
	rssEvery = 200 * time.Millisecond // VmRSS sampling period of phase (d)
	// lagSettle bounds the wait for rw_sink_log_store to show phase (d)'s whole lag: a
	// reader reports its figures every 100 ms.
	lagSettle = 2 * time.Second
	// The targets for the decoupled slow sink, as ratios to the baseline.
	targetSinkThroughput = 0.90
	targetSinkBarrierP99 = 1.1
)

type sinkConfig struct {
	seconds      time.Duration
	warmup       time.Duration
	writers      int
	batch        int
	hotRate      int // rows/s of all writers together; 0 = unpaced
	delayMs      int // blackhole.delay_ms of the slow sinks
	lagRows      int64
	lagBatch     int64
	drainTimeout time.Duration // bound of each wait for a log store to drain
}

// sinkPhaseResult is the hot pipeline's figures over one phase, with what the phase's sink's
// log store showed.
type sinkPhaseResult struct {
	phaseResult
	Sink      string `json:"sink,omitempty"`
	Decoupled bool   `json:"decoupled"`
	// PeakLagRows is the highest sum over the sink's actors of rw_sink_log_store.pending_rows,
	// sampled every 100 ms during the load and the wait after it (coupled sinks have no log
	// store; the baseline samples nothing, at the same cost).
	PeakLagRows int64       `json:"peak_lag_rows"`
	LagSamples  int         `json:"lag_samples"`
	Drain       *drainStats `json:"lag_drain,omitempty"`
}

// drainStats is a wait for a log store to empty.
type drainStats struct {
	Seconds float64 `json:"seconds"` // from the start of the wait to the first sample of the final run of zeros
	Actors  int     `json:"actors"`
	Samples int     `json:"samples"`
}

// rssSample is the server's VmRSS once a share of phase (d)'s rows was inserted.
type rssSample struct {
	Percent int   `json:"percent"`
	Rows    int64 `json:"rows"`
	RSSKB   int64 `json:"rss_kb"`
}

// bigLagStats is phase (d): a paused decoupled sink's log store growing to lag-rows rows.
type bigLagStats struct {
	Rows          int64   `json:"rows_inserted"`
	Batch         int64   `json:"rows_per_insert"`
	InsertSeconds float64 `json:"insert_seconds"`
	InsertRate    float64 `json:"insert_rows_per_sec"`
	// What rw_sink_log_store showed (summed over actors) once every row was committed.
	PendingRows   int64 `json:"pending_rows"`
	PendingEpochs int64 `json:"pending_epochs"`
	PendingBytes  int64 `json:"pending_bytes"`
	Actors        int   `json:"actors"`
	// Delivered is set when an actor's delivered_epoch was past 0 before the drain: the
	// pause let something through. Stale is set when fewer rows showed pending than were
	// inserted while nothing was delivered: the figures are not the log store's.
	Delivered   bool        `json:"delivered_before_drain"`
	Stale       bool        `json:"stale_report,omitempty"`
	RSS         []rssSample `json:"rss"`
	PeakRSSKB   int64       `json:"peak_rss_kb"` // highest VmRSS sample while the lag grew
	RSSSamples  int         `json:"rss_samples"`
	DrainPeakKB int64       `json:"drain_peak_rss_kb"` // highest VmRSS sample during the drain
	HWMKB       int64       `json:"vm_hwm_kb"`         // the server's VmHWM after the drain (whole run)
	Drain       drainStats  `json:"drain"`
	DrainRate   float64     `json:"drain_rows_per_sec"` // rows inserted / drain seconds (all of them were pending)
}

// sinkReport is the whole run.
type sinkReport struct {
	Date        string            `json:"date"`
	Cores       int               `json:"cores"`
	SecondsEach float64           `json:"seconds_per_phase"`
	Writers     int               `json:"writers"`
	Batch       int               `json:"rows_per_insert"`
	HotRate     int               `json:"hot_rate"` // target rows/s into hot; 0 = as fast as INSERTs return
	DelayMs     int               `json:"blackhole_delay_ms"`
	LagRows     int64             `json:"lag_rows"`
	Phases      []sinkPhaseResult `json:"phases"`
	// Ratios of (b) and (c) to the baseline (a).
	Ratios       map[string]ratio `json:"ratios"`
	Targets      []targetCheck    `json:"targets"`
	BigLag       *bigLagStats     `json:"big_lag,omitempty"` // nil with --lag-rows 0
	HotViewRows  int              `json:"hot_view_rows_checked"`
	HotTableRows int64            `json:"hot_table_rows"`
}

func sinksMain(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("sinks", flag.ContinueOnError)
	seconds := fs.Float64("seconds", 10, "length of each measured phase (a), (b), (c)")
	writers := fs.Int("writers", 2, "client goroutines inserting into hot, one connection each")
	batch := fs.Int("batch", 100, "rows per INSERT into hot")
	hotRate := fs.Int("hot-rate", 20000, "rows/s the writers together insert into hot, paced (0: each writer as fast as its INSERTs return)")
	delayMs := fs.Int("delay-ms", 50, "blackhole.delay_ms of the slow sinks of (b) and (c): the sleep in every epoch commit")
	lagRows := fs.Int64("lag-rows", 10000000, "rows inserted into lagt behind the paused sink of phase (d) (0: skip phase (d))")
	lagBatch := fs.Int64("lag-batch", 500000, "rows per INSERT into lagt")
	drainTimeout := fs.Duration("drain-timeout", 15*time.Minute, "give up waiting for a log store to drain after this long")
	warmup := fs.Duration("warmup", time.Second, "unmeasured hot load before the baseline")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	serverBin := fs.String("server-bin", "", "prebuilt server binary (default: go build ./cmd/server)")
	serverArgs := fs.String("server-args", "", "extra flags for the started server")
	timeout := fs.Duration("timeout", time.Hour, "give up after this long")
	keep := fs.Bool("keep", false, "keep the temporary directory (data, logs)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *seconds <= 0 || *writers <= 0 || *batch <= 0 || *lagBatch <= 0 || *drainTimeout <= 0 || *timeout <= 0 {
		return errors.New("--seconds, --writers, --batch, --lag-batch, --drain-timeout and --timeout must be positive")
	}
	if *hotRate < 0 || *delayMs < 0 || *lagRows < 0 || *warmup < 0 {
		return errors.New("--hot-rate, --delay-ms, --lag-rows and --warmup must not be negative")
	}
	cfg := sinkConfig{seconds: time.Duration(*seconds * float64(time.Second)), warmup: *warmup, writers: *writers,
		batch: *batch, hotRate: *hotRate, delayMs: *delayMs, lagRows: *lagRows, lagBatch: *lagBatch, drainTimeout: *drainTimeout}
	var rep *sinkReport
	err := onOneServer(ctx, *timeout, *serverBin, *keep, "sinks", *serverArgs, func(ctx context.Context, srv *tributaryServer) (err error) {
		rep, err = runSinks(ctx, srv.DSN(), srv.Pid(), cfg)
		return err
	})
	if err != nil {
		return fmt.Errorf("sinks: %w", err)
	}
	if *asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false) // the targets' ">=" and "<=" as written
		return enc.Encode(rep)
	}
	printSinks(out, rep)
	return nil
}

// runSinks runs every phase against the server at dsn (process pid, for its RSS).
func runSinks(ctx context.Context, dsn string, pid int, cfg sinkConfig) (*sinkReport, error) {
	rep := &sinkReport{Date: time.Now().UTC().Format(time.RFC3339), Cores: runtime.GOMAXPROCS(0),
		SecondsEach: cfg.seconds.Seconds(), Writers: cfg.writers, Batch: cfg.batch, HotRate: cfg.hotRate,
		DelayMs: cfg.delayMs, LagRows: cfg.lagRows, Ratios: map[string]ratio{}}
	// ctl runs DDL and reads barrier latency; mon samples rw_sink_log_store while ctl's
	// measure is running (a connection serves one goroutine at a time).
	ctl, err := connect(ctx, dsn)
	if err != nil {
		return nil, err
	}
	defer ctl.Close(context.Background())
	mon, err := connect(ctx, dsn)
	if err != nil {
		return nil, err
	}
	defer mon.Close(context.Background())
	h, closeHot, err := newHotLoad(ctx, dsn, ctl, cfg.writers, cfg.batch, cfg.hotRate)
	if err != nil {
		return nil, err
	}
	defer closeHot()
	if cfg.warmup > 0 {
		if _, err := h.measure(ctx, ctl, "warm-up", cfg.warmup, nil); err != nil {
			return nil, err
		}
	}
	base, err := sinkPhase(ctx, ctl, mon, h, "(a) baseline", "", false, cfg)
	if err != nil {
		return nil, err
	}
	rep.Phases = append(rep.Phases, base)
	for _, decoupled := range []bool{false, true} {
		name, sink := fmt.Sprintf("(b) coupled, delay %d ms", cfg.delayMs), "slow_c"
		if decoupled {
			name, sink = fmt.Sprintf("(c) decoupled, delay %d ms", cfg.delayMs), "slow_d"
		}
		p, err := sinkPhase(ctx, ctl, mon, h, name, sink, decoupled, cfg)
		if err != nil {
			return nil, err
		}
		rep.Phases = append(rep.Phases, p)
		rep.Ratios[p.Name] = ratio{
			Throughput: p.RowsPerSec / base.RowsPerSec,
			InsertP50:  p.Latency.P50 / base.Latency.P50,
			InsertP99:  p.Latency.P99 / base.Latency.P99,
			BarrierP50: p.Barrier.P50 / base.Barrier.P50,
			BarrierP99: p.Barrier.P99 / base.Barrier.P99,
		}
		if decoupled {
			q := rep.Ratios[p.Name]
			rep.Targets = append(rep.Targets,
				targetCheck{Target: fmt.Sprintf("decoupled slow sink keeps >= %.0f%% of the hot throughput", 100*targetSinkThroughput),
					Got: fmt.Sprintf("%.2fx", q.Throughput), Met: q.Throughput >= targetSinkThroughput},
				targetCheck{Target: fmt.Sprintf("decoupled slow sink: barrier p99 <= %.1fx baseline", targetSinkBarrierP99),
					Got: fmt.Sprintf("%.2fx (%.1f ms vs %.1f ms)", q.BarrierP99, p.Barrier.P99, base.Barrier.P99), Met: q.BarrierP99 <= targetSinkBarrierP99})
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
	if cfg.lagRows > 0 {
		if rep.BigLag, err = bigLagPhase(ctx, ctl, mon, pid, cfg); err != nil {
			return nil, fmt.Errorf("(d) big lag: %w", err)
		}
		rep.Targets = append(rep.Targets, targetCheck{
			Target: fmt.Sprintf("paused sink's log store lag reaches >= %d rows", cfg.lagRows),
			Got:    fmt.Sprintf("%d rows pending", rep.BigLag.PendingRows), Met: rep.BigLag.PendingRows >= cfg.lagRows})
	}
	return rep, nil
}

// sinkPhase measures the hot load for cfg.seconds with sink (none when empty) created over
// hot as a blackhole sink sleeping cfg.delayMs per commit, coupled or decoupled. A decoupled
// sink's log store must then drain to 0. The sink is dropped at the end.
func sinkPhase(ctx context.Context, ctl, mon *pgx.Conn, h *hotLoad, name, sink string, decoupled bool, cfg sinkConfig) (sinkPhaseResult, error) {
	r := sinkPhaseResult{Sink: sink, Decoupled: decoupled}
	if sink != "" {
		for _, s := range []string{fmt.Sprintf("SET sink_decouple = %t", decoupled),
			fmt.Sprintf(`CREATE SINK %s AS SELECT * FROM hot WITH (connector = 'blackhole', blackhole.delay_ms = '%d')`, sink, cfg.delayMs),
		} {
			if err := execSQL(ctx, ctl, s); err != nil {
				return r, fmt.Errorf("%s: %w", name, err)
			}
		}
	}
	w := &lagWatch{sink: "public." + sink}
	stop := make(chan struct{})
	var watchErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		watchErr = w.watch(ctx, mon, stop)
	}()
	p, err := h.measure(ctx, ctl, name, cfg.seconds, nil)
	stopped := time.Now()
	close(stop)
	wg.Wait()
	if err = errors.Join(err, watchErr); err != nil {
		return r, fmt.Errorf("%s: %w", name, err)
	}
	r.phaseResult = p
	if decoupled {
		// After FLUSH every row of the load is committed to the log store and counted.
		if err := execSQL(ctx, ctl, "FLUSH"); err != nil {
			return r, fmt.Errorf("%s: %w", name, err)
		}
		// A figure can lag the log store by one delivery (the reader reports between
		// deliveries): zeros must hold for two deliveries plus two report periods.
		settle := max(300*time.Millisecond, 2*time.Duration(cfg.delayMs)*time.Millisecond+200*time.Millisecond)
		d, err := w.waitDrained(ctx, mon, stopped, cfg.drainTimeout, settle, nil)
		if err != nil {
			return r, fmt.Errorf("%s: %w", name, err)
		}
		r.Drain = &d
	}
	r.PeakLagRows, r.LagSamples = w.peak, w.samples
	if sink != "" {
		if err := execSQL(ctx, ctl, "DROP SINK "+sink); err != nil {
			return r, fmt.Errorf("%s: %w", name, err)
		}
	}
	return r, nil
}

// storeRow is one sink actor's row of rw_catalog.rw_sink_log_store.
type storeRow struct {
	actor, pendingEpochs, pendingRows, pendingBytes, deliveredEpoch int64
}

// lagWatch samples one sink's rows of rw_sink_log_store and keeps the highest total lag.
type lagWatch struct {
	sink    string // qualified, as rw_sink_log_store names it
	peak    int64  // highest sum of pending_rows over the actors
	samples int
}

// sample reads the sink's actors' rows and updates the peak.
func (w *lagWatch) sample(ctx context.Context, conn *pgx.Conn) ([]storeRow, error) {
	rows, err := conn.Query(ctx, fmt.Sprintf(`SELECT actor_id, pending_epochs, pending_rows, pending_bytes, delivered_epoch
		FROM rw_catalog.rw_sink_log_store WHERE sink_name = '%s' ORDER BY actor_id`, w.sink), pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		return nil, fmt.Errorf("rw_sink_log_store of %s: %w", w.sink, err)
	}
	var out []storeRow
	var sum int64
	for rows.Next() {
		var s storeRow
		if err := rows.Scan(&s.actor, &s.pendingEpochs, &s.pendingRows, &s.pendingBytes, &s.deliveredEpoch); err != nil {
			rows.Close()
			return nil, fmt.Errorf("rw_sink_log_store of %s: %w", w.sink, err)
		}
		out = append(out, s)
		sum += s.pendingRows
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("rw_sink_log_store of %s: %w", w.sink, err)
	}
	w.samples++
	w.peak = max(w.peak, sum)
	return out, nil
}

// watch samples every pollEvery until stop is closed or ctx ends.
func (w *lagWatch) watch(ctx context.Context, conn *pgx.Conn, stop <-chan struct{}) error {
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	for {
		if _, err := w.sample(ctx, conn); err != nil {
			return err
		}
		select {
		case <-stop:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// waitDrained samples every pollEvery until the sink has actors and every one shows
// pending_epochs = 0 and pending_rows = 0 for settle, or timeout passes. An actor in
// mustDeliver counts only once its delivered_epoch is past 0: a reader paused by its rate
// limit reports nothing, so its zeros from before its first delivery may be stale (an actor
// that never gets a row would never count: phase (d) hashes thousands of keys over a few
// actors). Seconds run from start to the first sample of the final run of zeros.
func (w *lagWatch) waitDrained(ctx context.Context, conn *pgx.Conn, start time.Time, timeout, settle time.Duration, mustDeliver map[int64]bool) (drainStats, error) {
	var d drainStats
	deadline := time.Now().Add(timeout)
	var zeroSince time.Time // of the current run of zero samples; zero: none
	var last []storeRow
	for {
		rows, err := w.sample(ctx, conn)
		if err != nil {
			return d, err
		}
		d.Samples++
		now := time.Now()
		if drained(rows, mustDeliver) {
			if zeroSince.IsZero() {
				zeroSince = now
			}
			if now.Sub(zeroSince) >= settle {
				d.Seconds, d.Actors = zeroSince.Sub(start).Seconds(), len(rows)
				return d, nil
			}
		} else {
			zeroSince = time.Time{}
		}
		last = rows
		if now.After(deadline) {
			return d, fmt.Errorf("%s: the log store did not drain within %v: %s", w.sink, timeout, describeStore(last))
		}
		if err := sleepCtx(ctx, pollEvery); err != nil {
			return d, fmt.Errorf("%s: waiting for the log store to drain: %w (last: %s)", w.sink, err, describeStore(last))
		}
	}
}

// drained reports whether rows list actors and all show an empty log store, those in
// mustDeliver after a delivery.
func drained(rows []storeRow, mustDeliver map[int64]bool) bool {
	if len(rows) == 0 {
		return false
	}
	for _, r := range rows {
		if r.pendingEpochs != 0 || r.pendingRows != 0 {
			return false
		}
		if mustDeliver[r.actor] && r.deliveredEpoch == 0 {
			return false
		}
	}
	return true
}

// sleepCtx sleeps for d or until ctx ends, and returns ctx's error then.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func describeStore(rows []storeRow) string {
	if len(rows) == 0 {
		return "no actor listed"
	}
	var parts []string
	for _, r := range rows {
		parts = append(parts, fmt.Sprintf("actor %d: %d epochs, %d rows pending, delivered epoch %d",
			r.actor, r.pendingEpochs, r.pendingRows, r.deliveredEpoch))
	}
	return strings.Join(parts, "; ")
}

// rssWatch samples a process's VmRSS every rssEvery.
type rssWatch struct {
	pid int
	mu  struct {
		sync.Mutex
		peak    int64
		samples int
	}
}

// run samples until stop is closed or ctx ends.
func (w *rssWatch) run(ctx context.Context, stop <-chan struct{}) error {
	t := time.NewTicker(rssEvery)
	defer t.Stop()
	for {
		if _, err := w.sample(); err != nil {
			return err
		}
		select {
		case <-stop:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

func (w *rssWatch) sample() (int64, error) {
	kb, err := procStatusKB(w.pid, "VmRSS")
	if err != nil {
		return 0, fmt.Errorf("server RSS: %w", err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.mu.peak = max(w.mu.peak, kb)
	w.mu.samples++
	return kb, nil
}

// reset returns the peak and number of samples so far and starts afresh.
func (w *rssWatch) reset() (peak int64, samples int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	peak, samples = w.mu.peak, w.mu.samples
	w.mu.peak, w.mu.samples = 0, 0
	return peak, samples
}

// bigLagPhase is phase (d): lagt's rows pile up in the log store of a paused decoupled sink
// while the server's RSS is sampled; then the pause is lifted and the drain timed.
func bigLagPhase(ctx context.Context, ctl, mon *pgx.Conn, pid int, cfg sinkConfig) (*bigLagStats, error) {
	fmt.Fprintf(os.Stderr, "bench: sinks: (d) %d rows behind a paused sink\n", cfg.lagRows)
	b := &bigLagStats{Rows: cfg.lagRows, Batch: cfg.lagBatch}
	for _, s := range []string{"SET sink_decouple = true", "CREATE TABLE lagt (id bigint PRIMARY KEY, v bigint)",
		"CREATE SINK lag_s FROM lagt WITH (connector = 'blackhole')", "ALTER SINK lag_s SET SINK_RATE_LIMIT = 0"} {
		if err := execSQL(ctx, ctl, s); err != nil {
			return b, err
		}
	}
	rw := &rssWatch{pid: pid}
	stop := make(chan struct{})
	var rssErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		rssErr = rw.run(ctx, stop)
	}()
	// stopRSS ends the sampler once; the deferred call covers the error returns.
	stopRSS := sync.OnceValue(func() error {
		close(stop)
		wg.Wait()
		return rssErr
	})
	defer stopRSS()
	quarter := func(rows int64, percent int) error {
		kb, err := rw.sample()
		if err != nil {
			return err
		}
		b.RSS = append(b.RSS, rssSample{Percent: percent, Rows: rows, RSSKB: kb})
		return nil
	}
	if err := quarter(0, 0); err != nil {
		return b, err
	}
	start := time.Now()
	next := 1 // the next quarter to sample
	for lo := int64(0); lo < cfg.lagRows; lo += cfg.lagBatch {
		hi := min(lo+cfg.lagBatch, cfg.lagRows)
		if err := execSQL(ctx, ctl, fmt.Sprintf(`INSERT INTO lagt SELECT g, g %% 1000 FROM generate_series(%d, %d) AS g`, lo, hi-1)); err != nil {
			return b, err
		}
		for ; next <= 4 && hi*4 >= int64(next)*cfg.lagRows; next++ {
			if err := quarter(hi, 25*next); err != nil {
				return b, err
			}
		}
	}
	if err := execSQL(ctx, ctl, "FLUSH"); err != nil {
		return b, err
	}
	b.InsertSeconds = time.Since(start).Seconds()
	b.InsertRate = float64(b.Rows) / b.InsertSeconds
	b.PeakRSSKB, b.RSSSamples = rw.reset()

	// Every row is committed: wait (briefly) for the readers' reports to show them.
	w := &lagWatch{sink: "public.lag_s"}
	var rows []storeRow
	for settle := time.Now().Add(lagSettle); ; {
		var err error
		if rows, err = w.sample(ctx, mon); err != nil {
			return b, err
		}
		var pending int64
		for _, r := range rows {
			pending += r.pendingRows
		}
		if pending >= cfg.lagRows || !time.Now().Before(settle) {
			break
		}
		if err := sleepCtx(ctx, pollEvery); err != nil {
			return b, fmt.Errorf("waiting for rw_sink_log_store to show the lag: %w", err)
		}
	}
	mustDeliver := map[int64]bool{}
	for _, r := range rows {
		b.PendingRows += r.pendingRows
		b.PendingEpochs += r.pendingEpochs
		b.PendingBytes += r.pendingBytes
		b.Delivered = b.Delivered || r.deliveredEpoch > 0
		mustDeliver[r.actor] = r.deliveredEpoch == 0
	}
	b.Actors = len(rows)
	b.Stale = !b.Delivered && b.PendingRows < b.Rows

	fmt.Fprintf(os.Stderr, "bench: sinks: (d) draining\n")
	lifted := time.Now()
	if err := execSQL(ctx, ctl, "ALTER SINK lag_s SET SINK_RATE_LIMIT = DEFAULT"); err != nil {
		return b, err
	}
	d, err := w.waitDrained(ctx, mon, lifted, cfg.drainTimeout, 300*time.Millisecond, mustDeliver)
	if err != nil {
		return b, err
	}
	b.Drain = d
	if d.Seconds > 0 {
		b.DrainRate = float64(b.Rows) / d.Seconds
	}
	if err := stopRSS(); err != nil {
		return b, err
	}
	b.DrainPeakKB, _ = rw.reset()
	if b.HWMKB, err = procStatusKB(pid, "VmHWM"); err != nil {
		return b, fmt.Errorf("server peak RSS: %w", err)
	}
	return b, execSQL(ctx, ctl, "DROP SINK lag_s")
}

func printSinks(out io.Writer, r *sinkReport) {
	pace := "as fast as INSERTs return"
	if r.HotRate > 0 {
		pace = fmt.Sprintf("paced at %d rows/s", r.HotRate)
	}
	fmt.Fprintf(out, "sinks benchmark, %s: %d writers x INSERT of %d rows into hot (view hot_agg), %s; slow sink = CREATE SINK AS SELECT * FROM hot WITH (connector = 'blackhole', blackhole.delay_ms = '%d'); %d cores\n",
		r.Date[:10], r.Writers, r.Batch, pace, r.DelayMs, r.Cores)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "phase\tseconds\thot rows/s\tINSERT p50 ms\tp99 ms\tbarriers\tbarrier p50 ms\tp99 ms\tmax ms\tpeak lag rows\tvs (a): rows/s\tbarrier p99\t")
	for _, p := range r.Phases {
		lag := "-"
		if p.Decoupled {
			lag = fmt.Sprintf("%d", p.PeakLagRows)
		}
		thr, b99 := "-", "-"
		if q, ok := r.Ratios[p.Name]; ok {
			thr, b99 = fmt.Sprintf("%.2fx", q.Throughput), fmt.Sprintf("%.2fx", q.BarrierP99)
		}
		fmt.Fprintf(tw, "%s\t%.1f\t%.0f\t%.2f\t%.2f\t%d\t%.2f\t%.2f\t%.2f\t%s\t%s\t%s\t\n", p.Name, p.Seconds, p.RowsPerSec,
			p.Latency.P50, p.Latency.P99, p.Barrier.Count, p.Barrier.P50, p.Barrier.P99, p.Barrier.Max, lag, thr, b99)
	}
	_ = tw.Flush() // errors of out surface on the caller's writes
	for _, t := range r.Targets {
		met := "not met"
		if t.Met {
			met = "met"
		}
		fmt.Fprintf(out, "target: %s: %s, %s\n", t.Target, t.Got, met)
	}
	for _, p := range r.Phases {
		if p.Drain != nil {
			fmt.Fprintf(out, "lag after the load stopped: returned to 0 in %.1f s (peak %d rows)\n", p.Drain.Seconds, p.PeakLagRows)
		}
	}
	if b := r.BigLag; b != nil {
		var samples []string
		for _, s := range b.RSS {
			samples = append(samples, fmt.Sprintf("%d%%: %.0f", s.Percent, float64(s.RSSKB)/1024))
		}
		fmt.Fprintf(out, "big lag: %d rows pending, peak RSS %.0f MiB (samples %s MiB; VmHWM %.0f MiB), drained in %.1f s (%.0f rows/s)\n",
			b.PendingRows, float64(b.PeakRSSKB)/1024, strings.Join(samples, ", "), float64(b.HWMKB)/1024, b.Drain.Seconds, b.DrainRate)
		fmt.Fprintf(out, "big lag: %d rows inserted into lagt in %.1f s (%.0f rows/s) while lag_s was paused; %d actors showed %d epochs, %d bytes pending; peak RSS during the drain %.0f MiB\n",
			b.Rows, b.InsertSeconds, b.InsertRate, b.Actors, b.PendingEpochs, b.PendingBytes, float64(b.DrainPeakKB)/1024)
		if b.Stale {
			fmt.Fprintf(out, "warning: rw_sink_log_store showed %d of %d rows pending while no actor had delivered anything: its figures are stale while delivery is paused\n",
				b.PendingRows, b.Rows)
		}
		if b.Delivered {
			fmt.Fprintln(out, "warning: an actor delivered epochs while lag_s was paused (SINK_RATE_LIMIT = 0)")
		}
	}
	fmt.Fprintf(out, "checked: hot_agg equals its query (%d rows over %d hot rows)\n", r.HotViewRows, r.HotTableRows)
}
