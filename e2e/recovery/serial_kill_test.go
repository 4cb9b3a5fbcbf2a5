package recovery

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tributary/tributary/e2e/e2etest"
)

// TestSerialConcurrentKill has four clients insert into a serial-keyed
// table at once (plain INSERTs, multi-row INSERTs and transaction blocks)
// while the server is killed with SIGKILL in the middle, twice; after each
// restart they go on without a duplicate key, and in the end every id is
// distinct and every acknowledged row is there.
func TestSerialConcurrentKill(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	srv := e2etest.StartServer(t)
	setup := e2etest.Connect(t, ctx, srv)
	if _, err := setup.Exec(ctx, `CREATE TABLE sk (id bigserial PRIMARY KEY, client int, n int)`); err != nil {
		t.Fatal(err)
	}
	setup.Close(ctx)

	var mu sync.Mutex
	acked := 0 // rows whose statement succeeded
	var killing atomic.Bool
	round := func(iters int) {
		var wg sync.WaitGroup
		for c := 0; c < 4; c++ {
			wg.Add(1)
			go func(c int) {
				defer wg.Done()
				conn, err := pgx.Connect(ctx, srv.DSN())
				if err != nil {
					if !killing.Load() {
						t.Errorf("client %d: connect: %v", c, err)
					}
					return
				}
				defer conn.Close(context.Background())
				for i := 0; i < iters; i++ {
					var sql string
					rows := 1
					switch i % 3 {
					case 0:
						sql = fmt.Sprintf(`INSERT INTO sk (client, n) VALUES (%d, %d)`, c, i)
					case 1:
						sql = fmt.Sprintf(`INSERT INTO sk (client, n) SELECT %d, g FROM generate_series(1, 40) AS g`, c)
						rows = 40
					case 2:
						sql = fmt.Sprintf(`BEGIN; INSERT INTO sk (client, n) VALUES (%d, %d), (%d, %d); COMMIT`, c, i, c, i)
						rows = 2
					}
					if _, err := conn.Exec(ctx, sql); err != nil {
						if !killing.Load() { // a kill ends the round; anything else is a failure
							t.Errorf("client %d: %s: %v", c, sql, err)
						}
						return
					}
					mu.Lock()
					acked += rows
					mu.Unlock()
				}
			}(c)
		}
		wg.Wait()
	}
	for k := 0; k < 2; k++ {
		killing.Store(true)
		done := make(chan struct{})
		go func() { round(100000); close(done) }() // until the kill
		time.Sleep(300 * time.Millisecond)
		mu.Lock()
		t.Logf("kill %d after %d acknowledged rows", k+1, acked)
		mu.Unlock()
		if err := srv.Kill(); err != nil {
			t.Fatal(err)
		}
		<-done
		if err := srv.Restart(); err != nil {
			t.Fatal(err)
		}
		killing.Store(false)
	}
	round(30) // after the crashes, nothing collides
	if t.Failed() {
		return
	}
	conn := e2etest.Connect(t, ctx, srv)
	var total, distinct int
	if err := conn.QueryRow(ctx, `SELECT count(*), count(DISTINCT id) FROM sk`).Scan(&total, &distinct); err != nil {
		t.Fatal(err)
	}
	// A statement cut by the kill may have committed without its answer.
	if total < acked || total > acked+2*4*40 || distinct != total {
		t.Fatalf("rows %d, distinct ids %d, acknowledged %d", total, distinct, acked)
	}
}
