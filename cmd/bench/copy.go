package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// The COPY ingest benchmark (issue 17, item 2): one generated text-format file of N rows
// (id bigint PRIMARY KEY, k int, v text, ts timestamptz) loaded with `COPY t FROM STDIN`
// through pgx into a fresh table, on PostgreSQL 15 with fsync off and on, and on a fresh
// Tributary server with --fsync (the default) and --fsync=false. The goal is at least
// PostgreSQL's rows/s.

// copyTable is the benchmark table, the same on both systems.
const copyTable = `CREATE TABLE %s (id bigint PRIMARY KEY, k int, v text, ts timestamptz)`

// copyResult is one load: a system, the rows loaded and how long COPY took.
type copyResult struct {
	System     string  `json:"system"`
	Rows       int64   `json:"rows"`
	Seconds    float64 `json:"seconds"`
	PerSec     float64 `json:"rows_per_sec"`
	MBPerSec   float64 `json:"mb_per_sec"`
	Checked    int64   `json:"rows_checked"`
	RatioVsPG  float64 `json:"ratio_vs_postgres_fsync_on,omitempty"`
	ServerArgs string  `json:"server_args,omitempty"`
}

func copyMain(ctx context.Context, args []string, out io.Writer) (err error) {
	fs := flag.NewFlagSet("copy", flag.ContinueOnError)
	rows := fs.Int("rows", 5_000_000, "rows in the generated file")
	seed := fs.Uint64("seed", 1, "seed of the generated values")
	noPG := fs.Bool("no-pg", false, "skip PostgreSQL")
	noSync := fs.Bool("nosync", true, "also run Tributary with --fsync=false")
	serverBin := fs.String("server-bin", "", "prebuilt server binary (default: go build ./cmd/server)")
	serverArgs := fs.String("server-args", "", "extra flags for the started servers")
	profile := fs.String("profile", "", "write a CPU profile of the first Tributary load to this file (profiling costs CPU: measure in another run)")
	profileSecs := fs.Duration("profile-seconds", 10*time.Second, "length of the profile, from the start of the COPY")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	keep := fs.Bool("keep", false, "keep the temporary directory (data, logs, the file)")
	timeout := fs.Duration("timeout", 30*time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *rows <= 0 {
		return errors.New("--rows must be positive")
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	e, err := newEnv(ctx, *serverBin, *keep)
	if err != nil {
		return err
	}
	defer e.close()
	file := filepath.Join(e.dir, "copy.txt")
	size, err := writeCopyFile(file, *rows, *seed)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "bench: %d rows, %.1f MB in %s\n", *rows, float64(size)/1e6, file)

	var results []copyResult
	pgVersion := ""
	var pgOn float64
	if !*noPG {
		// One cluster per setting: command-line settings override ALTER SYSTEM.
		for _, fsync := range []string{"off", "on"} {
			settings := append(slices.DeleteFunc(slices.Clone(pgSettings), func(s string) bool { return strings.HasPrefix(s, "fsync=") }), "fsync="+fsync)
			name := "postgres fsync=" + fsync
			r, version, err := runCopyPostgres(ctx, e, settings, name, file, size, int64(*rows))
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			if fsync == "on" {
				pgOn = r.PerSec
			}
			pgVersion = version
			results = append(results, r)
		}
	}
	modes := []string{""}
	if *noSync {
		modes = append(modes, "--fsync=false")
	}
	for i, mode := range modes {
		name := "tributary --fsync"
		if mode != "" {
			name = "tributary " + mode
		}
		dir, err := e.subdir("tributary")
		if err != nil {
			return err
		}
		srvArgs := strings.Fields(*serverArgs + " " + mode)
		srv, err := startTributary(ctx, e.bin, dir, srvArgs)
		if err != nil {
			return err
		}
		var stopProfile func() error
		if i == 0 && *profile != "" {
			stopProfile = fetchProfile(ctx, srv.HTTPAddr, *profileSecs, *profile)
		}
		fmt.Fprintf(os.Stderr, "bench: %s\n", name)
		r, rerr := runCopy(ctx, srv.DSN(), name, file, size, int64(*rows))
		if stopProfile != nil {
			if perr := stopProfile(); perr != nil && rerr == nil {
				rerr = perr
			}
		}
		if rerr != nil {
			_ = srv.Stop() // the run's error is the one to report
			return fmt.Errorf("%s: %w", name, rerr)
		}
		r.ServerArgs = strings.Join(srvArgs, " ")
		if pgOn > 0 {
			r.RatioVsPG = r.PerSec / pgOn
		}
		results = append(results, r)
		if err := srv.Stop(); err != nil {
			return err
		}
		if err := e.clearData(dir, "tributary"); err != nil { // the next run's, as in bench ingest
			return err
		}
	}
	if *asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Date     string       `json:"date"`
			Rows     int          `json:"rows"`
			Bytes    int64        `json:"file_bytes"`
			Postgres string       `json:"postgres_version,omitempty"`
			Results  []copyResult `json:"results"`
		}{time.Now().UTC().Format(time.RFC3339), *rows, size, pgVersion, results})
	}
	fmt.Fprintf(out, "COPY ingest benchmark, %s: COPY t FROM STDIN (text) of %d rows, %.1f MB, through pgx into a fresh table\n",
		time.Now().UTC().Format("2006-01-02"), *rows, float64(size)/1e6)
	if pgVersion != "" {
		fmt.Fprintf(out, "PostgreSQL %s; ratio is rows/s over PostgreSQL's with fsync=on\n", pgVersion)
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "system\trows\tseconds\trows/s\tMB/s\tvs PostgreSQL fsync=on\trows checked\t")
	for _, r := range results {
		ratio := "-"
		if r.RatioVsPG > 0 {
			ratio = fmt.Sprintf("%.2fx", r.RatioVsPG)
		}
		fmt.Fprintf(tw, "%s\t%d\t%.2f\t%.0f\t%.1f\t%s\t%d\t\n", r.System, r.Rows, r.Seconds, r.PerSec, r.MBPerSec, ratio, r.Checked)
	}
	return tw.Flush()
}

