package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/e2e/testserver"
)

// The Kafka source benchmark (issue 11). An in-process kfake cluster (in the
// bench process, whose CPU is measured apart from the server's) holds N
// Nexmark-bid-like JSON messages (10 fields, about 270 bytes) over P
// partitions; each case runs on a fresh server:
//
//   - shared-count, shared-sink, shared-two: the shared source's reader path.
//     The source is created paused (source_rate_limit = 0) on an empty topic,
//     the view(s) or sink are created (their backfill has no history, so they
//     start on the shared stream), N messages are produced, and the clock
//     starts when ALTER SOURCE releases the reader; it stops after the
//     reader's offsets (rw_source_splits) reach N and a FLUSH has committed
//     everything behind them. shared-count is count(*), shared-sink a
//     blackhole sink (coupled, the default for blackhole), shared-two count(*)
//     plus a GROUP BY on the same source (the cost of a second view).
//   - backfill-count: the reader has read the N messages with nothing on it;
//     then a count(*) view is created and the clock runs over its blocking
//     CREATE: its backfill reads the topic's history itself.
//   - datagen-count, datagen-sink: the same shape of rows generated in the
//     server by a datagen source bounded at N rows (no Kafka, no JSON; date_time
//     is a bigint there, datagen has no timestamps), timed over the blocking
//     CREATE and a FLUSH: the parse-free baseline.
//
// Per case: wall seconds, events/s, the server's CPU seconds (user+system of
// its process) and the bench process's (kfake serving fetches, the bench's
// own client), events per server CPU second ("per core": what one fully busy
// core would do) and server CPU seconds per million messages, and that per-core
// rate over RisingWave's reported 140k events/s per vCPU (Kafka and JSON
// included, the broker not).

// risingWavePerVCPU is RisingWave's reported throughput per vCPU reading JSON
// from Kafka; the goal is twice it per core.
const risingWavePerVCPU = 140000

// The cases, in the order they run.
var kafkaCases = []kafkaCase{
	{key: "shared-count", name: "kafka shared -> count(*)", kind: caseShared, jobs: []string{countView}},
	{key: "shared-sink", name: "kafka shared -> blackhole sink", kind: caseShared, jobs: []string{blackholeSink}},
	{key: "shared-two", name: "kafka shared -> count(*) + GROUP BY", kind: caseShared, jobs: []string{countView, groupView}},
	{key: "backfill-count", name: "kafka backfill -> count(*)", kind: caseBackfill, jobs: []string{countView}},
	{key: "datagen-count", name: "datagen -> count(*)", kind: caseDatagen, jobs: []string{countView}},
	{key: "datagen-sink", name: "datagen -> blackhole sink", kind: caseDatagen, jobs: []string{blackholeSink}},
}

const (
	countView     = "CREATE MATERIALIZED VIEW c AS SELECT count(*) AS n FROM bid"
	groupView     = "CREATE MATERIALIZED VIEW g AS SELECT channel, count(*) AS n FROM bid GROUP BY channel"
	blackholeSink = "CREATE SINK k AS SELECT * FROM bid WITH (connector = 'blackhole')"
)

type caseKind int

const (
	caseShared caseKind = iota
	caseBackfill
	caseDatagen
)

type kafkaCase struct {
	key, name string
	kind      caseKind
	jobs      []string // the views and sinks on bid
}

type kafkaConfig struct {
	messages    int
	partitions  int
	compression string
	cases       []kafkaCase
	serverBin   string
	serverArgs  []string
	keep        bool
	profileDir  string        // when set, a CPU profile of each case's server goes here
	profileSecs time.Duration // its length, from the start of the measured phase
}

// kafkaResult is one case's run.
type kafkaResult struct {
	Key          string  `json:"key"`
	Case         string  `json:"case"`
	Messages     int64   `json:"messages"`
	Seconds      float64 `json:"wall_seconds"`
	EventsPerSec float64 `json:"events_per_sec"`
	ServerCPU    float64 `json:"server_cpu_seconds"`
	BenchCPU     float64 `json:"bench_cpu_seconds"` // kfake and the bench's client
	// OtherCPU is the machine's busy CPU time (/proc/stat) less the server's
	// and the bench's: what else ran beside the case.
	OtherCPU     float64 `json:"other_cpu_seconds"`
	PerCore      float64 `json:"events_per_server_cpu_second"`
	CPUPerM      float64 `json:"server_cpu_seconds_per_million"`
	VsRisingWave float64 `json:"per_core_vs_risingwave"`
	// ProduceRate is how fast the bench preloaded the topic (not measured against the server).
	ProduceRate float64 `json:"produce_messages_per_sec,omitempty"`
	Checked     string  `json:"checked"`
	Profile     string  `json:"profile,omitempty"`
}

