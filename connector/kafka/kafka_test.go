package kafka

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary/tributary/connector"
	"github.com/tributary/tributary/sql/types"
)

// testCols are the sink's columns in the tests: a key, several types and a
// hidden row id.
var testCols = []connector.Column{
	{Name: "id", Type: types.TInt32},
	{Name: "name", Type: types.TVarchar},
	{Name: "price", Type: types.TFloat64},
	{Name: "ok", Type: types.TBool},
	{Name: "amount", Type: types.TNumeric},
	{Name: "at", Type: types.TTimestamp},
	{Name: "_row_id", Type: types.TInt64, Hidden: true},
}

func TestParse(t *testing.T) {
	base := func(kv ...string) map[string]string {
		p := map[string]string{"connector": "kafka", "properties.bootstrap.server": " a:1, b:2 ,", "topic": "t"}
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == "<absent>" {
				delete(p, kv[i])
			} else {
				p[kv[i]] = kv[i+1]
			}
		}
		return p
	}
	ok := []struct {
		name           string
		props          map[string]string
		format, encode string
		defaultKey     []string
		want           Config
	}{
		{"append-only", base("type", "append-only"), "", "", []string{"id"},
			Config{Brokers: []string{"a:1", "b:2"}, Topic: "t", Format: FormatPlain, DeliveryTimeout: DefaultDeliveryTimeout}},
		{"upsert by default key", base("type", "upsert"), "", "", []string{"id"},
			Config{Brokers: []string{"a:1", "b:2"}, Topic: "t", Format: FormatUpsert, Key: []string{"id"}, DeliveryTimeout: DefaultDeliveryTimeout}},
		{"hidden default key", base("type", "upsert"), "", "", []string{"_row_id"},
			Config{Brokers: []string{"a:1", "b:2"}, Topic: "t", Format: FormatUpsert, Key: []string{"_row_id"}, DeliveryTimeout: DefaultDeliveryTimeout}},
		{"debezium by primary_key", base("primary_key", "ID , name", "properties.message.timeout.ms", "1500"), "debezium", "json", []string{"_row_id"},
			Config{Brokers: []string{"a:1", "b:2"}, Topic: "t", Format: FormatDebezium, Key: []string{"id", "name"}, DeliveryTimeout: 1500 * time.Millisecond}},
		{"format upsert over append-only", base("type", "append-only"), "UPSERT", "JSON", []string{"id"},
			Config{Brokers: []string{"a:1", "b:2"}, Topic: "t", Format: FormatUpsert, Key: []string{"id"}, DeliveryTimeout: DefaultDeliveryTimeout}},
		{"keyed plain", base("type", "append-only", "primary_key", "id"), "plain", "", nil,
			Config{Brokers: []string{"a:1", "b:2"}, Topic: "t", Format: FormatPlain, Key: []string{"id"}, DeliveryTimeout: DefaultDeliveryTimeout}},
		{"forced plain", base("type", "upsert", "force_append_only", "TRUE"), "plain", "", []string{"id"},
			Config{Brokers: []string{"a:1", "b:2"}, Topic: "t", Format: FormatPlain, DeliveryTimeout: DefaultDeliveryTimeout}},
	}
	for _, tc := range ok {
		got, err := Parse(tc.props, tc.format, tc.encode, testCols, tc.defaultKey)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: Parse = %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}

	bad := []struct {
		name           string
		props          map[string]string
		format, encode string
		defaultKey     []string
		kind           error
	}{
		{"no brokers", base("type", "upsert", "properties.bootstrap.server", "<absent>"), "", "", []string{"id"}, types.ErrInvalidParameter},
		{"empty brokers", base("type", "upsert", "properties.bootstrap.server", " , "), "", "", []string{"id"}, types.ErrInvalidParameter},
		{"no topic", base("type", "upsert", "topic", "<absent>"), "", "", []string{"id"}, types.ErrInvalidParameter},
		{"unknown option", base("type", "upsert", "colour", "blue"), "", "", []string{"id"}, types.ErrInvalidParameter},
		{"no type or format", base(), "", "", []string{"id"}, types.ErrInvalidParameter},
		{"bad type", base("type", "retract"), "", "", []string{"id"}, types.ErrInvalidParameter},
		{"bad force", base("type", "append-only", "force_append_only", "yes"), "", "", nil, types.ErrInvalidParameter},
		{"bad timeout", base("type", "append-only", "properties.message.timeout.ms", "0"), "", "", nil, types.ErrInvalidParameter},
		{"plain over upsert", base("type", "upsert"), "plain", "", []string{"id"}, types.ErrInvalidParameter},
		{"upsert without key", base("type", "upsert"), "", "", nil, types.ErrInvalidParameter},
		{"debezium without key", base(), "debezium", "", nil, types.ErrInvalidParameter},
		{"key not a column", base("primary_key", "id,nope"), "upsert", "", nil, types.ErrInvalidParameter},
		{"key a hidden column", base("primary_key", "_row_id"), "upsert", "", nil, types.ErrInvalidParameter},
		{"default key not a column", base(), "upsert", "", []string{"nope"}, types.ErrInvalidParameter},
		{"key twice", base("primary_key", "id,ID"), "upsert", "", nil, types.ErrInvalidParameter},
		{"encode avro", base("type", "upsert"), "upsert", "avro", []string{"id"}, types.ErrUnsupported},
		{"format canal", base("type", "upsert"), "canal", "json", []string{"id"}, types.ErrUnsupported},
	}
	for _, tc := range bad {
		if _, err := Parse(tc.props, tc.format, tc.encode, testCols, tc.defaultKey); !errors.Is(err, tc.kind) {
			t.Errorf("%s: Parse error = %v, want kind %v", tc.name, err, tc.kind)
		}
	}
}

