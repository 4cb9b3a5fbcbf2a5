package e2etest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ProduceJSON writes n JSON messages {"id": i, "g": i % 10, "v": "x<i>"}
// for i in [from, from+n) to topic, spread over its partitions by key.
func ProduceJSON(t testing.TB, ctx context.Context, brokers []string, topic string, from, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	recs := make([]*kgo.Record, 0, n)
	for i := from; i < from+n; i++ {
		recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprintf(`{"id": %d, "G": %d, "v": "x%d"}`, i, i%10, i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// KafkaWith is the WITH ... FORMAT clause of a Kafka source on topic; extra, when not empty,
// starts with ", " and adds options.
func KafkaWith(brokers []string, topic, extra string) string {
	return fmt.Sprintf("WITH (connector = 'kafka', properties.bootstrap.server = '%s', topic = '%s'%s) FORMAT PLAIN ENCODE JSON",
		strings.Join(brokers, ","), topic, extra)
}
