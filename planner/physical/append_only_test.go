package physical

import (
	"testing"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/sql/types"

	"github.com/tributary/tributary/planner/bind"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/parser"
)

// TestAppendOnlyInputs checks which aggregations keep min and max as their
// extreme alone: those whose input only inserts, once AppendOnlyInputs ran
// (a job planned with state version 1); a version-0 plan keeps the input tables.
func TestAppendOnlyInputs(t *testing.T) {
	cat := testCatalog(t)
	// gen: a generator source (its rows only ever inserted), and a shared one.
	for i, name := range []string{"gen", "shared_gen"} {
		src := &catalog.Relation{ID: cat.NextID(), Schema: "public", Name: name, Kind: catalog.KindSource, AppendOnly: true,
			Columns: []catalog.Column{{Name: "k", Type: types.TInt64}, {Name: "v", Type: types.TInt64},
				{Name: catalog.RowIDColumn, Type: types.TInt64, Hidden: true}},
			PK: []int{2}, Connector: &catalog.Connector{Props: map[string]string{"connector": "datagen"}, Shared: i == 1, RateLimit: -1}}
		if err := cat.Add(src); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		sql        string
		appendOnly bool // the aggregation's input only inserts
		tables     int  // its state tables once marked
	}{
		{"SELECT auction, min(price), max(price), count(*) FROM bids GROUP BY auction", true, 1},
		{"SELECT min(price) FROM bids", true, 1},
		{"SELECT k, min(v), max(v) FROM gen GROUP BY k", true, 1},
		{"SELECT k, min(v), max(v) FROM shared_gen GROUP BY k", true, 1},
		{"SELECT name, max(v) FROM t GROUP BY name", false, 2},
		{"SELECT a.auction, max(b.price) FROM bids a JOIN bids b ON a.auction = b.price GROUP BY a.auction", true, 1},
		{"SELECT a.auction, max(b.price) FROM bids a LEFT JOIN bids b ON a.auction = b.price GROUP BY a.auction", false, 2},
		{"SELECT a.auction, max(b.v) FROM bids a JOIN t b ON a.auction = b.id GROUP BY a.auction", false, 2},
		{"SELECT auction, count(*), sum(price) FROM bids GROUP BY auction", false, 1}, // merges a local aggregation
		{"SELECT auction, count(DISTINCT price) FROM bids GROUP BY auction", true, 2}, // marked: counts each price once
		// The outer aggregation reads the inner one's updates.
		{"SELECT m % 10, max(m) FROM (SELECT auction, max(price) AS m FROM bids GROUP BY auction) x GROUP BY m % 10", false, 2},
	} {
		aggs := func(mark bool) []*plan.StreamAgg {
			return nodesOf[*plan.StreamAgg](streamPlan(t, cat, tc.sql, mark))
		}
		marked, legacy := aggs(true), aggs(false)
		top := marked[0] // the topmost aggregation
		if got := AppendOnly(top.Input); got != tc.appendOnly {
			t.Errorf("%s: AppendOnly(input) = %v, want %v", tc.sql, got, tc.appendOnly)
		}
		if got := len(top.StateLayouts()); got != tc.tables {
			t.Errorf("%s: %d state tables, want %d (%s)", tc.sql, got, tc.tables, top.Describe())
		}
		if top.AppendOnlyInput && legacy[0].AppendOnlyInput {
			t.Errorf("%s: marked without AppendOnlyInputs", tc.sql)
		}
		if top.AppendOnlyInput {
			minmax := 0
			for _, c := range top.Aggs {
				if plan.AggInputOf(&c, false) == plan.AggInputMinMax {
					minmax++
				}
			}
			if got := len(legacy[0].StateLayouts()); got != tc.tables+minmax {
				t.Errorf("%s: version 0 plan has %d state tables, want %d", tc.sql, got, 1+minmax)
			}
		}
	}
}

// TestAppendOnlyTopN checks which top-N keep only their top: those whose
// input only inserts.
func TestAppendOnlyTopN(t *testing.T) {
	cat := testCatalog(t)
	for _, tc := range []struct {
		sql        string
		appendOnly bool
	}{
		{"SELECT * FROM (SELECT auction, price, row_number() OVER (PARTITION BY auction ORDER BY price DESC) AS rn FROM bids) x WHERE rn <= 1", true},
		{"SELECT auction, price FROM bids ORDER BY price DESC LIMIT 3", true},
		{"SELECT * FROM (SELECT a.auction, b.price, rank() OVER (PARTITION BY a.auction ORDER BY b.price) AS r FROM bids a JOIN bids b ON a.auction = b.auction) x WHERE r <= 2", true},
		{"SELECT * FROM (SELECT id, v, row_number() OVER (PARTITION BY name ORDER BY v) AS rn FROM t) x WHERE rn <= 1", false},
	} {
		root := streamPlan(t, cat, tc.sql, true)
		tops := nodesOf[*plan.StreamTopN](root)
		if len(tops) == 0 {
			t.Fatalf("%s: no top-N in %s", tc.sql, plan.ExplainStream(root))
		}
		for _, x := range tops {
			if x.AppendOnlyInput != tc.appendOnly {
				t.Errorf("%s: %s: AppendOnlyInput %v, want %v", tc.sql, x.Describe(), x.AppendOnlyInput, tc.appendOnly)
			}
		}
	}
}

// streamPlan binds and plans sql for streaming, marking append-only inputs when mark.
func streamPlan(t *testing.T, cat *catalog.Catalog, sql string, mark bool) plan.StreamNode {
	t.Helper()
	stmts, err := parser.Parse(sql)
	if err != nil {
		t.Fatal(err)
	}
	pq, err := bind.New(cat, nil).WithSystemRows(nil).Query(stmts[0].(*parser.Query))
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	sq, err := Stream(pq)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	if mark {
		AppendOnlyInputs(sq.Root)
	}
	return sq.Root
}

// nodesOf returns the nodes of type N in the plan under n, top down.
func nodesOf[N plan.StreamNode](n plan.StreamNode) []N {
	var out []N
	if x, ok := n.(N); ok {
		out = append(out, x)
	}
	for _, in := range n.Inputs() {
		out = append(out, nodesOf[N](in)...)
	}
	return out
}
