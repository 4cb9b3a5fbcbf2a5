package metrics

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tributary/tributary/connector"
	"github.com/tributary/tributary/executor/coordinator"
	"github.com/tributary/tributary/executor/stream"
)

// Sources are the functions the collector reads at scrape time; a nil one
// leaves its metrics out.
type Sources struct {
	// Jobs lists the running backfills; JobName names a job's relation.
	Jobs    func() []coordinator.JobInfo
	JobName func(id uint32) string
	// Splits, Stores and CDC are the SinkLog's source splits, decoupled
	// sinks' log stores and CDC splits.
	Splits func() []coordinator.SourceSplitStats
	Stores func() []stream.SinkLogStats
	CDC    func() []connector.CDCProgress
	// Connections counts client connections by state name.
	Connections func() map[string]int
	// CommittedEpoch is storage's committed epoch.
	CommittedEpoch func() uint64
	// LateRows counts the rows streaming jobs dropped as late (stream.LateRows).
	LateRows func() int64
	// BackfillRowsRead counts the rows table backfills read since the start.
	BackfillRowsRead func() int64
	// Fragments lists the running jobs' fragments with their actors' counters.
	Fragments func() []coordinator.FragmentInfo
	// Storage reads the store's sizes and health.
	Storage func() StorageStats
	// Memory lists the memory budget's consumers (rw_catalog.rw_memory
	// without the per-operator lines).
	Memory func() []MemoryUsage
}

// MemoryUsage is one consumer of the memory budget: its budget and what it
// holds in bytes (-1: none of its own, or unknown).
type MemoryUsage struct {
	Consumer     string
	Budget, Used int64
}

// StorageStats are the store's sizes and health (storage/badger.Stats).
type StorageStats struct {
	LSMBytes, VlogBytes int64
	// LevelTables and LevelBytes are each LSM level's, from L0 down.
	LevelTables   []int
	LevelBytes    []int64
	L0StallTables int
	// WriteStalls (over a second each) and their total seconds;
	// SlowCompactions took over two seconds.
	WriteStalls, SlowCompactions int64
	WriteStallSeconds            float64
}

// Metrics is the server's registry.
type Metrics struct {
	reg     *prometheus.Registry
	barrier prometheus.Histogram
	epochs  prometheus.Counter
}

// New returns a registry with the Go runtime and process collectors, the
// barrier metrics and a collector over src.
func New(src Sources) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		barrier: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "tributary_barrier_latency_seconds",
			Help: "Time from a barrier's injection to the end of its epoch's commit.",
			// 0.25 ms to 33 s.
			Buckets: prometheus.ExponentialBuckets(0.00025, 2, 18),
		}),
		epochs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tributary_epochs_committed_total",
			Help: "Epochs committed to storage.",
		}),
	}
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.barrier, m.epochs,
		&collector{src: src},
	)
	return m
}

// ObserveBarrier counts a committed epoch and its barrier latency; pass it
// to coordinator.BarrierLog.Watch.
func (m *Metrics) ObserveBarrier(s coordinator.BarrierStat) {
	m.barrier.Observe(s.Latency.Seconds())
	m.epochs.Inc()
}

// Handler serves the registry in Prometheus text (or protobuf) format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Registry returns the registry, for tests and extra collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

