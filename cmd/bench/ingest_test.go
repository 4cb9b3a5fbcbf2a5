package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
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

// TestSummarizeIngest: each Tributary case's ratios, in round order, with their least,
// median and greatest, and its median rows/s; PostgreSQL's rows and runs without a ratio
// (--no-pg) are left out.
func TestSummarizeIngest(t *testing.T) {
	var results []ingestResult
	for round, ratios := range [][2]float64{{0.9, 1.2}, {1.1, 1.4}, {0.8, 1.3}} {
		results = append(results,
			ingestResult{Round: round + 1, System: "postgres", Table: "plain", Clients: 1, Mode: "prepared", PerSec: 500},
			ingestResult{Round: round + 1, System: "tributary", Table: "view", Clients: 1, Mode: "prepared", PerSec: 500 * ratios[0], RatioVsPG: ratios[0]},
			ingestResult{Round: round + 1, System: "tributary", Table: "plain", Clients: 8, Mode: "literal", PerSec: 500 * ratios[1], RatioVsPG: ratios[1]},
			ingestResult{Round: round + 1, System: "tributary", Table: "plain", Clients: 1, Mode: "literal", PerSec: 700})
	}
	got := summarizeIngest(results)
	want := []ingestSummary{
		{Table: "view", Clients: 1, Mode: "prepared", Ratios: []float64{0.9, 1.1, 0.8}, MinRatio: 0.8, MedRatio: 0.9, MaxRatio: 1.1, MedPerSec: 450},
		{Table: "plain", Clients: 8, Mode: "literal", Ratios: []float64{1.2, 1.4, 1.3}, MinRatio: 1.2, MedRatio: 1.3, MaxRatio: 1.4, MedPerSec: 650},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("summary:\n got %+v\nwant %+v", got, want)
	}
}

// TestIngestRoundOrder: a round runs, for each client count and mode, PostgreSQL's plain table
// and then Tributary's tables, each Tributary ratio against that PostgreSQL run.
func TestIngestRoundOrder(t *testing.T) {
	if testing.Short() {
		t.Skip("starts servers and PostgreSQL clusters")
	}
	if _, err := pgtest.BinDir(); err != nil {
		t.Skipf("pgtest: %v", err)
	}
	var out bytes.Buffer
	err := ingestMain(context.Background(), []string{"--server-bin", testserver.Build(t), "--seconds", "0.2",
		"--stmt-rows", "50", "--clients", "1,2", "--modes", "prepared", "--json", "--timeout", "2m"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	var got struct{ Results []ingestResult }
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	var order []string
	pgRate := 0.0
	for _, r := range got.Results {
		order = append(order, fmt.Sprintf("%s-%s-%d", r.System, r.Table, r.Clients))
		if r.System == "postgres" {
			pgRate = r.PerSec
			continue
		}
		if want := r.PerSec / pgRate; r.RatioVsPG != want {
			t.Errorf("%s %s %d clients: ratio %.3f, want %.3f against the PostgreSQL run before it", r.System, r.Table, r.Clients, r.RatioVsPG, want)
		}
	}
	want := []string{"postgres-plain-1", "tributary-plain-1", "tributary-view-1", "postgres-plain-2", "tributary-plain-2", "tributary-view-2"}
	if !slices.Equal(order, want) {
		t.Errorf("runs %v, want %v", order, want)
	}
}
