package recovery

import (
	"context"
	"fmt"
	"math/rand"
	"sort"
	"strconv"
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

// killBid is bid i of the kill test: every field a function of i.
func killBid(i int) (person, cat, price int) {
	return i % 1000, i % 17, (i * 7919) % 10007
}

func killBidJSON(i int) []byte {
	person, cat, price := killBid(i)
	return fmt.Appendf(nil, `{"id": %d, "person": %d, "cat": %d, "price": %d, "note": "bid %d"}`, i, person, cat, price, i)
}

// killProducer writes bids to topic from first on, in batches, until stopped;
// produced says how many bids exist in all.
type killProducer struct {
	cl   *kgo.Client
	next int
	mu   sync.Mutex
	stop chan struct{}
	done chan struct{}
	err  error
}

func (p *killProducer) produced() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.next
}

func (p *killProducer) produce(ctx context.Context, n int) error {
	p.mu.Lock()
	from := p.next
	p.mu.Unlock()
	recs := make([]*kgo.Record, 0, n)
	for i := from; i < from+n; i++ {
		recs = append(recs, &kgo.Record{Key: strconv.AppendInt(nil, int64(i), 10), Value: killBidJSON(i)})
	}
	if err := p.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return err
	}
	p.mu.Lock()
	p.next = from + n
	p.mu.Unlock()
	return nil
}

