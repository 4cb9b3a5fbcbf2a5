package e2e

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/e2e/e2etest"
)

// TestKafkaSourceHugeMessage: a 10 MB message (the topic and broker allow it) is larger than the
// source's 4 MiB limit: skipped, counted and logged, and the messages around it arrive; a table
// whose properties.message.max.bytes allows it reads it.
func TestKafkaSourceHugeMessage(t *testing.T) {
	const limit = 32 << 20
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.BrokerConfigs(map[string]string{"message.max.bytes": strconv.Itoa(limit)}))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	if err := cluster.CreateTopic("big", 1, map[string]string{"max.message.bytes": strconv.Itoa(limit)}); err != nil {
		t.Fatal(err)
	}
	brokers := cluster.ListenAddrs()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic("big"), kgo.ProducerBatchMaxBytes(limit))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	huge := `{"id": 2, "v": "` + strings.Repeat("x", 10<<20) + `"}`
	for _, v := range []string{`{"id": 1, "v": "a"}`, huge, `{"id": 3, "v": "c"}`} {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	srv := e2etest.StartServer(t)
	conn := e2etest.Connect(t, ctx, srv)
	e2etest.ExecAll(t, ctx, conn,
		"CREATE SOURCE bs (id int, v varchar) "+e2etest.KafkaWith(brokers, "big", ""),
		"CREATE MATERIALIZED VIEW bm AS SELECT id, length(v) AS n FROM bs",
		"CREATE TABLE bt (id int, v varchar) "+e2etest.KafkaWith(brokers, "big", ", properties.message.max.bytes = '16777216'"))
	e2etest.WaitRows(t, ctx, e2etest.QueryText(ctx, conn, "SELECT id, n FROM bm"), "1|1;3|1", 30*time.Second)
	e2etest.WaitRows(t, ctx, e2etest.QueryText(ctx, conn, "SELECT split, next_offset, rows_read, bad_messages FROM rw_catalog.rw_source_splits WHERE source_name = 'public.bs'"),
		"0|3|2|1", 30*time.Second)
	e2etest.WaitRows(t, ctx, e2etest.QueryText(ctx, conn, "SELECT error FROM rw_catalog.rw_event_logs WHERE object_name = 'public.bs'"),
		fmt.Sprintf("split 0 position 1: a message of %d bytes is larger than properties.message.max.bytes = 4194304: skipped", len(huge)), 30*time.Second)
	e2etest.WaitRows(t, ctx, e2etest.QueryText(ctx, conn, "SELECT id, length(v) FROM bt"), fmt.Sprintf("1|1;2|%d;3|1", 10<<20), 30*time.Second)

	// The job goes on.
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(`{"id": 4, "v": "dd"}`)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	e2etest.WaitRows(t, ctx, e2etest.QueryText(ctx, conn, "SELECT id, n FROM bm"), "1|1;3|1;4|2", 30*time.Second)
}

