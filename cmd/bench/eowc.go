package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tributary/tributary/connector/nexmark/queries"
)

// The watermark state-cleaning benchmark (issue 18): Nexmark q5 and q7 with
// EMIT ON WINDOW CLOSE over a bid source with a watermark on date_time, each
// on a fresh server as a blackhole sink, sampled at 10%, 50% and 100% of
// the bids read: the job's state rows (rw_catalog.rw_table_stats, which
// counts every state table's keys at the committed epoch) and the server's
// RSS. With --modes eowc,plain, the same queries without the clause over a source
// without a watermark, for contrast.

// eowcSample is one sample of a run.
type eowcSample struct {
	Percent   int
	Bids      int64 // bids read by the slowest reader of the job
	StateRows int64
	RSSMB     float64
	Seconds   float64 // since the sink was created
}

// eowcResult is one query's run in one mode.
type eowcResult struct {
	Query   string
	EOWC    bool
	Events  int64
	Samples []eowcSample
}

func eowcMain(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("eowc", flag.ContinueOnError)
	query := fs.String("query", "q5,q7", "queries to run (q5, q7)")
	events := fs.Int64("events", 10000000, "nexmark.event.num: events over the three types (the bid source reads 46 of every 50)")
	eventRate := fs.Int64("event-rate", 10000, "nexmark.next.event.rate: events per second of event time (10,000: Nexmark's default, so 10M events span 1000 s, 100 TUMBLE windows of q7)")
	delay := fs.String("watermark-delay", "'4' SECOND", "WATERMARK FOR date_time AS date_time - INTERVAL <this>")
	modesFlag := fs.String("modes", "eowc", "eowc (EMIT ON WINDOW CLOSE over a source with a watermark), plain (the query without the clause over a source without a watermark), or both: eowc,plain")
	serverBin := fs.String("server-bin", "", "prebuilt server binary (default: go build ./cmd/server)")
	serverArgs := fs.String("server-args", "", "extra flags for the started server")
	timeout := fs.Duration("timeout", 2*time.Hour, "give up after this long")
	keep := fs.Bool("keep", false, "keep the temporary directory (data, logs)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *events <= 0 || *eventRate <= 0 {
		return errors.New("--events and --event-rate must be positive")
	}
	var qs []queries.Query
	for _, n := range strings.Split(*query, ",") {
		q, ok := queries.LookupEOWC(strings.TrimSpace(n))
		if !ok {
			return fmt.Errorf("--query: no EOWC query %q (q5, q7)", n)
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
	var modes []bool
	for _, m := range strings.Split(*modesFlag, ",") {
		switch strings.TrimSpace(m) {
		case "eowc":
			modes = append(modes, true)
		case "plain":
			modes = append(modes, false)
		default:
			return fmt.Errorf("--modes: %q is neither eowc nor plain", m)
		}
	}
	var results []eowcResult
	for _, q := range qs {
		for _, eowc := range modes {
			dir, err := e.subdir("eowc-" + q.Name)
			if err != nil {
				return err
			}
			r, err := eowcRun(ctx, e.bin, dir, strings.Fields(*serverArgs), q, eowc, *events, 0, *eventRate, *delay, []int{10, 50}, 250*time.Millisecond)
			if err != nil {
				return fmt.Errorf("%s: %w", q.Name, err)
			}
			results = append(results, r)
		}
	}
	printEOWC(out, results, *eventRate)
	return nil
}

// eowcRun runs q (with EMIT ON WINDOW CLOSE over a watermarked source when
// eowc, else plainly over a source without one) as a blackhole sink on a
// fresh server and samples it when the source has read each of percents of
// the bids (polling every poll; the state is the committed one, a barrier or
// two behind the reader) and at 100%, after WAIT and FLUSH. gapNs paces the
// source (0: as fast as it goes).
func eowcRun(ctx context.Context, bin, dir string, serverArgs []string, q queries.Query, eowc bool, events, gapNs, eventRate int64, delay string,
	percents []int, poll time.Duration) (r eowcResult, err error) {
	r = eowcResult{Query: q.Name, EOWC: eowc, Events: events}
	srv, err := startTributary(ctx, bin, dir, serverArgs)
	if err != nil {
		return r, err
	}
	defer func() {
		if stopErr := srv.Stop(); err == nil {
			err = stopErr
		}
	}()
	conn, err := connect(ctx, srv.DSN())
	if err != nil {
		return r, err
	}
	defer conn.Close(context.Background())
	sql := q.SQL
	if eowc {
		sql += queries.EmitOnWindowClose
	} else {
		delay = ""
	}
	for _, s := range []string{
		queries.BidWatermarkSourceDDL("bid", events, gapNs, eventRate, delay),
		"SET background_ddl = true",
		"CREATE SINK " + q.Name + " AS " + sql + " WITH (connector = 'blackhole')",
	} {
		if _, err := conn.Exec(ctx, s); err != nil {
			return r, fmt.Errorf("%s: %w", s, err)
		}
	}
	start := time.Now()
	var job int32
	if err := conn.QueryRow(ctx, "SELECT id FROM rw_catalog.rw_sinks WHERE name = $1", q.Name).Scan(&job); err != nil {
		return r, fmt.Errorf("the sink's id: %w", err)
	}
	bids := bidCount(events)
	sample := func(pct int, read int64) error {
		var rows int64
		if err := conn.QueryRow(ctx, "SELECT coalesce(sum(total_key_count), 0)::bigint FROM rw_catalog.rw_table_stats WHERE job_id = $1", job).Scan(&rows); err != nil {
			return fmt.Errorf("rw_table_stats: %w", err)
		}
		rss, err := procStatusKB(srv.Pid(), "VmRSS")
		if err != nil {
			return err
		}
		r.Samples = append(r.Samples, eowcSample{Percent: pct, Bids: read, StateRows: rows, RSSMB: float64(rss) / 1024,
			Seconds: time.Since(start).Seconds()})
		return nil
	}
	for _, pct := range percents {
		for {
			read, err := slowestReader(ctx, conn)
			if err != nil {
				return r, err
			}
			if read*100 >= bids*int64(pct) {
				if err := sample(pct, read); err != nil {
					return r, err
				}
				break
			}
			select {
			case <-ctx.Done():
				return r, fmt.Errorf("waiting for %d%% of %d bids (at %d): %w", pct, bids, read, ctx.Err())
			case <-time.After(poll):
			}
		}
	}
	// 100%: the source has ended and everything it read is through the job.
	if _, err := conn.Exec(ctx, "WAIT"); err != nil {
		return r, fmt.Errorf("WAIT: %w", err)
	}
	if _, err := conn.Exec(ctx, "FLUSH"); err != nil {
		return r, fmt.Errorf("FLUSH: %w", err)
	}
	read, err := slowestReader(ctx, conn)
	if err != nil {
		return r, err
	}
	if read != bids {
		return r, fmt.Errorf("after WAIT the readers read %d bids; want %d", read, bids)
	}
	return r, sample(100, read)
}

// slowestReader is the fewest rows any reader of the server's sources has
// read (each reader of a job reads every bid).
func slowestReader(ctx context.Context, conn *pgx.Conn) (int64, error) {
	var n *int64
	if err := conn.QueryRow(ctx, "SELECT min(rows_read)::bigint FROM rw_catalog.rw_source_splits").Scan(&n); err != nil {
		return 0, fmt.Errorf("rw_source_splits: %w", err)
	}
	if n == nil {
		return 0, nil // not started yet
	}
	return *n, nil
}

func printEOWC(out io.Writer, rs []eowcResult, eventRate int64) {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "query\tmode\tevents\tat\tbids read\tstate rows\tRSS MB\tseconds\t")
	for _, r := range rs {
		mode := "eowc"
		if !r.EOWC {
			mode = "plain"
		}
		for _, s := range r.Samples {
			fmt.Fprintf(w, "%s\t%s\t%d\t%d%%\t%d\t%d\t%.0f\t%.1f\t\n", r.Query, mode, r.Events, s.Percent, s.Bids, s.StateRows, s.RSSMB, s.Seconds)
		}
	}
	_ = w.Flush()
	fmt.Fprintf(out, "event time: %d events/s, so %d events span %.0f s\n", eventRate, rsEvents(rs), float64(rsEvents(rs))/float64(eventRate))
}

func rsEvents(rs []eowcResult) int64 {
	if len(rs) == 0 {
		return 0
	}
	return rs[0].Events
}
