package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/tributary/tributary/e2e/e2etest"
)

// TestKafkaSourceShared: a shared Kafka source, a view created over existing
// messages backfills them, a second view created later too, and both follow
// new messages; a table on the topic holds every message.
func TestKafkaSourceShared(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, "events"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	brokers := cluster.ListenAddrs()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e2etest.ProduceJSON(t, ctx, brokers, "events", 0, 1000)
	srv := e2etest.StartServer(t)
	conn := e2etest.Connect(t, ctx, srv)
	with := fmt.Sprintf("WITH (connector = 'kafka', properties.bootstrap.server = '%s', topic = 'events') FORMAT PLAIN ENCODE JSON", strings.Join(brokers, ","))
	for _, s := range []string{
		"CREATE SOURCE ev (id int, g int, v varchar) INCLUDE partition AS p INCLUDE offset " + with,
		"CREATE MATERIALIZED VIEW m1 AS SELECT count(*) AS n, sum(id) AS s, count(DISTINCT p) AS parts FROM ev",
	} {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	q := func(sql string) func() (string, error) {
		return func() (string, error) {
			rows, err := e2etest.Rows(ctx, conn, sql)
			return strings.Join(rows, ";"), err
		}
	}
	e2etest.WaitRows(t, ctx, q("SELECT n, s, parts FROM m1"), "1000|499500|4", 30*time.Second)
	e2etest.ProduceJSON(t, ctx, brokers, "events", 1000, 500)
	if _, err := conn.Exec(ctx, "CREATE MATERIALIZED VIEW m2 AS SELECT g, count(*) AS n FROM ev GROUP BY g"); err != nil {
		t.Fatal(err)
	}
	e2etest.WaitRows(t, ctx, q("SELECT n, s FROM m1"), "1500|1124250", 30*time.Second)
	e2etest.WaitRows(t, ctx, q("SELECT sum(n), count(*) FROM m2"), "1500|10", 30*time.Second)
	e2etest.ProduceJSON(t, ctx, brokers, "events", 1500, 500)
	e2etest.WaitRows(t, ctx, q("SELECT sum(n), count(*) FROM m2"), "2000|10", 30*time.Second)
	e2etest.WaitRows(t, ctx, q("SELECT n FROM m1"), "2000", 30*time.Second)
	if _, err := conn.Exec(ctx, "CREATE TABLE tt (id int PRIMARY KEY, g int, v varchar) "+with); err != nil {
		t.Fatal(err)
	}
	e2etest.WaitRows(t, ctx, q("SELECT count(*), sum(id) FROM tt"), "2000|1999000", 30*time.Second)
	rows, err := e2etest.Rows(ctx, conn, "SELECT * FROM rw_catalog.rw_source_splits")
	t.Logf("splits: %v %v", rows, err)

	// The shared reader and the table's source job rescaled: their actors
	// share out the partitions, each resuming them from their committed
	// offsets; nothing is lost or read twice.
	for i, p := range []string{"1", "3", "DEFAULT"} {
		if _, err := conn.Exec(ctx, "ALTER SOURCE ev SET PARALLELISM = "+p); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, "ALTER TABLE tt SET PARALLELISM = "+[]string{"4", "2", "1"}[i]); err != nil {
			t.Fatal(err)
		}
		e2etest.ProduceJSON(t, ctx, brokers, "events", 2000+500*i, 500)
		want := 2500 + 500*i
		e2etest.WaitRows(t, ctx, q("SELECT n, parts FROM m1"), fmt.Sprintf("%d|4", want), 30*time.Second)
		e2etest.WaitRows(t, ctx, q("SELECT sum(n) FROM m2"), fmt.Sprint(want), 30*time.Second)
		e2etest.WaitRows(t, ctx, q("SELECT count(*), count(DISTINCT id) FROM tt"), fmt.Sprintf("%d|%d", want, want), 30*time.Second)
		e2etest.WaitRows(t, ctx, q("SELECT f.parallelism FROM rw_catalog.rw_fragments f JOIN rw_catalog.rw_tables t ON f.job_id = t.id WHERE t.name = 'tt'"),
			[]string{"4", "2", "1"}[i], 10*time.Second)
		// Which actor reads which partition: the table's 4 partitions spread
		// over its actors (rw_source_splits, RisingWave's rw_actor_splits).
		e2etest.WaitRows(t, ctx, q("SELECT count(*), count(DISTINCT actor_id) FROM rw_catalog.rw_source_splits WHERE source_name = 'public.tt'"),
			"4|"+[]string{"4", "2", "1"}[i], 10*time.Second)
	}
	frags, err := e2etest.Rows(ctx, conn, "SELECT f.parallelism FROM rw_catalog.rw_fragments f JOIN rw_catalog.rw_sources s ON f.job_id = s.id")
	if err != nil || len(frags) != 1 {
		t.Fatalf("the source's fragments: %v %v", frags, err)
	}
}
