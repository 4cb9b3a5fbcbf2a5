package main

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tributary/tributary/e2e/pgtest"
	"github.com/tributary/tributary/e2e/testserver"
)

// TestBackfillSmall creates the view twice over a small table on both systems: each run must
// return a checked view (timeBackfill checks the groups and sums) and a memory sample.
func TestBackfillSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server and a PostgreSQL cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const rows = 5000
	srv := testserver.Start(t, testserver.Build(t), t.TempDir())
	pg := pgtest.Start(t)
	for _, s := range []struct {
		name, dsn, load string
		mem             func() (int64, error)
		cpu             func() (float64, error)
	}{
		{"tributary", srv.DSN(), "tributary", nil, nil},
		{"postgres", pg.DSN(), "postgres", func() (int64, error) { return postmasterPss(pg.DataDir) },
			func() (float64, error) { return postmasterCPU(pg.DataDir) }},
	} {
		conn, err := pgx.Connect(ctx, s.dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		if s.load == "tributary" {
			err = loadBackfillTable(ctx, conn, rows, 1500) // batches that do not divide rows
		} else {
			err = execSQL(ctx, conn, backfillTable)
			if err == nil {
				err = execSQL(ctx, conn, "INSERT INTO t SELECT g, g % 1000, g FROM generate_series(1, 5000) g")
			}
		}
		if err != nil {
			t.Fatalf("%s: load: %v", s.name, err)
		}
		rs, err := timeBackfill(ctx, conn, s.name, rows, 2, s.mem, s.cpu)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if len(rs) != 2 {
			t.Fatalf("%s: %d results, want 2", s.name, len(rs))
		}
		for _, r := range rs {
			if r.Seconds <= 0 || r.PerSec <= 0 || r.Rows != rows || (s.mem != nil && r.PeakKB <= 0) || r.CPUSecs < 0 {
				t.Errorf("%s: %+v", s.name, r)
			}
		}
	}
	// A wrong view is reported: the check must be able to fail.
	conn, err := pgx.Connect(ctx, pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if err := execSQL(ctx, conn, backfillView); err != nil {
		t.Fatal(err)
	}
	if err := checkBackfillView(ctx, conn, rows+1); err == nil {
		t.Error("checkBackfillView accepted a view of 5000 rows as one of 5001")
	}
}
