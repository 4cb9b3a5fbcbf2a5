package slt

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestParseRetry(t *testing.T) {
	s := mustParse(t, `query I rowsort retry 30 backoff 200ms
SELECT 1
----
1

statement ok retry 3 backoff 1s
FLUSH

query I
SELECT 1
----
1
`)
	q, st, plain := s.Records[0], s.Records[1], s.Records[2]
	if q.Retry != 30 || q.Backoff != 200*time.Millisecond || q.SortMode != RowSort || q.Types != "I" || q.Label != "" {
		t.Errorf("query: %+v", q)
	}
	if st.Retry != 3 || st.Backoff != time.Second || st.Kind != KindStatement {
		t.Errorf("statement: %+v", st)
	}
	if plain.Retry != 0 {
		t.Errorf("plain query retries %d", plain.Retry)
	}
	for _, bad := range []string{
		"query I retry 3\nSELECT 1\n",
		"query I retry x backoff 1s\nSELECT 1\n",
		"query I retry 0 backoff 1s\nSELECT 1\n",
		"statement ok retry 2 backoff soon\nFLUSH\n",
	} {
		if _, err := Parse("bad.slt", bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestParseKafka(t *testing.T) {
	s := mustParse(t, "kafka create-topic t 3 max.message.bytes=100\n\n"+
		"kafka produce t partition=2 timestamp=1700000000000\n"+
		"{\"a\": 1}\n"+
		"k1\t{\"a\": 2}\n"+
		"k1\t<null>\n"+
		"<null>\tv\n\n"+
		"kafka add-partitions t 2\n"+
		"kafka delete-topic t\n")
	if len(s.Records) != 4 {
		t.Fatalf("%d records", len(s.Records))
	}
	c := s.Records[0].Kafka
	if c.Op != "create-topic" || c.Topic != "t" || c.N != 3 || c.Configs["max.message.bytes"] != "100" {
		t.Errorf("create: %+v", c)
	}
	p := s.Records[1].Kafka
	if p.Op != "produce" || p.Partition != 2 || p.Timestamp != 1700000000000 || len(p.Messages) != 4 {
		t.Fatalf("produce: %+v", p)
	}
	want := []KafkaMessage{{nil, []byte(`{"a": 1}`)}, {[]byte("k1"), []byte(`{"a": 2}`)}, {[]byte("k1"), nil}, {nil, []byte("v")}}
	for i, m := range p.Messages {
		if string(m.Key) != string(want[i].Key) || (m.Key == nil) != (want[i].Key == nil) ||
			string(m.Value) != string(want[i].Value) || (m.Value == nil) != (want[i].Value == nil) {
			t.Errorf("message %d = %q/%q, want %q/%q", i, m.Key, m.Value, want[i].Key, want[i].Value)
		}
	}
	tm := mustParse(t, "kafka produce t count=3 from=7\nk${i}\t{\"id\": ${i}}\n").Records[0].Kafka
	if len(tm.Messages) != 3 || string(tm.Messages[0].Key) != "k7" || string(tm.Messages[2].Value) != `{"id": 9}` {
		t.Errorf("template: %+v", tm.Messages)
	}
	if a := s.Records[2].Kafka; a.Op != "add-partitions" || a.N != 2 {
		t.Errorf("add: %+v", a)
	}
	if d := s.Records[3].Kafka; d.Op != "delete-topic" || d.Topic != "t" {
		t.Errorf("delete: %+v", d)
	}
	for _, bad := range []string{
		"kafka create-topic t\n",
		"kafka create-topic t 0\n",
		"kafka produce t\n",
		"kafka produce t partition=-1\nx\n",
		"kafka produce t colour=red\nx\n",
		"kafka rename t u\n",
		"kafka add-partitions t\n",
		"kafka produce t count=2\na\nb\n",
		"kafka produce t count=0\na\n",
	} {
		if _, err := Parse("bad.slt", bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// TestRunKafka runs kafka directives against the runner's own cluster and reads the topic
// back: where each message went, keys, tombstones and timestamps.
func TestRunKafka(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := mustParse(t, "kafka create-topic t 2\n\n"+
		"kafka produce t\nu0\nu1\nu2\n\n"+
		"kafka produce t partition=1 timestamp=1700000000000\nk\tv\nk\t<null>\n\n"+
		"kafka add-partitions t 1\n\n"+
		"kafka produce t partition=2\nnew\n")
	r := &Runner{}
	defer r.Close(ctx)
	for _, rec := range s.Records {
		if err := r.runRecord(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	sql, err := r.substitute("x = '" + KafkaBrokerVar + "'")
	if err != nil || sql != "x = '"+r.kc.addr+"'" || !strings.Contains(sql, "127.0.0.1:") {
		t.Fatalf("substitute: %q, %v", sql, err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(r.kc.addrs...), kgo.ConsumeTopics("t"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := map[int32][]string{}
	for n := 0; n < 6; {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d of 6 messages: %v", n, got)
		}
		fs.EachRecord(func(rec *kgo.Record) {
			n++
			v := string(rec.Value)
			if rec.Value == nil {
				v = "<null>"
			}
			if rec.Key != nil {
				v = string(rec.Key) + "=" + v
			}
			if rec.Timestamp.UnixMilli() == 1700000000000 {
				v += "@ts"
			}
			got[rec.Partition] = append(got[rec.Partition], v)
		})
	}
	want := map[int32]string{0: "u0 u2", 1: "u1 k=v@ts k=<null>@ts", 2: "new"}
	for p, w := range want {
		if g := strings.Join(got[p], " "); g != w {
			t.Errorf("partition %d: %q, want %q", p, g, w)
		}
	}
	if err := r.runRecord(ctx, mustParse(t, "kafka delete-topic t\n").Records[0]); err != nil {
		t.Fatal(err)
	}
	if err := r.runRecord(ctx, mustParse(t, "kafka produce t\nx\n").Records[0]); err == nil {
		t.Error("produce to a deleted topic worked")
	}
	r.Close(ctx)
	if r.kc != nil {
		t.Error("Close left the cluster")
	}
}
