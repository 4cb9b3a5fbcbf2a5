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
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
)

// The INSERT ingest benchmark (issue 19, item 3): multi-row `INSERT INTO t VALUES (...),...`
// statements of --stmt-rows rows each, from 1 and from 8 pgx connections, for --seconds per
// run, into t(id bigint PRIMARY KEY, k int, v text) on PostgreSQL 15 and on Tributary, the
// latter also with one `GROUP BY k` materialized view on t. Statements carry literals (sent
// with the simple protocol, as pgx does for a statement without arguments) or, in the
// prepared mode, $n parameters bound to one prepared statement. Both systems run with fsync
// off (Tributary: --fsync=false) unless --fsync is given. The goal is Tributary at least
// PostgreSQL's plain-table rate, with and without the view. Each client count and mode runs
// PostgreSQL's plain table, then Tributary's tables right after, each ratio against that run:
// either system's rate moves with the shared machine's phase (±30% within minutes). --rounds N
// runs the whole comparison N times and sums up each case's ratios over the rounds.

// ingestResult is one run: a system, a table kind, a client count and a statement mode.
type ingestResult struct {
	Round      int     `json:"round"`
	System     string  `json:"system"`
	Table      string  `json:"table"` // plain or view
	Clients    int     `json:"clients"`
	Mode       string  `json:"mode"` // literal or prepared
	Rows       int64   `json:"rows"`
	Statements int64   `json:"statements"`
	Seconds    float64 `json:"seconds"`
	PerSec     float64 `json:"rows_per_sec"`
	RatioVsPG  float64 `json:"ratio_vs_postgres_plain,omitempty"`
	// CPUPerRow is the server's CPU time per row (for PostgreSQL: the postmaster's and its
	// backends'), µs: unlike rows/s, it barely moves with the load of a shared machine.
	CPUPerRow  float64 `json:"server_cpu_us_per_row,omitempty"`
	ServerArgs string  `json:"server_args,omitempty"`
}

// ingestCase names one run's shape.
type ingestCase struct {
	table   string
	clients int
	mode    string
}

func (c ingestCase) String() string { return fmt.Sprintf("%s-%d-%s", c.table, c.clients, c.mode) }

func ingestMain(ctx context.Context, args []string, out io.Writer) (err error) {
	fs := flag.NewFlagSet("ingest", flag.ContinueOnError)
	seconds := fs.Float64("seconds", 5, "measured seconds per run")
	rounds := fs.Int("rounds", 1, "run the whole comparison this many times, each ratio against PostgreSQL's run just before it")
	stmtRows := fs.Int("stmt-rows", 1000, "rows per INSERT statement")
	clientList := fs.String("clients", "1,8", "connection counts; a comma-separated list runs each")
	tableList := fs.String("tables", "plain,view", "plain (t alone) and/or view (t with one GROUP BY k materialized view)")
	modeList := fs.String("modes", "literal,prepared", "literal (values in the text, simple protocol) and/or prepared ($n parameters)")
	fsync := fs.Bool("fsync", false, "run both systems with fsync on (default off on both, as the issue measured)")
	noPG := fs.Bool("no-pg", false, "skip PostgreSQL")
	serverBin := fs.String("server-bin", "", "prebuilt server binary (default: go build ./cmd/server)")
	serverArgs := fs.String("server-args", "", "extra flags for the started servers")
	profileDir := fs.String("profile-dir", "", "write a CPU profile of each Tributary run to DIR/<table>-<clients>-<mode>.pprof (profiling costs CPU: measure in another run)")
	traceDir := fs.String("trace-dir", "", "write a runtime trace of the first half of each Tributary run to DIR/<table>-<clients>-<mode>.trace (go tool trace)")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	keep := fs.Bool("keep", false, "keep the temporary directory (data, logs)")
	timeout := fs.Duration("timeout", 30*time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	clients, err := parseInts(*clientList)
	if err != nil {
		return fmt.Errorf("--clients: %w", err)
	}
	tables, err := oneOf("--tables", *tableList, "plain", "view")
	if err != nil {
		return err
	}
	modes, err := oneOf("--modes", *modeList, "literal", "prepared")
	if err != nil {
		return err
	}
	if *seconds <= 0 || *stmtRows <= 0 || *stmtRows*3 > 65535 || *rounds < 1 {
		return errors.New("--seconds and --rounds must be positive and --stmt-rows in 1..21845 (3 parameters a row, at most 65535)")
	}
	measure := time.Duration(*seconds * float64(time.Second))
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	e, err := newEnv(ctx, *serverBin, *keep)
	if err != nil {
		return err
	}
	defer e.close()
	if *traceDir != "" {
		if err := os.MkdirAll(*traceDir, 0o755); err != nil {
			return fmt.Errorf("--trace-dir: %w", err)
		}
	}
	if *profileDir != "" {
		if err := os.MkdirAll(*profileDir, 0o755); err != nil {
			return fmt.Errorf("--profile-dir: %w", err)
		}
	}

	srvArgs := strings.Fields(*serverArgs)
	if !*fsync {
		srvArgs = append([]string{"--fsync=false"}, srvArgs...)
	}
	o := ingestOptions{clients: clients, tables: tables, modes: modes, stmtRows: *stmtRows, measure: measure,
		pg: !*noPG, fsync: *fsync, srvArgs: srvArgs, profileDir: *profileDir, traceDir: *traceDir}
	var results []ingestResult
	pgVersion := ""
	for round := 1; round <= *rounds; round++ {
		rs, version, err := ingestRound(ctx, e, o, round)
		if err != nil {
			if *rounds > 1 {
				err = fmt.Errorf("round %d: %w", round, err)
			}
			return err
		}
		results, pgVersion = append(results, rs...), version
	}
	if *asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Date     string          `json:"date"`
			StmtRows int             `json:"stmt_rows"`
			Seconds  float64         `json:"seconds"`
			Postgres string          `json:"postgres_version,omitempty"`
			Rounds   int             `json:"rounds"`
			Results  []ingestResult  `json:"results"`
			Summary  []ingestSummary `json:"summary,omitempty"`
		}{time.Now().UTC().Format(time.RFC3339), *stmtRows, *seconds, pgVersion, *rounds, results, summarizeIngest(results)})
	}
	printIngest(out, results, *stmtRows, *seconds, pgVersion, *fsync, *rounds)
	return nil
}

