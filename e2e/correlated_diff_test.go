package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tributary/tributary/e2e/pgtest"
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
	trib := connect(t, ctx, startServer(t))

	seed := time.Now().UnixNano()
	if s := os.Getenv("CORRELATED_SEED"); s != "" { // to replay a failure
		if seed, err = strconv.ParseInt(s, 10, 64); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("seed %d (CORRELATED_SEED replays it)", seed)
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
	query := func() string {
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
	answer := func(c *pgx.Conn, q string) (string, error) {
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
