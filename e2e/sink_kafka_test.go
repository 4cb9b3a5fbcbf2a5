package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/e2e/e2etest"
)

// kafkaState consumes topic from the start for a while and replays its
// messages as upserts (a nil value deletes the key): rows "g|n|total".
func kafkaState(t *testing.T, ctx context.Context, brokers []string, topic string) ([]string, map[string]int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	state, ops := map[string]string{}, map[string]int{}
	pollCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	for pollCtx.Err() == nil {
		fs := cl.PollFetches(pollCtx)
		fs.EachRecord(func(r *kgo.Record) {
			var key map[string]any
			if err := json.Unmarshal(r.Key, &key); err != nil {
				t.Fatalf("key %q: %v", r.Key, err)
			}
			k := fmt.Sprint(key["g"])
			if r.Value == nil {
				delete(state, k)
				ops["tombstone"]++
				return
			}
			var v map[string]any
			if err := json.Unmarshal(r.Value, &v); err != nil {
				t.Fatalf("value %q: %v", r.Value, err)
			}
			if op, ok := v["op"].(string); ok { // Debezium
				ops[op]++
				if after, ok := v["after"].(map[string]any); ok {
					state[k] = fmt.Sprintf("%v|%v|%v", after["g"], after["n"], after["total"])
				} else {
					delete(state, k)
				}
				return
			}
			ops["upsert"]++
			state[k] = fmt.Sprintf("%v|%v|%v", v["g"], v["n"], v["total"])
		})
	}
	out := make([]string, 0, len(state))
	for _, r := range state {
		out = append(out, r)
	}
	sort.Strings(out)
	return out, ops
}

// TestKafkaSink: upsert and Debezium sinks of an aggregation into an
// in-process Kafka cluster (kfake); replaying each topic gives the view.
func TestKafkaSink(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "up", "dbz"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	brokers := strings.Join(cluster.ListenAddrs(), ",")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv := e2etest.StartServer(t)
	conn := e2etest.Connect(t, ctx, srv)
	for _, s := range []string{
		"CREATE TABLE t (id int PRIMARY KEY, g int, v int)",
		"INSERT INTO t SELECT i, i % 7, i FROM generate_series(1, 500) i",
		"CREATE MATERIALIZED VIEW m AS SELECT g, count(*) AS n, sum(v) AS total FROM t GROUP BY g",
		fmt.Sprintf("CREATE SINK s_up FROM m WITH (connector = 'kafka', properties.bootstrap.server = '%s', topic = 'up', primary_key = 'g') FORMAT UPSERT ENCODE JSON", brokers),
		fmt.Sprintf("CREATE SINK s_dbz FROM m WITH (connector = 'kafka', properties.bootstrap.server = '%s', topic = 'dbz', primary_key = 'g') FORMAT DEBEZIUM ENCODE JSON", brokers),
		"UPDATE t SET v = v + 1 WHERE id % 3 = 0",
		"DELETE FROM t WHERE g = 6",
		"INSERT INTO t VALUES (1000, 9, 1)",
		"FLUSH",
	} {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	if _, err := conn.Exec(ctx, fmt.Sprintf("CREATE SINK bad FROM m WITH (connector = 'kafka', properties.bootstrap.server = '%s', topic = 'nope', primary_key = 'g') FORMAT UPSERT ENCODE JSON", brokers)); err == nil {
		t.Error("a sink to a missing topic was created")
	}
	if _, err := conn.Exec(ctx, "CREATE SINK bad FROM m WITH (connector = 'blackhole') FORMAT UPSERT ENCODE JSON"); err == nil {
		t.Error("FORMAT was accepted for blackhole")
	}
	want, err := e2etest.Rows(ctx, conn, "SELECT g, n, total FROM m")
	if err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{"up", "dbz"} {
		var got []string
		var ops map[string]int
		for deadline := time.Now().Add(30 * time.Second); ; {
			got, ops = kafkaState(t, ctx, cluster.ListenAddrs(), topic)
			if strings.Join(got, "\n") == strings.Join(want, "\n") {
				break
			}
			if time.Now().After(deadline) {
				onlyK, onlyV := e2etest.MultisetDiff(got, want)
				t.Fatalf("topic %s differs from the view:\nonly in kafka: %v\nonly in the view: %v", topic, onlyK, onlyV)
			}
		}
		t.Logf("topic %s: %v", topic, ops)
		if ops["tombstone"] == 0 {
			t.Errorf("topic %s: no tombstone for the deleted group", topic)
		}
		if topic == "dbz" && (ops["c"] == 0 || ops["u"] == 0 || ops["d"] == 0) {
			t.Errorf("topic dbz: ops %v, want c, u and d events", ops)
		}
	}
}
