package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/e2e/testserver"
)

// TestKafkaSmall runs every case of the Kafka benchmark end to end at a tiny
// size: each view counted every message, and the table and summary print.
func TestKafkaSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("starts servers and a kfake cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cfg := kafkaConfig{messages: 20000, partitions: 4, compression: "none", cases: kafkaCases, serverBin: testserver.Build(t)}
	rep, err := runKafka(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != len(kafkaCases) {
		t.Fatalf("%d results, want %d", len(rep.Results), len(kafkaCases))
	}
	for _, r := range rep.Results {
		if r.Messages != 20000 || r.Seconds <= 0 || r.EventsPerSec <= 0 || r.ServerCPU < 0 || r.Checked == "" {
			t.Errorf("%+v", r)
		}
	}
	if rep.MessageSize < 200 || rep.MessageSize > 300 {
		t.Errorf("mean message %d bytes, want 200-300", rep.MessageSize)
	}
	var out bytes.Buffer
	printKafka(&out, rep)
	for _, want := range []string{"events/s per core", "kafka shared -> count(*) + GROUP BY", "Kafka + JSON cost: ", "second view on the source", "goal >= 280000 events/s per core"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestKafkaMessages(t *testing.T) {
	for i := range int64(1000) {
		b := appendBid(nil, i*7919)
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("message %d: %v: %s", i, err, b)
		}
		if len(m) != 10 || m["id"] != float64(i*7919) {
			t.Fatalf("message %d: %s", i, b)
		}
		if ts, _ := m["date_time"].(string); len(ts) != len("2015-07-15 00:00:00.000") {
			t.Fatalf("message %d: date_time %q", i, ts)
		}
	}
}

func TestKafkaFlags(t *testing.T) {
	for _, args := range [][]string{{"--messages", "0"}, {"--partitions", "-1"}, {"--compression", "gzip2"}, {"--cases", "nope"}, {"extra"}} {
		if err := kafkaMain(context.Background(), args, new(bytes.Buffer)); err == nil {
			t.Errorf("kafka %q was accepted", args)
		}
	}
}
