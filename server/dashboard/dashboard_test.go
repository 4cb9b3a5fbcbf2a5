package dashboard

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/executor/coordinator"
	"github.com/tributary/tributary/executor/stream"
)

// fake is a job 7 of two fragments (a source of one actor feeding an
// aggregation of two) whose counters the test moves.
type fake struct {
	src, agg [2]*stream.ActorStats
	lag      int64
	pending  int64
}

func newFake() *fake {
	f := &fake{}
	for i := range f.src {
		f.src[i], f.agg[i] = &stream.ActorStats{}, &stream.ActorStats{}
	}
	return f
}

func (f *fake) sources() Sources {
	return Sources{
		Fragments: func() []coordinator.FragmentInfo {
			return []coordinator.FragmentInfo{
				{Job: 7, ID: 0, Kind: "StreamSourceScan", Actors: []stream.ActorID{1}, Stats: []*stream.ActorStats{f.src[0]}},
				{Job: 7, ID: 1, Kind: "StreamMaterialize", Actors: []stream.ActorID{2, 3}, Stats: []*stream.ActorStats{f.agg[0], f.agg[1]},
					Inputs: []coordinator.FragmentInput{{From: 0, Dist: "hash"}}},
			}
		},
		Backfills: func() []coordinator.JobInfo {
			return []coordinator.JobInfo{{ID: 7, Rows: 300, Estimate: 1000, Percent: 30, BackfillType: "SnapshotBackfill"}}
		},
		JobName: func(id uint32) string { return map[uint32]string{7: "public.mv"}[id] },
		JobKind: func(uint32) string { return "materialized view" },
		Splits: func() []coordinator.SourceSplitStats {
			return []coordinator.SourceSplitStats{{Source: "public.k", Split: "0", Lag: f.lag, LagBytes: -1}, {Source: "public.k", Split: "1", Lag: -1, LagBytes: -1},
				{Source: "public.cdc", Split: "0", Lag: -1, LagBytes: 4096}}
		},
		Stores: func() []stream.SinkLogStats {
			return []stream.SinkLogStats{{Sink: "public.s", Actor: 4, PendingRows: f.pending}, {Sink: "public.s", Actor: 5, PendingRows: 1}}
		},
		Events: func() []stream.SinkEvent {
			return []stream.SinkEvent{
				{Time: time.Unix(1, 0), Sink: "public.s", Actor: 4, Err: "dial postgres://u:hunter2@h/db: refused"},
				{Time: time.Unix(2, 0), Type: "EXPR_ERROR", Job: 7, Err: "division by zero"},
			}
		},
		CommittedEpoch: func() uint64 { return 1_700_000_000_000 << 16 },
	}
}

func get(t *testing.T, d *Dashboard, path string, out any) int {
	t.Helper()
	rec := httptest.NewRecorder()
	d.Handler().ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	if out != nil && rec.Code == 200 {
		if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil {
			t.Fatalf("GET %s: %v in %s", path, err, rec.Body)
		}
	}
	return rec.Code
}

