package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tributary/tributary/e2e/e2etest"
	"github.com/tributary/tributary/e2e/testseed"
	"github.com/tributary/tributary/e2e/testserver"
)

// TestMemoryLimit runs a server with --memory-limit 64MB (issue 19): the
// budget shows in SHOW PARAMETERS and rw_catalog.rw_memory, a GROUP BY view
// and a join view whose caches would hold more than the stream caches' 16 MB
// share are maintained through inserts, updates and deletes with their caches
// held within their byte budgets (evicting to storage), and both views match
// their batch queries.
//
// It takes 10-15 s on two busy cores (the Go heap sits above a 64 MB soft
// limit, so the collector runs all the time): skipped with -short.
func TestMemoryLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a server at --memory-limit 64MB is slow")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv := testserver.StartWith(t, testserver.Build(t), t.TempDir(), testserver.Options{Args: []string{"--memory-limit", "64MB"}})
	conn := e2etest.Connect(t, ctx, srv)

	var limit string
	params, err := e2etest.Rows(ctx, conn, "SHOW PARAMETERS")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range params {
		if v, ok := strings.CutPrefix(r, "memory_limit|"); ok {
			limit, _, _ = strings.Cut(v, "|")
		}
	}
	if limit != "64MB" {
		t.Fatalf("SHOW PARAMETERS memory_limit = %q, want 64MB", limit)
	}
	budget := func(consumer string) (budget, used int64) {
		t.Helper()
		var b, u *int64
		if err := conn.QueryRow(ctx, "SELECT budget_bytes, used_bytes FROM rw_catalog.rw_memory WHERE consumer = $1 AND job_id IS NULL", consumer).Scan(&b, &u); err != nil {
			t.Fatalf("rw_memory %s: %v", consumer, err)
		}
		if b != nil {
			budget = *b
		}
		if u != nil {
			used = *u
		}
		return budget, used
	}
	if b, used := budget("total"); b != 64<<20 || used <= 0 {
		t.Fatalf("rw_memory total: budget %d used %d, want 64 MiB and some", b, used)
	}
	if b, _ := budget("storage_memtables"); b <= 0 || b > 16<<20 {
		t.Fatalf("rw_memory storage_memtables: budget %d, want within the store's 16 MiB share", b)
	}
	if b, used := budget("storage_mapped_tables"); b != 8<<20 || used < 0 {
		t.Fatalf("rw_memory storage_mapped_tables: budget %d used %d, want an eighth of the limit and a measure", b, used)
	}
	const streamShare = 16 << 20 // a quarter of the limit, before any pressure
	if b, _ := budget("stream_caches"); b <= 0 || b > streamShare {
		t.Fatalf("rw_memory stream_caches: budget %d, want at most %d", b, streamShare)
	}

	e2etest.MustExec(t, ctx, conn, "CREATE TABLE a (id bigint PRIMARY KEY, k bigint, v bigint, pad varchar)")
	e2etest.MustExec(t, ctx, conn, "CREATE TABLE b (id bigint PRIMARY KEY, k bigint, w bigint, pad varchar)")
	mvs := map[string]string{
		"mem_groups": "SELECT k, count(*) AS n, sum(v) AS s, max(pad) AS m FROM a GROUP BY k",
		"mem_join":   "SELECT a.id AS aid, b.id AS bid, a.k, a.v + b.w AS vw FROM a JOIN b ON a.k = b.k",
	}
	for name, q := range mvs {
		e2etest.MustExec(t, ctx, conn, fmt.Sprintf("CREATE MATERIALIZED VIEW %s AS %s", name, q))
	}
	// 8,000 rows a side with 400-byte pads on 8,000 keys.
	const rows, keys = 8000, 8000
	seed := testseed.For(t)
	rng := rand.New(rand.NewPCG(seed, 19))
	for _, tbl := range []string{"a", "b"} {
		for lo := 1; lo <= rows; lo += rows / 2 {
			e2etest.MustExec(t, ctx, conn, fmt.Sprintf("INSERT INTO %s SELECT g, g %% %d, g * 7 %% 101, repeat(chr(97 + (g %% 26)::int), 400) FROM generate_series(%d, %d) g",
				tbl, keys, lo, lo+rows/2-1))
		}
	}
	// Random updates (moving rows between keys) and deletes.
	for range 5 {
		var sb strings.Builder
		for range 40 {
			id := 1 + rng.IntN(rows)
			tbl := []string{"a", "b"}[rng.IntN(2)]
			switch rng.IntN(3) {
			case 0:
				fmt.Fprintf(&sb, "DELETE FROM %s WHERE id = %d;", tbl, id)
			default:
				fmt.Fprintf(&sb, "UPDATE %s SET k = %d, pad = repeat('z', %d) WHERE id = %d;", tbl, rng.IntN(keys), rng.IntN(400), id)
			}
		}
		if _, err := conn.Exec(ctx, sb.String(), pgx.QueryExecModeSimpleProtocol); err != nil {
			t.Fatal(err)
		}
	}
	e2etest.MustExec(t, ctx, conn, "FLUSH")
	e2etest.CheckMVs(ctx, t, conn, mvs, "with --memory-limit 64MB")

	// The operators' caches hold within the stream caches' share: without
	// it they would hold about 21 MB (8,000 groups of about 1.1 kB, 8,000
	// join rows a side of about 780 bytes; measured with --memory-limit 8GB).
	ops, err := e2etest.Rows(ctx, conn, "SELECT consumer, count(*) FROM rw_catalog.rw_memory WHERE job_id IS NOT NULL GROUP BY consumer")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(ops, " "); !strings.Contains(got, "hash agg|") || !strings.Contains(got, "hash join left|") || !strings.Contains(got, "hash join right|") {
		t.Fatalf("rw_memory's operator caches: %v, want the hash agg's and both join sides'", ops)
	}
	var used int64
	if err := conn.QueryRow(ctx, "SELECT sum(used_bytes) FROM rw_catalog.rw_memory WHERE job_id IS NOT NULL").Scan(&used); err != nil {
		t.Fatal(err)
	}
	if used <= 0 || used > streamShare {
		t.Fatalf("operator caches hold %d bytes together, want some and at most %d", used, streamShare)
	}
	if _, poolUsed := budget("stream_caches"); poolUsed <= 0 || poolUsed > streamShare {
		t.Fatalf("stream_caches holds %d bytes, want some and at most %d", poolUsed, streamShare)
	}
	// Dropping the views returns their caches' bytes.
	for name := range mvs {
		e2etest.MustExec(t, ctx, conn, "DROP MATERIALIZED VIEW "+name)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, u := budget("stream_caches"); u == 0 {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("stream_caches holds %d bytes 20s after the views were dropped", u)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
