package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tributary/tributary/connector/nexmark"
	"github.com/tributary/tributary/connector/nexmark/queries"
	"github.com/tributary/tributary/sql/types"
)

// The Nexmark benchmark (issue 6). Per query, a fresh server: the three
// nexmark tables over events 0..N-1 with event gap 0 (as fast as possible),
// the query as a materialized view, then WAIT until the sources have ended
// and every view has caught up. Sinks are not built yet, so the query runs as
// an MV (not a blackhole sink): throughput includes materializing its rows.
//
// There is no ALTER TABLE ... SET SOURCE_RATE_LIMIT yet, so the sources
// cannot be created paused and released after the view: the view is created
// right after the tables, and the bid rows the sources produced before it
// (reported as "pre-MV bids") reach it by backfill. The clock starts before
// the first CREATE TABLE, so that work is inside the measured time.

// nexmarkPassing are the queries whose golden test passes (e2e TestNexmarkGolden);
// --all runs them. q21 needs arrays (regexp_match(...)[2]).
var nexmarkPassing = []string{"q0", "q1", "q2", "q3", "q4", "q5", "q7", "q8", "q9", "q10", "q14", "q15", "q16", "q17", "q18", "q19", "q20", "q21", "q22"}

// nexmarkResult is one query's run.
type nexmarkResult struct {
	Query        string
	Events       int64
	Seconds      float64
	EventsPerSec float64
	PeakRSSMB    float64
	// RSSAtMB is the server's VmRSS once 10%, 50% and 100% of the bids were
	// read (rw_source_splits; 100%: after WAIT): state that grows with the
	// events shows as a rising row.
	RSSAtMB   [3]float64
	CPUPerM   float64 // CPU seconds (user+system) per million events
	Barrier   barrierStats
	PreMVBids int64
	ViewRows  int64
}

func nexmarkMain(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("nexmark", flag.ContinueOnError)
	query := fs.String("query", "q0", "query (or comma-separated queries) to run")
	all := fs.Bool("all", false, "run every query whose golden test passes: "+strings.Join(nexmarkPassing, ","))
	events := fs.Int64("events", 1000000, "nexmark.event.num: events over the three tables (1:3:46)")
	genOnly := fs.Bool("generator-only", false, "measure only the raw generator (connector/nexmark in this binary, one goroutine)")
	serverBin := fs.String("server-bin", "", "prebuilt server binary (default: go build ./cmd/server)")
	serverArgs := fs.String("server-args", "", "extra flags for the started server")
	timeout := fs.Duration("timeout", time.Hour, "give up after this long")
	keep := fs.Bool("keep", false, "keep the temporary directory (data, logs)")
	form := fs.String("from", "source", "what the queries read: source (CREATE SOURCE: each query reads the generator, as published Nexmark runs do) or table (CREATE TABLE ... WITH (connector = 'nexmark'): the events are stored first)")
	as := fs.String("as", "sink", "how each query runs: sink (CREATE SINK ... WITH (connector = 'blackhole')) or mv (CREATE MATERIALIZED VIEW)")
	compare := fs.Int("compare-metrics", 0, "run each query this many times with metrics on (the default server, /metrics and the dashboard's endpoints scraped every second) and as often with them off (--http-listen= --stream-stats=false), alternating, and print both side by side")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *form != "table" && *form != "source" {
		return fmt.Errorf("--from must be table or source, not %q", *form)
	}
	if *as != "mv" && *as != "sink" {
		return fmt.Errorf("--as must be mv or sink, not %q", *as)
	}
	if *events <= 0 {
		return errors.New("--events must be positive")
	}
	gen, err := generatorRate(*events)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "generator-only: %.0f events/s (one goroutine, %d events)\n", gen, *events)
	if *genOnly {
		return nil
	}
	names := strings.Split(*query, ",")
	if *all {
		names = nexmarkPassing
	}
	var qs []queries.Query
	for _, n := range names {
		q, ok := queries.Lookup(strings.TrimSpace(n))
		if !ok {
			return fmt.Errorf("--query: no query %q", n)
		}
		qs = append(qs, q)
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	e, err := newEnv(ctx, *serverBin, *keep)
	if err != nil {
		return err
	}
	defer e.close()
	if *compare > 0 {
		return nexmarkCompareMetrics(ctx, out, e, strings.Fields(*serverArgs), qs, *events, *form == "source", *as == "sink", *compare)
	}
	var results []nexmarkResult
	for _, q := range qs {
		dir, err := e.subdir("nexmark-" + q.Name)
		if err != nil {
			return err
		}
		r, err := nexmarkRun(ctx, e.bin, dir, strings.Fields(*serverArgs), q, *events, *form == "source", *as == "sink", false)
		if err != nil {
			return fmt.Errorf("%s: %w", q.Name, err)
		}
		fmt.Fprintf(out, "%s: %.0f events/s\n", q.Name, r.EventsPerSec)
		results = append(results, r)
	}
	printNexmark(out, results, gen, *events)
	return nil
}

