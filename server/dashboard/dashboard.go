package dashboard

import (
	"context"
	"embed"
	"encoding/json"
	"io/fs"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/executor/coordinator"
	"github.com/tributary/tributary/executor/stream"
)

//go:embed assets
var assets embed.FS

// Sources are the functions the dashboard reads; a nil one leaves its part
// out.
type Sources struct {
	// Fragments lists the running jobs' fragments with their actors'
	// counters; Backfills the jobs whose backfill runs.
	Fragments func() []coordinator.FragmentInfo
	Backfills func() []coordinator.JobInfo
	// JobName and JobKind name a job's relation and its kind
	// ("materialized view", "sink", "table").
	JobName func(id uint32) string
	JobKind func(id uint32) string
	// Splits and Stores are the sources' splits and decoupled sinks' log
	// stores; Events the event log, oldest first.
	Splits func() []coordinator.SourceSplitStats
	Stores func() []stream.SinkLogStats
	Events func() []stream.SinkEvent
	// CommittedEpoch is storage's committed epoch.
	CommittedEpoch func() uint64
}

// seriesLen is how many samples (one a second) the series keep.
const seriesLen = 600

// Dashboard samples Sources into series and serves the page.
type Dashboard struct {
	src Sources
	mu  struct {
		sync.Mutex
		points []Point // ring of the last seriesLen, next is the oldest once full
		next   int
		// barriers committed since the last sample
		barrierN        int
		barrierSum, max time.Duration
		// the last two samples of every fragment's counters
		prev, last map[fragKey]fragSample
		prevT      time.Time
		lastT      time.Time
	}
}

type fragKey struct {
	job uint32
	id  int
}

type fragSample struct{ rowsIn, rowsOut, busy, blocked int64 }

// Point is one sample of the series.
type Point struct {
	// T is the sample's time (Unix milliseconds).
	T int64 `json:"t"`
	// BarrierAvgMS and BarrierMaxMS are the latencies of the barriers
	// committed since the previous sample (absent when none was).
	BarrierAvgMS *float64 `json:"barrier_avg_ms,omitempty"`
	BarrierMaxMS *float64 `json:"barrier_max_ms,omitempty"`
	// Throughput is each job's output rows per second (its top fragment's).
	Throughput map[string]float64 `json:"throughput"`
	// SourceLag is each source's messages behind the newest (splits that
	// know it, summed), SourceLagBytes its committed position's distance
	// from the end of the upstream's log (PostgreSQL CDC); SinkLag each
	// decoupled sink's pending rows.
	SourceLag      map[string]float64 `json:"source_lag"`
	SourceLagBytes map[string]float64 `json:"source_lag_bytes"`
	SinkLag        map[string]float64 `json:"sink_lag"`
}

// New returns a dashboard over src.
func New(src Sources) *Dashboard { return &Dashboard{src: src} }

// ObserveBarrier counts a committed epoch's barrier latency into the next
// sample; pass it to coordinator.BarrierLog.Watch.
func (d *Dashboard) ObserveBarrier(s coordinator.BarrierStat) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.mu.barrierN++
	d.mu.barrierSum += s.Latency
	d.mu.max = max(d.mu.max, s.Latency)
}

// Run samples every interval until ctx ends.
func (d *Dashboard) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	d.Sample(time.Now())
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			d.Sample(now)
		}
	}
}

