package recovery

import (
	"context"
	"fmt"
	"math/rand"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tributary/tributary/e2e/e2etest"
	"github.com/tributary/tributary/e2e/testseed"
)

// TestStreamingRecovery kills the server (SIGKILL) at random points while DML
// streams in, restarts it, and checks every MV equals its batch recompute and
// every acknowledged insert is present.
func TestStreamingRecovery(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	seed := testseed.Int64(t)
	srv := e2etest.StartServer(t)
	setup := e2etest.Connect(t, ctx, srv)
	e2etest.CreateOracleTables(ctx, t, setup)
	mvs := e2etest.CreateOracleViews(ctx, t, setup)
	if _, err := setup.Exec(ctx, `CREATE TABLE acks (id bigint PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	if _, err := setup.Exec(ctx, `CREATE MATERIALIZED VIEW ack_count AS SELECT count(*) AS n FROM acks`); err != nil {
		t.Fatal(err)
	}
	mvs["ack_count"] = `SELECT count(*) AS n FROM acks`
	setup.Close(ctx)

	gen := e2etest.NewDMLGen(seed)
	rng := rand.New(rand.NewSource(seed)) // the kills' timing; gen is the writer's
	acked := map[int64]bool{}
	nextAck := int64(0)
	const kills = 20
	for round := 0; round < kills; round++ {
		conn, err := pgx.Connect(ctx, srv.DSN())
		if err != nil {
			t.Fatalf("round %d: connect: %v", round, err)
		}
		var mu sync.Mutex
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				select {
				case <-stop:
					return
				default:
				}
				mu.Lock()
				sql := gen.Statement()
				id := nextAck
				nextAck++
				mu.Unlock()
				if _, err := conn.Exec(ctx, sql); err != nil {
					return
				}
				if _, err := conn.Exec(ctx, `INSERT INTO acks VALUES ($1)`, id); err != nil {
					return
				}
				mu.Lock()
				acked[id] = true
				mu.Unlock()
			}
		}()
		time.Sleep(time.Duration(30+rng.Intn(300)) * time.Millisecond)
		if err := srv.Kill(); err != nil {
			t.Fatal(err)
		}
		close(stop)
		<-done
		conn.Close(context.Background())
		if err := srv.Restart(); err != nil {
			t.Fatalf("round %d: restart: %v", round, err)
		}
		check, err := pgx.Connect(ctx, srv.DSN())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := check.Exec(ctx, "FLUSH"); err != nil {
			t.Fatal(err)
		}
		e2etest.CheckMVs(ctx, t, check, mvs, fmt.Sprintf("after kill %d", round))
		present, err := e2etest.Rows(ctx, check, "SELECT id FROM acks")
		if err != nil {
			t.Fatal(err)
		}
		have := map[int64]bool{}
		for _, r := range present {
			id, _ := strconv.ParseInt(r, 10, 64)
			have[id] = true
		}
		for id := range acked {
			if !have[id] {
				t.Fatalf("after kill %d: acknowledged insert %d is missing", round, id)
			}
		}
		gen.Reload(ctx, t, check)
		check.Close(ctx)
		t.Logf("kill %d: %d acknowledged inserts present", round, len(acked))
	}
}