func TestEndpoints(t *testing.T) {
	f := newFake()
	d := New(f.sources())
	t0 := time.Unix(1000, 0)
	d.Sample(t0)
	// One second later: 500 rows left the source, the aggregation's two
	// actors sent 40 and 60 and were busy half the time; a barrier of 30 ms
	// and one of 10 ms committed.
	f.src[0].RowsOut.Store(500)
	f.agg[0].RowsIn.Store(250)
	f.agg[1].RowsIn.Store(250)
	f.agg[0].RowsOut.Store(40)
	f.agg[1].RowsOut.Store(60)
	f.agg[0].BusyNanos.Store(5e8)
	f.agg[1].BusyNanos.Store(5e8)
	f.lag, f.pending = 12, 9
	d.ObserveBarrier(coordinator.BarrierStat{Latency: 30 * time.Millisecond})
	d.ObserveBarrier(coordinator.BarrierStat{Latency: 10 * time.Millisecond})
	d.Sample(t0.Add(time.Second))

	var jobs []Job
	if code := get(t, d, "/api/jobs", &jobs); code != 200 || len(jobs) != 1 {
		t.Fatalf("/api/jobs: %d %+v", code, jobs)
	}
	j := jobs[0]
	if j.Name != "public.mv" || j.Kind != "materialized view" || j.State != "BACKFILLING" || j.Progress != 30 ||
		j.BackfillRows != 300 || j.BackfillEstimate != 1000 || j.Fragments != 2 || j.Actors != 3 || j.RowsPerSec != 100 {
		t.Errorf("job: %+v", j)
	}

	var g Graph
	if code := get(t, d, "/api/fragments?job=7", &g); code != 200 {
		t.Fatalf("/api/fragments: %d", code)
	}
	if len(g.Fragments) != 2 || len(g.Edges) != 1 {
		t.Fatalf("graph: %+v", g)
	}
	if e := g.Edges[0]; e.From != 0 || e.To != 1 || e.Dist != "hash" || e.RowsPerSec != 500 {
		t.Errorf("edge: %+v, want 0 -> 1 hash at 500 rows/s", e)
	}
	if fr := g.Fragments[1]; fr.Parallelism != 2 || fr.RowsInPerSec != 500 || fr.RowsOutPerSec != 100 || fr.BusyShare != 0.5 {
		t.Errorf("aggregation fragment: %+v", fr)
	}
	if code := get(t, d, "/api/fragments?job=8", nil); code != 404 {
		t.Errorf("a job that does not run: %d, want 404", code)
	}
	if code := get(t, d, "/api/fragments?job=x", nil); code != 400 {
		t.Errorf("a bad job id: %d, want 400", code)
	}

	var evs []Event
	get(t, d, "/api/events", &evs)
	if len(evs) != 2 || evs[0].Type != "EXPR_ERROR" || evs[0].Object != "public.mv" || evs[1].Type != "SINK_FAIL" {
		t.Fatalf("events (newest first): %+v", evs)
	}
	if strings.Contains(evs[1].Message, "hunter2") {
		t.Errorf("an event shows a password: %q", evs[1].Message)
	}

	var s Series
	get(t, d, "/api/series", &s)
	if len(s.Points) != 2 || s.CommittedEpochMS != 1_700_000_000_000 {
		t.Fatalf("series: %+v", s)
	}
	if p := s.Points[0]; p.BarrierAvgMS != nil || len(p.Throughput) != 0 {
		t.Errorf("first sample has no rates and no barriers: %+v", p)
	}
	p := s.Points[1]
	if p.BarrierAvgMS == nil || *p.BarrierAvgMS != 20 || *p.BarrierMaxMS != 30 {
		t.Errorf("barrier latency: %v %v, want 20 and 30 ms", p.BarrierAvgMS, p.BarrierMaxMS)
	}
	if p.Throughput["public.mv"] != 100 || p.SourceLag["public.k"] != 12 || p.SinkLag["public.s"] != 10 ||
		p.SourceLagBytes["public.cdc"] != 4096 || len(p.SourceLagBytes) != 1 || len(p.SourceLag) != 1 {
		t.Errorf("sample: %+v", p)
	}
}

// TestSeriesRing keeps the last seriesLen samples, oldest first.
func TestSeriesRing(t *testing.T) {
	d := New(Sources{})
	for i := 0; i < seriesLen+5; i++ {
		d.Sample(time.UnixMilli(int64(i)))
	}
	s := d.series()
	if len(s.Points) != seriesLen || s.Points[0].T != 5 || s.Points[seriesLen-1].T != seriesLen+4 {
		t.Fatalf("%d points from %d to %d", len(s.Points), s.Points[0].T, s.Points[len(s.Points)-1].T)
	}
}

// TestAssets: the page and its script and style are embedded and served.
func TestAssets(t *testing.T) {
	d := New(Sources{})
	for path, want := range map[string]string{"/": "<script src=\"app.js\">", "/app.js": "renderGraph", "/style.css": "#graph"} {
		rec := httptest.NewRecorder()
		d.Handler().ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Code != 200 || !strings.Contains(rec.Body.String(), want) {
			t.Errorf("GET %s: %d, body without %q", path, rec.Code, want)
		}
	}
}

// TestSinkThroughput: a sink sends nothing on; its throughput is what its
// top fragment takes in.
func TestSinkThroughput(t *testing.T) {
	f := newFake()
	src := f.sources()
	src.JobKind = func(uint32) string { return "sink" }
	d := New(src)
	d.Sample(time.Unix(1000, 0))
	f.agg[0].RowsIn.Store(300)
	f.agg[1].RowsIn.Store(100)
	d.Sample(time.Unix(1002, 0))
	if jobs := d.jobs(); len(jobs) != 1 || jobs[0].RowsPerSec != 200 {
		t.Fatalf("sink job: %+v, want 200 rows/s (400 rows in over 2 s)", jobs)
	}
	if p := d.series().Points[1]; p.Throughput["public.mv"] != 200 {
		t.Errorf("sink throughput %v, want 200", p.Throughput)
	}
}

// TestCountersRestart: a rebuilt job's counters start again from 0; the
// interval across the rebuild has no rate rather than a negative one.
func TestCountersRestart(t *testing.T) {
	f := newFake()
	d := New(f.sources())
	f.src[0].RowsOut.Store(1000)
	d.Sample(time.Unix(1000, 0))
	f.src[0] = &stream.ActorStats{} // rebuilt
	f.src[0].RowsOut.Store(10)
	d.Sample(time.Unix(1001, 0))
	g, _ := d.fragments(7)
	if r := g.Fragments[0].RowsOutPerSec; r != 0 {
		t.Errorf("rate across a rebuild: %v, want none (0)", r)
	}
}
