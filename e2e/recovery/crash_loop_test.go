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

	"github.com/tributary/tributary/e2e/e2etest"
	"github.com/tributary/tributary/e2e/testseed"
)

// crashViews are the views the crash loop creates as it goes, with their queries.
var crashViews = []string{
	"SELECT g, count(*) AS n, sum(v) AS s FROM t GROUP BY g",
	"SELECT t.g, count(*) AS n FROM t JOIN w ON t.g = w.g GROUP BY t.g",
	"SELECT id, v FROM t ORDER BY v DESC, id LIMIT 7",
	"SELECT v % 5 AS k, count(*) AS n FROM t WHERE id % 2 = 0 GROUP BY v % 5",
}

// TestCrashLoop is issue 14's crash-loop check: 50 SIGKILLs at random
// points while writers insert and delete (every statement's outcome
// recorded when acknowledged), views are created in the background and a
// sink writes into a table. Afterwards no acknowledged insert is missing,
// no acknowledged delete came back, every view equals its query and the
// sink's table equals its query.
func TestCrashLoop(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a server fifty times")
	}
	seed := testseed.Int64(t)
	rng := rand.New(rand.NewSource(seed))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	srv := e2etest.StartServer(t)
	conn := e2etest.Connect(t, ctx, srv)
	for _, s := range []string{
		"CREATE TABLE t (id int PRIMARY KEY, g int, v int)",
		"CREATE TABLE w (g int PRIMARY KEY, name varchar)",
		"INSERT INTO w SELECT i, 'g' || i FROM generate_series(0, 12) i",
		"INSERT INTO t SELECT i, i % 13, i % 101 FROM generate_series(1, 2000) i",
		"CREATE TABLE tgt (g int PRIMARY KEY, n bigint, s bigint)",
		"CREATE SINK si INTO tgt AS SELECT g, count(*) AS n, sum(v) AS s FROM t GROUP BY g",
		"SET background_ddl = true",
	} {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}

	// What the writers were told: inserted ids, deleted ids, and deletes whose
	// outcome is unknown (the server died under them).
	var mu sync.Mutex
	inserted, deleted, maybeDeleted := map[int]bool{}, map[int]bool{}, map[int]bool{}
	for i := 1; i <= 2000; i++ {
		inserted[i] = true
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	writer := func(w int, r *rand.Rand) {
		defer wg.Done()
		var c *pgx.Conn
		defer func() {
			if c != nil {
				c.Close(context.Background())
			}
		}()
		next := 100_000 * (w + 1)
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
					time.Sleep(10 * time.Millisecond)
					continue
				}
			}
			if r.Intn(4) > 0 {
				next++
				id := next
				_, err := c.Exec(ctx, fmt.Sprintf("INSERT INTO t VALUES (%d, %d, %d)", id, id%13, r.Intn(101)))
				if err == nil {
					mu.Lock()
					inserted[id] = true
					mu.Unlock()
					continue
				}
				c.Close(context.Background())
				c = nil
				continue
			}
			// Delete an id this writer inserted and was told about.
			mu.Lock()
			id := 0
			for k := next; k > 100_000*(w+1); k-- {
				if inserted[k] && !deleted[k] && !maybeDeleted[k] && r.Intn(3) == 0 {
					id = k
					break
				}
			}
			if id != 0 {
				maybeDeleted[id] = true
			}
			mu.Unlock()
			if id == 0 {
				continue
			}
			_, err := c.Exec(ctx, fmt.Sprintf("DELETE FROM t WHERE id = %d", id))
			if err == nil {
				mu.Lock()
				delete(maybeDeleted, id)
				deleted[id] = true
				mu.Unlock()
				continue
			}
			c.Close(context.Background())
			c = nil
		}
	}
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go writer(w, rand.New(rand.NewSource(rng.Int63())))
	}
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		wg.Wait()
	}()

	created := 0
	for kill := 0; kill < 50; kill++ {
		time.Sleep(time.Duration(20+rng.Intn(300)) * time.Millisecond)
		if created < len(crashViews) && rng.Intn(6) == 0 {
			// A view created in the background; the next kills may hit its backfill.
			s := fmt.Sprintf("CREATE MATERIALIZED VIEW cv%d AS %s", created, crashViews[created])
			if _, err := conn.Exec(ctx, s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
			created++
		}
		if err := srv.Kill(); err != nil {
			t.Fatal(err)
		}
		conn.Close(context.Background())
		if err := srv.Restart(); err != nil {
			t.Fatal(err)
		}
		conn = e2etest.Connect(t, ctx, srv)
		// Settings are per session: the views created in the loop stay background ones.
		if _, err := conn.Exec(ctx, "SET background_ddl = true"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := conn.Exec(ctx, "SET background_ddl = false"); err != nil {
		t.Fatal(err)
	}
	for ; created < len(crashViews); created++ {
		s := fmt.Sprintf("CREATE MATERIALIZED VIEW cv%d AS %s", created, crashViews[created])
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	close(stop)
	wg.Wait()
	if _, err := conn.Exec(ctx, "WAIT"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "FLUSH"); err != nil {
		t.Fatal(err)
	}

	// No acknowledged write lost.
	ids := map[int]bool{}
	for _, r := range e2etest.MustRows(t, ctx, conn, "SELECT id FROM t") {
		id, _ := strconv.Atoi(r)
		ids[id] = true
	}
	var lost, back []int
	for id := range inserted {
		if !ids[id] && !deleted[id] && !maybeDeleted[id] {
			lost = append(lost, id)
		}
	}
	for id := range deleted {
		if ids[id] {
			back = append(back, id)
		}
	}
	sort.Ints(lost)
	sort.Ints(back)
	if len(lost) > 0 || len(back) > 0 {
		t.Fatalf("acknowledged inserts lost: %v; acknowledged deletes undone: %v", lost, back)
	}
	t.Logf("%d rows, %d acknowledged inserts, %d acknowledged deletes, %d unknown", len(ids), len(inserted), len(deleted), len(maybeDeleted))
	for i, q := range crashViews {
		e2etest.CheckView(t, ctx, conn, fmt.Sprintf("SELECT * FROM cv%d", i), e2etest.MustRows(t, ctx, conn, q))
	}
	want := e2etest.MustRows(t, ctx, conn, "SELECT g, count(*), sum(v) FROM t GROUP BY g")
	for deadline := time.Now().Add(60 * time.Second); ; {
		got := e2etest.MustRows(t, ctx, conn, "SELECT * FROM tgt")
		if sameRows(got, want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sink's table differs from its query:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// sameRows reports whether a and b hold the same rows in any order.
func sameRows(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	x, y := append([]string(nil), a...), append([]string(nil), b...)
	sort.Strings(x)
	sort.Strings(y)
	for i := range x {
		if x[i] != y[i] {
			return false
		}
	}
	return true
}
