package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/tributary/tributary/e2e/e2etest"
	"github.com/tributary/tributary/e2e/pgtest"
	"github.com/tributary/tributary/e2e/testserver"
)

// scrapeMetrics GETs /metrics and parses the Prometheus text.
func scrapeMetrics(t *testing.T, ctx context.Context, srv *testserver.Server) map[string]*dto.MetricFamily {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "GET", srv.MetricsURL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

// samples returns the values of family name's samples whose labels include
// want (a histogram's value is its count).
func samples(fams map[string]*dto.MetricFamily, name string, want map[string]string) []float64 {
	var out []float64
next:
	for _, m := range fams[name].GetMetric() {
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
			out = append(out, m.GetGauge().GetValue())
		case m.Counter != nil:
			out = append(out, m.GetCounter().GetValue())
		case m.Histogram != nil:
			out = append(out, float64(m.GetHistogram().GetSampleCount()))
		}
	}
	return out
}

// TestMetrics scrapes /metrics while a datagen table fills and a paused
// background backfill waits: the barrier histogram's count grows, the job's
// backfill series and the source's split series appear, and the job's
// series go once its backfill finishes.
func TestMetrics(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv := testserver.StartWith(t, testserver.Build(t), t.TempDir(), testserver.Options{Args: []string{"--barrier-interval-ms", "100"}})
	conn := e2etest.Connect(t, ctx, srv)
	for _, sql := range []string{
		`CREATE TABLE t (k int PRIMARY KEY, v int)`,
		`INSERT INTO t SELECT g, g % 10 FROM generate_series(1, 5000) g`,
		`CREATE TABLE g (id bigint PRIMARY KEY, v int) WITH (connector = 'datagen',
			fields.id.kind = 'sequence', fields.id.start = '1', fields.id.end = '100000000',
			fields.v.min = '0', fields.v.max = '9', datagen.rows.per.second = '1000', datagen.split.num = '2')`,
		`SET background_ddl = true`,
		`SET backfill_rate_limit = 0`,
		`CREATE MATERIALIZED VIEW m AS SELECT v, count(*) AS n FROM t GROUP BY v`,
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}

	// The split series appear once each split's reader reports (a barrier).
	var fams map[string]*dto.MetricFamily
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		fams = scrapeMetrics(t, ctx, srv)
		if len(samples(fams, "tributary_source_rows_total", map[string]string{"source": "public.g"})) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no rows series for g's 2 splits: %v", fams["tributary_source_rows_total"])
		}
	}
	for _, name := range []string{"tributary_source_next_offset", "tributary_source_bad_messages_total"} {
		if n := len(samples(fams, name, map[string]string{"source": "public.g"})); n != 2 {
			t.Errorf("%s: %d series for g, want 2 (one per split)", name, n)
		}
	}
	if got := samples(fams, "tributary_job_backfill_rows_total", map[string]string{"job": "public.m"}); len(got) != 1 || got[0] != 0 {
		t.Errorf("paused job m's backfill rows: %v, want [0]", got)
	}
	if got := samples(fams, "tributary_job_backfill_progress_ratio", map[string]string{"job": "public.m"}); len(got) != 1 {
		t.Errorf("job m's progress: %v", got)
	}
	if got := samples(fams, "tributary_connections", map[string]string{"state": "idle"}); len(got) != 1 || got[0] < 1 {
		t.Errorf("idle connections: %v, want at least this test's", got)
	}
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total", "tributary_committed_epoch_timestamp_seconds"} {
		if _, ok := fams[name]; !ok {
			t.Errorf("no %s", name)
		}
	}
	barriers := samples(fams, "tributary_barrier_latency_seconds", nil)
	epochs := samples(fams, "tributary_epochs_committed_total", nil)
	rows := samples(fams, "tributary_source_rows_total", map[string]string{"source": "public.g"})

	time.Sleep(time.Second) // about 10 barriers
	fams = scrapeMetrics(t, ctx, srv)
	if got := samples(fams, "tributary_barrier_latency_seconds", nil); len(got) != 1 || got[0] <= barriers[0] {
		t.Errorf("barrier latency count went from %v to %v, want growth", barriers, got)
	}
	if got := samples(fams, "tributary_epochs_committed_total", nil); len(got) != 1 || got[0] <= epochs[0] {
		t.Errorf("epochs committed went from %v to %v, want growth", epochs, got)
	}
	if got := samples(fams, "tributary_source_rows_total", map[string]string{"source": "public.g"}); fmt.Sprint(got) == fmt.Sprint(rows) {
		t.Errorf("g's split rows stayed at %v", got)
	}

	// Once the backfill runs to the end, the job's series go (WAIT would
	// also wait for g's source, which runs for a day).
	if _, err := conn.Exec(ctx, `ALTER MATERIALIZED VIEW m SET BACKFILL_RATE_LIMIT = DEFAULT`); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		fams = scrapeMetrics(t, ctx, srv)
		if len(samples(fams, "tributary_job_backfill_rows_total", map[string]string{"job": "public.m"})) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("finished job m still has backfill rows %v", fams["tributary_job_backfill_rows_total"])
		}
	}

	// Per actor: m's fragments received and sent rows (its backfill's
	// fragment pre-aggregates them: fewer than 5000 cross its exchange), and
	// its operators were busy for some time.
	var out, busy float64
	for _, v := range samples(fams, "tributary_actor_rows_out_total", map[string]string{"job": "public.m"}) {
		out += v
	}
	for _, v := range samples(fams, "tributary_actor_busy_seconds_total", map[string]string{"job": "public.m"}) {
		busy += v
	}
	var in float64
	for _, v := range samples(fams, "tributary_actor_rows_in_total", map[string]string{"job": "public.m"}) {
		in += v
	}
	if out <= 0 || in <= 0 || busy <= 0 {
		t.Errorf("job m's actors received %v rows, sent %v, were busy %v s: want some of each", in, out, busy)
	}
	if got := samples(fams, "tributary_backfill_rows_read_total", nil); len(got) != 1 || got[0] < 5000 {
		t.Errorf("backfill rows read: %v, want at least m's 5000", got)
	}

	// The same listener serves pprof.
	resp, err := http.Get("http://" + srv.HTTPAddr + "/debug/pprof/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/debug/pprof/: %s", resp.Status)
	}
}