type kafkaReport struct {
	Date        string        `json:"date"`
	Cores       int           `json:"cores"`
	Messages    int           `json:"messages"`
	Partitions  int           `json:"partitions"`
	Compression string        `json:"compression"`
	MessageSize int           `json:"mean_message_bytes"`
	Results     []kafkaResult `json:"results"`
	Summary     []string      `json:"summary"`
}

func kafkaMain(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("kafka", flag.ContinueOnError)
	messages := fs.Int("messages", 2000000, "JSON messages per case (N)")
	partitions := fs.Int("partitions", 8, "partitions of the topic (P); also datagen.split.num of the baseline")
	compression := fs.String("compression", "none", "producer batch compression: none, snappy, lz4 or zstd")
	only := fs.String("cases", "", "comma-separated subset of: "+kafkaCaseKeys())
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	serverBin := fs.String("server-bin", "", "prebuilt server binary (default: go build ./cmd/server)")
	serverArgs := fs.String("server-args", "", "extra flags for the started servers")
	profileDir := fs.String("profile-dir", "", "write a CPU profile of each case's server (--pprof) here; profiling costs CPU, so measure in another run")
	profileSecs := fs.Duration("profile-seconds", 5*time.Second, "length of each profile, from the start of the measured phase")
	timeout := fs.Duration("timeout", time.Hour, "give up after this long")
	keep := fs.Bool("keep", false, "keep the temporary directory (data, logs)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *messages <= 0 || *partitions <= 0 || *timeout <= 0 || *profileSecs <= 0 {
		return errors.New("--messages, --partitions, --profile-seconds and --timeout must be positive")
	}
	if _, err := compressionCodec(*compression); err != nil {
		return err
	}
	cfg := kafkaConfig{messages: *messages, partitions: *partitions, compression: *compression, cases: kafkaCases,
		serverBin: *serverBin, serverArgs: strings.Fields(*serverArgs), keep: *keep, profileDir: *profileDir, profileSecs: *profileSecs}
	if *only != "" {
		cfg.cases = nil
		for _, k := range strings.Split(*only, ",") {
			c, ok := kafkaCaseByKey(strings.TrimSpace(k))
			if !ok {
				return fmt.Errorf("--cases: unknown case %q (known: %s)", k, kafkaCaseKeys())
			}
			cfg.cases = append(cfg.cases, c)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	rep, err := runKafka(ctx, cfg)
	if err != nil {
		return fmt.Errorf("kafka: %w", err)
	}
	if *asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(rep)
	}
	printKafka(out, rep)
	return nil
}

func kafkaCaseKeys() string {
	var ks []string
	for _, c := range kafkaCases {
		ks = append(ks, c.key)
	}
	return strings.Join(ks, ", ")
}

func kafkaCaseByKey(k string) (kafkaCase, bool) {
	for _, c := range kafkaCases {
		if c.key == k {
			return c, true
		}
	}
	return kafkaCase{}, false
}

func compressionCodec(name string) (kgo.CompressionCodec, error) {
	switch name {
	case "none":
		return kgo.NoCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("--compression must be none, snappy, lz4 or zstd, not %q", name)
}

// runKafka starts the kfake cluster and runs every case of cfg on a fresh server.
func runKafka(ctx context.Context, cfg kafkaConfig) (*kafkaReport, error) {
	codec, err := compressionCodec(cfg.compression)
	if err != nil {
		return nil, err
	}
	if cfg.profileDir != "" {
		if err := os.MkdirAll(cfg.profileDir, 0o755); err != nil {
			return nil, fmt.Errorf("profile dir: %w", err)
		}
	}
	e, err := newEnv(ctx, cfg.serverBin, cfg.keep)
	if err != nil {
		return nil, err
	}
	defer e.close()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		return nil, fmt.Errorf("kfake: %w", err)
	}
	defer cluster.Close()
	k := &kafkaEnv{brokers: cluster.ListenAddrs(), codec: codec, partitions: int32(cfg.partitions)}
	if k.admin, err = kgo.NewClient(kgo.SeedBrokers(k.brokers...)); err != nil {
		return nil, fmt.Errorf("kafka client: %w", err)
	}
	defer k.admin.Close()

	var size int
	var buf []byte
	for i := range 1000 {
		buf = appendBid(buf[:0], int64(i))
		size += len(buf)
	}
	rep := &kafkaReport{Date: time.Now().UTC().Format(time.RFC3339), Cores: runtime.NumCPU(), Messages: cfg.messages,
		Partitions: cfg.partitions, Compression: cfg.compression, MessageSize: size / 1000}
	for _, c := range cfg.cases {
		fmt.Fprintf(os.Stderr, "bench: kafka: %s\n", c.name)
		r, err := kafkaRun(ctx, e, k, cfg, c)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.key, err)
		}
		fmt.Fprintf(os.Stderr, "bench: kafka: %s: %.0f events/s, %.0f per server CPU second\n", c.key, r.EventsPerSec, r.PerCore)
		rep.Results = append(rep.Results, r)
	}
	rep.Summary = kafkaSummary(rep.Results)
	return rep, nil
}