// run produces batch bids every pause until stopped or until limit bids
// were produced in all (so a slow machine, whose kills and restarts take
// longer, does not also get more bids to catch up with).
func (p *killProducer) run(ctx context.Context, batch int, pause time.Duration, limit int) {
	defer close(p.done)
	for p.produced() < limit {
		select {
		case <-p.stop:
			return
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
		if err := p.produce(ctx, batch); err != nil {
			p.err = err
			return
		}
	}
}

// TestKafkaSourceSurvivesKills is issue 11's acceptance run: 8 partitions,
// preloaded bids and a producer still writing; an aggregation, a join of two
// sources and a top-N created on one shared source while producing, in the
// background, with the server killed (SIGKILL) at random points during and
// after their backfills. After the producer stops, every view equals the
// answer over all produced bids, and per partition the offsets seen are
// exactly the produced ones, once each.
func TestKafkaSourceSurvivesKills(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a server a dozen times over a million Kafka messages")
	}
	t.Parallel() // mostly waits (rate limits, kills, restarts): runs beside the other long tests
	seed := testseed.Int64(t)
	rng := rand.New(rand.NewSource(seed))
	const partitions, preload, people = 8, 1_000_000, 1000
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, "bids"), kfake.SeedTopics(2, "people"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	brokers := cluster.ListenAddrs()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic("bids"),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.MaxBufferedRecords(200_000))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	prod := &killProducer{cl: cl, stop: make(chan struct{}), done: make(chan struct{})}
	start := time.Now()
	for prod.produced() < preload {
		if err := prod.produce(ctx, 50_000); err != nil {
			t.Fatal(err)
		}
	}
	var recs []*kgo.Record
	for j := 0; j < people; j++ {
		recs = append(recs, &kgo.Record{Topic: "people", Key: strconv.AppendInt(nil, int64(j), 10),
			Value: fmt.Appendf(nil, `{"id": %d, "name": "name%d"}`, j, j%37)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	t.Logf("preloaded %d bids in %v", preload, time.Since(start))

	srv := e2etest.StartServer(t)
	conn := e2etest.Connect(t, ctx, srv)
	with := func(topic string) string {
		return fmt.Sprintf("WITH (connector = 'kafka', properties.bootstrap.server = '%s', topic = '%s') FORMAT PLAIN ENCODE JSON",
			strings.Join(brokers, ","), topic)
	}
	mustExec := func(c *pgx.Conn, sqls ...string) {
		t.Helper()
		for _, s := range sqls {
			if _, err := c.Exec(ctx, s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
	}
	mustExec(conn,
		"CREATE SOURCE bids (id bigint, person int, cat int, price int, note varchar) INCLUDE partition AS p INCLUDE offset AS o "+with("bids"),
		"CREATE SOURCE people (id int, name varchar) "+with("people"),
		// The per-(partition, offset) check: counts, distinct offsets and their range.
		"CREATE MATERIALIZED VIEW offsets AS SELECT p, count(*) AS n, count(DISTINCT o) AS d, min(o::bigint) AS lo, max(o::bigint) AS hi FROM bids GROUP BY p",
	)
	go prod.run(ctx, 1_000, 50*time.Millisecond, preload+300_000)
	stopped := false
	stopProducer := func() {
		if !stopped {
			stopped = true
			close(prod.stop)
			<-prod.done
		}
	}
	defer stopProducer()

	views := []string{
		"CREATE MATERIALIZED VIEW agg AS SELECT cat, count(*) AS n, sum(price) AS total, max(price) AS top FROM bids GROUP BY cat",
		"CREATE MATERIALIZED VIEW joined AS SELECT pe.name, count(*) AS n, sum(b.price) AS total FROM bids b JOIN people pe ON b.person = pe.id GROUP BY pe.name",
		"CREATE MATERIALIZED VIEW top AS SELECT id, price FROM bids ORDER BY price DESC, id LIMIT 10",
	}
	kills := 0
	kill := func() {
		t.Helper()
		time.Sleep(time.Duration(200+rng.Intn(2500)) * time.Millisecond)
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
	// Each view is created in the background and the server killed once or
	// twice while it backfills; then more kills after.
	for _, v := range views {
		mustExec(conn, "SET background_ddl = true", v)
		for k := 1 + rng.Intn(2); k > 0; k-- {
			kill()
		}
	}
	for kills < 12 {
		kill()
	}
	stopProducer()
	if prod.err != nil {
		t.Fatalf("producer: %v", prod.err)
	}
	total := prod.produced()
	t.Logf("%d kills, %d bids produced", kills, total)

	// Wait until every bid reached the views (the source reads on its own
	// pace), then FLUSH and compare.
	deadline := time.Now().Add(4 * time.Minute)
	for {
		rows, err := e2etest.Rows(ctx, conn, "SELECT sum(n) FROM offsets")
		var jobs []string
		if err == nil {
			jobs, err = e2etest.Rows(ctx, conn, "SELECT count(*) FROM rw_catalog.rw_ddl_progress")
		}
		if err == nil && len(rows) == 1 && rows[0] == strconv.Itoa(total) && len(jobs) == 1 && jobs[0] == "0" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("views did not catch up: offsets sum %v, running jobs %v (err %v), want %d", rows, jobs, err, total)
		}
		time.Sleep(200 * time.Millisecond)
	}
	mustExec(conn, "FLUSH")

	// The expected answers, from the produced bids.
	perPart := map[string]int{}
	type agg struct{ n, total, top int }
	cats := map[int]*agg{}
	byName := map[string]*agg{}
	type bid struct{ id, price int }
	var all []bid
	for i := 0; i < total; i++ {
		person, cat, price := killBid(i)
		a := cats[cat]
		if a == nil {
			a = &agg{}
			cats[cat] = a
		}
		a.n, a.total, a.top = a.n+1, a.total+price, max(a.top, price)
		name := fmt.Sprintf("name%d", person%37)
		b := byName[name]
		if b == nil {
			b = &agg{}
			byName[name] = b
		}
		b.n, b.total = b.n+1, b.total+price
		all = append(all, bid{i, price})
	}
	var want []string
	for c, a := range cats {
		want = append(want, fmt.Sprintf("%d|%d|%d|%d", c, a.n, a.total, a.top))
	}
	e2etest.CheckView(t, ctx, conn, "SELECT cat, n, total, top FROM agg", want)
	want = want[:0]
	for name, a := range byName {
		want = append(want, fmt.Sprintf("%s|%d|%d", name, a.n, a.total))
	}
	e2etest.CheckView(t, ctx, conn, "SELECT name, n, total FROM joined", want)
	sort.Slice(all, func(i, j int) bool {
		if all[i].price != all[j].price {
			return all[i].price > all[j].price
		}
		return all[i].id < all[j].id
	})
	want = want[:0]
	for _, b := range all[:10] {
		want = append(want, fmt.Sprintf("%d|%d", b.id, b.price))
	}
	e2etest.CheckView(t, ctx, conn, "SELECT id, price FROM top", want)

	// No message lost or repeated: per partition, as many rows as distinct
	// offsets, covering exactly the partition's offsets 0..hi.
	rows, err := e2etest.Rows(ctx, conn, "SELECT p, n, d, lo, hi FROM offsets")
	if err != nil {
		t.Fatal(err)
	}
	sum := 0
	for _, r := range rows {
		f := strings.Split(r, "|")
		n, _ := strconv.Atoi(f[1])
		d, _ := strconv.Atoi(f[2])
		lo, _ := strconv.Atoi(f[3])
		hi, _ := strconv.Atoi(f[4])
		if n != d || lo != 0 || hi != n-1 {
			t.Errorf("partition %s: %d rows, %d distinct offsets, offsets %d..%d: lost or repeated messages", f[0], n, d, lo, hi)
		}
		perPart[f[0]] = n
		sum += n
	}
	if len(rows) != partitions || sum != total {
		t.Fatalf("%d partitions with %d rows, want %d with %d", len(rows), sum, partitions, total)
	}
}
