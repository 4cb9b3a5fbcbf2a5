package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
)

// dmlMemResult is one big INSERT ... SELECT on a freshly started server.
type dmlMemResult struct {
	ServerArgs []string `json:"server_args"`
	Rows       int      `json:"rows"`
	View       bool     `json:"view"`
	Seconds    float64  `json:"seconds"`
	RowsPerSec float64  `json:"rows_per_sec"`
	BeforeKB   int64    `json:"rss_before_kb"`    // VmRSS before the statement
	PeakKB     int64    `json:"peak_rss_kb"`      // VmHWM once the statement returned
	PeakAnonKB int64    `json:"peak_anon_kb"`     // the highest RssAnon sampled while it ran
	AfterKB    int64    `json:"rss_after_kb"`     // VmRSS right after it returned
	IdleKB     int64    `json:"rss_idle_kb"`      // VmRSS after --idle more
	IdleAnonKB int64    `json:"rss_idle_anon_kb"` // of which anonymous memory
}

func dmlMemoryMain(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("dml-memory", flag.ContinueOnError)
	rows := fs.Int("rows", 5000000, "rows of the one INSERT ... SELECT")
	view := fs.Bool("view", false, "also keep a count/sum materialized view over the table")
	serverBin := fs.String("server-bin", "", "prebuilt server binary (default: go build ./cmd/server)")
	serverArgs := fs.String("server-args", "", "server flags")
	idle := fs.Duration("idle", 10*time.Second, "how long after the statement to read the RSS again")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	timeout := fs.Duration("timeout", time.Hour, "give up after this long")
	keep := fs.Bool("keep", false, "keep the temporary directory (data, logs)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *rows <= 0 {
		return fmt.Errorf("--rows must be positive")
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	e, err := newEnv(ctx, *serverBin, *keep)
	if err != nil {
		return err
	}
	defer e.close()
	fmt.Fprintf(os.Stderr, "bench: dml-memory, %d rows, server args %q\n", *rows, *serverArgs)
	r, err := dmlMemoryRun(ctx, e, strings.Fields(*serverArgs), *rows, *view, *idle)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	fmt.Fprintf(out, "dml-memory benchmark, %s: INSERT INTO t SELECT g, g * 2, 'row ' || g FROM generate_series(1, %d) g into t (id bigint PRIMARY KEY, a bigint, s varchar)%s; the server's memory from /proc\n",
		time.Now().UTC().Format("2006-01-02"), *rows, map[bool]string{true: " with a count/sum view", false: ""}[*view])
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "server args\trows\tseconds\trows/s\tRSS before MiB\tpeak RSS MiB\tpeak anon MiB\tRSS after MiB\tRSS idle MiB\tidle anon MiB\t")
	sa := strings.Join(r.ServerArgs, " ")
	if sa == "" {
		sa = "(defaults)"
	}
	mib := func(kb int64) float64 { return float64(kb) / 1024 }
	fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t\n", sa, r.Rows, r.Seconds, r.RowsPerSec,
		mib(r.BeforeKB), mib(r.PeakKB), mib(r.PeakAnonKB), mib(r.AfterKB), mib(r.IdleKB), mib(r.IdleAnonKB))
	_ = tw.Flush() // errors of out surface on the caller's writes
	fmt.Fprintf(out, "peak RSS: VmHWM; peak anon: the highest RssAnon (Go heap, stacks) sampled every 50 ms while the statement ran; idle: %v after it returned\n", *idle)
	return nil
}

// dmlMemoryRun starts a server with args, runs the one big INSERT ... SELECT while sampling the
// server's memory, checks the table, and reads the memory again after idle.
func dmlMemoryRun(ctx context.Context, e *env, args []string, rows int, view bool, idle time.Duration) (r dmlMemResult, err error) {
	r = dmlMemResult{ServerArgs: args, Rows: rows, View: view}
	srv, conn, stopServer, err := startConnected(ctx, e, "dml-memory", args)
	if err != nil {
		return r, err
	}
	defer func() {
		if stopErr := stopServer(); stopErr != nil && err == nil {
			err = stopErr
		}
	}()
	stmts := []string{`CREATE TABLE t (id bigint PRIMARY KEY, a bigint, s varchar)`}
	if view {
		stmts = append(stmts, `CREATE MATERIALIZED VIEW v AS SELECT count(*) AS n, sum(a) AS s FROM t`)
	}
	for _, s := range stmts {
		if err := execSQL(ctx, conn, s); err != nil {
			return r, err
		}
	}
	pid := srv.Pid()
	if r.BeforeKB, err = procStatusKB(pid, "VmRSS"); err != nil {
		return r, err
	}
	// Sample RssAnon while the statement runs.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			if kb, err := procStatusKB(pid, "RssAnon"); err == nil && kb > r.PeakAnonKB {
				r.PeakAnonKB = kb
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	start := time.Now()
	err = execSQL(ctx, conn, fmt.Sprintf(`INSERT INTO t SELECT g, g * 2, 'row ' || g FROM generate_series(1, %d) g`, rows))
	r.Seconds = time.Since(start).Seconds()
	close(stop)
	wg.Wait()
	if err != nil {
		return r, err
	}
	r.RowsPerSec = float64(rows) / r.Seconds
	// RSS first: the high-water mark read after it is never below it (read the
	// other way round, RSS could grow in between, past the mark read before).
	if r.AfterKB, err = procStatusKB(pid, "VmRSS"); err != nil {
		return r, err
	}
	if r.PeakKB, err = procStatusKB(pid, "VmHWM"); err != nil {
		return r, err
	}
	var n int64
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM t", pgx.QueryExecModeSimpleProtocol).Scan(&n); err != nil {
		return r, fmt.Errorf("count the table: %w", err)
	}
	if n != int64(rows) {
		return r, fmt.Errorf("table t has %d rows, want %d", n, rows)
	}
	if view {
		if err := conn.QueryRow(ctx, "SELECT n FROM v", pgx.QueryExecModeSimpleProtocol).Scan(&n); err != nil {
			return r, fmt.Errorf("read the view: %w", err)
		}
		if n != int64(rows) {
			return r, fmt.Errorf("view v counts %d rows, want %d", n, rows)
		}
	}
	select {
	case <-ctx.Done():
		return r, ctx.Err()
	case <-time.After(idle):
	}
	if r.IdleKB, err = procStatusKB(pid, "VmRSS"); err != nil {
		return r, err
	}
	if r.IdleAnonKB, err = procStatusKB(pid, "RssAnon"); err != nil {
		return r, err
	}
	return r, nil
}
