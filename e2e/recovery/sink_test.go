package recovery

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tributary/tributary/e2e/e2etest"
	"github.com/tributary/tributary/e2e/testseed"
	"github.com/tributary/tributary/e2e/testserver"
)

// fileSinkState replays a file sink's JSON lines (files in epoch, writer,
// part order: a key's changes of one epoch are all one writer's, but a
// rescale moves keys between writers) as upserts keyed by key, and returns
// the rows as "key|col|col" strings, sorted.
func fileSinkState(t *testing.T, dir, key string, cols []string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "part-*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	// part-WWWW-EEEE...-PPPP.jsonl: order by the epoch, then the name.
	epochOf := func(name string) string {
		f := strings.Split(filepath.Base(name), "-")
		if len(f) < 4 {
			t.Fatalf("file sink part %s: unexpected name", name)
		}
		return f[2]
	}
	sort.Slice(names, func(i, j int) bool {
		if ei, ej := epochOf(names[i]), epochOf(names[j]); ei != ej {
			return ei < ej
		}
		return names[i] < names[j]
	})
	state := map[string]string{}
	for _, name := range names {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var obj map[string]any
			dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
			dec.UseNumber() // large sums print as integers
			if err := dec.Decode(&obj); err != nil {
				t.Fatalf("%s: %v: %s", name, err, sc.Text())
			}
			k := fmt.Sprint(obj[key])
			switch obj["__op"] {
			case "insert", "update_insert":
				parts := []string{k}
				for _, c := range cols {
					parts = append(parts, fmt.Sprint(obj[c]))
				}
				state[k] = strings.Join(parts, "|")
			case "delete", "update_delete":
				delete(state, k)
			default:
				t.Fatalf("%s: unknown op in %s", name, sc.Text())
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	out := make([]string, 0, len(state))
	for _, r := range state {
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}

// killUnderDML runs random DML on t(id, g, v) (ids from 3001 up) and kills
// the server (SIGKILL) kills times at random points, half of the time with a
// statement in flight, restarting it each time; it returns a connection to
// the last server.
func killUnderDML(t *testing.T, ctx context.Context, srv *testserver.Server, conn *pgx.Conn, rng *rand.Rand, kills int) *pgx.Conn {
	t.Helper()
	next := 3001
	dml := func(c *pgx.Conn, r *rand.Rand) error {
		var s string
		switch r.Intn(3) {
		case 0:
			s = fmt.Sprintf("INSERT INTO t SELECT i, i %% 17, i FROM generate_series(%d, %d) i", next, next+r.Intn(50))
			next += 51
		case 1:
			s = fmt.Sprintf("UPDATE t SET g = (g + %d) %% 17, v = v + 1 WHERE id %% 13 = %d", r.Intn(5)+1, r.Intn(13))
		default:
			s = fmt.Sprintf("DELETE FROM t WHERE id %% 29 = %d", r.Intn(29))
		}
		_, err := c.Exec(ctx, s)
		return err
	}
	return killLoop(t, ctx, srv, conn, rng, kills, dml)
}

// killLoop runs a random number of dml statements (0 to 7) and kills the
// server (SIGKILL) kills times, half of the time with a statement in flight,
// restarting it each time; it returns a connection to the last server.
func killLoop(t *testing.T, ctx context.Context, srv *testserver.Server, conn *pgx.Conn, rng *rand.Rand, kills int,
	dml func(*pgx.Conn, *rand.Rand) error) *pgx.Conn {
	t.Helper()
	for kill := 0; kill < kills; kill++ {
		for i := rng.Intn(8); i > 0; i-- {
			if err := dml(conn, rng); err != nil {
				t.Fatalf("dml: %v", err)
			}
		}
		// Kill with a statement in flight half of the time: it may or may not
		// commit, and the checks afterwards read whichever happened.
		inflight := make(chan struct{})
		if rng.Intn(2) == 0 {
			c2 := e2etest.Connect(t, ctx, srv)
			r2 := rand.New(rand.NewSource(rng.Int63()))
			go func() {
				defer close(inflight)
				_ = dml(c2, r2)
				c2.Close(context.Background())
			}()
			time.Sleep(time.Duration(rng.Intn(20)) * time.Millisecond)
		} else {
			close(inflight)
		}
		if err := srv.Kill(); err != nil {
			t.Fatal(err)
		}
		<-inflight
		conn.Close(context.Background())
		if err := srv.Restart(); err != nil {
			t.Fatal(err)
		}
		conn = e2etest.Connect(t, ctx, srv)
	}
	return conn
}

// TestFileSinkSurvivesKills: a decoupled upsert file sink of an aggregation
// over a table under random DML, with the server killed (SIGKILL) at random
// points twelve times; afterwards the replayed files equal the query.
func TestFileSinkSurvivesKills(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a server twelve times")
	}
	seed := testseed.Int64(t)
	rng := rand.New(rand.NewSource(seed))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srv := e2etest.StartServer(t)
	out := filepath.Join(srv.DataDir, "sink-files", "out") // inside the file sink root
	conn := e2etest.Connect(t, ctx, srv)
	for _, s := range []string{
		"CREATE TABLE t (id int PRIMARY KEY, g int, v int)",
		"INSERT INTO t SELECT i, i % 17, i FROM generate_series(1, 3000) i",
		fmt.Sprintf("CREATE SINK s AS SELECT g, count(*) AS n, sum(v) AS total FROM t GROUP BY g WITH (connector = 'file', path = '%s', type = 'upsert')", out),
	} {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	conn = killUnderDML(t, ctx, srv, conn, rng, 12)
	if _, err := conn.Exec(ctx, "FLUSH"); err != nil {
		t.Fatal(err)
	}
	want, err := e2etest.Rows(ctx, conn, "SELECT g, count(*), sum(v) FROM t GROUP BY g")
	if err != nil {
		t.Fatal(err)
	}
	// Delivery runs behind the commits: poll the files until they catch up.
	var got []string
	for deadline := time.Now().Add(30 * time.Second); ; {
		got = fileSinkState(t, out, "g", []string{"n", "total"})
		if strings.Join(got, "\n") == strings.Join(want, "\n") {
			break
		}
		if time.Now().After(deadline) {
			onlyGot, onlyWant := e2etest.MultisetDiff(got, want)
			t.Fatalf("file sink differs from the query after 12 kills:\nonly in files: %v\nonly in query: %v", onlyGot, onlyWant)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var pending int64
	if err := conn.QueryRow(ctx, "SELECT coalesce(sum(failures), 0) FROM rw_catalog.rw_sink_log_store").Scan(&pending); err != nil {
		t.Fatal(err)
	}
	if pending != 0 {
		t.Errorf("%d delivery failures recorded", pending)
	}
}