// kafkaEnv is the benchmark's Kafka side: the brokers and a client for topic admin.
type kafkaEnv struct {
	brokers    []string
	admin      *kgo.Client
	codec      kgo.CompressionCodec
	partitions int32
}

// kafkaRun measures one case on a fresh server.
func kafkaRun(ctx context.Context, e *env, k *kafkaEnv, cfg kafkaConfig, c kafkaCase) (r kafkaResult, err error) {
	r = kafkaResult{Key: c.key, Case: c.name, Messages: int64(cfg.messages)}
	dir, err := e.subdir(c.key)
	if err != nil {
		return r, err
	}
	args := cfg.serverArgs
	pprofAddr := ""
	if cfg.profileDir != "" {
		if pprofAddr, err = testserver.FreeAddr(); err != nil {
			return r, err
		}
		args = append(append([]string(nil), args...), "--pprof", pprofAddr)
	}
	srv, err := startTributary(ctx, e.bin, dir, args)
	if err != nil {
		return r, err
	}
	defer func() {
		if stopErr := srv.Stop(); err == nil {
			err = stopErr
		}
	}()
	conn, err := connect(ctx, srv.DSN())
	if err != nil {
		return r, err
	}
	defer conn.Close(context.Background())
	// The clock: start marks the measured phase's start, stop its end.
	var t0 time.Time
	var srv0, bench0, busy0 float64
	var profile func() error
	start := func() error {
		var err error
		if srv0, err = procCPUSeconds(srv.Pid()); err != nil {
			return err
		}
		bench0 = selfCPUSeconds()
		if busy0, err = machineBusySeconds(); err != nil {
			return err
		}
		t0 = time.Now()
		if pprofAddr != "" {
			path := filepath.Join(cfg.profileDir, c.key+".pprof")
			r.Profile = path
			profile = fetchProfile(ctx, pprofAddr, cfg.profileSecs, path)
		}
		return nil
	}
	stop := func() error {
		wall := time.Since(t0).Seconds()
		srv1, err := procCPUSeconds(srv.Pid())
		if err != nil {
			return err
		}
		r.Seconds, r.ServerCPU, r.BenchCPU = wall, srv1-srv0, selfCPUSeconds()-bench0
		busy1, err := machineBusySeconds()
		if err != nil {
			return err
		}
		r.OtherCPU = max(busy1-busy0-r.ServerCPU-r.BenchCPU, 0)
		return nil
	}
	n := int64(cfg.messages)

	topic := "bids_" + strings.ReplaceAll(c.key, "-", "_")
	if c.kind != caseDatagen {
		if err := k.createTopic(ctx, topic); err != nil {
			return r, err
		}
		defer func() {
			if delErr := k.deleteTopic(context.Background(), topic); err == nil && delErr != nil {
				err = delErr
			}
		}()
	}
	switch c.kind {
	case caseShared:
		// Paused on an empty topic: the jobs' backfills have no history.
		for _, s := range []string{"SET source_rate_limit = 0", kafkaSourceDDL(k.brokers, topic), "SET source_rate_limit = DEFAULT"} {
			if err := execSQL(ctx, conn, s); err != nil {
				return r, err
			}
		}
		for _, s := range c.jobs {
			if err := execSQL(ctx, conn, s); err != nil {
				return r, err
			}
		}
		if r.ProduceRate, err = k.produce(ctx, topic, cfg.messages); err != nil {
			return r, err
		}
		if err := start(); err != nil {
			return r, err
		}
		if err := execSQL(ctx, conn, "ALTER SOURCE bid SET SOURCE_RATE_LIMIT = DEFAULT"); err != nil {
			return r, err
		}
		if err := waitSourceAt(ctx, conn, n); err != nil {
			return r, err
		}
		if err := execSQL(ctx, conn, "FLUSH"); err != nil {
			return r, err
		}
		if err := stop(); err != nil {
			return r, err
		}
	case caseBackfill:
		if r.ProduceRate, err = k.produce(ctx, topic, cfg.messages); err != nil {
			return r, err
		}
		if err := execSQL(ctx, conn, kafkaSourceDDL(k.brokers, topic)); err != nil {
			return r, err
		}
		// The shared reader reads the history with nothing on it; then the
		// view's backfill reads it again, on its own.
		if err := waitSourceAt(ctx, conn, n); err != nil {
			return r, err
		}
		if err := start(); err != nil {
			return r, err
		}
		for _, s := range append(append([]string(nil), c.jobs...), "FLUSH") {
			if err := execSQL(ctx, conn, s); err != nil {
				return r, err
			}
		}
		if err := stop(); err != nil {
			return r, err
		}
	case caseDatagen:
		if err := execSQL(ctx, conn, datagenSourceDDL(n, cfg.partitions)); err != nil {
			return r, err
		}
		if err := start(); err != nil {
			return r, err
		}
		// A bounded source's CREATE returns when the job has read it all.
		for _, s := range append(append([]string(nil), c.jobs...), "WAIT", "FLUSH") {
			if err := execSQL(ctx, conn, s); err != nil {
				return r, err
			}
		}
		if err := stop(); err != nil {
			return r, err
		}
	}
	if profile != nil {
		if err := profile(); err != nil {
			return r, err
		}
	}
	if r.Checked, err = checkKafkaJobs(ctx, conn, c, n); err != nil {
		return r, err
	}
	r.EventsPerSec = float64(n) / r.Seconds
	if r.ServerCPU > 0 {
		r.PerCore = float64(n) / r.ServerCPU
	}
	r.CPUPerM = r.ServerCPU / (float64(n) / 1e6)
	r.VsRisingWave = r.PerCore / risingWavePerVCPU
	return r, nil
}