// TestKafkaSourceTopicDeleted: a topic deleted under a running source: the source's job keeps
// running and says so in rw_event_logs (SOURCE_ERROR), the server answers, and jobs on other
// topics and tables go on.
func TestKafkaSourceTopicDeleted(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "gone"), kfake.SeedTopics(1, "stay"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	brokers := cluster.ListenAddrs()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e2etest.ProduceJSON(t, ctx, brokers, "gone", 0, 10)
	e2etest.ProduceJSON(t, ctx, brokers, "stay", 0, 5)
	srv := e2etest.StartServer(t)
	conn := e2etest.Connect(t, ctx, srv)
	e2etest.ExecAll(t, ctx, conn,
		"CREATE SOURCE gs (id int, g int) "+e2etest.KafkaWith(brokers, "gone", ""),
		"CREATE MATERIALIZED VIEW gm AS SELECT count(*) AS n, sum(id) AS s FROM gs",
		"CREATE TABLE st (id int, g int) "+e2etest.KafkaWith(brokers, "stay", ""),
		"CREATE MATERIALIZED VIEW sm AS SELECT count(*) AS n, sum(id) AS s FROM st",
		"CREATE TABLE plain (k int PRIMARY KEY)")
	e2etest.WaitRows(t, ctx, e2etest.QueryText(ctx, conn, "SELECT n, s FROM gm"), "10|45", 30*time.Second)
	e2etest.WaitRows(t, ctx, e2etest.QueryText(ctx, conn, "SELECT n, s FROM sm"), "5|10", 30*time.Second)

	if err := cluster.DeleteTopic("gone"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		rows, err := e2etest.Rows(ctx, conn, "SELECT error FROM rw_catalog.rw_event_logs WHERE event_type = 'SOURCE_ERROR' AND object_name = 'public.gs'")
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) > 0 {
			t.Logf("events: %v", rows)
			if !strings.Contains(rows[0], `"gone"`) {
				t.Errorf("the event does not name the topic: %v", rows)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no SOURCE_ERROR event for the deleted topic")
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The server answers, DML and the other jobs go on, the deleted topic's view keeps its rows.
	e2etest.ExecAll(t, ctx, conn, "INSERT INTO plain VALUES (1), (2)", "FLUSH")
	e2etest.WaitRows(t, ctx, e2etest.QueryText(ctx, conn, "SELECT count(*) FROM plain"), "2", 10*time.Second)
	e2etest.ProduceJSON(t, ctx, brokers, "stay", 5, 5)
	e2etest.WaitRows(t, ctx, e2etest.QueryText(ctx, conn, "SELECT n, s FROM sm"), "10|45", 30*time.Second)
	e2etest.WaitRows(t, ctx, e2etest.QueryText(ctx, conn, "SELECT n, s FROM gm"), "10|45", 10*time.Second)
	e2etest.WaitRows(t, ctx, e2etest.QueryText(ctx, conn, "SELECT count(*) FROM rw_catalog.rw_source_splits WHERE source_name = 'public.gs'"), "2", 10*time.Second)
	// The source can still be dropped.
	e2etest.ExecAll(t, ctx, conn, "DROP SOURCE gs CASCADE")
	e2etest.WaitRows(t, ctx, e2etest.QueryText(ctx, conn, "SELECT n, s FROM sm"), "10|45", 10*time.Second)
}

// fetchCounter counts, per partition, the records in the fetch responses a kfake cluster sends:
// it wraps the cluster's connections, notes each request's key and version by correlation id,
// and decodes the fetch responses (kfake writes each response whole, in one Write).
type fetchCounter struct {
	mu struct {
		sync.Mutex
		records map[int32]int64
	}
}

func (f *fetchCounter) listen(network, address string) (net.Listener, error) {
	l, err := net.Listen(network, address)
	if err != nil {
		return nil, err
	}
	return &countingListener{Listener: l, f: f}, nil
}

// records returns the records counted per partition so far.
func (f *fetchCounter) records() map[int32]int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[int32]int64, len(f.mu.records))
	for p, n := range f.mu.records {
		out[p] = n
	}
	return out
}

func (f *fetchCounter) add(p int32, n int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.mu.records == nil {
		f.mu.records = map[int32]int64{}
	}
	f.mu.records[p] += n
}

type countingListener struct {
	net.Listener
	f *fetchCounter
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, f: l.f, reqs: map[int32]int16{}}, nil
}

// countingConn sees requests in Read (a byte stream: frames are gathered in in) and responses
// in Write.
type countingConn struct {
	net.Conn
	f    *fetchCounter
	mu   sync.Mutex
	in   []byte
	reqs map[int32]int16 // correlation id -> fetch version, for fetch requests
}

func (c *countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.mu.Lock()
	c.in = append(c.in, b[:n]...)
	for len(c.in) >= 4 {
		size := int(binary.BigEndian.Uint32(c.in))
		if len(c.in) < 4+size {
			break
		}
		frame := c.in[4 : 4+size]
		if len(frame) >= 8 && int16(binary.BigEndian.Uint16(frame)) == kmsg.Fetch.Int16() {
			c.reqs[int32(binary.BigEndian.Uint32(frame[4:]))] = int16(binary.BigEndian.Uint16(frame[2:]))
		}
		c.in = c.in[4+size:]
	}
	c.mu.Unlock()
	return n, err
}

func (c *countingConn) Write(b []byte) (int, error) {
	if len(b) >= 8 {
		corr := int32(binary.BigEndian.Uint32(b[4:]))
		c.mu.Lock()
		version, ok := c.reqs[corr]
		delete(c.reqs, corr)
		c.mu.Unlock()
		if ok {
			c.count(version, b[8:])
		}
	}
	return c.Conn.Write(b)
}

