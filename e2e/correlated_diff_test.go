package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tributary/tributary/e2e/e2etest"
	"github.com/tributary/tributary/e2e/pgtest"
	"github.com/tributary/tributary/e2e/testseed"
)

// TestCorrelatedDifferential (issue 17) runs random correlated subqueries —
// [NOT] EXISTS, [NOT] IN, ANY/ALL, scalar aggregates, ORDER BY ... LIMIT 1,
// LATERAL, in WHERE and in the select list — over small tables full of
// NULLs and duplicates, on Tributary and on PostgreSQL 15, and compares the
// answers (or the SQLSTATEs, e.g. 21000 for a scalar subquery with several
// rows).
func TestCorrelatedDifferential(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pg, err := pgx.Connect(ctx, pgtest.Start(t).DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close(context.Background())
	trib := e2etest.Connect(t, ctx, e2etest.StartServer(t))

	seed := testseed.Int64(t)
	rng := rand.New(rand.NewSource(seed))
	small := func() string {
		if rng.Intn(5) == 0 {
			return "NULL"
		}
		return fmt.Sprint(rng.Intn(4))
	}
	setup := []string{
		"CREATE TABLE a (id int PRIMARY KEY, k int, v int)",
		"CREATE TABLE b (id int PRIMARY KEY, k int, v int)",
	}
	for _, tbl := range []string{"a", "b"} {
		var rows []string
		for id := range 12 {
			rows = append(rows, fmt.Sprintf("(%d, %s, %s)", id, small(), small()))
		}
		setup = append(setup, fmt.Sprintf("INSERT INTO %s VALUES %s", tbl, strings.Join(rows, ", ")))
	}
	for _, s := range setup {
		for _, c := range []*pgx.Conn{pg, trib} {
			if _, err := c.Exec(ctx, s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
	}

	query := correlatedQueries(rng)
	answer := func(c *pgx.Conn, q string) (string, error) { return sortedAnswer(ctx, c, q) }
	code := func(err error) string {
		var pe *pgconn.PgError
		if errors.As(err, &pe) {
			return pe.Code
		}
		return err.Error()
	}
	for range 150 {
		q := query()
		want, werr := answer(pg, q)
		got, gerr := answer(trib, q)
		switch {
		case werr != nil || gerr != nil:
			if werr == nil || gerr == nil || code(werr) != code(gerr) {
				t.Errorf("%s\nPostgreSQL: %v\nTributary:  %v", q, werr, gerr)
			}
		case got != want:
			t.Errorf("%s\nPostgreSQL:\n%s\nTributary:\n%s", q, want, got)
		}
	}
}

// correlatedQueries returns a generator of random queries over tables a and
// b (id, k, v) with correlated subqueries.
func correlatedQueries(rng *rand.Rand) func() string {
	pick := func(xs ...string) string { return xs[rng.Intn(len(xs))] }
	// corr is the subquery's WHERE: a correlation on k, sometimes with a
	// comparison of v or a local condition.
	corr := func() string {
		w := "b.k = a.k"
		if rng.Intn(6) == 0 {
			w = "b.k <= a.k"
		}
		switch rng.Intn(4) {
		case 0:
			w += " AND b.v " + pick("<", ">=", "<>") + " a.v"
		case 1:
			w += " AND b.v IS NOT NULL"
		case 2:
			w += " AND b.id % 2 = " + fmt.Sprint(rng.Intn(2))
		}
		return w
	}
	// sub is a subquery condition; several (one that may return several
	// rows) only where every row evaluates it (the order in which
	// PostgreSQL evaluates the conditions of a WHERE clause decides which
	// rows raise 21000).
	sub := func(several bool) string {
		n := 8
		if several {
			n = 9
		}
		switch rng.Intn(n + 3) {
		case n:
			return fmt.Sprintf("%s (SELECT 1 FROM b JOIN b c ON c.k = b.v WHERE %s AND c.v %s a.v)", pick("EXISTS", "NOT EXISTS"), corr(), pick("<", ">=", "="))
		case n + 1:
			return fmt.Sprintf("(SELECT count(c.id) FROM (SELECT b.id, b.v FROM b WHERE %s) x LEFT JOIN b c ON c.id = x.v) %s 1", corr(), pick("<", "=", ">"))
		case n + 2:
			return fmt.Sprintf("a.v %s (SELECT x.v FROM (SELECT b.v, b.k FROM b WHERE b.v IS %sNULL) x WHERE x.k = a.k)", pick("IN", "NOT IN"), pick("", "NOT "))
		case 0:
			return fmt.Sprintf("EXISTS (SELECT 1 FROM b WHERE %s)", corr())
		case 1:
			return fmt.Sprintf("NOT EXISTS (SELECT 1 FROM b WHERE %s)", corr())
		case 2:
			return fmt.Sprintf("a.v IN (SELECT b.v FROM b WHERE %s)", corr())
		case 3:
			return fmt.Sprintf("a.v NOT IN (SELECT b.v FROM b WHERE %s)", corr())
		case 4:
			return fmt.Sprintf("a.v %s %s (SELECT b.v FROM b WHERE %s)", pick("<", "=", ">="), pick("ANY", "ALL"), corr())
		case 5:
			return fmt.Sprintf("(SELECT %s FROM b WHERE %s) %s 1", pick("count(*)", "count(b.v)", "max(b.v)", "sum(b.v)", "min(b.id)"), corr(), pick("<", "=", ">", "IS NULL AND 1 ="))
		case 6:
			return fmt.Sprintf("(SELECT b.v FROM b WHERE b.k = a.k ORDER BY b.v DESC NULLS LAST, b.id LIMIT 1) %s a.v", pick("<", "=", ">"))
		case 7:
			return fmt.Sprintf("a.k = (SELECT b.k FROM b WHERE b.id = a.id + %d)", rng.Intn(3))
		default:
			// May return several rows: 21000 on both, or an answer on both.
			return fmt.Sprintf("(SELECT b.v FROM b WHERE b.k = a.k AND b.id %% 5 = %d) = a.v", rng.Intn(5))
		}
	}
	return func() string {
		switch rng.Intn(7) {
		case 4:
			return fmt.Sprintf("SELECT a.k, count(*), (SELECT %s FROM b WHERE b.k = a.k) FROM a GROUP BY a.k", pick("count(*)", "max(b.v)", "sum(b.v)"))
		case 5:
			return fmt.Sprintf("SELECT a.id FROM a WHERE %s (SELECT 1 FROM b WHERE %s AND %s (SELECT 1 FROM b c WHERE c.id = b.v AND c.k %s 1))",
				pick("EXISTS", "NOT EXISTS"), corr(), pick("EXISTS", "NOT EXISTS"), pick("=", "<>"))
		case 6:
			return fmt.Sprintf("SELECT a.id, a.v %s (SELECT DISTINCT b.v FROM b WHERE %s ORDER BY 1) FROM a ORDER BY (SELECT count(*) FROM b WHERE b.k = a.k), a.id",
				pick("IN", "NOT IN"), corr())
		case 0:
			return fmt.Sprintf("SELECT a.id, %s, %s FROM a", sub(true), sub(true))
		case 1:
			return fmt.Sprintf("SELECT a.id FROM a WHERE %s %s %s", sub(false), pick("AND", "OR"), sub(false))
		case 2:
			return fmt.Sprintf("SELECT a.id, x.n FROM a, LATERAL (SELECT count(*) AS n FROM b WHERE %s) x", corr())
		default:
			return fmt.Sprintf("SELECT a.id FROM a WHERE %s", sub(true))
		}
	}
}

// sortedAnswer runs q and returns its rows as sorted text lines.
func sortedAnswer(ctx context.Context, c *pgx.Conn, q string) (string, error) {
	rows, err := c.Query(ctx, q, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		return "", err
	}
	var lines []string
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			rows.Close()
			return "", err
		}
		lines = append(lines, fmt.Sprint(vals...))
	}
	if err := rows.Err(); err != nil {
		return "", err
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n"), nil
}

// TestCorrelatedViews (issue 17) creates materialized views from random
// correlated queries (those a view can maintain; others are refused with
// 0A000), changes the tables at random, and checks after each round that
// every view equals its query run in batch.
func TestCorrelatedViews(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	conn := e2etest.Connect(t, ctx, e2etest.StartServer(t))
	seed := testseed.Int64(t)
	rng := rand.New(rand.NewSource(seed))
	exec := func(sql string) {
		t.Helper()
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	small := func() string {
		if rng.Intn(5) == 0 {
			return "NULL"
		}
		return fmt.Sprint(rng.Intn(4))
	}
	exec("CREATE TABLE a (id int PRIMARY KEY, k int, v int)")
	exec("CREATE TABLE b (id int PRIMARY KEY, k int, v int)")
	next := map[string]int{}
	ids := map[string][]int{}
	insert := func(tbl string) {
		id := next[tbl]
		next[tbl]++
		ids[tbl] = append(ids[tbl], id)
		exec(fmt.Sprintf("INSERT INTO %s VALUES (%d, %s, %s)", tbl, id, small(), small()))
	}
	for range 10 {
		insert("a")
		insert("b")
	}
	query := correlatedQueries(rng)
	var views, refused []string
	for tries := 0; len(views) < 10 && tries < 200; tries++ {
		q := query()
		if strings.Contains(q, "ORDER BY (SELECT") {
			continue // a view's rows have no order
		}
		// Named columns: two subqueries may both be called ?column?.
		rows, err := conn.Query(ctx, q, pgx.QueryExecModeSimpleProtocol)
		if err != nil {
			continue // e.g. 21000 from a subquery with several rows
		}
		var names []string
		for i := range rows.FieldDescriptions() {
			names = append(names, fmt.Sprintf("c%d", i))
		}
		rows.Close()
		_, err = conn.Exec(ctx, fmt.Sprintf("CREATE MATERIALIZED VIEW cv%d (%s) AS %s", len(views), strings.Join(names, ", "), q))
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "0A000" {
			refused = append(refused, q+": "+pe.Message)
			continue
		}
		if err != nil {
			t.Fatalf("CREATE MATERIALIZED VIEW AS %s: %v", q, err)
		}
		views = append(views, q)
	}
	t.Logf("%d views; refused:\n%s", len(views), strings.Join(refused, "\n"))
	if len(views) < 5 {
		t.Fatalf("only %d of the random queries could be views", len(views))
	}
	for round := range 5 {
		for range 8 {
			tbl := []string{"a", "b"}[rng.Intn(2)]
			switch x := rng.Intn(3); {
			case x == 0 || len(ids[tbl]) < 3:
				insert(tbl)
			case x == 1:
				id := ids[tbl][rng.Intn(len(ids[tbl]))]
				exec(fmt.Sprintf("UPDATE %s SET %s = %s WHERE id = %d", tbl, []string{"k", "v"}[rng.Intn(2)], small(), id))
			default:
				i := rng.Intn(len(ids[tbl]))
				exec(fmt.Sprintf("DELETE FROM %s WHERE id = %d", tbl, ids[tbl][i]))
				ids[tbl] = append(ids[tbl][:i], ids[tbl][i+1:]...)
			}
		}
		exec("FLUSH")
		for i, q := range views {
			want, err := sortedAnswer(ctx, conn, q)
			if err != nil {
				t.Fatalf("round %d: %s: %v", round, q, err)
			}
			got, err := sortedAnswer(ctx, conn, fmt.Sprintf("SELECT * FROM cv%d", i))
			if err != nil {
				t.Fatalf("round %d: view %d: %v", round, i, err)
			}
			if got != want {
				t.Errorf("round %d: view cv%d AS %s\nbatch:\n%s\nview:\n%s", round, i, q, want, got)
			}
		}
	}
}