// nexmarkRun measures one query on a fresh server.
// With scrape, /metrics and the dashboard's endpoints are read every second
// while it runs (a Prometheus and an open dashboard).
func nexmarkRun(ctx context.Context, bin, dir string, serverArgs []string, q queries.Query, events int64, sources, sink, scrape bool) (r nexmarkResult, err error) {
	srv, err := startTributary(ctx, bin, dir, serverArgs)
	if err != nil {
		return r, err
	}
	defer func() {
		if stopErr := srv.Stop(); err == nil {
			err = stopErr
		}
	}()
	if scrape {
		stop := scrapeEverySecond(ctx, srv.HTTPAddr)
		defer func() {
			if n := stop(); n == 0 && err == nil {
				err = errors.New("no scrape of /metrics succeeded")
			}
		}()
	}
	conn, err := connect(ctx, srv.DSN())
	if err != nil {
		return r, err
	}
	defer conn.Close(context.Background())
	cpu0, err := procCPUSeconds(srv.Pid())
	if err != nil {
		return r, err
	}
	start := time.Now()
	ddl := queries.DDL(events, 0)
	if sources {
		ddl = queries.SourceDDL(events, 0)
	}
	for _, d := range ddl {
		if _, err := conn.Exec(ctx, d); err != nil {
			return r, fmt.Errorf("%s: %w", d, err)
		}
	}
	if !sources {
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM bid").Scan(&r.PreMVBids); err != nil {
			return r, err
		}
	}
	progress := &rssByProgress{pid: srv.Pid(), bids: bidCount(events)}
	if sources {
		watchCtx, stopWatch := context.WithCancel(ctx)
		watched := make(chan error, 1)
		go func() { watched <- progress.watch(watchCtx, srv.DSN()) }()
		defer func() {
			stopWatch()
			if werr := <-watched; err == nil && werr != nil {
				err = werr
			}
		}()
	}
	create := "CREATE MATERIALIZED VIEW " + q.Name + " AS " + q.SQL
	if sink {
		create = "CREATE SINK " + q.Name + " AS " + q.SQL + " WITH (connector = 'blackhole')"
	}
	if _, err := conn.Exec(ctx, create); err != nil {
		return r, fmt.Errorf("create %s: %w", q.Name, err)
	}
	if _, err := conn.Exec(ctx, "WAIT"); err != nil {
		return r, fmt.Errorf("WAIT: %w", err)
	}
	end := time.Now()
	cpu1, err := procCPUSeconds(srv.Pid())
	if err != nil {
		return r, err
	}
	hwm, err := procStatusKB(srv.Pid(), "VmHWM")
	if err != nil {
		return r, err
	}
	hist, err := barrierHistory(ctx, conn)
	if err != nil {
		return r, err
	}
	if !sources {
		var bids int64
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM bid").Scan(&bids); err != nil {
			return r, err
		}
		if want := bidCount(events); bids != want {
			return r, fmt.Errorf("bid has %d rows after WAIT; want %d", bids, want)
		}
	}
	if !sink {
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+q.Name).Scan(&r.ViewRows); err != nil {
			return r, err
		}
	}
	secs := end.Sub(start).Seconds()
	r.Query, r.Events, r.Seconds = q.Name, events, secs
	r.EventsPerSec = float64(events) / secs
	r.PeakRSSMB = float64(hwm) / 1024
	if sources {
		rss, err := procStatusKB(srv.Pid(), "VmRSS")
		if err != nil {
			return r, err
		}
		r.RSSAtMB = progress.at(float64(rss) / 1024)
	}
	r.CPUPerM = (cpu1 - cpu0) / (float64(events) / 1e6)
	r.Barrier = barrierWindow(hist, start, end)
	return r, nil
}

// rssByProgress samples the server's VmRSS against how many bids its
// sources have read (rw_source_splits), for the RSS at 10% and 50% of a run.
type rssByProgress struct {
	pid  int
	bids int64 // the run's bids
	mu   sync.Mutex
	seen [2]float64 // MB at 10% and 50%; 0 until reached
}

// watch samples every 250 ms until ctx ends (its end is not an error).
func (p *rssByProgress) watch(ctx context.Context, dsn string) error {
	conn, err := connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("progress connection: %w", err)
	}
	defer conn.Close(context.Background())
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		var read int64
		err := conn.QueryRow(ctx, "SELECT coalesce(sum(rows_read), 0)::bigint FROM rw_catalog.rw_source_splits WHERE source_name LIKE '%bid'").Scan(&read)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return fmt.Errorf("source progress: %w", err)
		}
		kb, err := procStatusKB(p.pid, "VmRSS")
		if err != nil {
			return err
		}
		p.mu.Lock()
		for i, share := range []float64{0.1, 0.5} {
			if p.seen[i] == 0 && float64(read) >= share*float64(p.bids) {
				p.seen[i] = float64(kb) / 1024
			}
		}
		p.mu.Unlock()
	}
}

// at is the RSS at 10% and 50% (0 when never sampled there) and end.
func (p *rssByProgress) at(end float64) [3]float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return [3]float64{p.seen[0], p.seen[1], end}
}

// bidCount is how many of events 0..n-1 are bids (46 of every 50, after the person and 3 auctions).
func bidCount(n int64) int64 { return n/50*46 + max(n%50-4, 0) }

