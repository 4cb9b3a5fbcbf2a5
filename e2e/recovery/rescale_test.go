package recovery

import (
	"context"
	"fmt"
	"math/rand"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/e2e/e2etest"
	"github.com/tributary/tributary/e2e/testseed"
)

// rescaleViews are the jobs the rescale test changes: each name with its
// query, which FLUSH makes its view equal to.
var rescaleViews = []struct{ name, query string }{
	{"agg", "SELECT g, count(*) AS n, sum(v) AS s FROM t GROUP BY g"},
	{"joined", "SELECT t.g, count(*) AS n, sum(u.w) AS s FROM t JOIN u ON t.id = u.id GROUP BY t.g"},
	{"top", "SELECT id, v FROM t ORDER BY v DESC, id LIMIT 5"},
	{"onagg", "SELECT n % 3 AS k, count(*) AS groups, sum(s) AS s FROM agg GROUP BY n % 3"},
}

// TestRescaleUnderWrites: aggregation, join, top-N and view-on-view jobs,
// a sink into a table, a file sink and a view on a shared Kafka source,
// under a running writer and a running producer, are rescaled among 1 to 4
// actors at random moments (two views while they backfill in the
// background) and the server is killed (SIGKILL) in between; afterwards
// every view equals its query, the Kafka view holds every message once,
// the sink's table is exact and the files converge.
func TestRescaleUnderWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("rescales and kills a server under writes")
	}
	seed := testseed.Int64(t)
	rng := rand.New(rand.NewSource(seed))
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, "rev"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	brokers := cluster.ListenAddrs()
	e2etest.ProduceJSON(t, ctx, brokers, "rev", 0, 20000)
	srv := e2etest.StartServer(t)
	conn := e2etest.Connect(t, ctx, srv)
	exec := func(c *pgx.Conn, sqls ...string) {
		t.Helper()
		for _, s := range sqls {
			if _, err := c.Exec(ctx, s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
	}
	exec(conn,
		"CREATE TABLE t (id int PRIMARY KEY, g int, v int)",
		"CREATE TABLE u (id int PRIMARY KEY, w int)",
		"INSERT INTO t SELECT i, i % 17, i FROM generate_series(1, 20000) i",
		"INSERT INTO u SELECT i, i % 5 FROM generate_series(1, 20000, 2) i",
		"SET streaming_parallelism = 2",
		fmt.Sprintf("CREATE SOURCE ev (id int, g int, v varchar) WITH (connector = 'kafka', properties.bootstrap.server = '%s', topic = 'rev') FORMAT PLAIN ENCODE JSON",
			strings.Join(brokers, ",")))
	for _, v := range rescaleViews {
		exec(conn, fmt.Sprintf("CREATE MATERIALIZED VIEW %s AS %s", v.name, v.query))
	}
	// A sink into a table and a decoupled file sink, rescaled too: the
	// table must stay exact, the files must converge (their log stores'
	// entries handed over between builds).
	out := filepath.Join(srv.DataDir, "sink-files", "out") // inside the file sink root
	exec(conn, "CREATE TABLE tgt (g int PRIMARY KEY, n bigint, s bigint)",
		"CREATE SINK si INTO tgt AS SELECT g, count(*) AS n, sum(v) AS s FROM t GROUP BY g",
		// Rate-limited so that its log store holds a backlog at each
		// rescale and kill: entries left behind by a build would show.
		"SET sink_rate_limit = 4000",
		fmt.Sprintf("CREATE SINK fs AS SELECT id, g, v FROM t WITH (connector = 'file', path = '%s', type = 'upsert')", out),
		"SET sink_rate_limit = DEFAULT")

	// The writer: random DML until stopped, reconnecting after kills.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	writerRng := rand.New(rand.NewSource(rng.Int63()))
	var writes int
	next := 100_000 // ids the writer inserts (a failed INSERT may have committed: it takes new ones)
	go func() {
		defer wg.Done()
		var c *pgx.Conn
		defer func() {
			if c != nil {
				c.Close(context.Background())
			}
		}()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if c == nil {
				var err error
				if c, err = pgx.Connect(ctx, srv.DSN()); err != nil {
					c = nil
					time.Sleep(20 * time.Millisecond)
					continue
				}
			}
			var s string
			switch writerRng.Intn(4) {
			case 0:
				next++
				s = fmt.Sprintf("INSERT INTO t VALUES (%d, %d, %d), (%d, %d, %d)", next, next%17, writerRng.Intn(100000),
					next+1_000_000, next%17, writerRng.Intn(100000))
			case 1:
				s = fmt.Sprintf("UPDATE t SET v = v + %d WHERE id %% 97 = %d", writerRng.Intn(50), writerRng.Intn(97))
			case 2:
				s = fmt.Sprintf("DELETE FROM t WHERE id %% 211 = %d", writerRng.Intn(211))
			default:
				s = fmt.Sprintf("UPDATE u SET w = w + 1 WHERE id %% 53 = %d", writerRng.Intn(53))
			}
			if _, err := c.Exec(ctx, s); err != nil {
				if ctx.Err() != nil {
					return
				}
				c.Close(context.Background())
				c = nil
				continue
			}
			writes++
		}
	}()
	// The producer: batches of messages on the topic until stopped (the
	// in-process broker outlives the server's kills).
	produced := 20000
	wg.Add(1)
	go func() {
		defer wg.Done()
		cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic("rev"))
		if err != nil {
			t.Error(err)
			return
		}
		defer cl.Close()
		for {
			select {
			case <-stop:
				return
			case <-time.After(30 * time.Millisecond):
			}
			var recs []*kgo.Record
			for i := produced; i < produced+100; i++ {
				recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprintf(`{"id": %d, "G": %d, "v": "x%d"}`, i, i%10, i))})
			}
			if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				if ctx.Err() == nil {
					t.Error(err)
				}
				return
			}
			produced += 100
		}
	}()
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		wg.Wait()
	}()

	rescales, kills, sinkRescales, kafkaRescales := 0, 0, 0, 0
	kafkaView := false
	rescale := func(c *pgx.Conn) {
		t.Helper()
		p := fmt.Sprint(1 + rng.Intn(4))
		if rng.Intn(5) == 0 {
			p = "DEFAULT"
		}
		k := rng.Intn(len(rescaleViews) + 4)
		switch {
		case k >= len(rescaleViews)+2 && kafkaView:
			// The Kafka view (maybe still backfilling) or the source's reader.
			exec(c, fmt.Sprintf([]string{"ALTER MATERIALIZED VIEW kv SET PARALLELISM = %s", "ALTER SOURCE ev SET PARALLELISM = %s"}[k-len(rescaleViews)-2], p))
			kafkaRescales++
		case k >= len(rescaleViews)+2:
			exec(c, fmt.Sprintf("ALTER SOURCE ev SET PARALLELISM = %s", p))
			kafkaRescales++
		case k >= len(rescaleViews):
			exec(c, fmt.Sprintf("ALTER SINK %s SET PARALLELISM = %s", []string{"si", "fs"}[k-len(rescaleViews)], p))
			sinkRescales++
		default:
			exec(c, fmt.Sprintf("ALTER MATERIALIZED VIEW %s SET PARALLELISM = %s", rescaleViews[k].name, p))
		}
		rescales++
	}
	kill := func() {
		t.Helper()
		if err := srv.Kill(); err != nil {
			t.Fatal(err)
		}
		kills++
		conn.Close(context.Background())
		if err := srv.Restart(); err != nil {
			t.Fatal(err)
		}
		conn = e2etest.Connect(t, ctx, srv)
	}
	for step := 0; rescales < 10 || kills < 5 || sinkRescales < 3 || kafkaRescales < 2; step++ {
		time.Sleep(time.Duration(50+rng.Intn(400)) * time.Millisecond)
		switch {
		case step == 3:
			// A view backfilling in the background, rescaled (and maybe
			// killed) mid-way: its rows must come out exactly once.
			exec(conn, "SET background_ddl = true", "SET backfill_rate_limit = 20000",
				"CREATE MATERIALIZED VIEW late AS SELECT g, count(*) AS n, sum(v) AS s FROM t GROUP BY g",
				"SET background_ddl = false", "SET backfill_rate_limit = DEFAULT")
			exec(conn, "ALTER MATERIALIZED VIEW late SET PARALLELISM = 3")
			rescales++
		case step == 5:
			// A view on the Kafka source, backfilling its 20,000 earlier
			// messages per partition in the background while new ones
			// arrive, rescaled (and maybe killed) mid-way.
			exec(conn, "SET background_ddl = true", "SET backfill_rate_limit = 10000",
				"CREATE MATERIALIZED VIEW kv AS SELECT g, count(*) AS n, sum(id) AS s FROM ev GROUP BY g",
				"SET background_ddl = false", "SET backfill_rate_limit = DEFAULT")
			kafkaView = true
			exec(conn, "ALTER MATERIALIZED VIEW kv SET PARALLELISM = 1")
			rescales++
			kafkaRescales++
		case rng.Intn(3) == 0 && kills < 5:
			kill()
		default:
			rescale(conn)
		}
	}
	close(stop)
	wg.Wait()
	t.Logf("%d rescales (%d of sinks, %d of the Kafka view and source), %d kills, %d writes, %d messages", rescales, sinkRescales, kafkaRescales, kills, writes, produced)
	exec(conn, "WAIT", "FLUSH")
	// Every message in the Kafka view once: per g = id % 10, the count and
	// the sum of the ids produced.
	var wantKafka []string
	for g := 0; g < 10; g++ {
		n, sum := 0, 0
		for id := g; id < produced; id += 10 {
			n++
			sum += id
		}
		wantKafka = append(wantKafka, fmt.Sprintf("%d|%d|%d", g, n, sum))
	}
	for deadline := time.Now().Add(60 * time.Second); ; {
		got := e2etest.MustRows(t, ctx, conn, "SELECT g, n, s FROM kv ORDER BY g")
		if strings.Join(got, ";") == strings.Join(wantKafka, ";") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Kafka view after %d rescales of it and its source:\ngot  %v\nwant %v", kafkaRescales, got, wantKafka)
		}
		time.Sleep(100 * time.Millisecond)
	}
	views := append(rescaleViews, struct{ name, query string }{"late", rescaleViews[0].query})
	for _, v := range views {
		e2etest.CheckView(t, ctx, conn, "SELECT * FROM "+v.name, e2etest.MustRows(t, ctx, conn, v.query))
	}
	// The sink delivers into its table after the commit: poll.
	want := e2etest.MustRows(t, ctx, conn, rescaleViews[0].query)
	for deadline := time.Now().Add(30 * time.Second); ; {
		got := e2etest.MustRows(t, ctx, conn, "SELECT * FROM tgt")
		if sameRows(got, want) {
			break
		}
		if time.Now().After(deadline) {
			e2etest.CheckView(t, ctx, conn, "SELECT * FROM tgt", want)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The file sink converges to the query: replayed in epoch order, its
	// parts hold every change once at least and none out of order per key.
	exec(conn, "ALTER SINK fs SET SINK_RATE_LIMIT = DEFAULT")
	wantFile := e2etest.MustRows(t, ctx, conn, "SELECT id, g, v FROM t")
	sort.Strings(wantFile)
	for deadline := time.Now().Add(30 * time.Second); ; {
		got := fileSinkState(t, out, "id", []string{"g", "v"})
		if strings.Join(got, "\n") == strings.Join(wantFile, "\n") {
			break
		}
		if time.Now().After(deadline) {
			onlyGot, onlyWant := e2etest.MultisetDiff(got, wantFile)
			t.Fatalf("file sink differs from the query after %d sink rescales:\nonly in files: %v\nonly in query: %v", sinkRescales, onlyGot, onlyWant)
		}
		time.Sleep(50 * time.Millisecond)
	}
	frags, err := e2etest.Rows(ctx, conn, "SELECT job_id, kind, parallelism FROM rw_catalog.rw_fragments")
	if err != nil || len(frags) == 0 {
		t.Fatalf("rw_fragments: %v %v", frags, err)
	}
}