func TestEncode(t *testing.T) {
	cols := []connector.Column{
		{Name: `we"ird`, Type: types.TVarchar},
		{Name: "f4", Type: types.TFloat32},
		{Name: "f8", Type: types.TFloat64},
		{Name: "i2", Type: types.TInt16},
		{Name: "b", Type: types.TBytea},
		{Name: "j", Type: types.TJsonb},
		{Name: "d", Type: types.TDate},
		{Name: "iv", Type: types.TInterval},
		{Name: "h", Type: types.TInt64, Hidden: true},
	}
	e, err := newEncoder(connector.SinkTarget{Sink: "public.s", Columns: cols}, []string{"h", "i2"})
	if err != nil {
		t.Fatal(err)
	}
	row := parseRow(t, cols, "x\x01\\\"\u00e9", "0.1", "-Infinity", "-7", `\x00ff`, `{"a": [1, "b"]}`, "2024-02-29", "1 day 02:00:00", "9")
	got := string(e.appendRow(nil, row))
	want := `{"we\"ird":"x\u0001\\\"` + "\u00e9" + `","f4":0.1,"f8":"-Infinity","i2":-7,"b":"\\x00ff","j":"{\"a\": [1, \"b\"]}","d":"2024-02-29","iv":"1 day 02:00:00"}`
	if got != want || !json.Valid([]byte(got)) {
		t.Errorf("row:\n got %s\nwant %s", got, want)
	}
	// A key names its columns, hidden or not.
	if got := string(e.appendKey(nil, row)); got != `{"h":9,"i2":-7}` {
		t.Errorf("key = %s", got)
	}
	if got, want := string(e.appendDebezium(nil, opDelete, []byte(`{"a":1}`), nil, 12)), `{"before":{"a":1},"after":null,"op":"d","ts_ms":12,"source":{"db":"dev","table":"public.s"}}`; got != want {
		t.Errorf("event:\n got %s\nwant %s", got, want)
	}
}

func TestCheck(t *testing.T) {
	cluster := newCluster(t, 1, "t")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := (Config{Brokers: cluster.ListenAddrs(), Topic: "t"}).Check(ctx); err != nil {
		t.Errorf("existing topic: %v", err)
	}
	if err := (Config{Brokers: cluster.ListenAddrs(), Topic: "missing"}).Check(ctx); !errors.Is(err, types.ErrInvalidParameter) {
		t.Errorf("missing topic: %v", err)
	}
	// Nothing listens on port 1: Check gives up at its context's deadline.
	short, cancel2 := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel2()
	if err := (Config{Brokers: []string{"127.0.0.1:1"}, Topic: "t"}).Check(short); !errors.Is(err, types.ErrInvalidParameter) {
		t.Errorf("unreachable brokers: %v", err)
	}
}

// change is one row of a test chunk: its op and its columns' text (NULL
// for null).
type change struct {
	op   types.Op
	vals []string
}

