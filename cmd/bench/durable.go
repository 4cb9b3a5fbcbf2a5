package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
)

// The durable-commit benchmark (issue 14, item 4): single-row INSERTs, each its own
// transaction, from 1 and from many clients, against Tributary with --fsync (the default: an
// acknowledged commit is on disk) and PostgreSQL with fsync and synchronous_commit on. Both group
// concurrent commits into one sync (Tributary: every statement of an epoch shares the epoch's
// commit; PostgreSQL: one WAL flush covers the commits waiting for it), so throughput should
// grow with clients rather than fall. Tributary with --fsync=false is shown for the cost of the
// sync.

// durableSettings are PostgreSQL's defaults for durability (fsync, synchronous_commit,
// full_page_writes on), with room for the clients.
var durableSettings = []string{
	"listen_addresses=127.0.0.1", "unix_socket_directories=", "fsync=on", "synchronous_commit=on",
	"full_page_writes=on", "max_connections=120", "TimeZone=UTC", "logging_collector=off",
}

// durableResult is one run: a system, a client count, inserts acknowledged in the measured time.
type durableResult struct {
	System     string  `json:"system"`
	Clients    int     `json:"clients"`
	Inserts    int64   `json:"inserts"`
	Seconds    float64 `json:"seconds"`
	PerSec     float64 `json:"inserts_per_sec"`
	P50        float64 `json:"p50_ms"`
	P99        float64 `json:"p99_ms"`
	TableRows  int64   `json:"table_rows_checked"`
	lat        []time.Duration
	RatioVsPG  float64 `json:"ratio_vs_postgres,omitempty"`
	RoundMin   float64 `json:"round_ratio_min,omitempty"` // the lowest and highest ratio of one round
	RoundMax   float64 `json:"round_ratio_max,omitempty"`
	Rounds     int     `json:"rounds"`
	ServerArgs string  `json:"server_args,omitempty"`
}

