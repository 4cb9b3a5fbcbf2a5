package main

import (
	"context"
	"testing"
	"time"

	"github.com/tributary/tributary/e2e/testserver"
)

// TestIsolationSmall runs the isolation benchmark end to end at a tiny size: every phase,
// both backfills (the limited one lifted and awaited), and the checks of both views.
func TestIsolationSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dsn := testserver.Start(t, testserver.Build(t), t.TempDir()).DSN()
	cfg := isoConfig{baseRows: 20000, seconds: 500 * time.Millisecond, writers: 2, batch: 10, rateLimit: 5000}
	rep, err := runIsolation(ctx, dsn, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Phases) != 4 || len(rep.Ratios) != 2 {
		t.Fatalf("phases %+v, ratios %+v", rep.Phases, rep.Ratios)
	}
	for _, p := range rep.Phases {
		if p.Statements == 0 || p.RowsPerSec <= 0 || p.Latency.P50 <= 0 || p.Latency.P99 < p.Latency.P50 || p.Latency.Max < p.Latency.P99 {
			t.Errorf("phase %+v", p)
		}
	}
	// Whether any progress shows within 0.5 s depends on barrier timing; only the limit is checked.
	limited := rep.Phases[2].Backfill
	if limited == nil || limited.RateLimit != 5000 || limited.Finished || limited.Rows >= 20000 ||
		limited.Type != "ArrangementBackfill" {
		t.Errorf("the limited backfill (5000 rows/s of 20000 rows over 0.5 s): %+v", limited)
	}
	if rep.BigViewRows != 1000 || rep.HotViewRows != 1000 || rep.HotTableRows == 0 {
		t.Errorf("view rows: big_agg %d, hot_agg %d, hot %d", rep.BigViewRows, rep.HotViewRows, rep.HotTableRows)
	}
}

func TestParseProgress(t *testing.T) {
	for s, want := range map[string]int64{"12.50% (125/1000)": 125, "(7/?)": 7, "100.00% (1000/1000)": 1000} {
		if got, err := parseProgress(s); err != nil || got != want {
			t.Errorf("parseProgress(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "12%", "(x/1)"} {
		if _, err := parseProgress(s); err == nil {
			t.Errorf("parseProgress(%q) accepted", s)
		}
	}
}

func TestLatencies(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	got := latencies(ds)
	if got != (latencyStats{P50: 50, P99: 99, Max: 100}) {
		t.Errorf("latencies = %+v", got)
	}
	if latencies(nil) != (latencyStats{}) {
		t.Error("latencies of nothing is not zero")
	}
}