// procCPUSeconds is a process's user+system CPU time from /proc/<pid>/stat.
func procCPUSeconds(pid int) (float64, error) {
	own, _, _, err := procStat(pid)
	return own, err
}

// procStat reads /proc/<pid>/stat: the process's user+system CPU seconds, those of its
// children already waited for, and its parent's pid.
func procStat(pid int) (own, children float64, ppid int, err error) {
	path := fmt.Sprintf("/proc/%d/stat", pid)
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("read %s: %w", path, err)
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, 0, fmt.Errorf("%s: no ')'", path)
	}
	// After "pid (comm)": field 3 is state, 4 ppid; utime, stime, cutime and cstime are fields
	// 14 to 17.
	f := strings.Fields(s[i+1:])
	if len(f) < 15 {
		return 0, 0, 0, fmt.Errorf("%s: %d fields", path, len(f))
	}
	var v [4]int64
	errs := make([]error, 5)
	for k := range v {
		v[k], errs[k] = strconv.ParseInt(f[11+k], 10, 64)
	}
	ppid, errs[4] = strconv.Atoi(f[1])
	if err := errors.Join(errs...); err != nil {
		return 0, 0, 0, fmt.Errorf("%s: %w", path, err)
	}
	const ticks = 100 // USER_HZ on Linux
	return float64(v[0]+v[1]) / ticks, float64(v[2]+v[3]) / ticks, ppid, nil
}

// treeCPUSeconds is the CPU time of pid and its children, live or exited (PostgreSQL's
// postmaster and its backends).
func treeCPUSeconds(pid int) (float64, error) {
	own, waited, _, err := procStat(pid)
	if err != nil {
		return 0, err
	}
	total := own + waited
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, fmt.Errorf("read /proc: %w", err)
	}
	for _, e := range ents {
		child, err := strconv.Atoi(e.Name())
		if err != nil || child == pid {
			continue
		}
		own, waited, ppid, err := procStat(child)
		if err != nil || ppid != pid {
			continue // gone meanwhile, or not a child
		}
		total += own + waited
	}
	return total, nil
}

// generatorRate generates events 0..n-1 of all three tables (every column)
// into 1024-row chunks on one goroutine and returns events per second.
func generatorRate(n int64) (float64, error) {
	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	type tab struct {
		cfg   *nexmark.Config
		chunk *types.Chunk
	}
	var tabs []tab
	for _, t := range queries.Tables {
		var cols []nexmark.Column
		var ts []types.T
		for _, c := range t.Columns {
			typ := types.TInt64
			switch c.Type {
			case "varchar":
				typ = types.TVarchar
			case "timestamp":
				typ = types.TTimestamp
			}
			cols = append(cols, nexmark.Column{Name: c.Name, Type: typ})
			ts = append(ts, typ)
		}
		cfg, err := nexmark.Parse(map[string]string{"connector": "nexmark", "nexmark.table.type": t.Type,
			"nexmark.event.num": strconv.FormatInt(n, 10), "nexmark.min.event.gap.in.ns": "0"}, cols)
		if err != nil {
			return 0, err
		}
		tabs = append(tabs, tab{cfg, types.NewChunk(ts, 1024)})
	}
	start := time.Now()
	for _, t := range tabs {
		for off := int64(0); ; {
			t.chunk.Reset()
			k := t.cfg.Fill(t.chunk, 0, off, 1024)
			if k == 0 {
				break
			}
			off += int64(k)
		}
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

func printNexmark(out io.Writer, rs []nexmarkResult, gen float64, events int64) {
	if len(rs) == 0 {
		return
	}
	var q0 float64
	for _, r := range rs {
		if r.Query == "q0" {
			q0 = r.EventsPerSec
		}
	}
	fmt.Fprintf(out, "\n%d events, %d cores, %s; generator-only %.0f events/s\n\n", events, runtime.NumCPU(), time.Now().UTC().Format("2006-01-02"), gen)
	fmt.Fprintln(out, "| query | events/s | / generator | / q0 | seconds | CPU s / M events | peak RSS MB | RSS MB at 10/50/100% | barrier p50 ms | barrier p99 ms | barriers | pre-MV bids | view rows |")
	fmt.Fprintln(out, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range rs {
		vsQ0 := "-"
		if q0 > 0 {
			vsQ0 = fmt.Sprintf("%.2f", r.EventsPerSec/q0)
		}
		at := "-"
		if r.RSSAtMB[2] > 0 {
			at = fmt.Sprintf("%.0f / %.0f / %.0f", r.RSSAtMB[0], r.RSSAtMB[1], r.RSSAtMB[2])
		}
		fmt.Fprintf(out, "| %s | %.0f | %.3f | %s | %.2f | %.2f | %.0f | %s | %.0f | %.0f | %d | %d | %d |\n", r.Query, r.EventsPerSec, r.EventsPerSec/gen, vsQ0,
			r.Seconds, r.CPUPerM, r.PeakRSSMB, at, r.Barrier.P50, r.Barrier.P99, r.Barrier.Count, r.PreMVBids, r.ViewRows)
	}
}
