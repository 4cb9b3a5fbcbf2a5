package physical

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/planner/bind"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/parser"
	"github.com/tributary/tributary/sql/types"
)

var rewrite = flag.Bool("rewrite", false, "rewrite testdata/*.txt with the actual plans")

// testCatalog: tables t (pk id), u and e (hidden row ids), w (pk id), a
// view ev over e, an MV mv1 (pk name) and the system tables.
func testCatalog(t *testing.T) *catalog.Catalog {
	t.Helper()
	c := catalog.New(catalog.SystemRelations())
	add := func(name string, kind catalog.Kind, cols []catalog.Column, pk ...int) {
		r := &catalog.Relation{ID: c.NextID(), Schema: "public", Name: name, Kind: kind, Columns: cols, PK: pk}
		if err := c.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	add("t", catalog.KindTable, []catalog.Column{{Name: "id", Type: types.TInt32}, {Name: "name", Type: types.TVarchar},
		{Name: "v", Type: types.TFloat64}, {Name: "ts", Type: types.TTimestamp}}, 0)
	add("u", catalog.KindTable, []catalog.Column{{Name: "id", Type: types.TInt32}, {Name: "t_id", Type: types.TInt32},
		{Name: "amount", Type: types.TNumeric}, {Name: catalog.RowIDColumn, Type: types.TInt64, Hidden: true}}, 3)
	add("w", catalog.KindTable, []catalog.Column{{Name: "id", Type: types.TInt32}, {Name: "u_id", Type: types.TInt32},
		{Name: "label", Type: types.TVarchar}}, 0)
	add("e", catalog.KindTable, []catalog.Column{{Name: "k", Type: types.TInt32}, {Name: "at", Type: types.TTimestamptz},
		{Name: catalog.RowIDColumn, Type: types.TInt64, Hidden: true}}, 2)
	view := &catalog.Relation{ID: c.NextID(), Schema: "public", Name: "ev", Kind: catalog.KindView,
		Columns:    []catalog.Column{{Name: "k", Type: types.TInt32}, {Name: "at", Type: types.TTimestamptz}},
		Definition: "SELECT k, at FROM e WHERE k > 0"}
	if err := c.Add(view); err != nil {
		t.Fatal(err)
	}
	add("mv1", catalog.KindMaterializedView, []catalog.Column{{Name: "name", Type: types.TVarchar}, {Name: "cnt", Type: types.TInt64}}, 0)
	// bids: an append-only table with a watermark on ts.
	bids := &catalog.Relation{ID: c.NextID(), Schema: "public", Name: "bids", Kind: catalog.KindTable, AppendOnly: true,
		Columns: []catalog.Column{{Name: "auction", Type: types.TInt64}, {Name: "price", Type: types.TInt64},
			{Name: "ts", Type: types.TTimestamp}, {Name: catalog.RowIDColumn, Type: types.TInt64, Hidden: true}},
		PK: []int{3}, Watermark: &catalog.Watermark{Column: "ts", Delay: "5 seconds"}}
	if err := c.Add(bids); err != nil {
		t.Fatal(err)
	}
	add("arr", catalog.KindTable, []catalog.Column{{Name: "id", Type: types.TInt32}, {Name: "tags", Type: types.ArrayOf(types.TVarchar)}}, 0)
	return c
}

// plan binds and plans sql, returning the materialized plan with state ids
// assigned from 100 on, and the ids in assignment order.
func planSQL(cat *catalog.Catalog, sql string, replay []uint32) (*StreamQuery, plan.StreamNode, []uint32, error) {
	// A trailing EMIT ON WINDOW CLOSE plans as CREATE MATERIALIZED VIEW ... EMIT ON WINDOW CLOSE.
	sql, eowc := strings.CutSuffix(sql, " EMIT ON WINDOW CLOSE")
	stmts, err := parser.Parse(sql)
	if err != nil {
		return nil, nil, nil, err
	}
	q, ok := stmts[0].(*parser.Query)
	if !ok {
		return nil, nil, nil, fmt.Errorf("not a query")
	}
	b := bind.New(cat, nil).WithSystemRows(func(*catalog.Relation) ([][]types.Datum, error) { return nil, nil })
	pq, err := b.Query(q)
	if err != nil {
		return nil, nil, nil, err
	}
	sq, err := Stream(pq)
	if err != nil {
		return nil, nil, nil, err
	}
	if eowc {
		if err := EmitOnWindowClose(sq); err != nil {
			return nil, nil, nil, err
		}
	}
	AppendOnlyInputs(sq.Root) // as job.StreamQuery and job.Materialize plan a new job
	ShareDistinct(sq.Root)
	rel := &catalog.Relation{ID: 20000, Schema: "public", Name: "mv", Kind: catalog.KindMaterializedView, PK: sq.PK}
	for _, f := range sq.Columns {
		rel.Columns = append(rel.Columns, catalog.Column{Name: f.Name, Type: f.Type, Hidden: f.Hidden})
	}
	root := Materialize(sq, rel)
	AggStateInView(root)
	var ids []uint32
	nextID := uint32(100)
	AssignState(root, func() uint32 {
		if replay != nil {
			id := replay[len(ids)]
			ids = append(ids, id)
			return id
		}
		ids = append(ids, nextID)
		nextID++
		return nextID - 1
	})
	return sq, root, ids, nil
}

func describe(sq *StreamQuery, root plan.StreamNode) string {
	var cols []string
	for _, f := range sq.Columns {
		s := f.Name + " " + f.Type.String()
		if f.Hidden {
			s += " hidden"
		}
		cols = append(cols, s)
	}
	return fmt.Sprintf("columns: %s\npk: %v\n%s", strings.Join(cols, ", "), sq.PK, plan.ExplainStream(root))
}

// TestStreamPlans plans each query of testdata/stream.txt and compares the
// printed stream plan. Blocks are separated by a blank line: SQL, "----",
// the expected plan or "error: <kind>: <msg>". Every plan also passes
// checkStream, and replaying its state ids gives the same plan.
func TestStreamPlans(t *testing.T) {
	cat := testCatalog(t)
	data, err := os.ReadFile("testdata/stream.txt")
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for _, block := range strings.Split(strings.TrimSpace(string(data)), "\n\n") {
		sql, _, _ := strings.Cut(block, "\n----")
		sql = strings.TrimSpace(sql)
		var got string
		sq, root, ids, err := planSQL(cat, sql, nil)
		if err != nil {
			var te *types.Error
			if !errors.As(err, &te) {
				t.Errorf("%s: error %v is not a *types.Error", sql, err)
				got = "error: " + err.Error()
			} else {
				got = "error: " + te.Kind.Error() + ": " + te.Msg
			}
		} else {
			got = describe(sq, root)
			checkStream(t, sql, sq, root)
			sq2, root2, ids2, err := planSQL(cat, sql, ids)
			if err != nil || !slices.Equal(ids, ids2) || describe(sq2, root2) != got {
				t.Errorf("%s: replaying state ids %v gave %v (%v):\n%s", sql, ids, ids2, err, describe(sq2, root2))
			}
		}
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
		if err := os.WriteFile("testdata/stream.txt", []byte(strings.TrimSpace(out.String())+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// checkStream verifies a plan's invariants: keys and column references in
// range, union inputs alike, state ids present and unique, the MV's columns
// visible first and every hidden one part of the key.
func checkStream(t *testing.T, sql string, sq *StreamQuery, root plan.StreamNode) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Errorf("%s: %s", sql, fmt.Sprintf(format, args...))
	}
	seenHidden := false
	for i, f := range sq.Columns {
		if f.Hidden {
			seenHidden = true
			if !slices.Contains(sq.PK, i) {
				fail("hidden column %s is not in the pk %v", f.Name, sq.PK)
			}
		} else if seenHidden {
			fail("visible column %s after a hidden one", f.Name)
		}
	}
	if got := plan.Types(sq.Root.Schema()); !slices.Equal(got, plan.Types(sq.Columns)) {
		fail("root types %v, columns %v", got, plan.Types(sq.Columns))
	}
	ids := map[uint32]bool{}
	var walk func(n plan.StreamNode)
	walk = func(n plan.StreamNode) {
		width := len(n.Schema())
		inRange := func(what string, cols []int, w int) {
			for _, c := range cols {
				if c < 0 || c >= w {
					fail("%s: %s column %d out of range (width %d)", n.Describe(), what, c, w)
				}
			}
		}
		exprInRange := func(e expr.Expr, w int) {
			cols, ok := plan.ColumnsOf(e)
			if ok {
				inRange("expression", cols, w)
			}
		}
		inRange("stream key", n.StreamKey(), width)
		if len(n.StreamKey()) == 0 {
			if _, ok := n.(*plan.StreamAgg); !ok && !isSingle(n) {
				fail("%s: empty stream key", n.Describe())
			}
		}
		switch x := n.(type) {
		case *plan.StreamExchange:
			inRange("hash key", x.Keys, width)
		case *plan.StreamProject:
			if len(x.Exprs) != len(x.Out) {
				fail("%s: %d exprs, %d fields", n.Describe(), len(x.Exprs), len(x.Out))
				break
			}
			for i, e := range x.Exprs {
				exprInRange(e, len(x.Input.Schema()))
				if e.Type() != x.Out[i].Type && e.Type().ID != types.Unknown {
					fail("%s: expr %d type %s, field %s", n.Describe(), i, e.Type(), x.Out[i].Type)
				}
			}
		case *plan.StreamFilter:
			exprInRange(x.Cond, width)
		case *plan.StreamHashJoin:
			inRange("left key", x.EqLeft, len(x.Left.Schema()))
			inRange("right key", x.EqRight, len(x.Right.Schema()))
			if x.Cond != nil {
				exprInRange(x.Cond, len(x.Left.Schema())+len(x.Right.Schema())) // semi/anti joins output only the left
			}
		case *plan.StreamAgg:
			inRange("group", x.GroupBy, len(x.Input.Schema()))
			if len(x.Out) != len(x.GroupBy)+len(x.Aggs) {
				fail("%s: %d fields for %d groups and %d aggs", n.Describe(), len(x.Out), len(x.GroupBy), len(x.Aggs))
			}
		case *plan.StreamTopN:
			extra := 0
			if x.Rank != "" {
				extra = 1
			}
			if len(x.Out) != len(x.Input.Schema())+extra {
				fail("%s: %d fields over an input of %d", n.Describe(), len(x.Out), len(x.Input.Schema()))
			}
		case *plan.StreamUnion:
			for _, in := range x.Ins {
				if !slices.Equal(plan.Types(in.Schema()), plan.Types(x.Schema())) {
					fail("union input types %v, union %v", plan.Types(in.Schema()), plan.Types(x.Schema()))
				}
				if !slices.Equal(in.StreamKey(), x.Key) {
					fail("union input key %v, union key %v", in.StreamKey(), x.Key)
				}
			}
		case *plan.StreamHopWindow:
			if len(x.Out) != len(x.Input.Schema())+2 {
				fail("%s: %d fields over an input of %d", n.Describe(), len(x.Out), len(x.Input.Schema()))
			}
		}
		if s, ok := n.(plan.StatefulNode); ok {
			if len(s.State()) != len(s.StateLayouts()) {
				fail("%s: %d state tables for %d layouts", n.Describe(), len(s.State()), len(s.StateLayouts()))
			}
			for _, st := range s.State() {
				if a, ok := n.(*plan.StreamAgg); ok && a.ViewState != nil {
					// The view's table, which the materialize above holds.
					if m, ok := root.(*plan.StreamMaterialize); !ok || st.ID != m.Relation.ID {
						fail("%s: state in a view's table %d, not the view right above", n.Describe(), st.ID)
					} else if b, _ := aggBelow(m.Input); b != a {
						fail("%s: state in the view's table, not right below it", n.Describe())
					}
					continue
				}
				if st.ID == 0 || ids[st.ID] {
					fail("%s: state id %d missing or reused", n.Describe(), st.ID)
				}
				ids[st.ID] = true
			}
		}
		for _, in := range n.Inputs() {
			walk(in)
		}
	}
	walk(root)
}

// isSingle reports whether n runs on one actor (an empty key is then one row at most).
func isSingle(n plan.StreamNode) bool {
	d, _, ok := distOf(n)
	return ok && d == plan.DistSingle
}

// TestAssignStateKeepsIDs: a second AssignState keeps every id, and the
// materialized view's table keeps the relation's id.
func TestAssignStateKeepsIDs(t *testing.T) {
	cat := testCatalog(t)
	_, root, ids, err := planSQL(cat, "SELECT t.name, sum(u.t_id) FROM t JOIN u ON t.id = u.t_id GROUP BY t.name", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 3 {
		t.Fatalf("assigned %v, want 3 ids (agg state, join left, join right)", ids)
	}
	before := plan.ExplainStream(root)
	AssignState(root, func() uint32 {
		t.Fatal("AssignState allocated an id for a tree that has them all")
		return 0
	})
	if after := plan.ExplainStream(root); after != before {
		t.Errorf("second AssignState changed the plan:\n%s\nwas:\n%s", after, before)
	}
	m := root.(*plan.StreamMaterialize)
	if got := m.State()[0].ID; got != m.Relation.ID {
		t.Errorf("materialize state id %d, want the relation's %d", got, m.Relation.ID)
	}
}