// ingestOptions are what every round of the comparison runs.
type ingestOptions struct {
	clients              []int
	tables, modes        []string
	stmtRows             int
	measure              time.Duration
	pg, fsync            bool
	srvArgs              []string
	profileDir, traceDir string
}

// ingestRound runs one round: for each client count and mode, PostgreSQL's plain table (unless
// !o.pg) on a fresh cluster, stopped and removed, then Tributary's tables, each on a fresh
// server, their ratios against that PostgreSQL run: each comparison's runs follow one another
// within about 20 s, so that the shared machine's phase, which moves either system's rate by
// ±30% within minutes, weighs on both alike. It returns the results and PostgreSQL's version.
func ingestRound(ctx context.Context, e *env, o ingestOptions, round int) (results []ingestResult, pgVersion string, err error) {
	for _, n := range o.clients {
		for _, mode := range o.modes {
			pgRate := 0.0
			if o.pg {
				r, version, err := ingestPostgres(ctx, e, o, n, mode, round)
				if err != nil {
					return nil, "", err
				}
				pgVersion, pgRate = version, r.PerSec
				results = append(results, r)
			}
			for _, table := range o.tables {
				r, err := ingestTributary(ctx, e, o, ingestCase{table, n, mode}, round)
				if err != nil {
					return nil, "", err
				}
				if pgRate > 0 {
					r.RatioVsPG = r.PerSec / pgRate
				}
				results = append(results, r)
			}
		}
	}
	for i := range results {
		results[i].Round = round
	}
	return results, pgVersion, nil
}

// ingestPostgres runs PostgreSQL's plain-table case (it has no incrementally maintained view:
// its plain-table rate is the goal) with n clients in mode on a fresh cluster, which it stops
// and removes after: its background work on the rows it took (autovacuum, checkpoints) and the
// kernel's writeback of its gigabytes of dirty pages would take Tributary's CPU and disk.
func ingestPostgres(ctx context.Context, e *env, o ingestOptions, n int, mode string, round int) (r ingestResult, version string, err error) {
	settings := pgSettings
	if o.fsync {
		settings = append(settings[:len(settings):len(settings)], "fsync=on")
	}
	cluster, version, err := launchPostgres(ctx, e, settings, "fsync")
	if err != nil {
		return r, "", err
	}
	stopped := false
	defer func() {
		if stopped {
			return
		}
		if stopErr := cluster.Stop(); stopErr != nil && err == nil {
			err = stopErr
		}
	}()
	pgCPU := func() (float64, error) { return postmasterCPU(cluster.DataDir) }
	fmt.Fprintf(os.Stderr, "bench: round %d: postgres, plain, %d clients, %s\n", round, n, mode)
	if r, err = runIngest(ctx, cluster.DSN(), "postgres", ingestCase{"plain", n, mode}, o.stmtRows, o.measure, pgCPU); err != nil {
		return r, "", fmt.Errorf("postgres %d clients %s: %w", n, mode, err)
	}
	stopped = true
	if err := cluster.Stop(); err != nil {
		return r, "", fmt.Errorf("stop postgres: %w", err)
	}
	if err := e.clearPostgres(cluster); err != nil {
		return r, "", err
	}
	return r, version, nil
}

