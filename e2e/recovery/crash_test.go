package recovery

import (
	"context"
	"math/rand"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tributary/tributary/e2e/e2etest"
	"github.com/tributary/tributary/e2e/testseed"
	"github.com/tributary/tributary/e2e/testserver"
)

// TestKillDuringInserts kills the server with SIGKILL while a client streams
// single-row INSERTs, restarts it, and checks every acknowledged row is there.
func TestKillDuringInserts(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srv := e2etest.StartServer(t)
	seed := testseed.Int64(t)
	rng := rand.New(rand.NewSource(seed))

	setup := e2etest.Connect(t, ctx, srv)
	if _, err := setup.Exec(ctx, `CREATE TABLE acks (id bigint PRIMARY KEY, round int, note text)`); err != nil {
		t.Fatal(err)
	}
	setup.Close(ctx)

	acked := map[int64]bool{}
	next := int64(0)
	const rounds = 5
	for round := 0; round < rounds; round++ {
		// Let some inserts land, then crash at a random moment.
		delay := time.Duration(50+rng.Intn(400)) * time.Millisecond
		for _, id := range killWhileWriting(t, ctx, srv, &next, delay, func(conn *pgx.Conn, id int64) error {
			_, err := conn.Exec(ctx, `INSERT INTO acks VALUES ($1, $2, 'x')`, id, round)
			return err
		}) {
			acked[id] = true
		}
		check, err := pgx.Connect(ctx, srv.DSN())
		if err != nil {
			t.Fatalf("reconnect: %v", err)
		}
		rows, err := check.Query(ctx, `SELECT id FROM acks`)
		if err != nil {
			t.Fatalf("select: %v", err)
		}
		present := map[int64]bool{}
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			present[id] = true
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		check.Close(ctx)
		missing := 0
		for id := range acked {
			if !present[id] {
				missing++
			}
		}
		if missing > 0 {
			t.Fatalf("round %d: %d of %d acknowledged inserts lost", round, missing, len(acked))
		}
		t.Logf("round %d: %d acknowledged, %d present", round, len(acked), len(present))
	}
	if len(acked) < rounds {
		t.Fatalf("only %d inserts acknowledged: the writer did not run", len(acked))
	}
}

// killWhileWriting has a client call write(conn, i) for i = *next, *next+1,
// ... on a connection of its own, SIGKILLs srv after delay, waits for the
// client to stop, and restarts srv. It returns the i whose writes were
// acknowledged; *next is then the first i not written.
func killWhileWriting(t *testing.T, ctx context.Context, srv *testserver.Server, next *int64, delay time.Duration,
	write func(conn *pgx.Conn, i int64) error) []int64 {
	t.Helper()
	conn, err := pgx.Connect(ctx, srv.DSN())
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	var mu sync.Mutex
	var acked []int64
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
			i := *next
			*next++
			mu.Unlock()
			if write(conn, i) != nil {
				return // the server died under us
			}
			mu.Lock()
			acked = append(acked, i)
			mu.Unlock()
		}
	}()
	time.Sleep(delay)
	if err := srv.Kill(); err != nil {
		t.Fatalf("kill: %v", err)
	}
	close(stop)
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("writer did not stop")
	}
	conn.Close(context.Background())
	if err := srv.Restart(); err != nil {
		t.Fatalf("restart after kill: %v", err)
	}
	return acked
}
