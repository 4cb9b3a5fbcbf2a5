package recovery

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tributary/tributary/e2e/e2etest"
	"github.com/tributary/tributary/e2e/testseed"
)

// TestTransactionsBank is issue 17's transaction check: 20 clients move
// amounts between accounts in transaction blocks, some of which debit
// without crediting and roll back, some of which meet a concurrent writer
// and get 40001 (and retry), while the server is killed with SIGKILL
// several times. In every snapshot read (a transaction block reading the
// table and its views together) the total is constant and each view equals
// its query over the table.
func TestTransactionsBank(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a server")
	}
	seed := testseed.Int64(t)
	rng := rand.New(rand.NewSource(seed))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srv := e2etest.StartServer(t)
	conn := e2etest.Connect(t, ctx, srv)
	const accounts, initial = 100, 1000
	const total = accounts * initial
	for _, s := range []string{
		"CREATE TABLE acct (id int PRIMARY KEY, balance bigint NOT NULL)",
		fmt.Sprintf("INSERT INTO acct SELECT i, %d FROM generate_series(1, %d) i", initial, accounts),
		"CREATE MATERIALIZED VIEW acct_total AS SELECT count(*) AS n, sum(balance) AS s FROM acct",
		"CREATE MATERIALIZED VIEW acct_buckets AS SELECT id % 7 AS b, sum(balance) AS s, count(*) AS n FROM acct GROUP BY id % 7",
	} {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}

	var committed, rolledBack, conflicts, lost atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	client := func(r *rand.Rand) {
		defer wg.Done()
		var c *pgx.Conn
		defer func() {
			if c != nil {
				c.Close(context.Background())
			}
		}()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if c == nil {
				var err error
				if c, err = pgx.Connect(ctx, srv.DSN()); err != nil {
					c = nil
					select {
					case <-stop:
						return
					case <-time.After(20 * time.Millisecond):
					}
					continue
				}
			}
			from, to := 1+r.Intn(accounts), 1+r.Intn(accounts)
			amount := 1 + r.Intn(50)
			abort := r.Intn(5) == 0
			err := func() error {
				tx, err := c.Begin(ctx)
				if err != nil {
					return err
				}
				defer tx.Rollback(context.Background())
				var balance int64
				if err := tx.QueryRow(ctx, "SELECT balance FROM acct WHERE id = $1", from).Scan(&balance); err != nil {
					return err
				}
				if _, err := tx.Exec(ctx, "UPDATE acct SET balance = balance - $1 WHERE id = $2", amount, from); err != nil {
					return err
				}
				if abort {
					// Debited, never credited: only a rollback keeps the total.
					if err := tx.Rollback(ctx); err != nil {
						return err
					}
					rolledBack.Add(1)
					return nil
				}
				if _, err := tx.Exec(ctx, "UPDATE acct SET balance = balance + $1 WHERE id = $2", amount, to); err != nil {
					return err
				}
				return tx.Commit(ctx)
			}()
			var pe *pgconn.PgError
			switch {
			case err == nil:
				if !abort {
					committed.Add(1)
				}
			case errors.As(err, &pe) && pe.Code == "40001":
				conflicts.Add(1)
			default:
				// The server died under it (or the connection broke): the
				// outcome is unknown, and either is fine for the total.
				lost.Add(1)
				c.Close(context.Background())
				c = nil
			}
		}
	}
	for range 20 {
		wg.Add(1)
		go client(rand.New(rand.NewSource(rng.Int63())))
	}
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		wg.Wait()
	}()

	// check reads the table and both views in one snapshot.
	check := func(when string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			err := bankCheck(ctx, conn, accounts, total)
			if err == nil {
				return
			}
			var pe *pgconn.PgError
			if errors.As(err, &pe) || errors.Is(err, errBank) || time.Now().After(deadline) {
				t.Fatalf("%s: %v", when, err)
			}
			// A connection the restart broke: reconnect and read again.
			conn.Close(context.Background())
			conn = e2etest.Connect(t, ctx, srv)
		}
	}
	for kill := 0; kill < 5; kill++ {
		for i := 0; i < 3; i++ {
			time.Sleep(time.Duration(100+rng.Intn(300)) * time.Millisecond)
			check(fmt.Sprintf("while running, before kill %d", kill+1))
		}
		if err := srv.Kill(); err != nil {
			t.Fatal(err)
		}
		conn.Close(context.Background())
		if err := srv.Restart(); err != nil {
			t.Fatal(err)
		}
		conn = e2etest.Connect(t, ctx, srv)
		check(fmt.Sprintf("after restart %d", kill+1))
	}
	close(stop)
	wg.Wait()
	if _, err := conn.Exec(ctx, "FLUSH"); err != nil {
		t.Fatal(err)
	}
	check("at the end")
	t.Logf("%d committed, %d rolled back, %d serialization failures, %d cut by a kill", committed.Load(), rolledBack.Load(), conflicts.Load(), lost.Load())
	if committed.Load() < 100 || rolledBack.Load() == 0 {
		t.Fatalf("too little ran: %d committed, %d rolled back", committed.Load(), rolledBack.Load())
	}
}

// errBank marks a broken invariant (not a broken connection).
var errBank = errors.New("bank invariant")

// bankCheck reads acct and its views in one transaction block (one
// snapshot): the total is constant and the views equal their queries.
func bankCheck(ctx context.Context, conn *pgx.Conn, accounts, total int64) error {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.Background())
	var n, s, vn, vs int64
	if err := tx.QueryRow(ctx, "SELECT count(*), sum(balance) FROM acct").Scan(&n, &s); err != nil {
		return err
	}
	if err := tx.QueryRow(ctx, "SELECT n, s FROM acct_total").Scan(&vn, &vs); err != nil {
		return err
	}
	if n != accounts || s != total {
		return fmt.Errorf("%w: table: %d accounts holding %d, want %d holding %d", errBank, n, s, accounts, total)
	}
	if vn != n || vs != s {
		return fmt.Errorf("%w: view acct_total: %d accounts holding %d, the table %d holding %d", errBank, vn, vs, n, s)
	}
	var diff int64
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM (
		SELECT id % 7 AS b, sum(balance) AS s, count(*) AS n FROM acct GROUP BY id % 7
		EXCEPT SELECT b, s, n FROM acct_buckets) d`).Scan(&diff); err != nil {
		return err
	}
	if diff != 0 {
		return fmt.Errorf("%w: view acct_buckets differs from its query in %d groups", errBank, diff)
	}
	return tx.Commit(ctx)
}