// ingestTributary runs case c on a fresh server (a profile and a trace of it when asked: the
// last round's overwrite the earlier ones').
func ingestTributary(ctx context.Context, e *env, o ingestOptions, c ingestCase, round int) (ingestResult, error) {
	// A fresh server per run: no run pays for another's data or compaction.
	dir, err := e.subdir("tributary")
	if err != nil {
		return ingestResult{}, err
	}
	srv, err := startTributary(ctx, e.bin, dir, o.srvArgs)
	if err != nil {
		return ingestResult{}, err
	}
	var stopProfile func() error
	if o.profileDir != "" {
		stopProfile = fetchProfile(ctx, srv.HTTPAddr, o.measure, filepath.Join(o.profileDir, c.String()+".pprof"))
	}
	var stopTrace func() error
	if o.traceDir != "" {
		stopTrace = fetchPprof(ctx, srv.HTTPAddr, "trace", o.measure/2+time.Second, filepath.Join(o.traceDir, c.String()+".trace"))
	}
	fmt.Fprintf(os.Stderr, "bench: round %d: tributary, %s, %d clients, %s\n", round, c.table, c.clients, c.mode)
	r, rerr := runIngest(ctx, srv.DSN(), "tributary", c, o.stmtRows, o.measure, func() (float64, error) { return procCPUSeconds(srv.Pid()) })
	for _, stop := range []func() error{stopProfile, stopTrace} {
		if stop != nil {
			if perr := stop(); perr != nil && rerr == nil {
				rerr = perr
			}
		}
	}
	if rerr != nil {
		_ = srv.Stop() // the run's error is the one to report
		return ingestResult{}, fmt.Errorf("tributary %s: %w", c, rerr)
	}
	if err := srv.Stop(); err != nil {
		return ingestResult{}, err
	}
	if err := e.clearData(dir, "tributary"); err != nil { // the next run's as for PostgreSQL's
		return ingestResult{}, err
	}
	r.ServerArgs = strings.Join(o.srvArgs, " ")
	return r, nil
}

// ingestSummary is one Tributary case over every round: its ratios to PostgreSQL (each against
// PostgreSQL's run just before it) and its rows/s.
type ingestSummary struct {
	Table     string    `json:"table"`
	Clients   int       `json:"clients"`
	Mode      string    `json:"mode"`
	Ratios    []float64 `json:"ratios_vs_postgres_plain"` // in round order
	MinRatio  float64   `json:"min_ratio"`
	MedRatio  float64   `json:"median_ratio"`
	MaxRatio  float64   `json:"max_ratio"`
	MedPerSec float64   `json:"median_rows_per_sec"`
}

// summarizeIngest sums up each Tributary case that has ratios, in the order of its first result.
func summarizeIngest(results []ingestResult) []ingestSummary {
	var out []ingestSummary
	at := map[ingestCase]int{}
	var rates [][]float64
	for _, r := range results {
		if r.System != "tributary" || r.RatioVsPG <= 0 {
			continue
		}
		c := ingestCase{r.Table, r.Clients, r.Mode}
		i, ok := at[c]
		if !ok {
			i = len(out)
			at[c] = i
			out = append(out, ingestSummary{Table: c.table, Clients: c.clients, Mode: c.mode})
			rates = append(rates, nil)
		}
		out[i].Ratios = append(out[i].Ratios, r.RatioVsPG)
		rates[i] = append(rates[i], r.PerSec)
	}
	for i := range out {
		out[i].MinRatio, out[i].MaxRatio = slices.Min(out[i].Ratios), slices.Max(out[i].Ratios)
		out[i].MedRatio, out[i].MedPerSec = median(out[i].Ratios), median(rates[i])
	}
	return out
}

// oneOf splits a comma-separated flag value and checks each item is one of allowed.
func oneOf(flagName, list string, allowed ...string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		ok := false
		for _, a := range allowed {
			ok = ok || f == a
		}
		if !ok {
			return nil, fmt.Errorf("%s: %q is not one of %s", flagName, f, strings.Join(allowed, ", "))
		}
		out = append(out, f)
	}
	return out, nil
}