// sumSamples adds up the samples of family name whose labels include want
// (ok false when there is none).
func sumSamples(fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	vs := samples(fams, name, want)
	var sum float64
	for _, v := range vs {
		sum += v
	}
	return sum, len(vs) > 0
}

// bySeries returns family name's values by their labels' text.
func bySeries(fams map[string]*dto.MetricFamily, name string) map[string]float64 {
	out := map[string]float64{}
	for _, m := range fams[name].GetMetric() {
		key := ""
		for _, l := range m.GetLabel() {
			key += l.GetName() + "=" + l.GetValue() + ","
		}
		out[key] = m.GetCounter().GetValue()
	}
	return out
}

// TestMetricsNexmarkSinkLag is issue 16's metrics acceptance check: while
// Nexmark q0 runs into a decoupled sink, /metrics shows barriers and rows
// moving, and the sink's lag (pending rows, seconds behind) rises while
// SINK_RATE_LIMIT = 0 pauses it and falls back once the limit is reset.
func TestMetricsNexmarkSinkLag(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv := testserver.StartWith(t, testserver.Build(t), t.TempDir(), testserver.Options{Args: []string{"--barrier-interval-ms", "100"}})
	conn := e2etest.Connect(t, ctx, srv)
	for _, sql := range []string{
		`SET source_rate_limit = 3000`,
		`CREATE SOURCE bid (auction bigint, bidder bigint, price bigint, channel varchar, url varchar, date_time timestamp, extra varchar)
			WITH (connector = 'nexmark', nexmark.table.type = 'Bid', nexmark.split.num = '2')`,
		`CREATE MATERIALIZED VIEW q0 AS SELECT auction, bidder, price, date_time FROM bid`,
		`SET sink_decouple = true`,
		`CREATE SINK s FROM q0 WITH (connector = 'blackhole', type = 'append-only', force_append_only = 'true')`,
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	sink := map[string]string{"sink": "public.s"}
	q0 := map[string]string{"job": "public.q0"}
	// poll scrapes until cond holds on the scrape, or fails after 30 s.
	poll := func(what string, cond func(fams map[string]*dto.MetricFamily) bool) map[string]*dto.MetricFamily {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			fams := scrapeMetrics(t, ctx, srv)
			if cond(fams) {
				return fams
			}
			if time.Now().After(deadline) {
				lag, _ := sumSamples(fams, "tributary_sink_lag_seconds", sink)
				pending, _ := sumSamples(fams, "tributary_sink_log_pending_rows", sink)
				t.Fatalf("%s: not within 30 s (sink lag %v s, %v rows pending)", what, lag, pending)
			}
		}
	}

	// Running: the sink delivers and keeps up.
	fams := poll("the sink delivers", func(fams map[string]*dto.MetricFamily) bool {
		d, _ := sumSamples(fams, "tributary_sink_delivered_rows_total", sink)
		lag, ok := sumSamples(fams, "tributary_sink_lag_seconds", sink)
		return d > 0 && ok && lag < 1
	})
	barriers, _ := sumSamples(fams, "tributary_barrier_latency_seconds", nil)
	rowsOut, _ := sumSamples(fams, "tributary_actor_rows_out_total", q0)
	counters := map[string]map[string]float64{}
	for _, name := range []string{"tributary_actor_busy_seconds_total", "tributary_actor_blocked_seconds_total", "tributary_actor_rows_in_total"} {
		counters[name] = bySeries(fams, name)
	}
	fams = poll("barriers and q0's rows move", func(fams map[string]*dto.MetricFamily) bool {
		b, _ := sumSamples(fams, "tributary_barrier_latency_seconds", nil)
		r, _ := sumSamples(fams, "tributary_actor_rows_out_total", q0)
		return b > barriers && r > rowsOut
	})
	// Counters never go down (a decrease reads as a restart to Prometheus).
	for name, before := range counters {
		for series, v := range bySeries(fams, name) {
			if v < before[series] {
				t.Errorf("%s{%s} went down from %v to %v", name, series, before[series], v)
			}
		}
	}
	for _, name := range []string{"tributary_storage_lsm_bytes", "tributary_storage_vlog_bytes", "tributary_storage_level_tables",
		"tributary_storage_write_stalls_total", "tributary_sink_log_pending_bytes", "tributary_sink_log_pending_epochs",
		"tributary_memory_budget_bytes", "tributary_memory_used_bytes"} {
		if _, ok := fams[name]; !ok {
			t.Errorf("no %s", name)
		}
	}

	// Paused: rows pile up in the log store and the lag grows past a second.
	if _, err := conn.Exec(ctx, `ALTER SINK s SET SINK_RATE_LIMIT = 0`); err != nil {
		t.Fatal(err)
	}
	var peak float64
	poll("the paused sink's lag rises", func(fams map[string]*dto.MetricFamily) bool {
		lag, _ := sumSamples(fams, "tributary_sink_lag_seconds", sink)
		peak, _ = sumSamples(fams, "tributary_sink_log_pending_rows", sink)
		return lag > 1.5 && peak > 1000
	})

	// Resumed: it catches up.
	if _, err := conn.Exec(ctx, `ALTER SINK s SET SINK_RATE_LIMIT = DEFAULT`); err != nil {
		t.Fatal(err)
	}
	poll("the resumed sink's lag falls", func(fams map[string]*dto.MetricFamily) bool {
		lag, _ := sumSamples(fams, "tributary_sink_lag_seconds", sink)
		pending, _ := sumSamples(fams, "tributary_sink_log_pending_rows", sink)
		return lag < 1 && pending < peak/2
	})
}