// count adds the records of a fetch response body (after the correlation id).
func (c *countingConn) count(version int16, body []byte) {
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = version
	if resp.IsFlexible() {
		body = body[1:] // the response header's empty tagged fields
	}
	if err := resp.ReadFrom(body); err != nil {
		return
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			raw := p.RecordBatches
			for len(raw) >= 12 {
				size := 12 + int(binary.BigEndian.Uint32(raw[8:]))
				if size > len(raw) {
					break // a partial batch at the end is not returned to the client
				}
				var batch kmsg.RecordBatch
				if err := batch.ReadFrom(raw[:size]); err == nil {
					c.f.add(p.Partition, int64(batch.NumRecords))
				}
				raw = raw[size:]
			}
		}
	}
}

// TestKafkaSourceFetchCount is the issue's check "the topic is fetched once by the shared reader
// plus once per backfilling view", counted in kfake's fetch responses: N preloaded messages are
// fetched 3N times with two views backfilling (exactly: each reader starts at a batch's first
// offset and reads to the end, so no batch is returned twice), and messages produced after the
// backfills once more each (only the shared reader reads them).
func TestKafkaSourceFetchCount(t *testing.T) {
	const n, more = 4000, 400
	var fc fetchCounter
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, "f"), kfake.ListenFn(fc.listen))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	brokers := cluster.ListenAddrs()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e2etest.ProduceJSON(t, ctx, brokers, "f", 0, n)
	if got := fc.records(); len(got) != 0 {
		t.Fatalf("fetched before any reader: %v", got)
	}
	srv := e2etest.StartServer(t)
	conn := e2etest.Connect(t, ctx, srv)
	e2etest.ExecAll(t, ctx, conn, "CREATE SOURCE fs (id int, g int) "+e2etest.KafkaWith(brokers, "f", ""))
	e2etest.WaitRows(t, ctx, e2etest.QueryText(ctx, conn, "SELECT sum(next_offset) FROM rw_catalog.rw_source_splits WHERE source_name = 'public.fs'"), strconv.Itoa(n), 30*time.Second)
	e2etest.ExecAll(t, ctx, conn,
		"CREATE MATERIALIZED VIEW f1 AS SELECT count(*) AS n, sum(id) AS s FROM fs",
		"CREATE MATERIALIZED VIEW f2 AS SELECT g, count(*) AS n FROM fs GROUP BY g")
	e2etest.WaitRows(t, ctx, e2etest.QueryText(ctx, conn, "SELECT n, s FROM f1"), fmt.Sprintf("%d|%d", n, n*(n-1)/2), 30*time.Second)
	e2etest.WaitRows(t, ctx, e2etest.QueryText(ctx, conn, "SELECT sum(n) FROM f2"), strconv.Itoa(n), 30*time.Second)
	e2etest.WaitRows(t, ctx, e2etest.QueryText(ctx, conn, "SELECT count(*) FROM rw_catalog.rw_source_backfill_progress"), "0", 30*time.Second)

	// counted returns the records fetched per partition and what the check wants, and logs it.
	counted := func(what string, want func(p int32) int64) (got, wants map[int32]int64) {
		got, wants = fc.records(), map[int32]int64{}
		var total, all int64
		for _, pi := range cluster.PartitionInfos("f") {
			wants[pi.Partition] = want(pi.Partition)
			all += wants[pi.Partition]
			total += got[pi.Partition]
		}
		t.Logf("%s: %d records fetched (want %d): %v", what, total, all, got)
		return got, wants
	}
	hw := map[int32]int64{}
	for _, pi := range cluster.PartitionInfos("f") {
		hw[pi.Partition] = pi.HighWatermark
	}
	first, firstWant := counted("after two backfills", func(p int32) int64 { return 3 * hw[p] })
	for p, w := range firstWant {
		if g := first[p]; g != w {
			t.Errorf("partition %d: %d records fetched, want %d (3 x %d messages)", p, g, w, hw[p])
		}
	}

	// After the backfills, only the shared reader fetches: new messages once each.
	e2etest.ProduceJSON(t, ctx, brokers, "f", n, more)
	e2etest.WaitRows(t, ctx, e2etest.QueryText(ctx, conn, "SELECT n FROM f1"), strconv.Itoa(n+more), 30*time.Second)
	e2etest.WaitRows(t, ctx, e2etest.QueryText(ctx, conn, "SELECT sum(n) FROM f2"), strconv.Itoa(n+more), 30*time.Second)
	second, _ := counted("after more messages", func(p int32) int64 { return cluster.PartitionInfo("f", p).HighWatermark - hw[p] })
	for _, pi := range cluster.PartitionInfos("f") {
		p := pi.Partition
		if d, w := second[p]-first[p], pi.HighWatermark-hw[p]; d != w {
			t.Errorf("partition %d: %d new messages fetched %d times in all", p, w, d)
		}
	}
}