// Sample takes one sample of the series at now.
func (d *Dashboard) Sample(now time.Time) {
	p := Point{T: now.UnixMilli(), Throughput: map[string]float64{}, SourceLag: map[string]float64{}, SourceLagBytes: map[string]float64{},
		SinkLag: map[string]float64{}}
	cur := map[fragKey]fragSample{}
	top := map[uint32]int{} // job -> its top fragment (the last, children come first)
	if d.src.Fragments != nil {
		for _, f := range d.src.Fragments() {
			var s fragSample
			for _, st := range f.Stats {
				if st != nil {
					s.rowsIn += st.RowsIn.Load()
					s.rowsOut += st.RowsOut.Load()
					s.busy += st.BusyNanos.Load()
					s.blocked += st.BlockedNanos.Load()
				}
			}
			cur[fragKey{f.Job, f.ID}] = s
			top[f.Job] = max(top[f.Job], f.ID)
		}
	}
	if d.src.Splits != nil {
		for _, sp := range d.src.Splits() {
			if sp.Lag >= 0 {
				p.SourceLag[sp.Source] += float64(sp.Lag)
			}
			if sp.LagBytes >= 0 {
				p.SourceLagBytes[sp.Source] += float64(sp.LagBytes)
			}
		}
	}
	if d.src.Stores != nil {
		for _, st := range d.src.Stores() {
			p.SinkLag[st.Sink] += float64(st.PendingRows)
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if n := d.mu.barrierN; n > 0 {
		avg := float64(d.mu.barrierSum) / float64(n) / 1e6
		mx := float64(d.mu.max) / 1e6
		p.BarrierAvgMS, p.BarrierMaxMS = &avg, &mx
	}
	d.mu.barrierN, d.mu.barrierSum, d.mu.max = 0, 0, 0
	d.mu.prev, d.mu.prevT = d.mu.last, d.mu.lastT
	d.mu.last, d.mu.lastT = cur, now
	for job, id := range top {
		if r, ok := d.rateLocked(fragKey{job, id}); ok {
			p.Throughput[d.name(job)] = d.output(job, r)
		}
	}
	if len(d.mu.points) < seriesLen {
		d.mu.points = append(d.mu.points, p)
	} else {
		d.mu.points[d.mu.next] = p
		d.mu.next = (d.mu.next + 1) % seriesLen
	}
}

// rate is a fragment's rows per second and share of its actors' time
// busy, over the last sample interval.
type rate struct {
	RowsIn, RowsOut float64
	Busy, Blocked   float64 // seconds per second, summed over actors
}

func (d *Dashboard) rateLocked(k fragKey) (rate, bool) {
	a, ok1 := d.mu.prev[k]
	b, ok2 := d.mu.last[k]
	dt := d.mu.lastT.Sub(d.mu.prevT).Seconds()
	if !ok1 || !ok2 || dt <= 0 {
		return rate{}, false
	}
	if b.rowsIn < a.rowsIn || b.rowsOut < a.rowsOut {
		return rate{}, false // the job was rebuilt (a recovery, a rescale): its counters restarted
	}
	return rate{
		RowsIn:  float64(b.rowsIn-a.rowsIn) / dt,
		RowsOut: float64(b.rowsOut-a.rowsOut) / dt,
		Busy:    float64(max(b.busy-a.busy, 0)) / 1e9 / dt,
		Blocked: float64(max(b.blocked-a.blocked, 0)) / 1e9 / dt,
	}, true
}

// output is a job's throughput: the rows its top fragment sends on, or, for
// a sink, which sends nothing on, the rows it takes in.
func (d *Dashboard) output(job uint32, r rate) float64 {
	if d.src.JobKind != nil && d.src.JobKind(job) == "sink" {
		return r.RowsIn
	}
	return r.RowsOut
}

func (d *Dashboard) name(job uint32) string {
	if d.src.JobName != nil {
		if n := d.src.JobName(job); n != "" {
			return n
		}
	}
	return "job " + strconv.FormatUint(uint64(job), 10)
}

// Handler serves the page at / and the JSON endpoints under /api/.
func (d *Dashboard) Handler() http.Handler {
	mux := http.NewServeMux()
	static, err := fs.Sub(assets, "assets")
	if err != nil {
		// The embedded tree always has assets/; serve an error rather than panic.
		mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "dashboard assets: "+err.Error(), http.StatusInternalServerError)
		})
	} else {
		mux.Handle("/", http.FileServerFS(static))
	}
	mux.HandleFunc("/api/jobs", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, d.jobs()) })
	mux.HandleFunc("/api/fragments", func(w http.ResponseWriter, r *http.Request) {
		id, err := strconv.ParseUint(r.URL.Query().Get("job"), 10, 32)
		if err != nil {
			http.Error(w, "job: want a job id", http.StatusBadRequest)
			return
		}
		g, ok := d.fragments(uint32(id))
		if !ok {
			http.Error(w, "no running job "+strconv.FormatUint(id, 10), http.StatusNotFound)
			return
		}
		writeJSON(w, g)
	})
	mux.HandleFunc("/api/events", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, d.events()) })
	mux.HandleFunc("/api/series", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, d.series()) })
	return mux
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if err := json.NewEncoder(w).Encode(v); err != nil {
		http.Error(w, "encode: "+err.Error(), http.StatusInternalServerError)
	}
}

