package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/e2e/e2etest"
)

// fileSinkLines counts the JSON lines a file sink wrote.
func fileSinkLines(t *testing.T, dir string) int {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "part-*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		n += strings.Count(string(b), "\n")
	}
	return n
}

// TestSinkRateLimit: a decoupled sink delivers at its SINK_RATE_LIMIT, and
// lifting the limit online delivers the rest.
func TestSinkRateLimit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv := e2etest.StartServer(t)
	conn := e2etest.Connect(t, ctx, srv)
	out := filepath.Join(srv.DataDir, "sink-files", "out") // inside the file sink root
	for _, s := range []string{
		"CREATE TABLE t (id int PRIMARY KEY, v int)",
		"INSERT INTO t SELECT i, i FROM generate_series(1, 5000) i",
		"SET sink_rate_limit = 500",
		fmt.Sprintf("CREATE SINK s FROM t WITH (connector = 'file', path = '%s')", out),
	} {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	start := time.Now()
	time.Sleep(time.Second) // a rate is measured over time
	n, elapsed := fileSinkLines(t, out), time.Since(start)
	// 500 rows/s plus a burst of one second's worth and one chunk per actor.
	if limit := int(500*elapsed.Seconds()) + 500 + 2*1024; n > limit {
		t.Fatalf("%d rows delivered in %v at 500 rows/s (at most %d expected)", n, elapsed, limit)
	}
	if _, err := conn.Exec(ctx, "ALTER SINK s SET SINK_RATE_LIMIT = DEFAULT"); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); fileSinkLines(t, out) < 5000; {
		if time.Now().After(deadline) {
			t.Fatalf("%d of 5000 rows delivered 20 s after lifting the limit", fileSinkLines(t, out))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := fileSinkLines(t, out); n != 5000 {
		t.Fatalf("%d rows delivered, want 5000", n)
	}
}

// TestSinkCreateWaitDelivered: with create_wait = 'delivered' a blocking
// CREATE SINK returns once the backfilled rows reached the connector.
func TestSinkCreateWaitDelivered(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv := e2etest.StartServer(t)
	conn := e2etest.Connect(t, ctx, srv)
	out := filepath.Join(srv.DataDir, "sink-files", "out") // inside the file sink root
	for _, s := range []string{
		"CREATE TABLE t (id int PRIMARY KEY, v int)",
		"INSERT INTO t SELECT i, i FROM generate_series(1, 3000) i",
		"SET sink_rate_limit = 2000", // delivery takes a while
		fmt.Sprintf("CREATE SINK s FROM t WITH (connector = 'file', path = '%s', create_wait = 'delivered')", out),
	} {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	if n := fileSinkLines(t, out); n != 3000 {
		t.Fatalf("CREATE SINK with create_wait = 'delivered' returned with %d of 3000 rows delivered", n)
	}
	if _, err := conn.Exec(ctx, "CREATE SINK s2 FROM t WITH (connector = 'blackhole', create_wait = 'delivered')"); err == nil {
		t.Fatal("create_wait = 'delivered' was accepted for a coupled sink")
	}
}
