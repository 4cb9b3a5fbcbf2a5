package recovery

import (
	"context"
	"math/rand"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tributary/tributary/e2e/e2etest"
	"github.com/tributary/tributary/e2e/testseed"
	"github.com/tributary/tributary/e2e/testserver"
)

// TestKillDuringBulkInsertsNoSync: with --fsync=false a commit of 256 writes or
// more returns before Badger holds it (its commit-log record does). A client
// streams 300-row INSERTs into a table with a GROUP BY view while the server
// is killed with SIGKILL at random moments; after each restart every
// acknowledged statement's rows are there, every statement is whole or
// absent, and the view agrees with the table.
func TestKillDuringBulkInsertsNoSync(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srv := testserver.StartWith(t, testserver.Build(t), t.TempDir(), testserver.Options{Args: []string{"--fsync=false"}})
	seed := testseed.Int64(t)
	rng := rand.New(rand.NewSource(seed))
	const rows = 300 // a statement: from 256 writes a commit returns before Badger takes it

	setup := e2etest.Connect(t, ctx, srv)
	e2etest.MustExec(t, ctx, setup, `CREATE TABLE bulk (id bigint PRIMARY KEY, stmt bigint, note text)`)
	e2etest.MustExec(t, ctx, setup, `CREATE MATERIALIZED VIEW bulk_n AS SELECT stmt % 10 AS k, count(*) AS n FROM bulk GROUP BY stmt % 10`)
	setup.Close(ctx)

	acked := map[int64]bool{} // statements acknowledged
	next := int64(0)          // the next statement
	const rounds = 5
	for round := 0; round < rounds; round++ {
		delay := time.Duration(100+rng.Intn(400)) * time.Millisecond
		for _, s := range killWhileWriting(t, ctx, srv, &next, delay, func(conn *pgx.Conn, s int64) error {
			_, err := conn.Exec(ctx, `INSERT INTO bulk SELECT g, $1::bigint, 'x' FROM generate_series($2::bigint, $3::bigint) AS g`,
				s, s*rows, s*rows+rows-1)
			return err
		}) {
			acked[s] = true
		}
		check := e2etest.Connect(t, ctx, srv)
		perStmt := map[int64]int{}
		rs, err := check.Query(ctx, `SELECT stmt, count(*) FROM bulk GROUP BY stmt`)
		if err != nil {
			t.Fatal(err)
		}
		for rs.Next() {
			var s int64
			var n int
			if err := rs.Scan(&s, &n); err != nil {
				t.Fatal(err)
			}
			perStmt[s] = n
		}
		if err := rs.Err(); err != nil {
			t.Fatal(err)
		}
		for s, n := range perStmt {
			if n != rows {
				t.Fatalf("seed %d round %d: statement %d has %d of its %d rows", seed, round, s, n, rows)
			}
		}
		for s := range acked {
			if perStmt[s] != rows {
				t.Fatalf("seed %d round %d: acknowledged statement %d lost (%d rows)", seed, round, s, perStmt[s])
			}
		}
		var tableRows, viewRows int64
		if err := check.QueryRow(ctx, `SELECT count(*) FROM bulk`).Scan(&tableRows); err != nil {
			t.Fatal(err)
		}
		if err := check.QueryRow(ctx, `SELECT coalesce(sum(n), 0)::bigint FROM bulk_n`).Scan(&viewRows); err != nil {
			t.Fatal(err)
		}
		if tableRows != viewRows {
			t.Fatalf("seed %d round %d: the table has %d rows, the view counts %d", seed, round, tableRows, viewRows)
		}
		check.Close(ctx)
		t.Logf("round %d: %d statements acknowledged, %d present", round, len(acked), len(perStmt))
	}
	if len(acked) < rounds {
		t.Fatalf("only %d statements acknowledged: the writer did not run", len(acked))
	}
}