var (
	descCommittedEpochTime = prometheus.NewDesc("tributary_committed_epoch_timestamp_seconds",
		"Physical time of the last committed epoch (Unix seconds).", nil, nil)

	jobLabels               = []string{"job_id", "job"}
	descBackfillRows        = prometheus.NewDesc("tributary_job_backfill_rows_total", "Rows a running backfill has read so far.", jobLabels, nil)
	descBackfillEstimate    = prometheus.NewDesc("tributary_job_backfill_estimated_rows", "Rows a running backfill is expected to read (absent while unknown).", jobLabels, nil)
	descBackfillProgress    = prometheus.NewDesc("tributary_job_backfill_progress_ratio", "Share of a running backfill done, 0 to 1.", jobLabels, nil)
	descBackfillBackgrounds = prometheus.NewDesc("tributary_jobs_backfilling", "Streaming jobs whose backfill is running.", nil, nil)
	actorLabels             = []string{"job_id", "job", "fragment_id", "fragment", "actor"}
	descActorRowsIn         = prometheus.NewDesc("tributary_actor_rows_in_total", "Rows an actor received from upstream actors (by job, fragment and the actor's index in it).", actorLabels, nil)
	descActorRowsOut        = prometheus.NewDesc("tributary_actor_rows_out_total", "Rows an actor sent on (its fragment's output).", actorLabels, nil)
	descActorBusy           = prometheus.NewDesc("tributary_actor_busy_seconds_total", "Time an actor's operators spent working (not waiting for input).", actorLabels, nil)
	descActorBlocked        = prometheus.NewDesc("tributary_actor_blocked_seconds_total", "Time an actor waited for downstream actors to take its output (backpressure).", actorLabels, nil)
	descBackfillRowsRead    = prometheus.NewDesc("tributary_backfill_rows_read_total", "Upstream rows every table backfill read since the server started (rebuilt and resumed ones included).", nil, nil)
	fragLabels              = []string{"job_id", "job", "fragment_id", "fragment"}
	descCacheHits           = prometheus.NewDesc("tributary_state_cache_hits_total", "Lookups of stateful operators' in-memory state (groups, join keys, top-n groups) that found the entry cached, by fragment.", fragLabels, nil)
	descCacheMisses         = prometheus.NewDesc("tributary_state_cache_misses_total", "Lookups of stateful operators' in-memory state that read the state table, by fragment.", fragLabels, nil)

	splitLabels       = []string{"source", "split"}
	descSourceRows    = prometheus.NewDesc("tributary_source_rows_total", "Rows a source split's reader has read since it started.", splitLabels, nil)
	descSourceNext    = prometheus.NewDesc("tributary_source_next_offset", "Position after the last row read from a source split (committed with the last barrier).", splitLabels, nil)
	descSourceBad     = prometheus.NewDesc("tributary_source_bad_messages_total", "Messages of a source split skipped or read in part since the server started.", splitLabels, nil)
	descSourceBytes   = prometheus.NewDesc("tributary_source_bytes_total", "Bytes of the messages a source split's reader has read since it started (keys and payloads; 0 for generators).", splitLabels, nil)
	descSourceLag     = prometheus.NewDesc("tributary_source_lag_messages", "Messages of a source split not yet read: its newest offset less the next one to read (Kafka: the high watermark; absent where unknown).", splitLabels, nil)
	descSinkLag       = prometheus.NewDesc("tributary_sink_lag_seconds", "How far a decoupled sink's delivery is behind the committed epoch: the committed epoch's time less the last delivered epoch's (0 when nothing is pending).", storeLabels, nil)
	descSinkDelivRows = prometheus.NewDesc("tributary_sink_delivered_rows_total", "Rows a decoupled sink's log store reader delivered since it started.", storeLabels, nil)
	descSourceLagB    = prometheus.NewDesc("tributary_source_lag_bytes", "How far a source split's committed position is behind the end of the upstream's log (PostgreSQL CDC: bytes of WAL; absent where unknown).", splitLabels, nil)
	descLSMBytes      = prometheus.NewDesc("tributary_storage_lsm_bytes", "Size of Badger's LSM tree tables.", nil, nil)
	descVlogBytes     = prometheus.NewDesc("tributary_storage_vlog_bytes", "Disk space of Badger's value log files.", nil, nil)
	descLevelTables   = prometheus.NewDesc("tributary_storage_level_tables", "Tables in each LSM level.", []string{"level"}, nil)
	descLevelBytes    = prometheus.NewDesc("tributary_storage_level_bytes", "Size of each LSM level.", []string{"level"}, nil)
	descL0Stall       = prometheus.NewDesc("tributary_storage_l0_stall_tables", "The L0 table count at which Badger stalls writes.", nil, nil)
	descWriteStalls   = prometheus.NewDesc("tributary_storage_write_stalls_total", "Writes Badger held for over a second because L0 was full.", nil, nil)
	descStallSeconds  = prometheus.NewDesc("tributary_storage_write_stall_seconds_total", "Time writes were held by the stalls counted in tributary_storage_write_stalls_total.", nil, nil)
	descSlowCompacts  = prometheus.NewDesc("tributary_storage_slow_compactions_total", "LSM compactions that took over two seconds (Badger reports no others).", nil, nil)
	storeLabels       = []string{"sink", "actor"}
	descSinkRows      = prometheus.NewDesc("tributary_sink_log_pending_rows", "Rows in a decoupled sink's log store not yet delivered.", storeLabels, nil)
	descSinkEpochs    = prometheus.NewDesc("tributary_sink_log_pending_epochs", "Committed epochs in a decoupled sink's log store not yet delivered.", storeLabels, nil)
	descSinkBytes     = prometheus.NewDesc("tributary_sink_log_pending_bytes", "Bytes in a decoupled sink's log store not yet delivered.", storeLabels, nil)
	descSinkFailures  = prometheus.NewDesc("tributary_sink_delivery_failures_total", "Failed deliveries of a decoupled sink's log store reader.", storeLabels, nil)
	descSinkDelivered = prometheus.NewDesc("tributary_sink_delivered_epoch_timestamp_seconds", "Physical time of the last epoch a decoupled sink committed (Unix seconds).", storeLabels, nil)
	cdcLabels         = []string{"relation", "split"}
	descCDCRows       = prometheus.NewDesc("tributary_cdc_snapshot_rows_total", "Rows of a CDC split's upstream table copied so far.", cdcLabels, nil)
	descCDCEstimate   = prometheus.NewDesc("tributary_cdc_snapshot_estimated_rows", "The upstream's row estimate for a CDC split (absent while unknown).", cdcLabels, nil)
	descCDCFinished   = prometheus.NewDesc("tributary_cdc_snapshot_finished", "1 once a CDC split has copied every upstream row.", cdcLabels, nil)
	descCDCLSN        = prometheus.NewDesc("tributary_cdc_committed_lsn", "A CDC split's committed position in the upstream's WAL (bytes).", cdcLabels, nil)
	descConnections   = prometheus.NewDesc("tributary_connections", "Client connections by state.", []string{"state"}, nil)
	descMemBudget     = prometheus.NewDesc("tributary_memory_budget_bytes", "Bytes a consumer of the memory budget (--memory-limit) may hold: total, storage memtables and caches, stream caches.", []string{"consumer"}, nil)
	descMemUsed       = prometheus.NewDesc("tributary_memory_used_bytes", "Bytes a consumer of the memory budget holds (total: what the Go runtime holds; absent where unknown).", []string{"consumer"}, nil)
	descLateRows      = prometheus.NewDesc("tributary_watermark_late_rows_total", "Rows streaming jobs dropped as late: below a WATERMARK FOR watermark, or of a window already emitted on window close.", nil, nil)
)

