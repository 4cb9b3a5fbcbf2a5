package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
)

const usage = `usage:
  bench stream [--rows N] [--batch B[,B...]] [--json] [--addr host:port] [--workloads a,b]
  bench memory [--groups G] [--server-args '--stream-cache-rows=4096'] [--json]
  bench isolation [--base-rows 5000000] [--seconds 10] [--hot-rate 20000] [--phases snapshot,into,unlimited,limited,adaptive,after] [--json]
  bench sinks [--seconds 10] [--hot-rate 20000] [--delay-ms 50] [--lag-rows 10000000] [--json]
  bench nexmark [--query q0[,q5...] | --all] [--events 1000000] [--generator-only]
  bench kafka [--messages 2000000] [--partitions 8] [--cases shared-count,...] [--profile-dir d] [--json]
  bench rescale [--rows 1000000,10000000] [--parallelism 4,1,3,2,4,1] [--hot-rate 20000] [--window 3s] [--json]
  bench cdc [--rows 10000000] [--events 1000000] [--rate 20000] [--seconds 30] [--json]
  bench durable [--clients 1,50] [--seconds 10] [--nosync=false] [--no-pg] [--json]
  bench copy [--rows 5000000] [--nosync=false] [--no-pg] [--profile cpu.pprof] [--json]
  bench dml-memory [--rows 5000000] [--view] [--server-args '...'] [--server-bin path] [--json]
  bench eowc [--query q5,q7] [--events 10000000] [--event-rate 10000] [--modes eowc,plain]
  bench ingest [--seconds 5] [--stmt-rows 1000] [--clients 1,8] [--tables plain,view] [--modes literal,prepared] [--profile-dir d] [--json]
  bench backfill [--rows 10000000] [--runs 2] [--settle 3m] [--no-pg] [--profile cpu.pprof] [--json]
Run "bench stream -h", "bench memory -h", "bench isolation -h", "bench sinks -h", "bench nexmark -h", "bench kafka -h" or "bench rescale -h" for every flag.`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	var err error
	switch os.Args[1] {
	case "stream":
		err = streamMain(ctx, os.Args[2:], os.Stdout)
	case "memory":
		err = memoryMain(ctx, os.Args[2:], os.Stdout)
	case "isolation":
		err = isolationMain(ctx, os.Args[2:], os.Stdout)
	case "sinks":
		err = sinksMain(ctx, os.Args[2:], os.Stdout)
	case "nexmark":
		err = nexmarkMain(ctx, os.Args[2:], os.Stdout)
	case "kafka":
		err = kafkaMain(ctx, os.Args[2:], os.Stdout)
	case "rescale":
		err = rescaleMain(ctx, os.Args[2:], os.Stdout)
	case "cdc":
		err = cdcMain(ctx, os.Args[2:], os.Stdout)
	case "durable":
		err = durableMain(ctx, os.Args[2:], os.Stdout)
	case "copy":
		err = copyMain(ctx, os.Args[2:], os.Stdout)
	case "dml-memory":
		err = dmlMemoryMain(ctx, os.Args[2:], os.Stdout)
	case "eowc":
		err = eowcMain(ctx, os.Args[2:], os.Stdout)
	case "ingest":
		err = ingestMain(ctx, os.Args[2:], os.Stdout)
	case "backfill":
		err = backfillMain(ctx, os.Args[2:], os.Stdout)
	default:
		fmt.Fprintln(os.Stderr, usage)
		stop()
		os.Exit(2)
	}
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// env holds what both modes share: a temporary directory and the server binary.
type env struct {
	dir  string
	bin  string
	keep bool
}

func newEnv(ctx context.Context, serverBin string, keep bool) (*env, error) {
	dir, err := os.MkdirTemp("", "tributary-bench-")
	if err != nil {
		return nil, fmt.Errorf("temp dir: %w", err)
	}
	e := &env{dir: dir, bin: serverBin, keep: keep}
	// PostgreSQL runs as an unprivileged user when we are root and must reach its directory.
	if err := os.Chmod(dir, 0o755); err != nil {
		e.close()
		return nil, fmt.Errorf("chmod %s: %w", dir, err)
	}
	if e.bin == "" {
		fmt.Fprintln(os.Stderr, "bench: building ./cmd/server")
		if e.bin, err = buildServer(ctx, dir); err != nil {
			e.close()
			return nil, err
		}
	}
	return e, nil
}