// checkKafkaJobs checks that the case's views counted every message.
func checkKafkaJobs(ctx context.Context, conn *pgx.Conn, c kafkaCase, n int64) (string, error) {
	var checked []string
	for _, j := range c.jobs {
		var q string
		switch j {
		case countView:
			q = "SELECT n FROM c"
		case groupView:
			q = "SELECT sum(n) FROM g"
		default:
			continue
		}
		var got int64
		if err := conn.QueryRow(ctx, q, pgx.QueryExecModeSimpleProtocol).Scan(&got); err != nil {
			return "", fmt.Errorf("%s: %w", q, err)
		}
		if got != n {
			return "", fmt.Errorf("%s = %d, want %d", q, got, n)
		}
		checked = append(checked, q+" = N")
	}
	if len(checked) == 0 {
		return "-", nil
	}
	return strings.Join(checked, ", "), nil
}

// waitSourceAt polls rw_source_splits until the shared reader's next offsets
// add up to n: every message has been read (and its rows sent on). The
// figures move at barriers; the reader asks for one every SourceEpochRows
// rows, but a last partial epoch would wait for the barrier interval, so a
// poll that saw no progress since the one before asks for a barrier (FLUSH).
func waitSourceAt(ctx context.Context, conn *pgx.Conn, n int64) error {
	last := int64(-1)
	for {
		rows, err := textRows(ctx, conn, "SELECT next_offset FROM rw_catalog.rw_source_splits")
		if err != nil {
			return err
		}
		var sum int64
		for _, s := range rows {
			v, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return fmt.Errorf("rw_source_splits: next_offset %q", s)
			}
			sum += v
		}
		if sum >= n {
			return nil
		}
		if sum == last {
			if err := execSQL(ctx, conn, "FLUSH"); err != nil {
				return err
			}
		}
		last = sum
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			return fmt.Errorf("waiting for the reader to reach %d messages (at %d): %w", n, sum, err)
		}
	}
}