// collector reads Sources at scrape time.
type collector struct{ src Sources }

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descCommittedEpochTime, descBackfillRows, descBackfillEstimate,
		descBackfillProgress, descBackfillBackgrounds, descBackfillRowsRead, descActorRowsIn, descActorRowsOut, descActorBusy, descActorBlocked, descSourceRows, descSourceNext, descSourceBad,
		descSinkRows, descSinkEpochs, descSinkBytes, descSinkFailures, descSinkDelivered,
		descCDCRows, descCDCEstimate, descCDCFinished, descCDCLSN, descConnections, descLateRows,
		descCacheHits, descCacheMisses, descSourceBytes, descSourceLag, descSinkLag, descSinkDelivRows, descSourceLagB,
		descLSMBytes, descVlogBytes, descLevelTables, descLevelBytes, descL0Stall, descWriteStalls, descStallSeconds, descSlowCompacts,
		descMemBudget, descMemUsed} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	s := c.src
	var committed uint64
	if s.CommittedEpoch != nil {
		if committed = s.CommittedEpoch(); committed != 0 {
			ch <- gauge(descCommittedEpochTime, epochSeconds(committed))
		}
	}
	if s.Fragments != nil {
		for _, f := range s.Fragments() {
			id, name, frag := strconv.FormatUint(uint64(f.Job), 10), "", strconv.Itoa(f.ID)
			if s.JobName != nil {
				name = s.JobName(f.Job)
			}
			for i, st := range f.Stats {
				if st == nil {
					continue
				}
				idx := strconv.Itoa(i)
				ch <- counter(descActorRowsIn, float64(st.RowsIn.Load()), id, name, frag, f.Kind, idx)
				ch <- counter(descActorRowsOut, float64(st.RowsOut.Load()), id, name, frag, f.Kind, idx)
				ch <- counter(descActorBusy, float64(st.BusyNanos.Load())/1e9, id, name, frag, f.Kind, idx)
				ch <- counter(descActorBlocked, float64(st.BlockedNanos.Load())/1e9, id, name, frag, f.Kind, idx)
			}
			var hits, misses int64
			for _, o := range f.Ops {
				hits += o.CacheHits.Load()
				misses += o.CacheMisses.Load()
			}
			if hits+misses > 0 {
				ch <- counter(descCacheHits, float64(hits), id, name, frag, f.Kind)
				ch <- counter(descCacheMisses, float64(misses), id, name, frag, f.Kind)
			}
		}
	}
	if s.BackfillRowsRead != nil {
		ch <- counter(descBackfillRowsRead, float64(s.BackfillRowsRead()))
	}
	if s.Jobs != nil {
		jobs := s.Jobs()
		ch <- gauge(descBackfillBackgrounds, float64(len(jobs)))
		for _, j := range jobs {
			id, name := strconv.FormatUint(uint64(j.ID), 10), ""
			if s.JobName != nil {
				name = s.JobName(j.ID)
			}
			ch <- counter(descBackfillRows, float64(j.Rows), id, name)
			if j.Estimate > 0 {
				ch <- gauge(descBackfillEstimate, float64(max(j.Estimate, j.Rows)), id, name)
			}
			ch <- gauge(descBackfillProgress, j.Percent/100, id, name)
		}
	}
	if s.Splits != nil {
		for _, sp := range s.Splits() {
			ch <- counter(descSourceRows, float64(sp.Rows), sp.Source, sp.Split)
			ch <- gauge(descSourceNext, float64(sp.Next), sp.Source, sp.Split)
			ch <- counter(descSourceBad, float64(sp.BadMessages), sp.Source, sp.Split)
			ch <- counter(descSourceBytes, float64(sp.Bytes), sp.Source, sp.Split)
			if sp.Lag >= 0 {
				ch <- gauge(descSourceLag, float64(sp.Lag), sp.Source, sp.Split)
			}
			if sp.LagBytes >= 0 {
				ch <- gauge(descSourceLagB, float64(sp.LagBytes), sp.Source, sp.Split)
			}
		}
	}
	if s.Stores != nil {
		for _, st := range s.Stores() {
			actor := strconv.FormatUint(uint64(st.Actor), 10)
			ch <- gauge(descSinkRows, float64(st.PendingRows), st.Sink, actor)
			ch <- gauge(descSinkEpochs, float64(st.PendingEpochs), st.Sink, actor)
			ch <- gauge(descSinkBytes, float64(st.PendingBytes), st.Sink, actor)
			ch <- counter(descSinkFailures, float64(st.Failures), st.Sink, actor)
			if st.DeliveredEpoch != 0 {
				ch <- gauge(descSinkDelivered, epochSeconds(st.DeliveredEpoch), st.Sink, actor)
			}
			ch <- counter(descSinkDelivRows, float64(st.DeliveredRows), st.Sink, actor)
			if lag, ok := sinkLag(st, committed); ok {
				ch <- gauge(descSinkLag, lag, st.Sink, actor)
			}
		}
	}
	if s.CDC != nil {
		for _, p := range s.CDC() {
			ch <- counter(descCDCRows, float64(p.Rows), p.Relation, p.Split)
			if p.Estimate >= 0 {
				ch <- gauge(descCDCEstimate, float64(p.Estimate), p.Relation, p.Split)
			}
			finished := 0.0
			if p.Finished {
				finished = 1
			}
			ch <- gauge(descCDCFinished, finished, p.Relation, p.Split)
			if lsn, ok := parseLSN(p.LSN); ok {
				ch <- gauge(descCDCLSN, float64(lsn), p.Relation, p.Split)
			}
		}
	}
	if s.Connections != nil {
		for state, n := range s.Connections() {
			ch <- gauge(descConnections, float64(n), state)
		}
	}
	if s.LateRows != nil {
		ch <- counter(descLateRows, float64(s.LateRows()))
	}
	if s.Storage != nil {
		st := s.Storage()
		ch <- gauge(descLSMBytes, float64(st.LSMBytes))
		ch <- gauge(descVlogBytes, float64(st.VlogBytes))
		for i, n := range st.LevelTables {
			level := strconv.Itoa(i)
			ch <- gauge(descLevelTables, float64(n), level)
			if i < len(st.LevelBytes) {
				ch <- gauge(descLevelBytes, float64(st.LevelBytes[i]), level)
			}
		}
		ch <- gauge(descL0Stall, float64(st.L0StallTables))
		ch <- counter(descWriteStalls, float64(st.WriteStalls))
		ch <- counter(descStallSeconds, st.WriteStallSeconds)
		ch <- counter(descSlowCompacts, float64(st.SlowCompactions))
	}
	if s.Memory != nil {
		for _, u := range s.Memory() {
			if u.Budget >= 0 {
				ch <- gauge(descMemBudget, float64(u.Budget), u.Consumer)
			}
			if u.Used >= 0 {
				ch <- gauge(descMemUsed, float64(u.Used), u.Consumer)
			}
		}
	}
}