// TestMetricsKafkaSourceLag: a Kafka table read at a low rate shows its
// splits' lag (offsets behind the high watermark) and bytes read in
// /metrics; once the limit is lifted the lag falls to 0.
func TestMetricsKafkaSourceLag(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "events"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	brokers := cluster.ListenAddrs()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e2etest.ProduceJSON(t, ctx, brokers, "events", 0, 3000)
	srv := testserver.StartWith(t, testserver.Build(t), t.TempDir(), testserver.Options{Args: []string{"--barrier-interval-ms", "100"}})
	conn := e2etest.Connect(t, ctx, srv)
	for _, sql := range []string{
		`SET source_rate_limit = 200`,
		fmt.Sprintf(`CREATE TABLE kt (id int PRIMARY KEY, g int, v varchar) WITH (connector = 'kafka',
			properties.bootstrap.server = '%s', topic = 'events') FORMAT PLAIN ENCODE JSON`, strings.Join(brokers, ",")),
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	src := map[string]string{"source": "public.kt"}
	poll := func(what string, cond func(lag, bytes float64, splits int) bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			fams := scrapeMetrics(t, ctx, srv)
			lags := samples(fams, "tributary_source_lag_messages", src)
			lag, _ := sumSamples(fams, "tributary_source_lag_messages", src)
			bytes, _ := sumSamples(fams, "tributary_source_bytes_total", src)
			if cond(lag, bytes, len(lags)) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 30 s (lag %v over %d splits, %v bytes read)", what, lag, len(lags), bytes)
			}
		}
	}
	poll("a lag while reading at 200 rows/s", func(lag, bytes float64, splits int) bool {
		return splits == 2 && lag > 1000 && bytes > 0
	})
	if _, err := conn.Exec(ctx, `ALTER TABLE kt SET SOURCE_RATE_LIMIT = DEFAULT`); err != nil {
		t.Fatal(err)
	}
	poll("no lag once caught up", func(lag, bytes float64, splits int) bool {
		return splits == 2 && lag == 0 && bytes > 3000*20
	})
}

