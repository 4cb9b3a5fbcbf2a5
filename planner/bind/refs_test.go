package bind

import (
	"slices"
	"testing"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/parser"
	"github.com/tributary/tributary/sql/types"
)

func parseQuery(t *testing.T, sql string) *parser.Query {
	t.Helper()
	stmts, err := parser.Parse(sql)
	if err != nil {
		t.Fatal(err)
	}
	return stmts[0].(*parser.Query)
}

// visible lists a plan's visible output columns.
func visibleNames(n plan.Node) []string {
	var out []string
	for _, f := range n.Schema() {
		if !f.Hidden {
			out = append(out, f.Name)
		}
	}
	return out
}

// TestRefsPinNames: a definition bound with the Refs it recorded keeps its
// meaning after the table is renamed, a column renamed and one added (the
// added one is projected away, * does not grow), and a view never pinned
// resolves its names on the default path whatever the session's.
func TestRefsPinNames(t *testing.T) {
	cat := testCatalog(t)
	const def = "SELECT * FROM t WHERE v > 0"
	b := New(cat, nil)
	if _, err := b.Query(parseQuery(t, def)); err != nil {
		t.Fatal(err)
	}
	refs := b.Refs()
	if len(refs) != 1 || refs[0].Name != "t" || !slices.Equal(refs[0].Columns, []string{"id", "name", "v"}) {
		t.Fatalf("refs %+v", refs)
	}

	old, _ := cat.Lookup("public", "t")
	r := *old
	r.Name = "t2"
	r.Columns = append(slices.Clone(old.Columns), catalog.Column{Name: "w", Type: types.TInt64})
	r.Columns[2].Name = "value"
	if err := cat.Rename(&r); err != nil {
		t.Fatal(err)
	}
	if _, err := New(cat, nil).Query(parseQuery(t, def)); err == nil {
		t.Fatal("the definition bound by name after the rename")
	}
	pq, err := New(cat, nil).WithRefs(refs).Query(parseQuery(t, def))
	if err != nil {
		t.Fatal(err)
	}
	if got := visibleNames(pq.Root); !slices.Equal(got, []string{"id", "name", "v"}) {
		t.Fatalf("pinned columns %v", got)
	}

	// A view without Refs, read under a path that shadows its table.
	if err := cat.Add(&catalog.Relation{ID: cat.NextID(), Schema: "public", Name: "vu", Kind: catalog.KindView,
		Definition: "SELECT id FROM u", Columns: []catalog.Column{{Name: "id", Type: types.TInt32}}}); err != nil {
		t.Fatal(err)
	}
	cat.SetSchemas(map[string]uint32{"s": cat.NextID()})
	if err := cat.Add(&catalog.Relation{ID: cat.NextID(), Schema: "s", Name: "u", Kind: catalog.KindTable,
		Columns: []catalog.Column{{Name: "id", Type: types.TInt32}}, PK: []int{0}}); err != nil {
		t.Fatal(err)
	}
	path := catalog.Path{Catalog: cat, Search: []string{"s", "public"}}
	pq, err = New(path, nil).Query(parseQuery(t, "SELECT * FROM vu"))
	if err != nil {
		t.Fatal(err)
	}
	var scanned []uint32
	var walk func(n plan.Node)
	walk = func(n plan.Node) {
		if s, ok := n.(*plan.Scan); ok {
			scanned = append(scanned, s.Table.ID)
		}
		for _, c := range n.Children() {
			walk(c)
		}
	}
	walk(pq.Root)
	pub, _ := cat.Lookup("public", "u")
	if !slices.Equal(scanned, []uint32{pub.ID}) {
		t.Fatalf("the unpinned view read %v, want public.u (%d)", scanned, pub.ID)
	}
	// The session's own names follow its path.
	pq, err = New(path, nil).Query(parseQuery(t, "SELECT * FROM u"))
	if err != nil {
		t.Fatal(err)
	}
	if got := visibleNames(pq.Root); !slices.Equal(got, []string{"id"}) {
		t.Fatalf("s.u columns %v", got)
	}
}