func (e *env) close() {
	if e.keep {
		fmt.Fprintf(os.Stderr, "bench: kept %s\n", e.dir)
		return
	}
	_ = os.RemoveAll(e.dir) // temporary files only
}

// subdir makes a fresh directory below the environment's.
func (e *env) subdir(name string) (string, error) {
	d, err := os.MkdirTemp(e.dir, name+"-")
	if err != nil {
		return "", fmt.Errorf("mkdir: %w", err)
	}
	return d, nil
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("bad positive integer %q", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func connect(ctx context.Context, dsn string) (*pgx.Conn, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("connect %s: %w", dsn, err)
	}
	return conn, nil
}

func streamMain(ctx context.Context, args []string, out io.Writer) (err error) {
	fs := flag.NewFlagSet("stream", flag.ContinueOnError)
	rows := fs.Int("rows", 200000, "rows inserted per run (N)")
	batches := fs.String("batch", "100,1000", "rows per INSERT statement (B); a comma-separated list runs each")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	addr := fs.String("addr", "", "host:port of a running Tributary server (default: build and start one)")
	serverBin := fs.String("server-bin", "", "prebuilt server binary (default: go build ./cmd/server)")
	serverArgs := fs.String("server-args", "", "extra flags for the started server")
	only := fs.String("workloads", "", "comma-separated subset of: filter+project, hash agg, join")
	pgMax := fs.Int("pg-max-batches", 200, "most PostgreSQL batches per run; longer runs are sampled around the mean table size and extrapolated")
	noPG := fs.Bool("no-pg", false, "skip PostgreSQL")
	cores := fs.Int("cores", runtime.GOMAXPROCS(0), "the server's GOMAXPROCS, for rows/s per core (default: this machine's, which a started server inherits)")
	timeout := fs.Duration("timeout", 2*time.Hour, "give up after this long")
	keep := fs.Bool("keep", false, "keep the temporary directory (data, logs)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	sizes, err := parseInts(*batches)
	if err != nil {
		return fmt.Errorf("--batch: %w", err)
	}
	if *rows <= 0 || *pgMax <= 0 || *cores <= 0 {
		return errors.New("--rows, --pg-max-batches and --cores must be positive")
	}
	selected := workloads
	if *only != "" {
		selected = nil
		for _, name := range strings.Split(*only, ",") {
			w, ok := workloadByName(strings.TrimSpace(name))
			if !ok {
				return fmt.Errorf("--workloads: unknown workload %q", name)
			}
			selected = append(selected, w)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()

	e, err := newEnv(ctx, *serverBin, *keep)
	if err != nil {
		return err
	}
	defer e.close()
	// Each run gets a fresh server (unless --addr names one), so no run pays for another's
	// leftover state or background compaction.
	openTributary := func() (*pgx.Conn, func() error, error) {
		if *addr != "" {
			conn, err := connect(ctx, fmt.Sprintf("postgres://tributary@%s/dev?sslmode=disable&connect_timeout=10", *addr))
			if err != nil {
				return nil, nil, err
			}
			return conn, func() error { return conn.Close(context.Background()) }, nil
		}
		dir, err := e.subdir("tributary")
		if err != nil {
			return nil, nil, err
		}
		srv, err := startTributary(ctx, e.bin, dir, strings.Fields(*serverArgs))
		if err != nil {
			return nil, nil, err
		}
		conn, err := connect(ctx, srv.DSN())
		if err != nil {
			_ = srv.Stop() // the connect error is the one to report
			return nil, nil, err
		}
		return conn, func() error {
			_ = conn.Close(context.Background()) // the server goes away next
			return srv.Stop()
		}, nil
	}
	var pg *pgx.Conn
	pgVersion := ""
	if !*noPG {
		dir, err := e.subdir("postgres")
		if err != nil {
			return err
		}
		cluster, err := startPostgres(dir)
		if err != nil {
			return err
		}
		defer func() {
			if stopErr := cluster.Stop(); stopErr != nil && err == nil {
				err = stopErr
			}
		}()
		if pg, err = connect(ctx, cluster.DSN()); err != nil {
			return err
		}
		defer pg.Close(context.Background())
		if err := pg.QueryRow(ctx, "SHOW server_version").Scan(&pgVersion); err != nil {
			return fmt.Errorf("postgres version: %w", err)
		}
	}

	var results []result
	suffix := fmt.Sprintf("_%d", time.Now().UnixNano()%1e9)
	run := 0
	for _, w := range selected {
		for _, b := range sizes {
			run++
			s := fmt.Sprintf("%s_%d", suffix, run)
			fmt.Fprintf(os.Stderr, "bench: %s, batch %d: tributary\n", w.name, b)
			tr, closeTr, err := openTributary()
			if err != nil {
				return err
			}
			r, err := runTributary(ctx, tr, w, *rows, b, *cores, s)
			if closeErr := closeTr(); err == nil {
				err = closeErr
			}
			if err != nil {
				return fmt.Errorf("tributary %s batch %d: %w", w.name, b, err)
			}
			results = append(results, r)
			if pg == nil {
				continue
			}
			fmt.Fprintf(os.Stderr, "bench: %s, batch %d: postgres with REFRESH\n", w.name, b)
			if r, err = runRefresh(ctx, pg, w, *rows, b, *pgMax, s); err != nil {
				return fmt.Errorf("postgres %s batch %d: %w", w.name, b, err)
			}
			results = append(results, r)
		}
	}
	if *asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Date      string   `json:"date"`
			Cores     int      `json:"cores"`
			Postgres  string   `json:"postgres_version,omitempty"`
			PGMaxRuns int      `json:"pg_max_batches"`
			Results   []result `json:"results"`
		}{time.Now().UTC().Format(time.RFC3339), *cores, pgVersion, *pgMax, results})
	}
	printStream(out, results, *rows, *cores, pgVersion)
	return nil
}

// printStream prints one line per (workload, batch): Tributary, PostgreSQL, and their ratio.
func printStream(out io.Writer, results []result, rows, cores int, pgVersion string) {
	fmt.Fprintf(out, "stream benchmark, %s: N = %d rows per run, per core = rows/s / %d (server GOMAXPROCS)\n",
		time.Now().UTC().Format("2006-01-02"), rows, cores)
	if pgVersion != "" {
		fmt.Fprintf(out, "PostgreSQL %s: INSERT of the batch, then REFRESH MATERIALIZED VIEW (full recompute), per batch\n", pgVersion)
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\tbatch\ttributary rows/s\tper core\tms/batch\tPG rows/s\tPG ms/batch\tratio\tview rows\tPG measured\t")
	var notes []string
	for i := 0; i < len(results); i++ {
		r := results[i]
		pgRate, pgMs, ratio, how := "-", "-", "-", "-"
		if i+1 < len(results) && results[i+1].Engine == "postgres-refresh" {
			p := results[i+1]
			i++
			pgRate, pgMs = fmt.Sprintf("%.0f", p.RowsPerSec), fmt.Sprintf("%.1f", p.MsPerBatch)
			ratio = fmt.Sprintf("%.0fx", r.RowsPerSec/p.RowsPerSec)
			how = fmt.Sprintf("all %d batches", p.Batches)
			if p.Extrapolated {
				how = fmt.Sprintf("%d batches at %d-%d rows (*)", p.Batches, p.SizeFrom, p.SizeTo)
				if len(notes) == 0 {
					notes = append(notes, fmt.Sprintf("(*) extrapolated: PostgreSQL ran only these batches, after an untimed load to the full run's mean "+
						"table size (N/2 = %d rows); REFRESH cost grows linearly with the table, so rows/s = batch / (mean cost of a measured batch)", rows/2))
				}
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.0f\t%.2f\t%s\t%s\t%s\t%d\t%s\t\n",
			r.Workload, r.Batch, r.RowsPerSec, r.PerCore, r.MsPerBatch, pgRate, pgMs, ratio, r.ViewRows, how)
	}
	_ = tw.Flush() // errors of out surface on the caller's writes; nothing to recover
	for _, n := range notes {
		fmt.Fprintln(out, n)
	}
	fmt.Fprintln(out, "every view was checked equal to its query run as a batch SELECT, on both systems")
}