func printIngest(out io.Writer, results []ingestResult, stmtRows int, seconds float64, pgVersion string, fsync bool, rounds int) {
	sync := "off"
	if fsync {
		sync = "on"
	}
	fmt.Fprintf(out, "INSERT ingest benchmark, %s: %d-row INSERT ... VALUES statements, %.0f s per run, fsync %s on both systems\n",
		time.Now().UTC().Format("2006-01-02"), stmtRows, seconds, sync)
	if pgVersion != "" {
		fmt.Fprintf(out, "PostgreSQL %s; ratio is rows/s over PostgreSQL's into the plain table with the same clients and mode\n", pgVersion)
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "round\tsystem\ttable\tclients\tmode\trows/s\tvs PostgreSQL\tserver CPU µs/row\trows checked\t")
	for _, r := range results {
		ratio := "-"
		if r.RatioVsPG > 0 {
			ratio = fmt.Sprintf("%.2fx", r.RatioVsPG)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%.0f\t%s\t%.2f\t%d\t\n", r.Round, r.System, r.Table, r.Clients, r.Mode, r.PerSec, ratio, r.CPUPerRow, r.Rows)
	}
	_ = tw.Flush() // errors of out surface on the caller's writes; nothing to recover
	sums := summarizeIngest(results)
	if rounds < 2 || len(sums) == 0 {
		return
	}
	fmt.Fprintf(out, "\nover %d rounds, each ratio against PostgreSQL's run just before it:\n", rounds)
	tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "table\tclients\tmode\tratios by round\tmin\tmedian\tmax\tmedian rows/s\t")
	for _, m := range sums {
		var rs []string
		for _, x := range m.Ratios {
			rs = append(rs, fmt.Sprintf("%.2f", x))
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%.2fx\t%.2fx\t%.2fx\t%.0f\t\n", m.Table, m.Clients, m.Mode, strings.Join(rs, " "), m.MinRatio, m.MedRatio, m.MaxRatio, m.MedPerSec)
	}
	_ = tw.Flush()
}

// ingestValue is row id's text column: a short text, a quote in every 100th.
func ingestValue(id int64) string {
	if id%100 == 0 {
		return "it's row " + strconv.FormatInt(id, 10)
	}
	return "row " + strconv.FormatInt(id, 10)
}

// appendLiteralInsert appends `INSERT INTO table VALUES (...),...` of rows first..first+n-1.
func appendLiteralInsert(b []byte, table string, first int64, n int) []byte {
	b = append(b, "INSERT INTO "...)
	b = append(b, table...)
	b = append(b, " VALUES "...)
	for id := first; id < first+int64(n); id++ {
		if id > first {
			b = append(b, ',')
		}
		b = append(b, '(')
		b = strconv.AppendInt(b, id, 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, id%1000, 10)
		b = append(b, ",'"...)
		b = append(b, strings.ReplaceAll(ingestValue(id), "'", "''")...)
		b = append(b, "')"...)
	}
	return b
}

// preparedInsert is `INSERT INTO table VALUES ($1,$2,$3),...` of n rows.
func preparedInsert(table string, n int) string {
	var b strings.Builder
	b.WriteString("INSERT INTO " + table + " VALUES ")
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "($%d,$%d,$%d)", 3*i+1, 3*i+2, 3*i+3)
	}
	return b.String()
}

