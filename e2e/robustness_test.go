package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tributary/tributary/e2e/e2etest"
)

// TestDeepStatementsDoNotCrash sends statements nested deeper than any stage
// can recurse (each ended the process with a Go stack overflow before the
// depth limits) to a real server, in the simple and the extended protocol:
// each must fail with 54001 or 54000, quickly, and the server must keep
// answering on the same connection.
func TestDeepStatementsDoNotCrash(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srv := e2etest.StartServer(t)
	conn := e2etest.Connect(t, ctx, srv)
	if _, err := conn.Exec(ctx, "CREATE TABLE t (id int PRIMARY KEY, x int)"); err != nil {
		t.Fatal(err)
	}
	ctes := []string{"a0 AS (SELECT 1 AS x)"}
	for i := 1; i < 40; i++ {
		ctes = append(ctes, fmt.Sprintf("a%d AS (SELECT a%d.x FROM a%d, a%d b)", i, i-1, i-1, i-1))
	}
	for _, tc := range []struct {
		name, sql, code string
	}{
		{"400k-term sum", "SELECT 0" + strings.Repeat("+1", 400000), "54001"},
		{"1M parentheses", "SELECT " + strings.Repeat("(", 1000000) + "1" + strings.Repeat(")", 1000000), "54001"},
		{"100k casts", "SELECT 1" + strings.Repeat("::int", 100000), "54001"},
		{"100k NOTs", "SELECT " + strings.Repeat("NOT ", 100000) + "true", "54001"},
		{"20k nested function calls", "SELECT " + strings.Repeat("abs(", 20000) + "1" + strings.Repeat(")", 20000), "54001"},
		{"20k nested subqueries", "SELECT * FROM " + strings.Repeat("(SELECT * FROM ", 20000) + "t" + strings.Repeat(") x", 20000), "54001"},
		{"20k-table join", "SELECT 1 FROM t" + strings.Repeat(", t", 20000), "54001"},
		{"long WHERE chain in a view", "CREATE MATERIALIZED VIEW m AS SELECT * FROM t WHERE x = 0" + strings.Repeat(" OR x = 1", 20000), "54001"},
		{"WITH queries doubling 40 times", "WITH " + strings.Join(ctes, ", ") + " SELECT count(*) FROM a39", "54000"},
	} {
		for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeDescribeExec} {
			start := time.Now()
			_, err := conn.Exec(ctx, tc.sql, mode)
			wantCode(t, err, tc.code)
			if d := time.Since(start); d > 20*time.Second {
				t.Errorf("%s: took %v", tc.name, d)
			}
			var one int
			if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
				t.Fatalf("%s (mode %v): the server no longer answers: %v", tc.name, mode, err)
			}
		}
	}
	// Just under the limits, the same forms work.
	var sum int64
	if err := conn.QueryRow(ctx, "SELECT 0"+strings.Repeat("+1", 9000)).Scan(&sum); err != nil || sum != 9000 {
		t.Errorf("9000-term sum: %d %v", sum, err)
	}
	var n int
	if err := conn.QueryRow(ctx, "SELECT "+strings.Repeat("(", 900)+"1"+strings.Repeat(")", 900)).Scan(&n); err != nil || n != 1 {
		t.Errorf("900 parentheses: %d %v", n, err)
	}
}

// TestLongListsLinear: a 100,000-row VALUES list (each value cast, as ORMs
// write them) and a statement with 65,535 parameters, the protocol's most,
// took minutes when the parser spliced each cast and $n in turn (quadratic);
// both must now finish well inside a generous deadline and give the right
// answer. The bound is 30 s against about 2 s measured for both on a loaded
// 2-core machine: it catches quadratic time, not a slow machine.
func TestLongListsLinear(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv := e2etest.StartServer(t)
	conn := e2etest.Connect(t, ctx, srv)
	if _, err := conn.Exec(ctx, "CREATE TABLE lv (id int PRIMARY KEY, x bigint)"); err != nil {
		t.Fatal(err)
	}
	const rows = 100000
	var b strings.Builder
	b.WriteString("INSERT INTO lv VALUES ")
	for i := 0; i < rows; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "(%d::int, '%d'::bigint)", i, i*2)
	}
	start := time.Now()
	if _, err := conn.Exec(ctx, b.String()); err != nil {
		t.Fatalf("%d-row VALUES: %v", rows, err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("%d-row VALUES took %v", rows, d)
	}
	var n, sum int64
	if err := conn.QueryRow(ctx, "SELECT count(*), sum(x) FROM lv").Scan(&n, &sum); err != nil || n != rows || sum != rows*(rows-1) {
		t.Fatalf("count, sum = %d, %d (%v), want %d, %d", n, sum, err, rows, rows*(rows-1))
	}

	const params = 65535
	b.Reset()
	b.WriteString("SELECT count(*) FROM (SELECT 65534 AS id UNION ALL SELECT 65535) s WHERE id IN ($1::int")
	args := []any{int32(0)}
	for i := 2; i <= params; i++ {
		fmt.Fprintf(&b, ", $%d::int", i)
		args = append(args, int32(i-1))
	}
	b.WriteString(")")
	start = time.Now()
	if err := conn.QueryRow(ctx, b.String(), args...).Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d parameters: count = %d (%v), want 1", params, n, err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("%d parameters took %v", params, d)
	}
}