// Job is a row of /api/jobs.
type Job struct {
	ID   uint32 `json:"id"`
	Name string `json:"name"`
	Kind string `json:"kind"`
	// State is BACKFILLING while its backfill runs, else RUNNING.
	State string `json:"state"`
	// Progress is the backfill's share done in percent (100 once done);
	// BackfillRows and BackfillEstimate its rows read and expected (0:
	// unknown).
	Progress         float64 `json:"progress"`
	BackfillRows     int64   `json:"backfill_rows"`
	BackfillEstimate int64   `json:"backfill_estimate"`
	BackfillType     string  `json:"backfill_type,omitempty"`
	Fragments        int     `json:"fragments"`
	Actors           int     `json:"actors"`
	// RowsPerSec is the job's output rate over the last sample interval (a
	// sink's: the rows it takes in).
	RowsPerSec float64 `json:"rows_per_sec"`
}

func (d *Dashboard) jobs() []Job {
	byID := map[uint32]*Job{}
	var frags []coordinator.FragmentInfo
	if d.src.Fragments != nil {
		frags = d.src.Fragments()
	}
	top := map[uint32]int{}
	for _, f := range frags {
		j := byID[f.Job]
		if j == nil {
			j = &Job{ID: f.Job, Name: d.name(f.Job), State: "RUNNING", Progress: 100}
			if d.src.JobKind != nil {
				j.Kind = d.src.JobKind(f.Job)
			}
			byID[f.Job] = j
		}
		j.Fragments++
		j.Actors += len(f.Actors)
		top[f.Job] = max(top[f.Job], f.ID)
	}
	if d.src.Backfills != nil {
		for _, b := range d.src.Backfills() {
			j := byID[b.ID]
			if j == nil {
				continue
			}
			if !b.Done {
				j.State = "BACKFILLING"
			}
			j.Progress, j.BackfillRows, j.BackfillType = b.Percent, b.Rows, b.BackfillType
			if b.Estimate > 0 {
				j.BackfillEstimate = max(b.Estimate, b.Rows)
			}
		}
	}
	d.mu.Lock()
	for id, f := range top {
		if r, ok := d.rateLocked(fragKey{id, f}); ok {
			byID[id].RowsPerSec = d.output(id, r)
		}
	}
	d.mu.Unlock()
	out := make([]Job, 0, len(byID))
	for _, j := range byID {
		out = append(out, *j)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].ID < out[b].ID })
	return out
}

// Graph is /api/fragments: a job's fragments and the edges between them.
type Graph struct {
	Job       uint32     `json:"job"`
	Name      string     `json:"name"`
	Fragments []Fragment `json:"fragments"`
	Edges     []Edge     `json:"edges"`
}

// Fragment is one node of a job's fragment graph.
type Fragment struct {
	ID          int    `json:"id"`
	Kind        string `json:"kind"`
	Parallelism int    `json:"parallelism"`
	// RowsInPerSec and RowsOutPerSec are over the last sample interval;
	// BusyShare is the share of its actors' time spent working, Blocked the
	// share spent waiting for downstream (0 to 1).
	RowsInPerSec  float64 `json:"rows_in_per_sec"`
	RowsOutPerSec float64 `json:"rows_out_per_sec"`
	BusyShare     float64 `json:"busy_share"`
	BlockedShare  float64 `json:"blocked_share"`
	RowsOut       int64   `json:"rows_out"`
}

