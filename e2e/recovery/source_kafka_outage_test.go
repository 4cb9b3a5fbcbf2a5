package recovery

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/tributary/tributary/e2e/e2etest"
)

// TestKafkaSourceBrokerOutage: the only broker goes away for 30 s and comes back on the same
// port with its data: the source reports it (SOURCE_ERROR), the server answers meanwhile, and
// every message produced before, and after it returns, is in the view exactly once.
func TestKafkaSourceBrokerOutage(t *testing.T) {
	t.Parallel() // mostly waits (the outage): runs beside the other long tests
	const outage = 30 * time.Second
	dir := t.TempDir()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "o"), kfake.DataDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			cluster.Close()
		}
	}()
	brokers := cluster.ListenAddrs()
	_, portText, _ := net.SplitHostPort(brokers[0])
	port, _ := strconv.Atoi(portText)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e2etest.ProduceJSON(t, ctx, brokers, "o", 0, 100)
	srv := e2etest.StartServer(t)
	conn := e2etest.Connect(t, ctx, srv)
	e2etest.ExecAll(t, ctx, conn,
		"CREATE SOURCE os (id int, g int) INCLUDE partition AS p INCLUDE offset AS o "+e2etest.KafkaWith(brokers, "o", ""),
		"CREATE MATERIALIZED VIEW om AS SELECT count(*) AS n, count(DISTINCT id) AS ids, sum(id) AS s, count(DISTINCT p || '/' || o) AS msgs FROM os",
		"CREATE TABLE other (k int PRIMARY KEY)")
	e2etest.WaitRows(t, ctx, e2etest.QueryText(ctx, conn, "SELECT n, ids, s, msgs FROM om"), "100|100|4950|100", 30*time.Second)

	cluster.Close()
	closed = true
	down := time.Now()
	sawEvent := false
	for i := 0; time.Since(down) < outage; i++ {
		// The server answers and takes writes while the broker is away.
		got, err := e2etest.QueryText(ctx, conn, "SELECT n FROM om")()
		if err != nil || got != "100" {
			t.Fatalf("during the outage: %q, %v", got, err)
		}
		e2etest.ExecAll(t, ctx, conn, fmt.Sprintf("INSERT INTO other VALUES (%d)", i))
		if !sawEvent {
			rows, err := e2etest.Rows(ctx, conn, "SELECT error FROM rw_catalog.rw_event_logs WHERE event_type = 'SOURCE_ERROR' AND object_name = 'public.os'")
			if err != nil {
				t.Fatal(err)
			}
			if sawEvent = len(rows) > 0; sawEvent {
				t.Logf("after %v: %v", time.Since(down).Round(time.Millisecond), rows)
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	if !sawEvent {
		t.Errorf("no SOURCE_ERROR event in %v without a broker", outage)
	}

	cluster, err = kfake.NewCluster(kfake.NumBrokers(1), kfake.DataDir(dir), kfake.Ports(port))
	if err != nil {
		t.Fatal(err)
	}
	closed = false
	e2etest.ProduceJSON(t, ctx, brokers, "o", 100, 100) // "during": produced once the broker is back
	e2etest.WaitRows(t, ctx, e2etest.QueryText(ctx, conn, "SELECT n, ids, s, msgs FROM om"), "200|200|19900|200", 60*time.Second)
	e2etest.ProduceJSON(t, ctx, brokers, "o", 200, 100)
	e2etest.WaitRows(t, ctx, e2etest.QueryText(ctx, conn, "SELECT n, ids, s, msgs FROM om"), "300|300|44850|300", 30*time.Second)
	// A view created now reads the whole topic, also exactly once.
	e2etest.ExecAll(t, ctx, conn, "CREATE MATERIALIZED VIEW om2 AS SELECT count(*) AS n, count(DISTINCT id) AS ids, sum(id) AS s FROM os")
	e2etest.WaitRows(t, ctx, e2etest.QueryText(ctx, conn, "SELECT n, ids, s FROM om2"), "300|300|44850", 30*time.Second)
}