func ins(v ...string) change { return change{types.OpInsert, v} }
func del(v ...string) change { return change{types.OpDelete, v} }
func ud(v ...string) change  { return change{types.OpUpdateDelete, v} }
func ui(v ...string) change  { return change{types.OpUpdateInsert, v} }

func parseRow(t testing.TB, cols []connector.Column, vals ...string) []types.Datum {
	t.Helper()
	row := make([]types.Datum, len(cols))
	for j, v := range vals {
		if v == "NULL" {
			row[j] = types.NullDatum
			continue
		}
		d, err := types.ParseText(cols[j].Type, v)
		if err != nil {
			t.Fatalf("%s %q: %v", cols[j].Type, v, err)
		}
		row[j] = d
	}
	return row
}

func chunkOf(t testing.TB, rows ...change) *types.Chunk {
	t.Helper()
	ts := make([]types.T, len(testCols))
	for j, c := range testCols {
		ts[j] = c.Type
	}
	c := types.NewChunk(ts, len(rows))
	for _, r := range rows {
		c.AppendRowOp(r.op, parseRow(t, testCols, r.vals...))
	}
	return c
}

// testEpochs are the changes every format test writes: one []*types.Chunk
// (one Write each) per epoch.
func testEpochs(t *testing.T) [][]*types.Chunk {
	// The second epoch's update of 1 spans two chunks, and its second chunk
	// has a row that is not visible.
	hidden := chunkOf(t,
		ui("1", "x", "2.5", "t", "10.25", "2024-01-02 03:04:05", "100"),
		ins("9", "invisible", "0", "f", "0", "2024-01-01", "999"),
		ud("2", "NULL", "NULL", "NULL", "NULL", "NULL", "101"),
		ui("4", "d", "1e21", "NULL", "7", "2024-01-03 00:00:00.5", "101"), // the key changes: 2 becomes 4
		del("3", "c", "NaN", "f", "-0.5", "2024-01-02", "102"),
	)
	hidden.Vis = []bool{true, false, true, true, true}
	return [][]*types.Chunk{
		{chunkOf(t,
			ins("1", "a\"b\n", "1.5", "t", "10.25", "2024-01-02 03:04:05", "100"),
			ins("2", "NULL", "NULL", "NULL", "NULL", "NULL", "101"),
			ins("3", "c", "NaN", "f", "-0.5", "2024-01-02", "102"),
		)},
		{chunkOf(t, ud("1", "a\"b\n", "1.5", "t", "10.25", "2024-01-02 03:04:05", "100")), hidden},
		// An UpdateDelete that ends its epoch is a delete.
		{chunkOf(t, ud("1", "x", "2.5", "t", "10.25", "2024-01-02 03:04:05", "100"))},
		{},
		{chunkOf(t,
			ui("1", "y", "-0.25", "f", "0.001", "1999-12-31 23:59:59", "100"),
			ins("5", "\u00e9\t", "3", "t", "1", "2000-01-01", "103"),
		)},
	}
}

// The test rows as JSON.
const (
	row1  = `{"id":1,"name":"a\"b\n","price":1.5,"ok":true,"amount":"10.25","at":"2024-01-02 03:04:05"}`
	row2  = `{"id":2,"name":null,"price":null,"ok":null,"amount":null,"at":null}`
	row3  = `{"id":3,"name":"c","price":"NaN","ok":false,"amount":"-0.5","at":"2024-01-02 00:00:00"}`
	row1x = `{"id":1,"name":"x","price":2.5,"ok":true,"amount":"10.25","at":"2024-01-02 03:04:05"}`
	row4  = `{"id":4,"name":"d","price":1e+21,"ok":null,"amount":"7","at":"2024-01-03 00:00:00.5"}`
	row1y = `{"id":1,"name":"y","price":-0.25,"ok":false,"amount":"0.001","at":"1999-12-31 23:59:59"}`
	row5  = `{"id":5,"name":"` + "\u00e9" + `\t","price":3,"ok":true,"amount":"1","at":"2000-01-01 00:00:00"}`

	tombstone = "<tombstone>"
)

func key(id int) string { return `{"id":` + strconv.Itoa(id) + `}` }