// Edge is an exchange: From's output feeding To.
type Edge struct {
	From       int     `json:"from"`
	To         int     `json:"to"`
	Dist       string  `json:"dist"`
	RowsPerSec float64 `json:"rows_per_sec"`
}

func (d *Dashboard) fragments(job uint32) (Graph, bool) {
	if d.src.Fragments == nil {
		return Graph{}, false
	}
	g := Graph{Job: job, Name: d.name(job), Fragments: []Fragment{}, Edges: []Edge{}}
	var frags []coordinator.FragmentInfo
	for _, f := range d.src.Fragments() {
		if f.Job == job {
			frags = append(frags, f)
		}
	}
	if len(frags) == 0 {
		return g, false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	out := map[int]float64{}
	for _, f := range frags {
		fr := Fragment{ID: f.ID, Kind: f.Kind, Parallelism: len(f.Actors)}
		for _, st := range f.Stats {
			if st != nil {
				fr.RowsOut += st.RowsOut.Load()
			}
		}
		if r, ok := d.rateLocked(fragKey{job, f.ID}); ok {
			fr.RowsInPerSec, fr.RowsOutPerSec = r.RowsIn, r.RowsOut
			if n := float64(len(f.Actors)); n > 0 {
				fr.BusyShare, fr.BlockedShare = min(r.Busy/n, 1), min(r.Blocked/n, 1)
			}
		}
		out[f.ID] = fr.RowsOutPerSec
		g.Fragments = append(g.Fragments, fr)
	}
	for _, f := range frags {
		for _, in := range f.Inputs {
			g.Edges = append(g.Edges, Edge{From: in.From, To: f.ID, Dist: in.Dist, RowsPerSec: out[in.From]})
		}
	}
	return g, true
}

// Event is a row of /api/events.
type Event struct {
	Time    time.Time `json:"time"`
	Type    string    `json:"type"`
	Object  string    `json:"object"`
	Actor   uint32    `json:"actor"`
	Message string    `json:"message"`
}

// eventsShown is how many of the latest events /api/events returns.
const eventsShown = 200

func (d *Dashboard) events() []Event {
	out := []Event{}
	if d.src.Events == nil {
		return out
	}
	evs := d.src.Events()
	if len(evs) > eventsShown {
		evs = evs[len(evs)-eventsShown:]
	}
	for i := len(evs) - 1; i >= 0; i-- { // newest first
		ev := evs[i]
		typ, name := ev.Type, ev.Sink
		if typ == "" {
			typ = "SINK_FAIL"
		}
		if name == "" && ev.Job != 0 {
			name = d.name(ev.Job)
		}
		out = append(out, Event{Time: ev.Time, Type: typ, Object: name, Actor: uint32(ev.Actor), Message: catalog.MaskSecrets(ev.Err)})
	}
	return out
}

// Series is /api/series.
type Series struct {
	IntervalMS int64   `json:"interval_ms"`
	Points     []Point `json:"points"`
	// CommittedEpochMS is the physical time of the last committed epoch
	// (Unix milliseconds; 0: none yet).
	CommittedEpochMS int64 `json:"committed_epoch_ms"`
}

func (d *Dashboard) series() Series {
	s := Series{IntervalMS: 1000}
	if d.src.CommittedEpoch != nil {
		s.CommittedEpochMS = int64(d.src.CommittedEpoch() >> 16)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	s.Points = make([]Point, 0, len(d.mu.points))
	s.Points = append(s.Points, d.mu.points[d.mu.next:]...)
	s.Points = append(s.Points, d.mu.points[:d.mu.next]...)
	return s
}
