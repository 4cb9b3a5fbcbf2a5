package metrics

import (
	"io"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/tributary/tributary/connector"
	"github.com/tributary/tributary/executor/coordinator"
	"github.com/tributary/tributary/executor/stream"
)

// epochAt is the epoch whose physical time is unixMS.
func epochAt(unixMS uint64) uint64 { return unixMS << 16 }

func fakeSources() Sources {
	st := &stream.ActorStats{}
	st.RowsIn.Store(100)
	st.RowsOut.Store(7)
	st.BusyNanos.Store(1_500_000_000)
	st.BlockedNanos.Store(250_000_000)
	op1, op2 := &stream.OpStats{}, &stream.OpStats{}
	op1.CacheHits.Store(90)
	op1.CacheMisses.Store(4)
	op2.CacheMisses.Store(6)
	return Sources{
		Fragments: func() []coordinator.FragmentInfo {
			return []coordinator.FragmentInfo{{Job: 7, ID: 1, Kind: "StreamHashAgg", Actors: []stream.ActorID{11, 12}, Stats: []*stream.ActorStats{nil, st},
				Ops: []*stream.OpStats{op1, op2}}}
		},
		BackfillRowsRead: func() int64 { return 1234 },
		Jobs: func() []coordinator.JobInfo {
			return []coordinator.JobInfo{{ID: 7, Rows: 300, Estimate: 1000, Percent: 30}, {ID: 9, Rows: 5}}
		},
		JobName: func(id uint32) string {
			if id == 7 {
				return "public.mv"
			}
			return ""
		},
		Splits: func() []coordinator.SourceSplitStats {
			return []coordinator.SourceSplitStats{{Source: "public.s", Split: "0", Next: 42, Rows: 41, BadMessages: 2, Bytes: 4100, Lag: 8, LagBytes: -1},
				{Source: "public.s", Split: "1", Lag: -1, LagBytes: 640}}
		},
		Stores: func() []stream.SinkLogStats {
			return []stream.SinkLogStats{{Sink: "public.k", Actor: 3, PendingEpochs: 2, PendingRows: 10, PendingBytes: 640,
				DeliveredEpoch: epochAt(1_700_000_000_000), Failures: 1, DeliveredRows: 77},
				{Sink: "public.k", Actor: 4}}
		},
		CDC: func() []connector.CDCProgress {
			return []connector.CDCProgress{{Relation: "public.t", Split: "0", Rows: 8, Estimate: -1, LSN: "1/0000000A"}}
		},
		Connections:    func() map[string]int { return map[string]int{"idle": 2, "active": 1} },
		CommittedEpoch: func() uint64 { return epochAt(1_700_000_001_500) },
		Storage: func() StorageStats {
			return StorageStats{LSMBytes: 1000, VlogBytes: 2000, LevelTables: []int{3, 0, 5}, LevelBytes: []int64{300, 0, 700},
				L0StallTables: 15, WriteStalls: 2, WriteStallSeconds: 3.5, SlowCompactions: 1}
		},
		Memory: func() []MemoryUsage {
			return []MemoryUsage{{"total", 1 << 30, 5000}, {"storage_memtables", 3 << 20, -1}, {"stream_caches", 1 << 20, 4096}}
		},
	}
}

// scrape GETs /metrics from m's handler and parses the text.
func scrape(t *testing.T, m *Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("GET /metrics: %d %s", rec.Code, rec.Body)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(io.Reader(rec.Body))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

// value returns the sample of family name whose labels include want.
func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	t.Helper()
	f, ok := fams[name]
	if !ok {
		t.Fatalf("no metric %s", name)
	}
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case m.Gauge != nil:
			return m.GetGauge().GetValue()
		case m.Counter != nil:
			return m.GetCounter().GetValue()
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount())
		}
	}
	t.Fatalf("no %s sample with labels %v", name, want)
	return 0
}

