package job_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/planner/bind"
	"github.com/tributary/tributary/planner/job"
	"github.com/tributary/tributary/planner/physical"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/parser"
	"github.com/tributary/tributary/sql/types"
)

// testCatalog has a wide table of auctions and bids (with a row id).
func testCatalog(t *testing.T) *catalog.Catalog {
	t.Helper()
	c := catalog.New(catalog.SystemRelations())
	add := func(name string, cols []catalog.Column, pk ...int) {
		r := &catalog.Relation{ID: c.NextID(), Schema: "public", Name: name, Kind: catalog.KindTable, Columns: cols, PK: pk, AppendOnly: true}
		if err := c.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	add("auction", []catalog.Column{{Name: "id", Type: types.TInt64}, {Name: "item", Type: types.TVarchar},
		{Name: "category", Type: types.TInt64}, {Name: "extra", Type: types.TVarchar}}, 0)
	add("bid", []catalog.Column{{Name: "auction", Type: types.TInt64}, {Name: "price", Type: types.TInt64},
		{Name: "url", Type: types.TVarchar}, {Name: "extra", Type: types.TVarchar},
		{Name: catalog.RowIDColumn, Type: types.TInt64, Hidden: true}}, 4)
	return c
}

// joinStates returns the column types of every join state table of sql's
// plan at a state version.
func joinStates(t *testing.T, cat *catalog.Catalog, sql string, version int) [][]types.T {
	t.Helper()
	var out [][]types.T
	for _, st := range stateTables(t, cat, sql, version) {
		if st.Name == "join left" || st.Name == "join right" {
			out = append(out, st.Types)
		}
	}
	return out
}

// stateTables returns the state tables of sql's plan at a state version.
func stateTables(t *testing.T, cat *catalog.Catalog, sql string, version int) []plan.StateTable {
	t.Helper()
	stmts, err := parser.Parse(sql)
	if err != nil {
		t.Fatal(err)
	}
	sq, _, err := job.StreamQuery(stmts[0].(*parser.Query), bind.New(cat, nil).WithSystemRows(nil), false, version)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	rel := &catalog.Relation{ID: 20000, Schema: "public", Name: "mv", Kind: catalog.KindMaterializedView, PK: sq.PK}
	for _, f := range sq.Columns {
		rel.Columns = append(rel.Columns, catalog.Column{Name: f.Name, Type: f.Type, Hidden: f.Hidden})
	}
	root := job.Materialize(sq, rel, version)
	next := uint32(100)
	physical.AssignState(root, func() uint32 { next++; return next })
	var out []plan.StateTable
	var walk func(n plan.StreamNode)
	walk = func(n plan.StreamNode) {
		if s, ok := n.(plan.StatefulNode); ok {
			out = append(out, s.State()...)
		}
		for _, c := range n.Inputs() {
			walk(c)
		}
	}
	walk(root)
	return out
}

// TestPruneJoinInputs: from state version 2 on, a join's state holds the
// columns of its inputs read above it, by its keys or by its condition (and
// the stream key), in projections, filters, aggregations and window
// functions over it; version 1 jobs keep every column (their state tables'
// layout).
func TestPruneJoinInputs(t *testing.T) {
	cat := testCatalog(t)
	for _, c := range []struct {
		sql    string
		v1, v2 string
	}{
		{sql: "SELECT a.item, b.price FROM auction a JOIN bid b ON a.id = b.auction",
			v1: "[[bigint character varying bigint character varying] [bigint bigint character varying character varying bigint]]",
			v2: "[[bigint character varying] [bigint bigint bigint]]"},
		{sql: "SELECT a.category, max(b.price) FROM auction a, bid b WHERE a.id = b.auction AND b.url <> '' GROUP BY a.category",
			v1: "[[bigint character varying bigint character varying] [bigint bigint character varying character varying bigint]]",
			v2: "[[bigint bigint] [bigint bigint character varying bigint]]"},
		{sql: "SELECT id, item, price FROM (SELECT a.*, b.price, row_number() OVER (PARTITION BY a.id ORDER BY b.price DESC) AS rn FROM auction a, bid b WHERE a.id = b.auction) x WHERE rn <= 1",
			v1: "[[bigint character varying bigint character varying] [bigint bigint character varying character varying bigint]]",
			v2: "[[bigint character varying] [bigint bigint bigint]]"},
		{sql: "SELECT * FROM auction a JOIN bid b ON a.id = b.auction",
			v1: "[[bigint character varying bigint character varying] [bigint bigint character varying character varying bigint]]",
			v2: "[[bigint character varying bigint character varying] [bigint bigint character varying character varying bigint]]"},
		{sql: "SELECT count(*) FROM auction a WHERE EXISTS (SELECT 1 FROM bid b WHERE b.auction = a.id AND b.price > a.category)",
			v1: "[[bigint character varying bigint character varying bigint] [bigint bigint character varying character varying bigint]]",
			v2: "[[bigint bigint bigint] [bigint bigint bigint]]"},
	} {
		if got := fmt.Sprint(joinStates(t, cat, c.sql, 1)); got != c.v1 {
			t.Errorf("%s\nversion 1: %s\n      want %s", c.sql, got, c.v1)
		}
		if got := fmt.Sprint(joinStates(t, cat, c.sql, 2)); got != c.v2 {
			t.Errorf("%s\nversion 2: %s\n      want %s", c.sql, got, c.v2)
		}
	}
}

// TestShareDistinct: from state version 3 on, DISTINCT aggregates over the
// same arguments (FILTERed or not) share one table with a count each.
func TestShareDistinct(t *testing.T) {
	cat := testCatalog(t)
	const sql = "SELECT url, count(DISTINCT auction), count(DISTINCT auction) FILTER (WHERE price < 10), " +
		"count(DISTINCT price), sum(DISTINCT auction) FILTER (WHERE price >= 10) FROM bid GROUP BY url"
	distinct := func(version int) string {
		var out []string
		for _, st := range stateTables(t, cat, sql, version) {
			if strings.HasPrefix(st.Name, "agg distinct") {
				out = append(out, fmt.Sprintf("%s %v", st.Name, st.Types))
			}
		}
		return strings.Join(out, "; ")
	}
	for _, c := range []struct {
		version int
		want    string
	}{
		{2, "agg distinct (count) [character varying bigint bigint]; agg distinct (count) [character varying bigint bigint]; " +
			"agg distinct (count) [character varying bigint bigint]; agg distinct (sum) [character varying bigint bigint]"},
		{3, "agg distinct (count, count, sum) [character varying bigint bigint bigint bigint]; agg distinct (count) [character varying bigint bigint]"},
	} {
		if got := distinct(c.version); got != c.want {
			t.Errorf("version %d: %s\n     want %s", c.version, got, c.want)
		}
	}
}

// TestAggStateInView: from state version 4 on, a hash aggregation right under its view,
// whose aggregates' states are their results with an unfiltered count(*) among them,
// keeps its groups in the view's table (its one state table is the view's).
func TestAggStateInView(t *testing.T) {
	cat := testCatalog(t)
	names := func(sql string, version int) string {
		var out []string
		for _, st := range stateTables(t, cat, sql, version) {
			out = append(out, fmt.Sprintf("%s(%d)", st.Name, st.ID))
		}
		return strings.Join(out, ", ")
	}
	for _, c := range []struct {
		sql    string
		v3, v4 string
	}{
		{sql: "SELECT auction, count(*) AS n FROM bid GROUP BY auction",
			v3: "materialized view(20000), agg state(101)",
			v4: "materialized view(20000), materialized view(20000)"},
		{sql: "SELECT auction, url, count(*), count(url) FILTER (WHERE price > 5), max(price), min(url) FROM bid GROUP BY auction, url",
			v3: "materialized view(20000), agg state(101)",
			v4: "materialized view(20000), materialized view(20000)"},
		// The output reordered, the group column hidden.
		{sql: "SELECT count(*) AS n, auction FROM bid GROUP BY auction",
			v3: "materialized view(20000), agg state(101)",
			v4: "materialized view(20000), materialized view(20000)"},
		{sql: "SELECT count(*) AS n FROM bid GROUP BY auction",
			v3: "materialized view(20000), agg state(101)",
			v4: "materialized view(20000), materialized view(20000)"},
		// Not: a computed column, a sum, no unfiltered count(*), no group, a DISTINCT.
		{sql: "SELECT auction, count(*) + 1 AS n FROM bid GROUP BY auction",
			v3: "materialized view(20000), agg state(101)", v4: "materialized view(20000), agg state(101)"},
		{sql: "SELECT auction, count(*), sum(price) FROM bid GROUP BY auction",
			v3: "materialized view(20000), agg state(101)", v4: "materialized view(20000), agg state(101)"},
		{sql: "SELECT auction, count(*) FILTER (WHERE price > 5) FROM bid GROUP BY auction",
			v3: "materialized view(20000), agg state(101)", v4: "materialized view(20000), agg state(101)"},
		{sql: "SELECT count(*) FROM bid",
			v3: "materialized view(20000), agg state(101)", v4: "materialized view(20000), agg state(101)"},
		{sql: "SELECT auction, count(*), count(DISTINCT price) FROM bid GROUP BY auction",
			v3: "materialized view(20000), agg state(101), agg distinct (count)(102)",
			v4: "materialized view(20000), agg state(101), agg distinct (count)(102)"},
	} {
		if got := names(c.sql, 3); got != c.v3 {
			t.Errorf("%s\nversion 3: %s\n      want %s", c.sql, got, c.v3)
		}
		if got := names(c.sql, 4); got != c.v4 {
			t.Errorf("%s\nversion 4: %s\n      want %s", c.sql, got, c.v4)
		}
	}
}