// sinkLag is how far a log store's delivery is behind the committed epoch,
// in seconds: 0 with nothing pending, unknown (false) before its first
// delivery or without a committed epoch.
func sinkLag(st stream.SinkLogStats, committed uint64) (float64, bool) {
	if st.PendingEpochs <= 0 && st.PendingRows <= 0 {
		return 0, true
	}
	if committed == 0 || st.DeliveredEpoch == 0 {
		return 0, false
	}
	return max(epochSeconds(committed)-epochSeconds(st.DeliveredEpoch), 0), true
}

func gauge(d *prometheus.Desc, v float64, labels ...string) prometheus.Metric {
	return prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}

func counter(d *prometheus.Desc, v float64, labels ...string) prometheus.Metric {
	return prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
}

// epochSeconds is an epoch's physical time: its high bits are Unix
// milliseconds (DESIGN.md §2).
func epochSeconds(e uint64) float64 { return float64(e>>16) / 1000 }

// parseLSN reads PostgreSQL's "16/B374D848" form.
func parseLSN(s string) (uint64, bool) {
	hi, lo, ok := strings.Cut(s, "/")
	if !ok {
		return 0, false
	}
	h, err1 := strconv.ParseUint(hi, 16, 32)
	l, err2 := strconv.ParseUint(lo, 16, 32)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return h<<32 | l, true
}