func TestCollector(t *testing.T) {
	m := New(fakeSources())
	m.ObserveBarrier(coordinator.BarrierStat{Epoch: 1, Latency: 20 * time.Millisecond})
	m.ObserveBarrier(coordinator.BarrierStat{Epoch: 2, Latency: 3 * time.Second})
	fams := scrape(t, m)

	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"tributary_barrier_latency_seconds", nil, 2},
		{"tributary_epochs_committed_total", nil, 2},
		{"tributary_committed_epoch_timestamp_seconds", nil, 1_700_000_001.5},
		{"tributary_jobs_backfilling", nil, 2},
		{"tributary_job_backfill_rows_total", map[string]string{"job_id": "7", "job": "public.mv"}, 300},
		{"tributary_job_backfill_estimated_rows", map[string]string{"job_id": "7"}, 1000},
		{"tributary_job_backfill_progress_ratio", map[string]string{"job_id": "7"}, 0.3},
		{"tributary_job_backfill_rows_total", map[string]string{"job_id": "9"}, 5},
		{"tributary_source_rows_total", map[string]string{"source": "public.s", "split": "0"}, 41},
		{"tributary_source_next_offset", map[string]string{"source": "public.s", "split": "0"}, 42},
		{"tributary_source_bad_messages_total", map[string]string{"source": "public.s", "split": "0"}, 2},
		{"tributary_sink_log_pending_rows", map[string]string{"sink": "public.k", "actor": "3"}, 10},
		{"tributary_sink_log_pending_epochs", map[string]string{"sink": "public.k", "actor": "3"}, 2},
		{"tributary_sink_log_pending_bytes", map[string]string{"sink": "public.k", "actor": "3"}, 640},
		{"tributary_sink_delivery_failures_total", map[string]string{"sink": "public.k", "actor": "3"}, 1},
		{"tributary_sink_delivered_epoch_timestamp_seconds", map[string]string{"sink": "public.k"}, 1_700_000_000},
		{"tributary_cdc_snapshot_rows_total", map[string]string{"relation": "public.t"}, 8},
		{"tributary_cdc_snapshot_finished", map[string]string{"relation": "public.t"}, 0},
		{"tributary_cdc_committed_lsn", map[string]string{"relation": "public.t"}, 1<<32 | 10},
		{"tributary_actor_rows_in_total", map[string]string{"job": "public.mv", "fragment_id": "1", "fragment": "StreamHashAgg", "actor": "1"}, 100},
		{"tributary_actor_rows_out_total", map[string]string{"job_id": "7", "actor": "1"}, 7},
		{"tributary_actor_busy_seconds_total", map[string]string{"job_id": "7", "actor": "1"}, 1.5},
		{"tributary_actor_blocked_seconds_total", map[string]string{"job_id": "7", "actor": "1"}, 0.25},
		{"tributary_backfill_rows_read_total", nil, 1234},
		{"tributary_connections", map[string]string{"state": "idle"}, 2},
		{"tributary_connections", map[string]string{"state": "active"}, 1},
		{"tributary_state_cache_hits_total", map[string]string{"job": "public.mv", "fragment_id": "1"}, 90},
		{"tributary_state_cache_misses_total", map[string]string{"job": "public.mv", "fragment_id": "1"}, 10},
		{"tributary_source_bytes_total", map[string]string{"source": "public.s", "split": "0"}, 4100},
		{"tributary_source_lag_messages", map[string]string{"source": "public.s", "split": "0"}, 8},
		{"tributary_sink_delivered_rows_total", map[string]string{"sink": "public.k", "actor": "3"}, 77},
		{"tributary_sink_lag_seconds", map[string]string{"sink": "public.k", "actor": "3"}, 1.5},
		{"tributary_sink_lag_seconds", map[string]string{"sink": "public.k", "actor": "4"}, 0},
		{"tributary_source_lag_bytes", map[string]string{"source": "public.s", "split": "1"}, 640},
		{"tributary_storage_lsm_bytes", nil, 1000},
		{"tributary_storage_vlog_bytes", nil, 2000},
		{"tributary_storage_level_tables", map[string]string{"level": "2"}, 5},
		{"tributary_storage_level_bytes", map[string]string{"level": "0"}, 300},
		{"tributary_storage_l0_stall_tables", nil, 15},
		{"tributary_storage_write_stalls_total", nil, 2},
		{"tributary_storage_write_stall_seconds_total", nil, 3.5},
		{"tributary_storage_slow_compactions_total", nil, 1},
		{"tributary_memory_budget_bytes", map[string]string{"consumer": "total"}, 1 << 30},
		{"tributary_memory_used_bytes", map[string]string{"consumer": "stream_caches"}, 4096},
	} {
		if got := value(t, fams, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	// Unknown estimates are left out, not reported as 0 or -1.
	if f := fams["tributary_memory_used_bytes"]; len(f.GetMetric()) != 2 {
		t.Errorf("memory used of %d consumers, want the 2 that know it", len(f.GetMetric()))
	}
	if f := fams["tributary_job_backfill_estimated_rows"]; len(f.GetMetric()) != 1 {
		t.Errorf("estimated rows for %d jobs, want only the one with an estimate", len(f.GetMetric()))
	}
	if n := len(fams["tributary_source_lag_messages"].GetMetric()); n != 1 {
		t.Errorf("lag of %d splits, want only the one whose reader knows it", n)
	}
	if _, ok := fams["tributary_cdc_snapshot_estimated_rows"]; ok {
		t.Error("a CDC split with an unknown estimate has an estimate")
	}
	// The runtime and process collectors are registered.
	for _, name := range []string{"go_goroutines", "process_resident_memory_bytes"} {
		if _, ok := fams[name]; !ok {
			t.Errorf("no %s", name)
		}
	}
	// The barrier histogram buckets the two latencies.
	h := fams["tributary_barrier_latency_seconds"].GetMetric()[0].GetHistogram()
	if h.GetSampleSum() != 3.02 {
		t.Errorf("barrier latency sum %v, want 3.02", h.GetSampleSum())
	}
}

// TestNamingConventions runs client_golang's linter (units, _total on
// counters, help texts) over our metrics.
func TestNamingConventions(t *testing.T) {
	m := New(fakeSources())
	m.ObserveBarrier(coordinator.BarrierStat{Latency: time.Millisecond})
	problems, err := testutil.GatherAndLint(m.Registry(), "tributary_barrier_latency_seconds", "tributary_epochs_committed_total")
	if err != nil {
		t.Fatal(err)
	}
	problems2, err := testutil.CollectAndLint(&collector{src: fakeSources()})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range append(problems, problems2...) {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
}

// TestCollectorEmpty checks a collector with no sources collects nothing
// and an engine with nothing running reports no per-object series.
func TestCollectorEmpty(t *testing.T) {
	if n := testutil.CollectAndCount(&collector{}); n != 0 {
		t.Fatalf("collector without sources: %d metrics", n)
	}
	src := Sources{Jobs: func() []coordinator.JobInfo { return nil }}
	if n := testutil.CollectAndCount(&collector{src: src}); n != 1 { // tributary_jobs_backfilling 0
		t.Fatalf("no jobs: %d metrics, want 1", n)
	}
}
