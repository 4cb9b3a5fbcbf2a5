package main

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tributary/tributary/connector/nexmark/queries"
	"github.com/tributary/tributary/e2e/testserver"
)

// TestEOWCStateFlat runs the eowc bench on a small event count (500 s of
// event time: 50 TUMBLE windows of q7, 250 HOP slides of q5): once the first
// windows have closed, the jobs' state rows must stop growing. The state of
// a window's open rows rises and falls as each window closes (q7 keeps the
// bids of one to two windows, so two samples can differ 2x): the test
// bounds every sample by a quarter of the bids, which keeping every bid
// passes by the half-way sample.
func TestEOWCStateFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server per query and reads 92,000 bids each")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin := testserver.Build(t)
	const events = 100000
	for _, q := range queries.EOWC {
		// Paced to 10 s (10,000 events/s) with 200 ms barriers: each sample is a few barriers apart.
		r, err := eowcRun(ctx, bin, t.TempDir(), []string{"--barrier-interval-ms", "200"}, q, true, events, 100000, 200, "'4' SECOND",
			[]int{20, 30, 40, 50, 60, 70, 80, 90}, 20*time.Millisecond)
		if err != nil {
			t.Fatalf("%s: %v", q.Name, err)
		}
		t.Logf("%s: %+v", q.Name, r.Samples)
		if len(r.Samples) != 9 {
			t.Fatalf("%s: %d samples", q.Name, len(r.Samples))
		}
		full := r.Samples[len(r.Samples)-1]
		if full.StateRows <= 0 || full.RSSMB <= 0 {
			t.Errorf("%s: no state rows or RSS at 100%%: %+v", q.Name, full)
		}
		// Keeping every bid (or every window's groups) would take more than a
		// quarter of the bids from the 50% sample on; the open windows' state
		// (q7 holds one or two windows' bids, so it swings 2x between samples)
		// stays far below at every sample.
		bids := bidCount(events)
		for _, s := range r.Samples {
			if s.StateRows > bids/4 {
				t.Errorf("%s: %d state rows at %d%% of %d bids", q.Name, s.StateRows, s.Percent, bids)
			}
		}
	}
}

// TestEOWCMatchesPlain checks q5 and q7 emitting on window close against
// the plain queries' final answers over the same events (a source without
// a watermark): every window the watermark has closed holds the same rows.
func TestEOWCMatchesPlain(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srv := testserver.Start(t, testserver.Build(t), t.TempDir())
	conn := connectT(ctx, t, srv.DSN())
	// 20,000 events at 200 events/s of event time: 100 s.
	const events, rate = 20000, 200
	plainOver := strings.NewReplacer("FROM bid B", "FROM bidp B", "(bid,", "(bidp,")
	stmts := []string{
		queries.BidWatermarkSourceDDL("bid", events, 0, rate, "'4' SECOND"),
		queries.BidWatermarkSourceDDL("bidp", events, 0, rate, ""),
	}
	for _, q := range queries.EOWC {
		plain := plainOver.Replace(q.SQL)
		if plain == q.SQL {
			t.Fatalf("%s: the plain form still reads bid", q.Name)
		}
		stmts = append(stmts, "CREATE MATERIALIZED VIEW "+q.Name+"_eowc AS "+q.SQL+queries.EmitOnWindowClose,
			"CREATE MATERIALIZED VIEW "+q.Name+"_plain AS "+plain)
	}
	stmts = append(stmts, "WAIT", "FLUSH")
	for _, s := range stmts {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}

	// q5: rows (auction, num, starttime); each window up to the last one
	// emitted must hold the plain answer's rows.
	e5 := queryStrings(ctx, t, conn, "SELECT starttime, auction, num FROM q5_eowc")
	p5 := queryStrings(ctx, t, conn, "SELECT starttime, auction, num FROM q5_plain")
	last := ""
	windows := map[string]bool{}
	for _, r := range e5 {
		w := strings.SplitN(r, "|", 2)[0]
		windows[w] = true
		last = max(last, w)
	}
	if len(windows) < 20 {
		t.Fatalf("q5: %d windows emitted, want at least 20 of 50 (last %s)", len(windows), last)
	}
	var want5 []string
	for _, r := range p5 {
		if strings.SplitN(r, "|", 2)[0] <= last {
			want5 = append(want5, r)
		}
	}
	sameRows(t, "q5", e5, want5)

	// q7: rows (auction, price, bidder, date_time); every plain row before
	// the start of the window of the last row emitted must be there.
	e7 := queryStrings(ctx, t, conn, "SELECT date_time, auction, price, bidder FROM q7_eowc")
	p7 := queryStrings(ctx, t, conn, "SELECT date_time, auction, price, bidder FROM q7_plain")
	if len(e7) < 5 {
		t.Fatalf("q7: %d rows emitted, want at least 5 (one per closed window)", len(e7))
	}
	lastRow := slices.Max(e7)
	lastTime, err := time.Parse("2006-01-02 15:04:05.000", strings.SplitN(lastRow, "|", 2)[0])
	if err != nil {
		t.Fatal(err)
	}
	cut := lastTime.Truncate(10 * time.Second).Format("2006-01-02 15:04:05.000")
	var got7, want7 []string
	for _, r := range e7 {
		if r < cut {
			got7 = append(got7, r)
		}
	}
	for _, r := range p7 {
		if r < cut {
			want7 = append(want7, r)
		}
	}
	sameRows(t, "q7", got7, want7)
	if len(want7) < 4 {
		t.Errorf("q7: %d plain rows before %s, want at least 4", len(want7), cut)
	}
}

// queryStrings returns each row of sql as its columns' text joined by |.
func queryStrings(ctx context.Context, t *testing.T, conn *pgx.Conn, sql string) []string {
	t.Helper()
	rows, err := conn.Query(ctx, sql, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		parts := make([]string, len(vals))
		for i, v := range vals {
			if tm, ok := v.(time.Time); ok {
				parts[i] = tm.UTC().Format("2006-01-02 15:04:05.000")
			} else {
				parts[i] = fmt.Sprint(v)
			}
		}
		out = append(out, strings.Join(parts, "|"))
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return out
}

func sameRows(t *testing.T, name string, got, want []string) {
	t.Helper()
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s: %d rows emitted on window close, %d in the plain answer's closed windows\ngot:  %.600s\nwant: %.600s",
			name, len(got), len(want), strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