func durableMain(ctx context.Context, args []string, out io.Writer) (err error) {
	fs := flag.NewFlagSet("durable", flag.ContinueOnError)
	seconds := fs.Float64("seconds", 10, "measured seconds per system and client count (after 1 s of warm-up in each round)")
	rounds := fs.Int("rounds", 1, "split each system's measured time into this many rounds, the systems alternating round by round")
	clientList := fs.String("clients", "1,50", "client counts; a comma-separated list runs each")
	noPG := fs.Bool("no-pg", false, "skip PostgreSQL")
	noSync := fs.Bool("nosync", true, "also run Tributary with --fsync=false, for the cost of the sync")
	serverBin := fs.String("server-bin", "", "prebuilt server binary (default: go build ./cmd/server)")
	serverArgs := fs.String("server-args", "", "extra flags for the started servers")
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
	if *seconds <= 0 {
		return errors.New("--seconds must be positive")
	}
	if *rounds < 1 {
		return errors.New("--rounds must be at least 1")
	}
	measure := time.Duration(*seconds * float64(time.Second))
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	e, err := newEnv(ctx, *serverBin, *keep)
	if err != nil {
		return err
	}
	defer e.close()

	// The systems run one after the other, in rounds: every system's server is up from the
	// start, and each round runs each of them for measure/rounds, so that a change in the
	// shared disk's speed (which moves a lone client's rate by tens of percent from minute to
	// minute on a shared host) lands on all of them alike.
	type system struct {
		name, dsn, args string
	}
	var systems []system
	pgVersion := ""
	if !*noPG {
		cluster, version, lerr := launchPostgres(ctx, e, durableSettings, "fsync", "synchronous_commit")
		if lerr != nil {
			return lerr
		}
		pgVersion = version
		defer func() {
			if stopErr := cluster.Stop(); stopErr != nil && err == nil {
				err = stopErr
			}
		}()
		systems = append(systems, system{name: "postgres", dsn: cluster.DSN()})
	}
	modes := []string{""}
	if *noSync {
		modes = append(modes, "--fsync=false")
	}
	for _, mode := range modes {
		name := "tributary"
		if mode != "" {
			name += " " + mode
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
		defer func() {
			if stopErr := srv.Stop(); stopErr != nil && err == nil {
				err = stopErr
			}
		}()
		systems = append(systems, system{name: name, dsn: srv.DSN(), args: strings.Join(srvArgs, " ")})
	}
	slice := measure / time.Duration(*rounds)
	var results []durableResult
	for _, n := range clients {
		runs := make([][]durableResult, len(systems)) // by system, one per round
		for round := 1; round <= *rounds; round++ {
			for i, sys := range systems {
				fmt.Fprintf(os.Stderr, "bench: %s, %d clients, round %d of %d\n", sys.name, n, round, *rounds)
				r, rerr := runDurable(ctx, sys.dsn, sys.name, n, slice)
				if rerr != nil {
					return fmt.Errorf("%s %d clients: %w", sys.name, n, rerr)
				}
				runs[i] = append(runs[i], r)
			}
		}
		for i, sys := range systems {
			r := mergeDurable(runs[i])
			r.ServerArgs = sys.args
			if i > 0 && systems[0].name == "postgres" {
				pg := mergeDurable(runs[0])
				r.RatioVsPG = r.PerSec / pg.PerSec
				for k := range runs[i] {
					q := runs[i][k].PerSec / runs[0][k].PerSec
					if k == 0 || q < r.RoundMin {
						r.RoundMin = q
					}
					r.RoundMax = max(r.RoundMax, q)
				}
			}
			results = append(results, r)
		}
	}
	if *asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Date     string          `json:"date"`
			Postgres string          `json:"postgres_version,omitempty"`
			Settings []string        `json:"postgres_settings,omitempty"`
			Results  []durableResult `json:"results"`
		}{time.Now().UTC().Format(time.RFC3339), pgVersion, durableSettings, results})
	}
	fmt.Fprintf(out, "durable-commit benchmark, %s: single-row INSERTs (each its own transaction), %.0f s per system and client count in %d round(s) (1 s warm-up each), the systems alternating\n",
		time.Now().UTC().Format("2006-01-02"), *seconds, *rounds)
	if pgVersion != "" {
		fmt.Fprintf(out, "PostgreSQL %s with fsync=on, synchronous_commit=on; Tributary with --fsync (default) and --fsync=false\n", pgVersion)
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "system\tclients\tinserts/s\tp50 ms\tp99 ms\tvs PostgreSQL\trounds: min-max\trows checked\t")
	for _, r := range results {
		ratio, spread := "-", "-"
		if r.RatioVsPG > 0 {
			ratio = fmt.Sprintf("%.2fx", r.RatioVsPG)
			if r.Rounds > 1 {
				spread = fmt.Sprintf("%.2fx-%.2fx", r.RoundMin, r.RoundMax)
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.2f\t%.2f\t%s\t%s\t%d\t\n", r.System, r.Clients, r.PerSec, r.P50, r.P99, ratio, spread, r.TableRows)
	}
	return tw.Flush()
}

// runDurable creates a fresh table and has n clients insert single rows into it as fast as
// their commits return, for 1 s of warm-up and then measure; it checks the table holds every
// acknowledged row.
func runDurable(ctx context.Context, dsn, system string, n int, measure time.Duration) (durableResult, error) {
	r := durableResult{System: system, Clients: n}
	table := fmt.Sprintf("durable_%d_%d", n, time.Now().UnixNano()%1e9)
	setup, err := connect(ctx, dsn)
	if err != nil {
		return r, err
	}
	defer setup.Close(context.Background())
	if _, err := setup.Exec(ctx, fmt.Sprintf(`CREATE TABLE %s (id bigint PRIMARY KEY, client int, note text)`, table)); err != nil {
		return r, fmt.Errorf("create table: %w", err)
	}
	conns := make([]*pgx.Conn, n)
	for i := range conns {
		if conns[i], err = connect(ctx, dsn); err != nil {
			return r, err
		}
		defer conns[i].Close(context.Background())
	}
	insert := fmt.Sprintf(`INSERT INTO %s VALUES ($1, $2, 'durable')`, table)
	warm := time.Now().Add(time.Second)
	end := warm.Add(measure)
	var (
		mu       sync.Mutex
		lat      []time.Duration
		measured int64
		total    int64
		firstErr error
		wg       sync.WaitGroup
	)
	for c, conn := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			var done, all int64
			for i := int64(0); ; i++ {
				start := time.Now()
				if !start.Before(end) {
					break
				}
				id := int64(c)<<32 | i
				if _, err := conn.Exec(ctx, insert, id, c); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("client %d insert: %w", c, err)
					}
					mu.Unlock()
					break
				}
				all++
				if stop := time.Now(); start.After(warm) && stop.Before(end) {
					mine = append(mine, stop.Sub(start))
					done++
				}
			}
			mu.Lock()
			lat = append(lat, mine...)
			measured += done
			total += all
			mu.Unlock()
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return r, firstErr
	}
	if err := setup.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM %s`, table)).Scan(&r.TableRows); err != nil {
		return r, fmt.Errorf("count rows: %w", err)
	}
	if r.TableRows != total {
		return r, fmt.Errorf("table holds %d rows, %d inserts were acknowledged", r.TableRows, total)
	}
	r.Inserts, r.Seconds = measured, measure.Seconds()
	r.PerSec = float64(measured) / measure.Seconds()
	r.lat = lat
	r.setPercentiles()
	return r, nil
}

func (r *durableResult) setPercentiles() {
	slices.Sort(r.lat)
	if len(r.lat) > 0 {
		r.P50 = float64(r.lat[len(r.lat)/2]) / float64(time.Millisecond)
		r.P99 = float64(r.lat[min(len(r.lat)-1, len(r.lat)*99/100)]) / float64(time.Millisecond)
	}
}

// mergeDurable sums one system's rounds into one result.
func mergeDurable(runs []durableResult) durableResult {
	m := durableResult{System: runs[0].System, Clients: runs[0].Clients, Rounds: len(runs)}
	for _, r := range runs {
		m.Inserts += r.Inserts
		m.Seconds += r.Seconds
		m.TableRows += r.TableRows
		m.lat = append(m.lat, r.lat...)
	}
	m.PerSec = float64(m.Inserts) / m.Seconds
	m.setPercentiles()
	return m
}
