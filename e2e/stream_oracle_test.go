package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tributary/tributary/e2e/e2etest"
	"github.com/tributary/tributary/e2e/testseed"
)

// TestStreamingOracle applies a seeded random stream of DML to the base tables
// and, after each FLUSH, checks every MV against its batch recompute.
func TestStreamingOracle(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	seed := testseed.Int64(t)
	srv := e2etest.StartServer(t)
	conn := e2etest.Connect(t, ctx, srv)
	e2etest.CreateOracleTables(ctx, t, conn)
	mvs := e2etest.CreateOracleViews(ctx, t, conn)
	gen := e2etest.NewDMLGen(seed)
	for round := 0; round < 40; round++ {
		for i := 0; i < 20; i++ {
			sql := gen.Statement()
			if _, err := conn.Exec(ctx, sql); err != nil {
				t.Fatalf("round %d: %s: %v", round, sql, err)
			}
		}
		if _, err := conn.Exec(ctx, "FLUSH"); err != nil {
			t.Fatal(err)
		}
		e2etest.CheckMVs(ctx, t, conn, mvs, fmt.Sprintf("round %d", round))
	}
}

// TestStreamingOracleBackfill creates every MV over tables that already hold
// rows while a second session keeps changing them (updates and deletes of
// rows the backfill already read included), then checks every MV against its
// batch recompute after each FLUSH; with and without a backfill rate limit.
func TestStreamingOracleBackfill(t *testing.T) {
	for _, snapshot := range []string{"true", "false"} {
		for _, limit := range []string{"default", "20000"} {
			name := "snapshot=" + snapshot + "/backfill_rate_limit=" + limit
			t.Run(name, func(t *testing.T) { oracleBackfill(t, snapshot, limit) })
		}
	}
}

func oracleBackfill(t *testing.T, snapshot, rateLimit string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	seed := testseed.Int64(t)
	srv := e2etest.StartServer(t)
	conn := e2etest.Connect(t, ctx, srv)
	e2etest.CreateOracleTables(ctx, t, conn)
	gen := e2etest.NewDMLGen(seed)
	var genMu sync.Mutex
	next := func() string {
		genMu.Lock()
		defer genMu.Unlock()
		return gen.Statement()
	}
	for i := 0; i < 400; i++ {
		if _, err := conn.Exec(ctx, next()); err != nil {
			t.Fatal(err)
		}
	}
	// A concurrent writer while the MVs are created (and backfill).
	writer := e2etest.Connect(t, ctx, srv)
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			if _, err := writer.Exec(ctx, next()); err != nil {
				done <- err
				return
			}
		}
	}()
	for _, set := range []string{"SET backfill_rate_limit = " + rateLimit, "SET streaming_use_snapshot_backfill = " + snapshot} {
		if _, err := conn.Exec(ctx, set); err != nil {
			t.Fatal(err)
		}
	}
	mvs := e2etest.CreateOracleViews(ctx, t, conn)
	close(stop)
	if err := <-done; err != nil {
		t.Fatalf("writer: %v", err)
	}
	if _, err := conn.Exec(ctx, "FLUSH"); err != nil {
		t.Fatal(err)
	}
	e2etest.CheckMVs(ctx, t, conn, mvs, "after backfill")
	for round := 0; round < 10; round++ {
		for i := 0; i < 20; i++ {
			if _, err := conn.Exec(ctx, next()); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := conn.Exec(ctx, "FLUSH"); err != nil {
			t.Fatal(err)
		}
		e2etest.CheckMVs(ctx, t, conn, mvs, fmt.Sprintf("round %d", round))
	}
}