// bidColumns are the source's columns; date_time is a timestamp read from
// text in the Kafka source and a bigint in the datagen one.
const bidColumns = "id bigint, auction bigint, bidder bigint, price bigint, channel varchar, url varchar, date_time %s, extra varchar, bidder_ip varchar, quantity int"

func kafkaSourceDDL(brokers []string, topic string) string {
	return fmt.Sprintf("CREATE SOURCE bid ("+bidColumns+") WITH (connector = 'kafka', properties.bootstrap.server = '%s', topic = '%s') FORMAT PLAIN ENCODE JSON",
		"timestamp", strings.Join(brokers, ","), topic)
}

// datagenSourceDDL is a datagen source of n rows shaped like the JSON
// messages (strings of the same lengths).
func datagenSourceDDL(n int64, splits int) string {
	opts := []string{"connector = 'datagen'", "datagen.rows.per.second = '1000000000'", fmt.Sprintf("datagen.split.num = '%d'", splits),
		"fields.id.kind = 'sequence'", "fields.id.start = '0'", fmt.Sprintf("fields.id.end = '%d'", n-1),
		"fields.auction.min = '1000'", "fields.auction.max = '10999'", "fields.bidder.min = '1000'", "fields.bidder.max = '100999'",
		"fields.price.min = '100'", "fields.price.max = '1000099'", "fields.channel.length = '6'", "fields.url.length = '66'",
		"fields.date_time.min = '1436918400000'", "fields.date_time.max = '1436920400000'", "fields.extra.length = '32'",
		"fields.bidder_ip.length = '10'", "fields.quantity.min = '1'", "fields.quantity.max = '10'"}
	return fmt.Sprintf("CREATE SOURCE bid ("+bidColumns+") WITH (%s)", "bigint", strings.Join(opts, ", "))
}

var bidChannels = []string{"Google", "Facebook", "Baidu", "Apple", "Amazon"}

const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// appendBid appends message i: a Nexmark bid with a few more fields, its
// values a function of i.
func appendBid(b []byte, i int64) []byte {
	h := hash64(uint64(i))
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, i, 10)
	b = append(b, `,"auction":`...)
	b = strconv.AppendUint(b, 1000+h%10000, 10)
	b = append(b, `,"bidder":`...)
	b = strconv.AppendUint(b, 1000+(h>>14)%100000, 10)
	b = append(b, `,"price":`...)
	b = strconv.AppendUint(b, 100+(h>>31)%1000000, 10)
	b = append(b, `,"channel":"`...)
	b = append(b, bidChannels[(h>>51)%uint64(len(bidChannels))]...)
	b = append(b, `","url":"https://www.nexmark.com/`...)
	g := hash64(h)
	b = appendLetters(b, g, 4)
	b = append(b, '/')
	b = appendLetters(b, g>>24, 4)
	b = append(b, `/item.htm?query=1&channel_id=`...)
	b = strconv.AppendUint(b, (g>>48)%10000, 10)
	// One message per millisecond from 2015-07-15 00:00:00.
	ms := i % (24 * 3600 * 1000)
	b = append(b, `","date_time":"2015-07-15 `...)
	b = append2(b, ms/3600000)
	b = append(b, ':')
	b = append2(b, ms/60000%60)
	b = append(b, ':')
	b = append2(b, ms/1000%60)
	b = append(b, '.')
	b = append(b, byte('0'+ms%1000/100), byte('0'+ms%100/10), byte('0'+ms%10))
	b = append(b, `","extra":"`...)
	x := hash64(g)
	for j := 0; j < 4; j++ {
		b = appendLetters(b, x, 8)
		x = hash64(x)
	}
	b = append(b, `","bidder_ip":"10.`...)
	b = strconv.AppendUint(b, x&0xff, 10)
	b = append(b, '.')
	b = strconv.AppendUint(b, x>>8&0xff, 10)
	b = append(b, '.')
	b = strconv.AppendUint(b, x>>16&0xff, 10)
	b = append(b, `","quantity":`...)
	b = strconv.AppendUint(b, 1+(x>>24)%10, 10)
	return append(b, '}')
}

