package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/e2e/testserver"
)

// TestRescaleSmall runs the rescale benchmark end to end at two tiny state sizes: the
// baseline, three ALTERs of big_agg with their windows, the server's pause from its log,
// the first query, DML and check after each, and the targets.
func TestRescaleSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin := testserver.Build(t)
	cfg := rescaleConfig{sizes: []int{2000, 5000}, parallelism: []int{3, 1, 4}, baseline: time.Second, window: 500 * time.Millisecond,
		settle: 100 * time.Millisecond, writers: 2, batch: 10, hotRate: 2000, loadBatch: 1500, dmlRows: 100}
	rep := newRescaleReport(cfg)
	for _, n := range cfg.sizes {
		// The bench's own server handle: the pauses come from its log.
		srv, err := startTributary(ctx, bin, t.TempDir(), []string{"--log-level", "info"})
		if err != nil {
			t.Fatal(err)
		}
		run, err := runRescale(ctx, srv.DSN(), srv.LogPath, n, cfg, rep)
		if stopErr := srv.Stop(); stopErr != nil {
			t.Error(stopErr)
		}
		if err != nil {
			t.Fatal(err)
		}
		rep.Runs = append(rep.Runs, *run)
	}
	rep.judge()
	if rep.BarrierIntervalMs != 1000 || len(rep.Targets) != 5 {
		t.Errorf("barrier interval %d ms, targets %+v", rep.BarrierIntervalMs, rep.Targets)
	}
	for _, run := range rep.Runs {
		if len(run.Steps) != 3 || run.LoadSeconds <= 0 || run.CreateSeconds <= 0 || run.HotViewRows != 1000 || run.HotTableRows == 0 {
			t.Fatalf("%d rows: %+v", run.Rows, run)
		}
		for _, h := range []hotWindow{run.Baseline, run.During} {
			if h.Statements == 0 || h.Barrier.Count == 0 || h.Insert.P50 <= 0 || h.Barrier.Max < h.Barrier.P50 || h.MaxCommitGapMs <= 0 {
				t.Errorf("%d rows: hot window %+v", run.Rows, h)
			}
		}
		for i, st := range run.Steps {
			if st.To != cfg.parallelism[i] || (i > 0 && st.From != cfg.parallelism[i-1]) {
				t.Errorf("%d rows, step %d: %d -> %d", run.Rows, i, st.From, st.To)
			}
			if st.AlterMs <= 0 || st.ServerPauseMs < 0 || st.ServerPauseMs > st.AlterMs || st.NextCommitMs <= 0 || st.FirstQueryMs <= 0 ||
				st.FirstDMLMs <= 0 || st.CheckMs <= 0 || st.Hot.Statements == 0 {
				t.Errorf("%d rows, step %d: %+v", run.Rows, i, st)
			}
			if want := int64(run.Rows + (i+1)*cfg.dmlRows); st.ViewRows != want {
				t.Errorf("%d rows, step %d: big_agg has %d rows, want %d", run.Rows, i, st.ViewRows, want)
			}
		}
	}
	var out bytes.Buffer
	printRescale(&out, rep)
	for _, want := range []string{"2000 rows of state: ", "5000 rows of state: ", "3 -> 1", "baseline (no rescale)",
		"target: the pause does not grow with state: "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestRescaleFlags(t *testing.T) {
	for _, args := range [][]string{{"--rows", "0"}, {"--parallelism", "2,x"}, {"--window", "0s"}, {"--hot-rate", "-1"}, {"extra"}} {
		if err := rescaleMain(context.Background(), args, new(bytes.Buffer)); err == nil {
			t.Errorf("rescale %q was accepted", args)
		}
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := median(c.xs); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.xs, got, c.want)
		}
	}
}
