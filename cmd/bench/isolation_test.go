package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/e2e/testserver"
)

// TestIsolationSmall runs the isolation benchmark end to end at a tiny size: every phase
// (the limited and adaptive backfills lifted and awaited), paced writers, barrier latency
// from rw_barrier_latency, and the checks of both views.
func TestIsolationSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dsn := testserver.Start(t, testserver.Build(t), t.TempDir()).DSN()
	cfg := isoConfig{baseRows: 20000, seconds: 500 * time.Millisecond, writers: 2, batch: 10, hotRate: 4000,
		rateLimit: 5000, targetMs: 2000}
	var err error
	if cfg.phases, err = phasesOf(strings.Join(phaseKeys, ","), cfg); err != nil {
		t.Fatal(err)
	}
	rep, err := runIsolation(ctx, dsn, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Phases) != 7 || len(rep.Ratios) != 6 || len(rep.Targets) != 4 {
		t.Fatalf("phases %+v, ratios %+v, targets %+v", rep.Phases, rep.Ratios, rep.Targets)
	}
	for _, p := range rep.Phases {
		if p.Statements == 0 || p.RowsPerSec <= 0 || p.Latency.P50 <= 0 || p.Latency.P99 < p.Latency.P50 || p.Latency.Max < p.Latency.P99 {
			t.Errorf("phase %+v", p)
		}
		// Paced: never above the rate (one statement per writer of slack for the short phase).
		if limit := float64(cfg.hotRate) + float64(cfg.writers*cfg.batch)/p.Seconds; p.RowsPerSec > limit {
			t.Errorf("%s: %.0f rows/s, paced at %d", p.Name, p.RowsPerSec, cfg.hotRate)
		}
		b := p.Barrier
		if b.Count == 0 || b.P50 <= 0 || b.P99 < b.P50 || b.Max < b.P99 || b.Truncated {
			t.Errorf("%s: barrier latency %+v", p.Name, b)
		}
	}
	// Whether any progress shows within 0.5 s depends on barrier timing; only the limit is checked.
	limited := rep.Phases[4].Backfill
	if limited == nil || limited.RateLimit != 5000 || limited.Finished || limited.Rows >= 20000 ||
		limited.Type != "ArrangementBackfill" || limited.Snapshot {
		t.Errorf("the limited backfill (5000 rows/s of 20000 rows over 0.5 s): %+v", limited)
	}
	if a := rep.Phases[5].Backfill; a == nil || !a.Adaptive || a.TargetMs != 2000 || a.Snapshot {
		t.Errorf("the adaptive backfill: %+v", a)
	}
	if s := rep.Phases[1].Backfill; s == nil || !s.Snapshot || (s.Type != "" && s.Type != "SnapshotBackfill") {
		t.Errorf("the snapshot backfill: %+v", s)
	}
	if in := rep.Phases[2].Backfill; in == nil || in.DeliveredSeconds <= 0 || in.ViewRows != 1 {
		t.Errorf("the sink into table: %+v", in)
	}
	if rep.Phases[6].Backfill != nil {
		t.Errorf("(a') has a backfill: %+v", rep.Phases[6])
	}
	if rep.BigViewRows != 10 || rep.HotViewRows != 1000 || rep.HotTableRows == 0 {
		t.Errorf("view rows: big_agg %d, hot_agg %d, hot %d", rep.BigViewRows, rep.HotViewRows, rep.HotTableRows)
	}
}

func TestPhasesOf(t *testing.T) {
	cfg := isoConfig{rateLimit: 7, targetMs: 9}
	ps, err := phasesOf("after, snapshot,limited", cfg)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range ps {
		names = append(names, p.name)
	}
	if got := strings.Join(names, "; "); got != "(e) snapshot, unlimited; (c) arrangement, limit 7 rows/s; (a') baseline after" {
		t.Errorf("phases in run order: %s", got)
	}
	if _, err := phasesOf("unlimited,nope", cfg); err == nil {
		t.Error("an unknown phase was accepted")
	}
}

func TestBarrierWindow(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var hist []barrierRow
	for i := 0; i < 10; i++ { // committed at t0+0s..9s, latency i+1 ms
		hist = append(hist, barrierRow{committed: t0.Add(time.Duration(i) * time.Second), latencyMs: float64(i + 1)})
	}
	got := barrierWindow(hist, t0.Add(2*time.Second), t0.Add(5*time.Second)) // i = 2..5
	if got.Count != 4 || got.P50 != 4 || got.P99 != 6 || got.Max != 6 || got.Truncated {
		t.Errorf("barrierWindow = %+v", got)
	}
	if got := barrierWindow(hist, t0.Add(time.Hour), t0.Add(2*time.Hour)); got.Count != 0 || got.P99 != 0 {
		t.Errorf("empty window = %+v", got)
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
