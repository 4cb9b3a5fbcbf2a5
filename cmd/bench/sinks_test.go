package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/e2e/testserver"
)

// TestSinksSmall runs the sinks benchmark end to end at a tiny size: the baseline, the
// coupled and decoupled slow sinks with the decoupled log store drained afterwards, and a
// 20,000-row lag behind a paused sink, drained once the pause is lifted.
func TestSinksSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The bench's own server handle: phase (d) reads the process's RSS.
	srv, err := startTributary(ctx, testserver.Build(t), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Stop(); err != nil {
			t.Error(err)
		}
	})
	cfg := sinkConfig{seconds: 500 * time.Millisecond, writers: 2, batch: 10, hotRate: 4000, delayMs: 10,
		lagRows: 20000, lagBatch: 5000, drainTimeout: time.Minute}
	rep, err := runSinks(ctx, srv.DSN(), srv.Pid(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Phases) != 3 || len(rep.Ratios) != 2 || len(rep.Targets) != 3 {
		t.Fatalf("phases %+v, ratios %+v, targets %+v", rep.Phases, rep.Ratios, rep.Targets)
	}
	for i, want := range []struct {
		sink      string
		decoupled bool
	}{{"", false}, {"slow_c", false}, {"slow_d", true}} {
		p := rep.Phases[i]
		if p.Sink != want.sink || p.Decoupled != want.decoupled || (p.Drain != nil) != want.decoupled || p.LagSamples == 0 {
			t.Errorf("phase %d: %+v", i, p)
		}
		if p.Statements == 0 || p.RowsPerSec <= 0 || p.Latency.P50 <= 0 || p.Latency.P99 < p.Latency.P50 || p.Latency.Max < p.Latency.P99 {
			t.Errorf("%s: %+v", p.Name, p.phaseResult)
		}
		if b := p.Barrier; b.Count == 0 || b.P50 <= 0 || b.P99 < b.P50 || b.Max < b.P99 || b.Truncated {
			t.Errorf("%s: barrier latency %+v", p.Name, b)
		}
		if _, ok := rep.Ratios[p.Name]; ok != (i > 0) {
			t.Errorf("%s: ratio present %t", p.Name, ok)
		}
	}
	// The decoupled phase's lag returned to 0 (waitDrained saw every actor at 0).
	if d := rep.Phases[2].Drain; d == nil || d.Actors == 0 || d.Seconds <= 0 || d.Samples == 0 {
		t.Errorf("decoupled drain: %+v", d)
	}
	if rep.HotViewRows != 1000 || rep.HotTableRows == 0 {
		t.Errorf("view rows: hot_agg %d, hot %d", rep.HotViewRows, rep.HotTableRows)
	}
	b := rep.BigLag
	if b == nil {
		t.Fatal("no phase (d)")
	}
	// Paused: nothing delivered, all 20,000 rows pending until the pause is lifted.
	if b.Delivered {
		t.Errorf("an actor delivered epochs while lag_s was paused")
	}
	if b.PendingRows != cfg.lagRows || b.PendingEpochs == 0 || b.PendingBytes == 0 {
		t.Errorf("before the drain rw_sink_log_store showed %d rows, %d epochs, %d bytes pending over %d actors, want all %d rows inserted "+
			"(stale: %t; a log store reader blocked by SINK_RATE_LIMIT = 0 reports nothing)",
			b.PendingRows, b.PendingEpochs, b.PendingBytes, b.Actors, cfg.lagRows, b.Stale)
	}
	if b.Actors == 0 || b.Drain.Actors != b.Actors || b.Drain.Seconds <= 0 || b.DrainRate <= 0 {
		t.Errorf("drain: %+v, %.0f rows/s", b.Drain, b.DrainRate)
	}
	var percents []int
	for _, s := range b.RSS {
		percents = append(percents, s.Percent)
		if s.RSSKB <= 0 || s.RSSKB > b.PeakRSSKB || s.Rows != cfg.lagRows*int64(s.Percent)/100 {
			t.Errorf("RSS sample %+v (peak %d kB)", s, b.PeakRSSKB)
		}
	}
	if len(percents) != 5 || percents[0] != 0 || percents[4] != 100 || b.RSSSamples < 5 || b.HWMKB < b.PeakRSSKB {
		t.Errorf("RSS: samples %+v, %d sampled, peak %d kB, VmHWM %d kB", b.RSS, b.RSSSamples, b.PeakRSSKB, b.HWMKB)
	}
	var out bytes.Buffer
	printSinks(&out, rep)
	for _, want := range []string{"target: decoupled slow sink keeps >= 90% of the hot throughput: ",
		"target: decoupled slow sink: barrier p99 <= 1.1x baseline: ", "lag after the load stopped: returned to 0 in ",
		"big lag: ", " rows pending, peak RSS "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, out.String())
		}
	}
}

func TestSinksFlags(t *testing.T) {
	for _, args := range [][]string{{"--lag-rows", "-1"}, {"--seconds", "0"}, {"--lag-batch", "0"}, {"--delay-ms", "-5"}, {"extra"}} {
		if err := sinksMain(context.Background(), args, new(bytes.Buffer)); err == nil {
			t.Errorf("sinks %q was accepted", args)
		}
	}
}

func TestDrained(t *testing.T) {
	zero := []storeRow{{actor: 1}, {actor: 2, deliveredEpoch: 7}}
	for _, c := range []struct {
		rows        []storeRow
		mustDeliver map[int64]bool
		want        bool
	}{
		{nil, nil, false},
		{zero, nil, true},
		{zero, map[int64]bool{2: true}, true},
		{zero, map[int64]bool{1: true}, false}, // actor 1 has not delivered since its pause
		{[]storeRow{{actor: 1, pendingRows: 3, pendingEpochs: 1}}, nil, false},
		{[]storeRow{{actor: 1, pendingEpochs: 1}}, nil, false},
	} {
		if got := drained(c.rows, c.mustDeliver); got != c.want {
			t.Errorf("drained(%+v, %v) = %t", c.rows, c.mustDeliver, got)
		}
	}
}
