package e2e

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tributary/tributary/e2e/e2etest"
	"github.com/tributary/tributary/e2e/testserver"
)

// TestLargeDMLStaged: an INSERT ... SELECT bigger than --dml-spill-rows has its
// writes staged into storage chunk by chunk while it runs (issue 14, item 5:
// one 5M-row statement held 4 GB), and stays all or nothing: a reader polling
// the table sees none of its rows or all, a view over the table gets all of
// them in one epoch, a statement that fails after staging (a duplicate key, a
// division by zero late in its input) leaves nothing behind while other
// sessions' inserts of the same moment commit, and a kill -9 keeps exactly
// what was acknowledged. Bench dml-memory measures the memory.
func TestLargeDMLStaged(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srv := testserver.StartWith(t, testserver.Build(t), t.TempDir(), testserver.Options{Args: []string{"--dml-spill-rows", "1000"}})
	conn := e2etest.Connect(t, ctx, srv)
	e2etest.MustExec(t, ctx, conn, "CREATE TABLE big (id bigint PRIMARY KEY, a bigint)")
	e2etest.MustExec(t, ctx, conn, "CREATE MATERIALIZED VIEW bc AS SELECT count(*) AS n, sum(a) AS s FROM big")
	check := func(what string, wantN, wantSum int64) {
		t.Helper()
		var n, s, vn, vs int64
		if err := conn.QueryRow(ctx, "SELECT count(*), coalesce(sum(a), 0) FROM big").Scan(&n, &s); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if n != wantN || s != wantSum {
			t.Fatalf("%s: table has %d rows summing to %d, want %d and %d", what, n, s, wantN, wantSum)
		}
		e2etest.MustExec(t, ctx, conn, "FLUSH")
		if err := conn.QueryRow(ctx, "SELECT n, coalesce(s, 0) FROM bc").Scan(&vn, &vs); err != nil {
			t.Fatalf("%s: view: %v", what, err)
		}
		if vn != n || vs != s {
			t.Fatalf("%s: view says %d rows summing to %d, the table %d and %d", what, vn, vs, n, s)
		}
	}

	// 30,000 rows: 30 stages. A second session polls the count meanwhile.
	const rows = 30000
	reader := e2etest.Connect(t, ctx, srv)
	done := make(chan struct{})
	var wg sync.WaitGroup
	var seen []int64
	var readErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			var n int64
			if err := reader.QueryRow(ctx, "SELECT count(*) FROM big").Scan(&n); err != nil {
				readErr = err
				return
			}
			if len(seen) == 0 || seen[len(seen)-1] != n {
				seen = append(seen, n)
			}
		}
	}()
	e2etest.MustExec(t, ctx, conn, "INSERT INTO big SELECT g, 2 * g FROM generate_series(1, 30000) g")
	close(done)
	wg.Wait()
	if readErr != nil {
		t.Fatal(readErr)
	}
	for _, n := range seen {
		if n != 0 && n != rows {
			t.Fatalf("a reader saw %d rows of the statement's %d (all counts seen: %v)", n, rows, seen)
		}
	}
	sum := int64(rows) * (rows + 1) // of 2*g
	check("after the big insert", rows, sum)

	// Statements that fail after staging part of their rows, while another
	// session inserts single rows: those commit, the failed ones leave nothing.
	other := e2etest.Connect(t, ctx, srv)
	total := int64(rows)
	for i, tc := range []struct{ sql, code string }{
		{"INSERT INTO big SELECT CASE WHEN g = 55000 THEN 1 ELSE g END, 1 FROM generate_series(40001, 60000) g", "23505"},
		{"INSERT INTO big SELECT g, 10 / (g - 58000) FROM generate_series(40001, 60000) g", "22012"},
	} {
		stop := make(chan struct{})
		var small []int64
		var smallErr error
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := int64(100000 + 10000*i); ; id++ {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := other.Exec(ctx, "INSERT INTO big VALUES ($1, 1)", id); err != nil {
					smallErr = err
					return
				}
				small = append(small, id)
			}
		}()
		_, err := conn.Exec(ctx, tc.sql)
		close(stop)
		wg.Wait()
		wantCode(t, err, tc.code)
		if smallErr != nil {
			t.Fatalf("a single-row insert beside the failed statement: %v", smallErr)
		}
		t.Logf("%s: %d single-row inserts beside it", tc.code, len(small))
		sum += int64(len(small))
		total += int64(len(small))
		check("after the failed statement "+tc.code, total, sum)
	}
	logText, err := os.ReadFile(srv.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(logText), "a statement that had staged its writes") {
		t.Fatalf("the failed statements never staged (no recovery logged):\n%s", logText)
	}

	// A statement reading the table it writes reads all its input first
	// (it must not see its own rows), then stages as it writes; so does DELETE.
	var n0, s0 int64
	if err := conn.QueryRow(ctx, "SELECT count(*), sum(a) FROM big").Scan(&n0, &s0); err != nil {
		t.Fatal(err)
	}
	e2etest.MustExec(t, ctx, conn, "INSERT INTO big SELECT id + 1000000, a FROM big")
	check("after doubling the table from itself", 2*n0, 2*s0)
	tag, err := conn.Exec(ctx, "DELETE FROM big WHERE id > 1000000")
	if err != nil || tag.RowsAffected() != n0 {
		t.Fatalf("DELETE: %v, %d rows, want %d", err, tag.RowsAffected(), n0)
	}
	check("after deleting the copies", n0, s0)

	// kill -9 and restart: exactly the acknowledged rows.
	var n, s int64
	if err := conn.QueryRow(ctx, "SELECT count(*), sum(a) FROM big").Scan(&n, &s); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	reader.Close(ctx)
	other.Close(ctx)
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	conn = e2etest.Connect(t, ctx, srv)
	defer conn.Close(context.Background())
	check("after kill -9", n, s)
	e2etest.MustExec(t, ctx, conn, "INSERT INTO big SELECT g, 1 FROM generate_series(200001, 205000) g")
	check("a big insert after the restart", n+5000, s+5000)
}