func appendLetters(b []byte, h uint64, n int) []byte {
	for j := 0; j < n; j++ {
		b = append(b, letters[h%uint64(len(letters))])
		h /= uint64(len(letters))
	}
	return b
}

func append2(b []byte, v int64) []byte { return append(b, byte('0'+v/10), byte('0'+v%10)) }

// hash64 is splitmix64's finalizer.
func hash64(z uint64) uint64 {
	z += 0x9E3779B97F4A7C15
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

func (k *kafkaEnv) createTopic(ctx context.Context, topic string) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = topic, k.partitions, 1
	req.Topics = append(req.Topics, t)
	req.TimeoutMillis = 5000
	resp, err := req.RequestWith(ctx, k.admin)
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	for _, rt := range resp.Topics {
		if err := kerr.ErrorForCode(rt.ErrorCode); err != nil {
			return fmt.Errorf("create topic %s: %w", topic, err)
		}
	}
	return nil
}

// deleteTopic drops a case's topic, so kfake does not keep every case's messages.
func (k *kafkaEnv) deleteTopic(ctx context.Context, topic string) error {
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.TopicNames = []string{topic}
	dt := kmsg.NewDeleteTopicsRequestTopic()
	dt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, dt)
	req.TimeoutMillis = 5000
	resp, err := req.RequestWith(ctx, k.admin)
	if err != nil {
		return fmt.Errorf("delete topic %s: %w", topic, err)
	}
	for _, rt := range resp.Topics {
		if err := kerr.ErrorForCode(rt.ErrorCode); err != nil {
			return fmt.Errorf("delete topic %s: %w", topic, err)
		}
	}
	return nil
}

// produce writes messages 0..n-1 round-robin over the partitions (message
// i to partition i mod P, no key) and returns messages per second.
func (k *kafkaEnv) produce(ctx context.Context, topic string, n int) (float64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.brokers...), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(k.codec),
		kgo.MaxBufferedRecords(200000), kgo.ProducerBatchMaxBytes(1<<20))
	if err != nil {
		return 0, fmt.Errorf("producer: %w", err)
	}
	defer cl.Close()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	done := func(_ *kgo.Record, err error) {
		if err != nil {
			mu.Lock()
			if first == nil {
				first = err
			}
			mu.Unlock()
		}
		wg.Done()
	}
	began := time.Now()
	for i := 0; i < n; i++ {
		wg.Add(1)
		cl.Produce(ctx, &kgo.Record{Partition: int32(i % int(k.partitions)), Value: appendBid(nil, int64(i))}, done)
	}
	wg.Wait()
	if first != nil {
		return 0, fmt.Errorf("produce to %s: %w", topic, first)
	}
	return float64(n) / time.Since(began).Seconds(), nil
}

// selfCPUSeconds is this process's user+system CPU time.
func selfCPUSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// machineBusySeconds is the CPU time all processors spent busy since boot
// (/proc/stat: user, nice, system, irq, softirq, steal).
func machineBusySeconds() (float64, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, fmt.Errorf("read /proc/stat: %w", err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	var busy int64
	for _, i := range []int{1, 2, 3, 6, 7, 8} {
		v, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/stat: %w", err)
		}
		busy += v
	}
	const ticks = 100 // USER_HZ on Linux
	return float64(busy) / ticks, nil
}

// fetchProfile starts a CPU profile of d from the pprof server at addr; the
// returned func waits for it and writes it to path.
func fetchProfile(ctx context.Context, addr string, d time.Duration, path string) func() error {
	return fetchPprof(ctx, addr, "profile", d, path)
}

// fetchPprof fetches kind ("profile" or "trace") for d from the pprof server at addr into path.
func fetchPprof(ctx context.Context, addr, kind string, d time.Duration, path string) func() error {
	errc := make(chan error, 1)
	go func() {
		url := fmt.Sprintf("http://%s/debug/pprof/%s?seconds=%d", addr, kind, max(int(d.Seconds()), 1))
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			errc <- err
			return
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			errc <- fmt.Errorf("profile: %w", err)
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			errc <- fmt.Errorf("profile: %s", resp.Status)
			return
		}
		f, err := os.Create(path)
		if err != nil {
			errc <- err
			return
		}
		_, err = io.Copy(f, resp.Body)
		errc <- errors.Join(err, f.Close())
	}()
	return func() error { return <-errc }
}

