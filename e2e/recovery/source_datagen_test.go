package recovery

import (
	"context"
	"testing"
	"time"

	"github.com/tributary/tributary/e2e/e2etest"
)

// TestDatagenResumesAfterKill SIGKILLs the server twice while a datagen table
// fills (3 splits, 2000 rows/s, 20000 rows) and checks that the table ends
// with exactly the sequence 1..20000: every split resumed from its committed
// offset, without gaps or duplicates (a duplicate would be a pk conflict).
func TestDatagenResumesAfterKill(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for about 15 s")
	}
	const total = 20000
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srv := e2etest.StartServer(t)
	conn := e2etest.Connect(t, ctx, srv)
	if _, err := conn.Exec(ctx, `CREATE TABLE g (id bigint PRIMARY KEY, v int, s varchar) WITH (connector = 'datagen',
		fields.id.kind = 'sequence', fields.id.start = '1', fields.id.end = '20000',
		fields.v.min = '0', fields.v.max = '99', fields.v.seed = '3', fields.s.length = '8',
		datagen.rows.per.second = '2000', datagen.split.num = '3')`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `CREATE MATERIALIZED VIEW gm AS SELECT count(*) AS n, count(DISTINCT id) AS d, sum(id) AS s FROM g`); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	var last int64
	for round := 0; round < 2; round++ {
		// Rows commit with each barrier (1 s): wait for some after each start.
		time.Sleep(3 * time.Second)
		if err := srv.Kill(); err != nil {
			t.Fatalf("kill %d: %v", round, err)
		}
		if err := srv.Restart(); err != nil {
			t.Fatalf("restart after kill %d: %v", round, err)
		}
		c := e2etest.Connect(t, ctx, srv)
		var n int64
		if err := c.QueryRow(ctx, `SELECT count(*) FROM g`).Scan(&n); err != nil {
			t.Fatalf("count after kill %d: %v", round, err)
		}
		c.Close(ctx)
		t.Logf("after kill %d: %d rows", round, n)
		if n <= last || n >= total {
			t.Fatalf("after kill %d: %d rows (before: %d); want progress, not done yet", round, n, last)
		}
		last = n
	}
	c := e2etest.Connect(t, ctx, srv)
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, `WAIT`); err != nil {
		t.Fatalf("WAIT: %v", err)
	}
	var n, distinct, lo, hi, sum int64
	if err := c.QueryRow(ctx, `SELECT count(*), count(DISTINCT id), min(id), max(id), sum(id) FROM g`).Scan(&n, &distinct, &lo, &hi, &sum); err != nil {
		t.Fatal(err)
	}
	if n != total || distinct != total || lo != 1 || hi != total || sum != total*(total+1)/2 {
		t.Fatalf("table: count %d distinct %d min %d max %d sum %d; want exactly 1..%d", n, distinct, lo, hi, sum, total)
	}
	var mn, md, ms int64
	if err := c.QueryRow(ctx, `SELECT n, d, s FROM gm`).Scan(&mn, &md, &ms); err != nil {
		t.Fatal(err)
	}
	if mn != total || md != total || ms != total*(total+1)/2 {
		t.Fatalf("view: n %d d %d s %d; want %d rows", mn, md, ms, total)
	}
}
