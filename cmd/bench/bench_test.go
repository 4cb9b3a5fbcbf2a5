package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tributary/tributary/e2e/pgtest"
	"github.com/tributary/tributary/e2e/testserver"
)

// The Go benchmarks run the command's workloads with a small N on both systems:
//
//	go test ./cmd/bench -run '^$' -bench . -benchtime 3x
//
// rows/s is the benchmark's figure; ns/op also counts setup and the correctness check.
const (
	benchRows  = 20000
	benchBatch = 1000
)

func BenchmarkStreamFilterProject(b *testing.B) { benchWorkload(b, "filter+project") }
func BenchmarkStreamHashAgg(b *testing.B)       { benchWorkload(b, "hash agg") }
func BenchmarkStreamJoin(b *testing.B)          { benchWorkload(b, "join") }

func benchWorkload(b *testing.B, name string) {
	w, ok := workloadByName(name)
	if !ok {
		b.Fatalf("no workload %q", name)
	}
	bin := testserver.Build(b)
	for _, engine := range []string{"tributary", "postgres-refresh"} {
		b.Run(engine, func(b *testing.B) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			var dsn string
			if engine == "tributary" {
				dsn = testserver.Start(b, bin, b.TempDir()).DSN()
			} else {
				dsn = pgtest.StartPostgres(b)
			}
			conn := connectT(ctx, b, dsn)
			var rows, secs float64
			for i := 0; b.Loop(); i++ {
				suffix := fmt.Sprintf("_b%d", i)
				var r result
				var err error
				if engine == "tributary" {
					r, err = runTributary(ctx, conn, w, benchRows, benchBatch, runtime.GOMAXPROCS(0), suffix)
				} else {
					r, err = runRefresh(ctx, conn, w, benchRows, benchBatch, benchRows/benchBatch, suffix)
				}
				if err != nil {
					b.Fatal(err)
				}
				rows += float64(r.Batches * r.Batch)
				secs += r.Seconds
			}
			b.ReportMetric(rows/secs, "rows/s")
		})
	}
}

func connectT(ctx context.Context, t testing.TB, dsn string) *pgx.Conn {
	t.Helper()
	conn, err := connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) }) // the server stops next
	return conn
}

// TestStreamSmall runs every workload end to end with a few batches on both systems,
// including the check that each view equals its query, and the sampled PostgreSQL mode.
func TestStreamSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server and a PostgreSQL cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tr := connectT(ctx, t, testserver.Start(t, testserver.Build(t), t.TempDir()).DSN())
	pg := connectT(ctx, t, pgtest.StartPostgres(t))
	for i, w := range workloads {
		suffix := fmt.Sprintf("_t%d", i)
		r, err := runTributary(ctx, tr, w, 1050, 100, 2, suffix)
		if err != nil {
			t.Fatal(err)
		}
		if r.Batches != 11 || r.ViewRows == 0 || r.RowsPerSec <= 0 || r.PerCore != r.RowsPerSec/2 {
			t.Errorf("tributary %s: %+v", w.name, r)
		}
		p, err := runRefresh(ctx, pg, w, 1050, 100, 11, suffix)
		if err != nil {
			t.Fatal(err)
		}
		if p.Extrapolated || p.Batches != 11 || p.ViewRows != r.ViewRows {
			t.Errorf("postgres %s: %+v (tributary's view had %d rows)", w.name, p, r.ViewRows)
		}
		p, err = runRefresh(ctx, pg, w, 2000, 100, 4, suffix+"_x")
		if err != nil {
			t.Fatal(err)
		}
		if !p.Extrapolated || p.Batches != 4 || p.SizeFrom != 800 || p.SizeTo != 1200 {
			t.Errorf("postgres %s sampled: %+v", w.name, p)
		}
	}
}

func TestProcStatus(t *testing.T) {
	hwm, err := procStatusKB(os.Getpid(), "VmHWM")
	if err != nil {
		t.Fatal(err)
	}
	rss, err := procStatusKB(os.Getpid(), "VmRSS")
	if err != nil {
		t.Fatal(err)
	}
	if hwm <= 0 || rss <= 0 { // read one after the other, so RSS may already exceed the older peak
		t.Errorf("VmHWM %d kB, VmRSS %d kB", hwm, rss)
	}
	if _, err := procStatusKB(os.Getpid(), "NoSuchKey"); err == nil {
		t.Error("a missing key is not an error")
	}
}

func TestInsertSQL(t *testing.T) {
	w, _ := workloadByName("join")
	got := insertSQL(w, "_7", 100, 199)
	want := "INSERT INTO t_7 SELECT g, (g::bigint * 7919) % 10000, g FROM generate_series(100, 199) AS g"
	if got != want {
		t.Errorf("insertSQL = %q, want %q", got, want)
	}
	if _, err := parseInts("100,x"); err == nil {
		t.Error("parseInts accepted x")
	}
}
