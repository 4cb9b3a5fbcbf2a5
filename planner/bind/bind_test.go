package bind

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/parser"
	"github.com/tributary/tributary/sql/types"
)

var rewrite = flag.Bool("rewrite", false, "rewrite testdata/plans.txt with the actual plans")

func testCatalog(t *testing.T) *catalog.Catalog { return testCatalogF(t) }

// testCatalogF is testCatalog for a test, a benchmark or a fuzz target.
func testCatalogF(t testing.TB) *catalog.Catalog {
	t.Helper()
	c := catalog.New(nil)
	add := func(name string, cols []catalog.Column, pk ...int) {
		r := &catalog.Relation{ID: c.NextID(), Schema: "public", Name: name, Kind: catalog.KindTable, Columns: cols, PK: pk}
		if err := c.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	add("t", []catalog.Column{{Name: "id", Type: types.TInt32}, {Name: "name", Type: types.TVarchar}, {Name: "v", Type: types.TFloat64}}, 0)
	add("u", []catalog.Column{{Name: "id", Type: types.TInt32}, {Name: "t_id", Type: types.TInt32}, {Name: "amount", Type: types.TNumeric},
		{Name: catalog.RowIDColumn, Type: types.TInt64, Hidden: true}}, 3)
	return c
}

// TestPlans binds each query of testdata/plans.txt and compares the printed plan.
// Format: blocks separated by a blank line: SQL, "----", expected plan or "error: <kind>: <msg>".
func TestPlans(t *testing.T) {
	cat := testCatalog(t)
	data, err := os.ReadFile("testdata/plans.txt")
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for _, block := range strings.Split(strings.TrimSpace(string(data)), "\n\n") {
		sql, _, _ := strings.Cut(block, "\n----")
		sql = strings.TrimSpace(sql)
		got := bindAndExplain(cat, sql)
		want := ""
		if _, after, ok := strings.Cut(block, "----\n"); ok {
			want = strings.TrimSpace(after)
		}
		if !*rewrite && got != want {
			t.Errorf("%s\n got:\n%s\nwant:\n%s", sql, got, want)
		}
		out.WriteString(sql + "\n----\n" + got + "\n\n")
	}
	if *rewrite {
		if err := os.WriteFile("testdata/plans.txt", []byte(strings.TrimSpace(out.String())+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func bindAndExplain(cat *catalog.Catalog, sql string) string {
	stmts, err := parser.Parse(sql)
	if err != nil {
		return "error: " + err.Error()
	}
	q, ok := stmts[0].(*parser.Query)
	if !ok {
		return "error: not a query"
	}
	b := New(cat, nil)
	pq, err := b.Query(q)
	if err != nil {
		var kind string
		if te, ok := err.(*types.Error); ok {
			kind = te.Kind.Error() + ": "
		}
		return "error: " + kind + err.Error()
	}
	s := plan.Explain(pq.Root)
	for _, ip := range pq.InitPlans {
		s += "\ninit: " + strings.ReplaceAll(plan.Explain(ip.Plan), "\n", "\n      ")
	}
	var cols []string
	for _, f := range pq.Root.Schema() {
		if !f.Hidden {
			cols = append(cols, f.Name+" "+f.Type.String())
		}
	}
	return "columns: " + strings.Join(cols, ", ") + "\n" + s
}

// TestDeepCorrelated: correlated subqueries nested deep decorrelate level
// by level; past the nesting limit they are refused with 54001.
func TestDeepCorrelated(t *testing.T) {
	cat := testCatalog(t)
	nested := func(depth int) string {
		var b strings.Builder
		b.WriteString("SELECT t0.id FROM t t0 WHERE ")
		for i := 1; i <= depth; i++ {
			fmt.Fprintf(&b, "EXISTS (SELECT 1 FROM t t%d WHERE t%d.id = t%d.id AND ", i, i, i-1)
		}
		b.WriteString("true")
		b.WriteString(strings.Repeat(")", depth))
		return b.String()
	}
	if got := bindAndExplain(cat, nested(50)); !strings.HasPrefix(got, "columns: id integer") || strings.Count(got, "HashSemiJoin") != 50 {
		t.Errorf("50 nested correlated EXISTS: %.300s", got)
	}
	if got := bindAndExplain(cat, nested(2000)); !strings.Contains(got, "stack depth limit exceeded") {
		t.Errorf("2000 nested correlated EXISTS: %.300s", got)
	}
}
