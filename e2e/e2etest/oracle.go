package e2etest

import (
	"context"
	"fmt"
	"math/rand"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// oracleTables are the base tables every streaming shape reads.
var oracleTables = []string{
	`CREATE TABLE t1 (id int PRIMARY KEY, a int, b int, s varchar)`,
	`CREATE TABLE t2 (id int PRIMARY KEY, t1_id int, v int)`,
	`CREATE TABLE t3 (id int PRIMARY KEY, t2_id int, w int)`,
	`CREATE TABLE t4 (id int PRIMARY KEY, ts timestamp, v int)`,
}

// oracleShapes are materialized view queries covering every stream operator.
// Each MV must equal the same query run as a batch SELECT after every FLUSH.
var oracleShapes = []string{
	`SELECT id, a, b FROM t1 WHERE a > 10`,
	`SELECT id, a + b AS x, upper(s) AS u FROM t1`,
	`SELECT a, count(*) AS c, sum(b) AS sb FROM t1 GROUP BY a`,
	`SELECT count(*) AS c, sum(a) AS sa, min(b) AS mn, max(b) AS mx FROM t1`,
	`SELECT a, min(b) AS mn, max(b) AS mx FROM t1 GROUP BY a`,
	`SELECT a, count(DISTINCT b) AS d FROM t1 GROUP BY a`,
	`SELECT a, avg(b) AS av FROM t1 GROUP BY a`,
	`SELECT a, bool_and(b > 0) AS ba, bool_or(b > 5) AS bo FROM t1 GROUP BY a`,
	`SELECT DISTINCT a FROM t1`,
	`SELECT DISTINCT a, b % 3 AS m FROM t1`,
	`SELECT a, count(*) AS c FROM t1 GROUP BY a HAVING count(*) > 1`,
	`SELECT a, count(*) FILTER (WHERE b > 5) AS c FROM t1 GROUP BY a`,
	`SELECT t1.id AS i1, t2.id AS i2, t2.v FROM t1 JOIN t2 ON t1.id = t2.t1_id`,
	`SELECT t1.id AS i1, t2.id AS i2, t2.v FROM t1 LEFT JOIN t2 ON t1.id = t2.t1_id`,
	`SELECT t1.id AS i1, t2.id AS i2, t1.a FROM t1 RIGHT JOIN t2 ON t1.id = t2.t1_id`,
	`SELECT t1.id AS i1, t2.id AS i2 FROM t1 FULL JOIN t2 ON t1.id = t2.t1_id`,
	`SELECT t1.id AS i1, t2.id AS i2 FROM t1 JOIN t2 ON t1.id = t2.t1_id AND t2.v > t1.a`,
	`SELECT t1.id AS i1, t2.id AS i2, t3.id AS i3, t3.w FROM t1 JOIN t2 ON t1.id = t2.t1_id JOIN t3 ON t2.id = t3.t2_id`,
	`SELECT t1.a, count(*) AS c, sum(t2.v) AS sv FROM t1 JOIN t2 ON t1.id = t2.t1_id GROUP BY t1.a`,
	`SELECT t1.s, t2.v * 2 AS v2 FROM t1 JOIN t2 ON t1.id = t2.t1_id WHERE t2.v % 2 = 0`,
	`SELECT id, a FROM t1 ORDER BY a DESC, id LIMIT 5`,
	`SELECT id, b FROM t1 ORDER BY b, id LIMIT 3 OFFSET 2`,
	`SELECT id, a, b, rn FROM (SELECT id, a, b, row_number() OVER (PARTITION BY a ORDER BY b DESC, id) AS rn FROM t1) x WHERE rn <= 2`,
	// Over-window operators (ties broken by the key, so batch answers alike).
	`SELECT id, a, b, lag(b) OVER (PARTITION BY a ORDER BY b, id) AS lg, sum(b) OVER (PARTITION BY a ORDER BY id ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS s3 FROM t1`,
	`SELECT id, v, rank() OVER (PARTITION BY t1_id ORDER BY v) AS r, count(*) OVER (PARTITION BY t1_id ORDER BY v RANGE BETWEEN 2 PRECEDING AND CURRENT ROW) AS c FROM t2`,
	`SELECT id, first_value(id) OVER (PARTITION BY a % 3 ORDER BY b DESC NULLS LAST, id) AS fv, count(*) OVER () AS n FROM t1`,
	`SELECT id, a FROM t1 WHERE a < 5 UNION ALL SELECT id, v FROM t2 WHERE v < 5`,
	`SELECT window_start, count(*) AS c, sum(v) AS sv FROM TUMBLE(t4, ts, INTERVAL '10 minutes') GROUP BY window_start`,
	`SELECT window_start, window_end, max(v) AS mx FROM HOP(t4, ts, INTERVAL '5 minutes', INTERVAL '15 minutes') GROUP BY window_start, window_end`,
	`SELECT id, v FROM t4 WHERE ts > now() - INTERVAL '1 hour'`,
	`SELECT DISTINCT t1.a, t2.v FROM t1 JOIN t2 ON t1.id = t2.t1_id`,
	// Correlated subqueries, decorrelated into semi/anti joins and left joins over aggregations.
	`SELECT id, a FROM t1 WHERE EXISTS (SELECT 1 FROM t2 WHERE t2.t1_id = t1.id AND t2.v > t1.b)`,
	`SELECT id FROM t1 WHERE NOT EXISTS (SELECT 1 FROM t2 WHERE t2.t1_id = t1.id)`,
	`SELECT id, b FROM t1 WHERE b NOT IN (SELECT NULLIF(v, 3) FROM t2 WHERE t2.t1_id = t1.id)`,
	`SELECT id, (SELECT count(*) FROM t2 WHERE t2.t1_id = t1.id) AS c, (SELECT max(v) FROM t2 WHERE t2.t1_id = t1.id) AS mx FROM t1`,
	`SELECT id, (SELECT t2.id FROM t2 WHERE t2.t1_id = t1.id ORDER BY t2.v DESC, t2.id LIMIT 1) AS top FROM t1`,
}

// mvOnMV are materialized views over other materialized views (created after oracleShapes).
var mvOnMV = []struct{ name, query string }{
	{"mv_base", `SELECT a, count(*) AS c FROM t1 GROUP BY a`},
	{"mv_top", `SELECT c, count(*) AS n FROM mv_base GROUP BY c`},
	{"mv_join", `SELECT mv_base.a, mv_base.c, t2.id FROM mv_base JOIN t2 ON mv_base.a = t2.v`},
}

// DMLGen produces random DML over the oracle tables. It is not safe for concurrent use.
type DMLGen struct {
	rng  *rand.Rand
	next map[string]int
	ids  map[string][]int
}

// NewDMLGen returns a generator for empty oracle tables, seeded with seed.
func NewDMLGen(seed int64) *DMLGen {
	return &DMLGen{rng: rand.New(rand.NewSource(seed)), next: map[string]int{}, ids: map[string][]int{}}
}

func (g *DMLGen) small() int { return g.rng.Intn(12) }

func (g *DMLGen) row(table string, id int) string {
	switch table {
	case "t1":
		s := "NULL"
		if g.rng.Intn(8) > 0 {
			s = fmt.Sprintf("'s%d'", g.rng.Intn(5))
		}
		return fmt.Sprintf("(%d, %d, %d, %s)", id, g.small()+g.rng.Intn(2)*10, g.small()-2, s)
	case "t2":
		return fmt.Sprintf("(%d, %d, %d)", id, g.rng.Intn(g.next["t1"]+2), g.small())
	case "t3":
		return fmt.Sprintf("(%d, %d, %d)", id, g.rng.Intn(g.next["t2"]+2), g.small())
	default:
		// Timestamps far in the past or future keep the temporal filter deterministic.
		base := "2000-01-01"
		if g.rng.Intn(2) == 0 {
			base = "2100-01-01"
		}
		return fmt.Sprintf("(%d, TIMESTAMP '%s 00:00:00' + INTERVAL '%d minutes', %d)", id, base, g.rng.Intn(60), g.small())
	}
}

// Statement returns one random INSERT/UPDATE/DELETE.
func (g *DMLGen) Statement() string {
	tables := []string{"t1", "t1", "t2", "t2", "t3", "t4"}
	t := tables[g.rng.Intn(len(tables))]
	switch k := g.rng.Intn(10); {
	case k < 5 || len(g.ids[t]) < 3:
		n := 1 + g.rng.Intn(4)
		vals := make([]string, n)
		for i := range vals {
			id := g.next[t]
			g.next[t]++
			g.ids[t] = append(g.ids[t], id)
			vals[i] = g.row(t, id)
		}
		return fmt.Sprintf("INSERT INTO %s VALUES %s", t, strings.Join(vals, ", "))
	case k < 8:
		id := g.ids[t][g.rng.Intn(len(g.ids[t]))]
		set := map[string]string{
			"t1": fmt.Sprintf("a = %d, b = b + %d", g.small(), g.rng.Intn(5)-2),
			"t2": fmt.Sprintf("v = %d, t1_id = %d", g.small(), g.rng.Intn(g.next["t1"]+1)),
			"t3": fmt.Sprintf("w = %d", g.small()),
			"t4": fmt.Sprintf("v = %d", g.small()),
		}[t]
		if g.rng.Intn(3) == 0 {
			return fmt.Sprintf("UPDATE %s SET %s WHERE id %% 5 = %d", t, set, g.rng.Intn(5))
		}
		return fmt.Sprintf("UPDATE %s SET %s WHERE id = %d", t, set, id)
	default:
		i := g.rng.Intn(len(g.ids[t]))
		id := g.ids[t][i]
		g.ids[t] = append(g.ids[t][:i], g.ids[t][i+1:]...)
		return fmt.Sprintf("DELETE FROM %s WHERE id = %d", t, id)
	}
}

// Reload rebuilds the generator's view of which rows exist from the tables, as after a crash
// (statements in flight at the kill may or may not have committed).
func (g *DMLGen) Reload(ctx context.Context, t testing.TB, conn *pgx.Conn) {
	t.Helper()
	for _, table := range []string{"t1", "t2", "t3", "t4"} {
		rows, err := Rows(ctx, conn, "SELECT id FROM "+table)
		if err != nil {
			t.Fatal(err)
		}
		g.ids[table] = g.ids[table][:0]
		for _, r := range rows {
			id, _ := strconv.Atoi(r)
			g.ids[table] = append(g.ids[table], id)
			if id >= g.next[table] {
				g.next[table] = id + 1
			}
		}
	}
}

// CheckMVs compares every materialized view in mvs (name to query) with its batch recompute.
func CheckMVs(ctx context.Context, t testing.TB, conn *pgx.Conn, mvs map[string]string, when string) {
	t.Helper()
	names := make([]string, 0, len(mvs))
	for n := range mvs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		want, err := Rows(ctx, conn, mvs[name])
		if err != nil {
			t.Fatalf("%s: batch %s: %v", when, mvs[name], err)
		}
		got, err := Rows(ctx, conn, "SELECT * FROM "+name)
		if err != nil {
			t.Fatalf("%s: select %s: %v", when, name, err)
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			extra, missing := MultisetDiff(got, want)
			t.Fatalf("%s: materialized view %s (%s) differs from its batch recompute\n got %d rows, want %d\n only in the view: %v\n only in the recompute: %v",
				when, name, mvs[name], len(got), len(want), Head(extra), Head(missing))
		}
	}
}

// CreateOracleTables creates the base tables, empty.
func CreateOracleTables(ctx context.Context, t testing.TB, conn *pgx.Conn) {
	t.Helper()
	for _, s := range oracleTables {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// CreateOracleViews creates a materialized view of every shape, views on views last, and
// returns their queries by name for CheckMVs.
func CreateOracleViews(ctx context.Context, t testing.TB, conn *pgx.Conn) map[string]string {
	t.Helper()
	mvs := map[string]string{}
	for i, q := range oracleShapes {
		name := fmt.Sprintf("mv%02d", i)
		if _, err := conn.Exec(ctx, fmt.Sprintf("CREATE MATERIALIZED VIEW %s AS %s", name, q)); err != nil {
			t.Fatalf("create %s AS %s: %v", name, q, err)
		}
		mvs[name] = q
	}
	for _, m := range mvOnMV {
		if _, err := conn.Exec(ctx, fmt.Sprintf("CREATE MATERIALIZED VIEW %s AS %s", m.name, m.query)); err != nil {
			t.Fatalf("create %s: %v", m.name, err)
		}
		mvs[m.name] = m.query
	}
	return mvs
}
