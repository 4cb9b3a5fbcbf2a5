package main

import (
	"context"
	"testing"
	"time"

	"github.com/tributary/tributary/e2e/pgtest"
	"github.com/tributary/tributary/e2e/testserver"
)

// TestDurableSmall runs the durable-commit workload briefly on both systems: every acknowledged
// INSERT must be in the table (runDurable checks), and some must have been measured.
func TestDurableSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server and a PostgreSQL cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, dsn := range []string{
		testserver.Start(t, testserver.Build(t), t.TempDir()).DSN(),
		pgtest.StartWith(t, "fsync=on", "synchronous_commit=on").DSN(),
	} {
		for _, clients := range []int{1, 4} {
			r, err := runDurable(ctx, dsn, "test", clients, 300*time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			if r.Inserts == 0 || r.PerSec <= 0 || r.P50 <= 0 || r.P99 < r.P50 || r.TableRows < r.Inserts {
				t.Errorf("%d clients: %+v", clients, r)
			}
		}
	}
}
