package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
)

// memResult is one run of the many-groups aggregation on a freshly started server.
type memResult struct {
	ServerArgs []string `json:"server_args"`
	Note       string   `json:"note,omitempty"`
	Groups     int      `json:"groups"`
	Seconds    float64  `json:"seconds"`
	RowsPerSec float64  `json:"rows_per_sec"`
	PeakRSSKB  int64    `json:"peak_rss_kb"` // VmHWM of the server process after FLUSH
	RSSKB      int64    `json:"rss_kb"`      // VmRSS at the same moment
	AnonKB     int64    `json:"rss_anon_kb"` // of which anonymous memory (Go heap, stacks)
	FileKB     int64    `json:"rss_file_kb"` // of which mapped files (Badger's mmapped tables and memtable files)
	ViewRows   int64    `json:"view_rows"`
}

func memoryMain(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("memory", flag.ContinueOnError)
	groups := fs.Int("groups", 1000000, "distinct grouping keys (one row each)")
	batch := fs.Int("batch", 100000, "rows per INSERT statement")
	serverBin := fs.String("server-bin", "", "prebuilt server binary (default: go build ./cmd/server)")
	serverArgs := fs.String("server-args", "--stream-cache-rows=4096", "flags of the second run (the first runs with defaults)")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	timeout := fs.Duration("timeout", time.Hour, "give up after this long")
	keep := fs.Bool("keep", false, "keep the temporary directory (data, logs)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *groups <= 0 || *batch <= 0 {
		return fmt.Errorf("--groups and --batch must be positive")
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	e, err := newEnv(ctx, *serverBin, *keep)
	if err != nil {
		return err
	}
	defer e.close()
	known, err := serverFlags(e.bin)
	if err != nil {
		return err
	}
	second, note := strings.Fields(*serverArgs), ""
	for _, a := range second {
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && !known[name] {
			note = fmt.Sprintf("the server has no --%s flag yet: ran with defaults", name)
			second = nil
			break
		}
	}
	var results []memResult
	for _, sa := range [][]string{nil, second} {
		fmt.Fprintf(os.Stderr, "bench: memory, %d groups, server args %q\n", *groups, sa)
		r, err := memoryRun(ctx, e, sa, *groups, *batch)
		if err != nil {
			return err
		}
		if len(results) == 1 {
			r.Note = note
		}
		results = append(results, r)
	}
	if *asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(results)
	}
	fmt.Fprintf(out, "memory benchmark, %s: CREATE MATERIALIZED VIEW g AS SELECT k, count(*), sum(v) FROM t GROUP BY k; %d distinct k, FLUSH, then the server's VmHWM\n",
		time.Now().UTC().Format("2006-01-02"), *groups)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "server args\tgroups\tview rows\tseconds\trows/s\tpeak RSS MiB\tRSS after MiB\tanon MiB\tfile MiB\t")
	for _, r := range results {
		sa := strings.Join(r.ServerArgs, " ")
		if sa == "" {
			sa = "(defaults)"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.1f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t\n", sa, r.Groups, r.ViewRows, r.Seconds, r.RowsPerSec,
			float64(r.PeakRSSKB)/1024, float64(r.RSSKB)/1024, float64(r.AnonKB)/1024, float64(r.FileKB)/1024)
	}
	_ = tw.Flush() // errors of out surface on the caller's writes
	fmt.Fprintln(out, "anon/file: the RSS after FLUSH split into anonymous memory (Go heap) and mapped files (Badger's mmapped tables and memtables, reclaimable page cache)")
	if note != "" {
		fmt.Fprintln(out, "note:", note)
	}
	return nil
}

// memoryRun starts a server with args, fills the aggregation, and reads the peak RSS.
func memoryRun(ctx context.Context, e *env, args []string, groups, batch int) (r memResult, err error) {
	r = memResult{ServerArgs: args, Groups: groups}
	srv, conn, stopServer, err := startConnected(ctx, e, "memory", args)
	if err != nil {
		return r, err
	}
	defer func() {
		if stopErr := stopServer(); stopErr != nil && err == nil {
			err = stopErr
		}
	}()
	for _, s := range []string{
		`CREATE TABLE t (k bigint, v bigint)`,
		`CREATE MATERIALIZED VIEW g AS SELECT k, count(*) AS n, sum(v) AS s FROM t GROUP BY k`,
	} {
		if err := execSQL(ctx, conn, s); err != nil {
			return r, err
		}
	}
	start := time.Now()
	for lo := 0; lo < groups; lo += batch {
		hi := min(lo+batch, groups) - 1
		if err := execSQL(ctx, conn, fmt.Sprintf(`INSERT INTO t SELECT g, g %% 100 FROM generate_series(%d, %d) AS g`, lo, hi)); err != nil {
			return r, err
		}
	}
	if err := execSQL(ctx, conn, "FLUSH"); err != nil {
		return r, err
	}
	r.Seconds = time.Since(start).Seconds()
	r.RowsPerSec = float64(groups) / r.Seconds
	if r.PeakRSSKB, err = procStatusKB(srv.Pid(), "VmHWM"); err != nil {
		return r, err
	}
	for key, dst := range map[string]*int64{"VmRSS": &r.RSSKB, "RssAnon": &r.AnonKB, "RssFile": &r.FileKB} {
		if *dst, err = procStatusKB(srv.Pid(), key); err != nil {
			return r, err
		}
	}
	var n, sumN int64
	if err := conn.QueryRow(ctx, "SELECT count(*), sum(n) FROM g", pgx.QueryExecModeSimpleProtocol).Scan(&n, &sumN); err != nil {
		return r, fmt.Errorf("count the view: %w", err)
	}
	if n != int64(groups) || sumN != int64(groups) {
		return r, fmt.Errorf("view g has %d groups with %d rows in all, want %d and %d", n, sumN, groups, groups)
	}
	r.ViewRows = n
	return r, nil
}