// kafkaSummary compares the cases: the parse and Kafka cost (kafka over
// datagen, in server CPU per message), the cost of a second view, and the
// goal of twice RisingWave's rate per core.
func kafkaSummary(rs []kafkaResult) []string {
	by := map[string]kafkaResult{}
	for _, r := range rs {
		by[r.Key] = r
	}
	var out []string
	goal := 2.0 * risingWavePerVCPU
	for _, key := range []string{"shared-count", "shared-sink"} {
		r, ok := by[key]
		if !ok {
			continue
		}
		met := "NOT met"
		if r.PerCore >= goal {
			met = "met"
		}
		out = append(out, fmt.Sprintf("goal >= %.0f events/s per core (2x RisingWave) for %s: %.0f (%.2fx RisingWave's %d), %s",
			goal, r.Case, r.PerCore, r.VsRisingWave, risingWavePerVCPU, met))
	}
	for _, p := range [][2]string{{"shared-count", "datagen-count"}, {"shared-sink", "datagen-sink"}} {
		k, ok1 := by[p[0]]
		d, ok2 := by[p[1]]
		if !ok1 || !ok2 || d.CPUPerM == 0 {
			continue
		}
		out = append(out, fmt.Sprintf("Kafka + JSON cost: %s takes %.2fx the server CPU per message of %s (%.2f vs %.2f CPU s per M; %+.2f s per M for fetching and parsing)",
			k.Case, k.CPUPerM/d.CPUPerM, d.Case, k.CPUPerM, d.CPUPerM, k.CPUPerM-d.CPUPerM))
	}
	if one, ok := by["shared-count"]; ok {
		if two, ok := by["shared-two"]; ok && one.EventsPerSec > 0 {
			cost := 1 - two.EventsPerSec/one.EventsPerSec
			met := "NOT met"
			if cost < 0.10 {
				met = "met"
			}
			out = append(out, fmt.Sprintf("second view on the source (GROUP BY beside count(*)): throughput %.0f -> %.0f events/s, a cost of %.1f%% (goal < 10%%: %s); server CPU per M %.2f -> %.2f (%+.1f%%)",
				one.EventsPerSec, two.EventsPerSec, 100*cost, met, one.CPUPerM, two.CPUPerM, 100*(two.CPUPerM/one.CPUPerM-1)))
		}
	}
	return out
}

func printKafka(out io.Writer, r *kafkaReport) {
	fmt.Fprintf(out, "kafka benchmark, %s: %d JSON messages (~%d bytes, compression %s) over %d partitions of an in-process kfake broker; %d cores; per core = messages / server CPU seconds; other CPU = the machine's busy time less the server's and the bench's\n",
		r.Date[:10], r.Messages, r.MessageSize, r.Compression, r.Partitions, r.Cores)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "case\tmessages\twall s\tevents/s\tserver CPU s\tserver cores busy\tevents/s per core\tCPU s per M\tvs RW 140k/vCPU\tbench CPU s (kfake)\tother CPU s\t")
	for _, x := range r.Results {
		fmt.Fprintf(tw, "%s\t%d\t%.2f\t%.0f\t%.2f\t%.2f\t%.0f\t%.2f\t%.2fx\t%.2f\t%.2f\t\n", x.Case, x.Messages, x.Seconds, x.EventsPerSec,
			x.ServerCPU, x.ServerCPU/x.Seconds, x.PerCore, x.CPUPerM, x.VsRisingWave, x.BenchCPU, x.OtherCPU)
	}
	_ = tw.Flush() // errors of out surface on the caller's writes
	for _, s := range r.Summary {
		fmt.Fprintln(out, s)
	}
	for _, x := range r.Results {
		extra := ""
		if x.ProduceRate > 0 {
			extra = fmt.Sprintf("; topic preloaded at %.0f messages/s", x.ProduceRate)
		}
		if x.Profile != "" {
			extra += "; CPU profile " + x.Profile
		}
		fmt.Fprintf(out, "%s: checked %s%s\n", x.Key, x.Checked, extra)
	}
}