// event is a Debezium event with its ts_ms written T.
func event(op, before, after string) string {
	if before == "" {
		before = "null"
	}
	if after == "" {
		after = "null"
	}
	return `{"before":` + before + `,"after":` + after + `,"op":"` + op + `","ts_ms":T,"source":{"db":"dev","table":"public.s"}}`
}

func TestFormats(t *testing.T) {
	for _, tc := range []struct {
		name       string
		format     Format
		key        []string
		partitions int32
		// want lists each key's messages in order; keyless messages are
		// under "" (on a single partition, so in order too).
		want map[string][]string
	}{
		{"plain", FormatPlain, nil, 1, map[string][]string{
			"": {row1, row2, row3, row1x, row4, row1y, row5},
		}},
		{"keyed plain", FormatPlain, []string{"id"}, 3, map[string][]string{
			key(1): {row1, row1x, row1y},
			key(2): {row2},
			key(3): {row3},
			key(4): {row4},
			key(5): {row5},
		}},
		{"upsert", FormatUpsert, []string{"id"}, 3, map[string][]string{
			key(1): {row1, row1x, tombstone, row1y},
			key(2): {row2, tombstone},
			key(3): {row3, tombstone},
			key(4): {row4},
			key(5): {row5},
		}},
		{"debezium", FormatDebezium, []string{"id"}, 3, map[string][]string{
			key(1): {event("c", "", row1), event("u", row1, row1x), event("d", row1x, ""), tombstone, event("c", "", row1y)},
			key(2): {event("c", "", row2), event("d", row2, ""), tombstone},
			key(3): {event("c", "", row3), event("d", row3, ""), tombstone},
			key(4): {event("c", "", row4)},
			key(5): {event("c", "", row5)},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cluster := newCluster(t, tc.partitions, "sink")
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cfg := Config{Brokers: cluster.ListenAddrs(), Topic: "sink", Format: tc.format, Key: tc.key}
			if err := cfg.Check(ctx); err != nil {
				t.Fatal(err)
			}
			s := openSink(t, ctx, cfg)
			start := time.Now().UnixMilli()
			for e, chunks := range testEpochs(t) {
				for _, c := range chunks {
					if err := s.Write(ctx, c); err != nil {
						t.Fatal(err)
					}
				}
				if err := s.Commit(ctx, uint64(e+1)); err != nil {
					t.Fatalf("epoch %d: %v", e+1, err)
				}
			}
			end := time.Now().UnixMilli()

			got := map[string][]string{}
			partitionOf := map[string]int32{}
			for _, m := range readAll(t, ctx, cluster, "sink", tc.partitions) {
				k := string(m.Key)
				if m.Key == nil {
					k = ""
				} else if p, ok := partitionOf[k]; ok && p != m.Partition {
					t.Errorf("key %s on partitions %d and %d", k, p, m.Partition)
				}
				partitionOf[k] = m.Partition
				v := tombstone
				if m.Value != nil {
					if !json.Valid(m.Value) {
						t.Errorf("value is not JSON: %s", m.Value)
					}
					v = string(m.Value)
				}
				if tc.format == FormatDebezium && m.Value != nil {
					v = checkTS(t, v, start, end)
				}
				got[k] = append(got[k], v)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("messages by key:\n%s\nwant:\n%s", dump(got), dump(tc.want))
			}
		})
	}
}

var tsRE = regexp.MustCompile(`"ts_ms":(\d+)`)

// checkTS checks that an event's ts_ms is within [start, end] and writes it T.
func checkTS(t *testing.T, v string, start, end int64) string {
	t.Helper()
	m := tsRE.FindStringSubmatch(v)
	if m == nil {
		t.Errorf("no ts_ms in %s", v)
		return v
	}
	if ts, _ := strconv.ParseInt(m[1], 10, 64); ts < start || ts > end {
		t.Errorf("ts_ms %d not in [%d, %d]", ts, start, end)
	}
	return tsRE.ReplaceAllString(v, `"ts_ms":T`)
}

func dump(m map[string][]string) string {
	var b strings.Builder
	for _, k := range []string{"", key(1), key(2), key(3), key(4), key(5)} {
		for _, v := range m[k] {
			fmt.Fprintf(&b, "  %s => %s\n", k, v)
		}
	}
	return b.String()
}