// writeCopyFile writes n rows in COPY's text format to path and returns its size.
func writeCopyFile(path string, n int, seed uint64) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, fmt.Errorf("create %s: %w", path, err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	if err := writeCopyRows(w, n, seed); err != nil {
		_ = f.Close() // the write error is the one to report
		return 0, fmt.Errorf("write %s: %w", path, err)
	}
	if err := w.Flush(); err != nil {
		_ = f.Close()
		return 0, fmt.Errorf("write %s: %w", path, err)
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return 0, fmt.Errorf("stat %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return 0, fmt.Errorf("close %s: %w", path, err)
	}
	return st.Size(), nil
}

// writeCopyRows writes rows id 1..n (in a shuffled-looking order, so neither system gets a
// sorted load): k a random int, v a text of 8-40 characters (some with an escaped tab), ts a
// timestamptz in 2024; every 100th k is NULL.
func writeCopyRows(w *bufio.Writer, n int, seed uint64) error {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 "
	var buf []byte
	// A multiplicative permutation of 1..n: distinct ids, not in order.
	const mul = 2654435761
	for i := 0; i < n; i++ {
		id := int64((uint64(i)*mul)%uint64(n)) + 1
		buf = strconv.AppendInt(buf[:0], id, 10)
		buf = append(buf, '\t')
		if i%100 == 99 {
			buf = append(buf, `\N`...)
		} else {
			buf = strconv.AppendInt(buf, int64(rng.Int32N(1_000_000)), 10)
		}
		buf = append(buf, '\t')
		l := 8 + rng.IntN(33)
		for j := 0; j < l; j++ {
			buf = append(buf, letters[rng.IntN(len(letters))])
		}
		if i%50 == 0 {
			buf = append(buf, `\tx`...)
		}
		buf = append(buf, '\t')
		buf = base.Add(time.Duration(rng.Int64N(366*24*3600))*time.Second).AppendFormat(buf, "2006-01-02 15:04:05+00")
		buf = append(buf, '\n')
		if _, err := w.Write(buf); err != nil {
			return err
		}
	}
	return nil
}

// runCopy creates a fresh table and loads file into it with one COPY FROM STDIN, then checks
// the table's row count.
func runCopy(ctx context.Context, dsn, system, file string, size, want int64) (copyResult, error) {
	r := copyResult{System: system}
	conn, err := connect(ctx, dsn)
	if err != nil {
		return r, err
	}
	defer conn.Close(context.Background())
	table := fmt.Sprintf("copy_%d", time.Now().UnixNano()%1e9)
	if _, err := conn.Exec(ctx, fmt.Sprintf(copyTable, table)); err != nil {
		return r, fmt.Errorf("create table: %w", err)
	}
	f, err := os.Open(file)
	if err != nil {
		return r, fmt.Errorf("open %s: %w", file, err)
	}
	defer f.Close()
	start := time.Now()
	tag, err := conn.PgConn().CopyFrom(ctx, bufio.NewReaderSize(f, 1<<20), "COPY "+table+" FROM STDIN")
	elapsed := time.Since(start)
	if err != nil {
		return r, fmt.Errorf("copy: %w", err)
	}
	r.Rows = tag.RowsAffected()
	if r.Rows != want {
		return r, fmt.Errorf("COPY reported %d rows, want %d", r.Rows, want)
	}
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&r.Checked); err != nil {
		return r, fmt.Errorf("count rows: %w", err)
	}
	if r.Checked != want {
		return r, fmt.Errorf("table holds %d rows after COPY of %d", r.Checked, want)
	}
	r.Seconds = elapsed.Seconds()
	r.PerSec = float64(r.Rows) / r.Seconds
	r.MBPerSec = float64(size) / 1e6 / r.Seconds
	return r, nil
}

// runCopyPostgres runs the load on a fresh PostgreSQL cluster started with settings, after
// checking the cluster's fsync is the one asked for.
func runCopyPostgres(ctx context.Context, e *env, settings []string, name, file string, size, rows int64) (r copyResult, version string, err error) {
	cluster, version, err := launchPostgres(ctx, e, settings, "fsync")
	if err != nil {
		return r, "", err
	}
	defer func() {
		if stopErr := cluster.Stop(); stopErr != nil && err == nil {
			err = stopErr
		}
		if err == nil {
			err = e.clearPostgres(cluster)
		}
	}()
	fmt.Fprintf(os.Stderr, "bench: %s\n", name)
	r, err = runCopy(ctx, cluster.DSN(), name, file, size, rows)
	return r, version, err
}
