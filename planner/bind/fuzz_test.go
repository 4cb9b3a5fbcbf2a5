package bind

import (
	"errors"
	"testing"

	"github.com/tributary/tributary/sql/parser"
	"github.com/tributary/tributary/sql/types"
)

// FuzzBind parses and binds queries over a small catalog: binding never
// panics, and every error is a *types.Error (the SQLSTATE a client gets).
// Run with `go test -fuzz FuzzBind ./planner/bind`; .ci/run runs it briefly.
func FuzzBind(f *testing.F) {
	for _, s := range []string{
		"SELECT id, name FROM t WHERE v > 1.5 ORDER BY 2 DESC LIMIT 3",
		"SELECT t.name, sum(u.amount) FROM t JOIN u ON t.id = u.t_id GROUP BY t.name HAVING count(*) > 1",
		"WITH a AS (SELECT id FROM t), b AS (SELECT id FROM a) SELECT * FROM b",
		"WITH a AS (SELECT * FROM a) SELECT * FROM a",
		"SELECT * FROM t WHERE id IN (SELECT t_id FROM u) AND EXISTS (SELECT 1 FROM u)",
		"SELECT row_number() OVER (PARTITION BY name ORDER BY v) FROM t",
		"SELECT CASE WHEN id > 1 THEN 'a' ELSE NULL END, coalesce(v, 0)::int, name || 'x' FROM t",
		"SELECT * FROM generate_series(1, 3) g(x) CROSS JOIN t",
		"SELECT $1::int + id FROM t", "SELECT 1/0, -(-9223372036854775808)::int8",
		"SELECT DISTINCT ON (name) name, v FROM t", "VALUES (1, 'a'), (2, NULL)",
		"SELECT 0+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1", "SELECT ((((((((((1))))))))))",
		// Correlated subqueries (decorrelation).
		"SELECT name, (SELECT count(*) FROM u WHERE u.t_id = t.id AND u.amount > t.v) FROM t WHERE NOT EXISTS (SELECT 1 FROM u WHERE u.t_id = t.id)",
		"SELECT t.id FROM t, LATERAL (SELECT u.amount FROM u WHERE u.t_id = t.id ORDER BY u.amount DESC LIMIT 1) x WHERE t.v NOT IN (SELECT u.amount FROM u WHERE u.id = t.id)",
		"SELECT id, v > ALL (SELECT amount FROM u WHERE u.t_id = t.id) FROM t GROUP BY id HAVING count(*) > (SELECT count(*) FROM u WHERE u.t_id = t.id)",
	} {
		f.Add(s)
	}
	cat := testCatalogF(f)
	f.Fuzz(func(t *testing.T, sql string) {
		stmts, err := parser.Parse(sql)
		if err != nil {
			return
		}
		for _, st := range stmts {
			q, ok := st.(*parser.Query)
			if !ok {
				continue
			}
			if _, err := New(cat, nil).Query(q); err != nil {
				var te *types.Error
				if !errors.As(err, &te) {
					t.Fatalf("%q: error is not *types.Error: %v", sql, err)
				}
			}
		}
	})
}