// TestProduceError: a record the brokers refuse fails its epoch's Commit;
// the replayed epoch then goes through.
func TestProduceError(t *testing.T) {
	cluster := newCluster(t, 1, "sink")
	var refuse atomic.Bool
	refuse.Store(true)
	cluster.ControlKey(kmsg.Produce.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		cluster.KeepControl()
		if !refuse.Load() {
			return nil, nil, false
		}
		pr := req.(*kmsg.ProduceRequest)
		resp := pr.ResponseKind().(*kmsg.ProduceResponse)
		for _, rt := range pr.Topics {
			st := kmsg.NewProduceResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewProduceResponseTopicPartition()
				sp.Partition = rp.Partition
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := openSink(t, ctx, Config{Brokers: cluster.ListenAddrs(), Topic: "sink", Format: FormatUpsert, Key: []string{"id"}})
	c := chunkOf(t, ins("1", "a", "1", "t", "1", "2024-01-01", "1"))
	if err := s.Write(ctx, c); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, 7); !errors.Is(err, kerr.TopicAuthorizationFailed) || !strings.Contains(err.Error(), "epoch 7") {
		t.Fatalf("Commit = %v, want a topic authorization failure of epoch 7", err)
	}
	refuse.Store(false)
	if err := s.Write(ctx, c); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, 7); err != nil {
		t.Fatalf("replayed epoch: %v", err)
	}
	msgs := readAll(t, ctx, cluster, "sink", 1)
	if len(msgs) != 1 || string(msgs[0].Key) != key(1) {
		t.Errorf("messages %v, want one for key 1", msgs)
	}
}

// TestClusterGone: records that cannot be delivered time out and fail the
// epoch's Commit.
func TestClusterGone(t *testing.T) {
	cluster := newCluster(t, 1, "sink")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := openSink(t, ctx, Config{Brokers: cluster.ListenAddrs(), Topic: "sink", Format: FormatPlain, DeliveryTimeout: time.Second})
	c := chunkOf(t, ins("1", "a", "1", "t", "1", "2024-01-01", "1"))
	if err := s.Write(ctx, c); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, 1); err != nil {
		t.Fatal(err)
	}
	cluster.Close()
	if err := s.Write(ctx, c); err != nil {
		t.Fatal(err)
	}
	// The records fail after DeliveryTimeout, well before the test's
	// deadline.
	err := s.Commit(ctx, 2)
	if err == nil || errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "epoch 2") {
		t.Fatalf("Commit after the cluster closed = %v, want a delivery failure of epoch 2", err)
	}
	t.Logf("Commit: %v", err)
}

func newCluster(t *testing.T, partitions int32, topics ...string) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, topics...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func openSink(t *testing.T, ctx context.Context, cfg Config) *Sink {
	t.Helper()
	s, err := Open(ctx, cfg, connector.SinkTarget{Sink: "public.s", Columns: testCols, Writer: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// readAll returns every message of topic, partition by partition in
// offset order: as many as the partitions' end offsets say.
func readAll(t *testing.T, ctx context.Context, cluster *kfake.Cluster, topic string, partitions int32) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	for p := int32(0); p < partitions; p++ {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = p, -1 // the end
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				t.Fatalf("partition %d end offset: %v", rp.Partition, err)
			}
			total += rp.Offset
		}
	}
	var got []*kgo.Record
	for int64(len(got)) < total {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d messages: %v", len(got), total, ctx.Err())
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) { got = append(got, r) })
	}
	return got
}

// BenchmarkUpsert measures Write and Commit of 1024-row upsert epochs (per
// row: see allocs/op / 1024).
func BenchmarkUpsert(b *testing.B) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "sink"))
	if err != nil {
		b.Fatal(err)
	}
	defer cluster.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s, err := Open(ctx, Config{Brokers: cluster.ListenAddrs(), Topic: "sink", Format: FormatUpsert, Key: []string{"id"}},
		connector.SinkTarget{Sink: "public.s", Columns: testCols})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var rows []change
	for i := 0; i < 1024; i++ {
		rows = append(rows, ins(strconv.Itoa(i), "name "+strconv.Itoa(i), "1.5", "t", "10.25", "2024-01-02 03:04:05", strconv.Itoa(i)))
	}
	c := chunkOf(b, rows...)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := s.Write(ctx, c); err != nil {
			b.Fatal(err)
		}
		if err := s.Commit(ctx, uint64(i+1)); err != nil {
			b.Fatal(err)
		}
	}
}