// TestMetricsCDCLag: a PostgreSQL CDC table's lag in WAL bytes (the
// upstream's WAL end less the committed LSN) grows while the table is
// paused (SOURCE_RATE_LIMIT = 0) and the upstream writes, and falls once
// it reads again. Skipped without PostgreSQL binaries.
func TestMetricsCDCLag(t *testing.T) {
	pg := pgtest.StartWith(t, pgtest.LogicalSettings...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	up, err := pgx.Connect(ctx, pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close(context.Background())
	if _, err := up.Exec(ctx, "CREATE TABLE src (id int8 PRIMARY KEY, v text)"); err != nil {
		t.Fatal(err)
	}
	srv := testserver.StartWith(t, testserver.Build(t), t.TempDir(), testserver.Options{Args: []string{"--barrier-interval-ms", "100"}})
	conn := e2etest.Connect(t, ctx, srv)
	host, port, _ := net.SplitHostPort(pg.Addr)
	if _, err := conn.Exec(ctx, fmt.Sprintf(`CREATE TABLE cdc (id bigint, v varchar, PRIMARY KEY (id)) WITH (connector = 'postgres-cdc',
		hostname = '%s', port = '%s', username = 'postgres', password = '', database.name = 'dev', table.name = 'src')`, host, port)); err != nil {
		t.Fatal(err)
	}
	rel := map[string]string{"source": "public.cdc"}
	insert := func(from int) {
		t.Helper()
		if _, err := up.Exec(ctx, fmt.Sprintf("INSERT INTO src SELECT g, repeat('x', 200) FROM generate_series(%d, %d) g", from, from+9999)); err != nil {
			t.Fatal(err)
		}
	}
	poll := func(what string, cond func(lag float64) bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			lag, ok := sumSamples(scrapeMetrics(t, ctx, srv), "tributary_source_lag_bytes", rel)
			if ok && cond(lag) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 30 s (lag %v bytes, reported %v)", what, lag, ok)
			}
		}
	}
	insert(1)
	poll("a small lag once caught up", func(lag float64) bool { return lag < 1<<20 })
	if _, err := conn.Exec(ctx, "ALTER TABLE cdc SET SOURCE_RATE_LIMIT = 0"); err != nil {
		t.Fatal(err)
	}
	insert(100_000) // about 2.5 MB of WAL
	poll("the paused table's lag grows", func(lag float64) bool { return lag > 1<<20 })
	if _, err := conn.Exec(ctx, "ALTER TABLE cdc SET SOURCE_RATE_LIMIT = DEFAULT"); err != nil {
		t.Fatal(err)
	}
	poll("the lag falls once it reads again", func(lag float64) bool { return lag < 1<<20 })
	e2etest.WaitRows(t, ctx, func() (string, error) {
		rows, err := e2etest.Rows(ctx, conn, "SELECT count(*) FROM cdc")
		return strings.Join(rows, ";"), err
	}, "20000", 30*time.Second)
}
