package e2e

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tributary/tributary/e2e/e2etest"
)

// TestTransactionCopy: COPY FROM STDIN inside a block is one of its writes:
// read by the block, invisible to others, dropped by ROLLBACK, kept by COMMIT.
func TestTransactionCopy(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv := e2etest.StartServer(t)
	conn, other := e2etest.Connect(t, ctx, srv), e2etest.Connect(t, ctx, srv)
	if _, err := conn.Exec(ctx, "CREATE TABLE c (id int PRIMARY KEY, v text)"); err != nil {
		t.Fatal(err)
	}
	rows := [][]any{{1, "a"}, {2, "b"}, {3, "c"}}
	count := func(c *pgx.Conn, q pgx.Tx) int {
		t.Helper()
		var n int
		var err error
		if q != nil {
			err = q.QueryRow(ctx, "SELECT count(*) FROM c").Scan(&n)
		} else {
			err = c.QueryRow(ctx, "SELECT count(*) FROM c").Scan(&n)
		}
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, commit := range []bool{false, true} {
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := tx.CopyFrom(ctx, pgx.Identifier{"c"}, []string{"id", "v"}, pgx.CopyFromRows(rows)); err != nil || n != 3 {
			t.Fatalf("copy in a block: %d rows, %v", n, err)
		}
		if n := count(nil, tx); n != 3 {
			t.Fatalf("the block reads %d copied rows, want 3", n)
		}
		if n := count(other, nil); n != 0 {
			t.Fatalf("another session reads %d rows of an open block's COPY", n)
		}
		if commit {
			err = tx.Commit(ctx)
		} else {
			err = tx.Rollback(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
		want := 0
		if commit {
			want = 3
		}
		if n := count(other, nil); n != want {
			t.Fatalf("after commit=%v another session reads %d rows, want %d", commit, n, want)
		}
	}
}

// TestTransactionSavepoints: pgx's nested transactions are savepoints
// (Begin on a Tx is SAVEPOINT, Rollback ROLLBACK TO, Commit RELEASE): a
// nested rollback drops only its writes, and one after a failed statement
// makes the block usable again.
func TestTransactionSavepoints(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv := e2etest.StartServer(t)
	conn := e2etest.Connect(t, ctx, srv)
	if _, err := conn.Exec(ctx, "CREATE TABLE s (id int PRIMARY KEY, v text)"); err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	exec := func(q pgx.Tx, sql string) error {
		_, err := q.Exec(ctx, sql)
		return err
	}
	nested := func() pgx.Tx {
		t.Helper()
		n, err := tx.Begin(ctx)
		if err != nil {
			t.Fatalf("savepoint: %v", err)
		}
		return n
	}
	if err := exec(tx, "INSERT INTO s VALUES (1, 'kept')"); err != nil {
		t.Fatal(err)
	}
	n1 := nested()
	if err := exec(n1, "INSERT INTO s VALUES (2, 'rolled back')"); err != nil {
		t.Fatal(err)
	}
	if err := n1.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	n2 := nested()
	if err := exec(n2, "INSERT INTO s VALUES (3, 'released')"); err != nil {
		t.Fatal(err)
	}
	if err := n2.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	n3 := nested()
	err = exec(n3, "INSERT INTO s VALUES (1, 'duplicate')")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "23505" {
		t.Fatalf("duplicate key in a savepoint: %v, want 23505", err)
	}
	if err := exec(tx, "SELECT 1"); !errors.As(err, &pe) || pe.Code != "25P02" {
		t.Fatalf("a statement in the failed block: %v, want 25P02", err)
	}
	if err := n3.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := exec(tx, "INSERT INTO s VALUES (4, 'after recovery')"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	rows, err := conn.Query(ctx, "SELECT id FROM s ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(ids) != "[1 3 4]" {
		t.Fatalf("committed ids %v, want [1 3 4]", ids)
	}
}

// TestTransactionRetry: pgx's BeginTxFunc in a retry loop on 40001, as an
// application writes it. Each block reads a value and writes it back
// changed; on its first attempt another session commits a conflicting
// write in between (an UPDATE of the same row, then an upsert of the same
// new key), so the first committer wins, this block fails with 40001 and
// writes nothing, and its second attempt, on a fresh snapshot, commits
// on top of the other write.
func TestTransactionRetry(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv := e2etest.StartServer(t)
	conn, other := e2etest.Connect(t, ctx, srv), e2etest.Connect(t, ctx, srv)
	for _, s := range []string{"CREATE TABLE r (id int PRIMARY KEY, n int)", "INSERT INTO r VALUES (1, 0)"} {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	// retry runs body in blocks until one commits and returns how many ran
	// and the SQLSTATEs of the failed ones.
	retry := func(body func(tx pgx.Tx, attempt int) error) (int, []string) {
		t.Helper()
		var codes []string
		for attempt := 1; ; attempt++ {
			err := pgx.BeginTxFunc(ctx, conn, pgx.TxOptions{IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
				return body(tx, attempt)
			})
			var pe *pgconn.PgError
			switch {
			case err == nil:
				return attempt, codes
			case errors.As(err, &pe) && pe.Code == "40001" && attempt < 5:
				codes = append(codes, pe.Code)
			default:
				t.Fatalf("attempt %d: %v", attempt, err)
			}
		}
	}
	value := func(id int) int {
		t.Helper()
		var n int
		if err := conn.QueryRow(ctx, "SELECT n FROM r WHERE id = $1", id).Scan(&n); err != nil {
			t.Fatalf("row %d: %v", id, err)
		}
		return n
	}

	attempts, codes := retry(func(tx pgx.Tx, attempt int) error {
		var n int
		if err := tx.QueryRow(ctx, "SELECT n FROM r WHERE id = 1").Scan(&n); err != nil {
			return err
		}
		if attempt == 1 {
			if _, err := other.Exec(ctx, "UPDATE r SET n = n + 100 WHERE id = 1"); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, "UPDATE r SET n = $1 WHERE id = 1", n+10)
		return err
	})
	if attempts != 2 || len(codes) != 1 || value(1) != 110 {
		t.Fatalf("lost update: %d attempts (%v), n = %d; want 2 attempts (one 40001), n = 110", attempts, codes, value(1))
	}

	upsert := "INSERT INTO r VALUES (2, $1) ON CONFLICT (id) DO UPDATE SET n = r.n + EXCLUDED.n"
	attempts, codes = retry(func(tx pgx.Tx, attempt int) error {
		var seen int
		if err := tx.QueryRow(ctx, "SELECT count(*) FROM r WHERE id = 2").Scan(&seen); err != nil {
			return err
		}
		if attempt == 1 {
			if _, err := other.Exec(ctx, upsert, 100); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, upsert, 10*(seen+1))
		return err
	})
	if attempts != 2 || len(codes) != 1 || value(2) != 120 {
		t.Fatalf("concurrent upsert: %d attempts (%v), n = %d; want 2 attempts (one 40001), n = 120", attempts, codes, value(2))
	}
}
