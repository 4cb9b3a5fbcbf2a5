package main

import (
	"context"
	"testing"
	"time"

	"github.com/tributary/tributary/e2e/pgtest"
	"github.com/tributary/tributary/e2e/testserver"
)

// TestIngestStatements: the literal statement lists each row once, in order, with its quote
// doubled; the prepared one numbers 3 parameters a row.
func TestIngestStatements(t *testing.T) {
	got := string(appendLiteralInsert(nil, "t", 99, 3))
	want := `INSERT INTO t VALUES (99,99,'row 99'),(100,100,'it''s row 100'),(101,101,'row 101')`
	if got != want {
		t.Errorf("literal:\n got %s\nwant %s", got, want)
	}
	if got, want := preparedInsert("t", 2), "INSERT INTO t VALUES ($1,$2,$3),($4,$5,$6)"; got != want {
		t.Errorf("prepared: got %s, want %s", got, want)
	}
}

// TestIngestSmall runs every ingest case briefly: each must insert rows, and the table (and
// the view, on Tributary) must hold every acknowledged row (runIngest checks).
func TestIngestSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server and a PostgreSQL cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv := testserver.StartWith(t, testserver.Build(t), t.TempDir(), testserver.Options{Args: []string{"--fsync=false"}})
	pg := pgtest.Start(t)
	systems := []struct {
		name, dsn string
		tables    []string
		cpu       func() (float64, error)
	}{
		{"tributary", srv.DSN(), []string{"plain", "view"}, nil},
		{"postgres", pg.DSN(), []string{"plain"}, func() (float64, error) { return postmasterCPU(pg.DataDir) }},
	}
	for _, s := range systems {
		for _, table := range s.tables {
			for _, mode := range []string{"literal", "prepared"} {
				c := ingestCase{table, 2, mode}
				r, err := runIngest(ctx, s.dsn, s.name, c, 50, 200*time.Millisecond, s.cpu)
				if err != nil {
					t.Fatalf("%s %s: %v", s.name, c, err)
				}
				if r.Rows == 0 || r.Rows%50 != 0 || r.PerSec <= 0 || r.Mode != mode || r.CPUPerRow < 0 {
					t.Errorf("%s %s: %+v", s.name, c, r)
				}
			}
		}
	}
}