// runIngest creates a fresh table (and view) and has c.clients connections insert
// stmtRows-row statements into it until measure has passed; it then checks that the table
// (and the view) hold every acknowledged row. Each connection runs one statement before the
// clock starts (connection set-up, statement preparation).
func runIngest(ctx context.Context, dsn, system string, c ingestCase, stmtRows int, measure time.Duration, serverCPU func() (float64, error)) (ingestResult, error) {
	r := ingestResult{System: system, Table: c.table, Clients: c.clients, Mode: c.mode}
	table := fmt.Sprintf("ingest_%d", time.Now().UnixNano()%1e9)
	setup, err := connect(ctx, dsn)
	if err != nil {
		return r, err
	}
	defer setup.Close(context.Background())
	if _, err := setup.Exec(ctx, fmt.Sprintf(`CREATE TABLE %s (id bigint PRIMARY KEY, k int, v text)`, table)); err != nil {
		return r, fmt.Errorf("create table: %w", err)
	}
	if c.table == "view" {
		if _, err := setup.Exec(ctx, fmt.Sprintf(`CREATE MATERIALIZED VIEW %s_mv AS SELECT k, count(*) AS n FROM %s GROUP BY k`, table, table)); err != nil {
			return r, fmt.Errorf("create view: %w", err)
		}
	}
	conns := make([]*pgx.Conn, c.clients)
	for i := range conns {
		if conns[i], err = connect(ctx, dsn); err != nil {
			return r, err
		}
		defer conns[i].Close(context.Background())
	}
	prepared := preparedInsert(table, stmtRows)
	// insert runs statement i of client cl: ids cl<<40 + i*stmtRows + 1 onwards.
	insert := func(conn *pgx.Conn, cl int, i int64, buf []byte, args []any) ([]byte, error) {
		first := int64(cl)<<40 + i*int64(stmtRows) + 1
		var tag []byte
		if c.mode == "literal" {
			buf = appendLiteralInsert(buf[:0], table, first, stmtRows)
			ct, err := conn.Exec(ctx, string(buf))
			if err != nil {
				return buf, err
			}
			tag = []byte(ct.String())
		} else {
			for j := 0; j < stmtRows; j++ {
				id := first + int64(j)
				args[3*j], args[3*j+1], args[3*j+2] = id, int32(id%1000), ingestValue(id)
			}
			ct, err := conn.Exec(ctx, prepared, args...)
			if err != nil {
				return buf, err
			}
			tag = []byte(ct.String())
		}
		if want := fmt.Sprintf("INSERT 0 %d", stmtRows); string(tag) != want {
			return buf, fmt.Errorf("command tag %q, want %q", tag, want)
		}
		return buf, nil
	}
	var (
		mu       sync.Mutex
		rows     int64 // acknowledged in the measured time
		stmts    int64
		total    int64 // acknowledged, warm-up included
		firstErr error
		wg       sync.WaitGroup
		ready    sync.WaitGroup
		start    = make(chan struct{})
		end      time.Time
	)
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
	}
	ready.Add(len(conns))
	for cl, conn := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []byte
			args := make([]any, 3*stmtRows)
			buf, err := insert(conn, cl, 0, buf, args)
			ready.Done()
			if err != nil {
				fail(fmt.Errorf("client %d warm-up: %w", cl, err))
				return
			}
			<-start
			n := int64(0)
			for i := int64(1); time.Now().Before(end); i++ {
				if buf, err = insert(conn, cl, i, buf, args); err != nil {
					fail(fmt.Errorf("client %d statement %d: %w", cl, i, err))
					break
				}
				n++
			}
			mu.Lock()
			stmts += n
			rows += n * int64(stmtRows)
			total += (n + 1) * int64(stmtRows)
			mu.Unlock()
		}()
	}
	ready.Wait()
	var cpu0 float64
	if serverCPU != nil {
		if cpu0, err = serverCPU(); err != nil {
			close(start)
			end = time.Now()
			wg.Wait()
			return r, err
		}
	}
	began := time.Now()
	end = began.Add(measure)
	close(start)
	wg.Wait()
	elapsed := time.Since(began) // the last statement ends after the deadline: counted in full
	if firstErr != nil {
		return r, firstErr
	}
	if serverCPU != nil {
		cpu1, err := serverCPU()
		if err != nil {
			return r, err
		}
		if rows > 0 {
			r.CPUPerRow = (cpu1 - cpu0) / float64(rows) * 1e6
		}
	}
	var count int64
	if err := setup.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&count); err != nil {
		return r, fmt.Errorf("count rows: %w", err)
	}
	if count != total {
		return r, fmt.Errorf("table holds %d rows, %d were acknowledged", count, total)
	}
	if c.table == "view" {
		var sum int64
		if err := setup.QueryRow(ctx, fmt.Sprintf("SELECT coalesce(sum(n), 0)::bigint FROM %s_mv", table)).Scan(&sum); err != nil {
			return r, fmt.Errorf("sum view: %w", err)
		}
		if sum != total {
			return r, fmt.Errorf("view counts %d rows, %d were acknowledged", sum, total)
		}
	}
	r.Rows, r.Statements, r.Seconds = rows, stmts, elapsed.Seconds()
	r.PerSec = float64(rows) / elapsed.Seconds()
	return r, nil
}

// postmasterCPU is the CPU time of the PostgreSQL cluster in dataDir: its postmaster (the first
// line of postmaster.pid) and every child.
func postmasterCPU(dataDir string) (float64, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return 0, fmt.Errorf("postmaster pid: %w", err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		return 0, fmt.Errorf("postmaster pid %q: %w", line, err)
	}
	return treeCPUSeconds(pid)
}
