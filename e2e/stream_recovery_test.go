package e2e

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// reloadGen rebuilds the generator's view of which rows exist after a crash
// (statements in flight at the kill may or may not have committed).
func reloadGen(ctx context.Context, t *testing.T, conn *pgx.Conn, g *dmlGen) {
	t.Helper()
	for _, table := range []string{"t1", "t2", "t3", "t4"} {
		rows, err := rowsOf(ctx, conn, "SELECT id FROM "+table)
		if err != nil {
			t.Fatal(err)
		}
		g.ids[table] = g.ids[table][:0]
		for _, r := range rows {
			id, _ := strconv.Atoi(r)
			g.ids[table] = append(g.ids[table], id)
			if id >= g.next[table] {
				g.next[table] = id + 1
			}
		}
	}
}

// TestStreamingRecovery kills the server (SIGKILL) at random points while DML
// streams in, restarts it, and checks every MV equals its batch recompute and
// every acknowledged insert is present.
func TestStreamingRecovery(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	srv := startServer(t)
	setup := connect(t, ctx, srv)
	mvs := createOracle(ctx, t, setup)
	if _, err := setup.Exec(ctx, `CREATE TABLE acks (id bigint PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	if _, err := setup.Exec(ctx, `CREATE MATERIALIZED VIEW ack_count AS SELECT count(*) AS n FROM acks`); err != nil {
		t.Fatal(err)
	}
	mvs["ack_count"] = `SELECT count(*) AS n FROM acks`
	setup.Close(ctx)

	gen := newDMLGen(seed)
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
				sql := gen.statement()
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
		time.Sleep(time.Duration(30+gen.rng.Intn(300)) * time.Millisecond)
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
		checkMVs(ctx, t, check, mvs, fmt.Sprintf("after kill %d", round))
		present, err := rowsOf(ctx, check, "SELECT id FROM acks")
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
		reloadGen(ctx, t, check, gen)
		check.Close(ctx)
		t.Logf("kill %d: %d acknowledged inserts present", round, len(acked))
	}
}
