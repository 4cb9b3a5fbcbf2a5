package bind

import (
	"errors"
	"strings"
	"testing"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/sql/parser"
	"github.com/tributary/tributary/sql/types"
)

// TestCrossDatabaseNames binds three-part names from the parser through the
// catalog's Path: the parser's and the catalog's separators agree, a read
// reaches the other database's table, DML into it is refused.
func TestCrossDatabaseNames(t *testing.T) {
	if parser.CrossDBSep != catalog.CrossDBSep {
		t.Fatalf("parser.CrossDBSep %q != catalog.CrossDBSep %q", parser.CrossDBSep, catalog.CrossDBSep)
	}
	c := testCatalog(t)
	c.SetDatabases([]catalog.DatabaseDesc{{Name: "d1", OID: c.NextID()}})
	d1 := &catalog.Relation{ID: c.NextID(), Database: "d1", Schema: "public", Name: "w", Kind: catalog.KindTable,
		Columns: []catalog.Column{{Name: "k", Type: types.TInt64}}, PK: []int{0}}
	if err := c.Add(d1); err != nil {
		t.Fatal(err)
	}
	dev := catalog.Path{Catalog: c, Search: []string{"public"}}
	bind := func(sql string) error {
		stmts, err := parser.Parse(sql)
		if err != nil {
			return err
		}
		switch n := stmts[0].(type) {
		case *parser.Query:
			_, err = New(dev, nil).Query(n)
		default:
			t.Fatalf("%s: %T", sql, n)
		}
		return err
	}
	if err := bind("SELECT k, t.name FROM d1.public.w JOIN t ON w.k = t.id"); err != nil {
		t.Fatalf("cross-database read: %v", err)
	}
	if err := bind("SELECT k FROM w"); !errors.Is(err, types.ErrUndefinedTable) {
		t.Fatalf("d1's table unqualified from dev: %v", err)
	}
	if err := bind("SELECT * FROM nope.public.w"); !errors.Is(err, types.ErrInvalidCatalogName) || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("unknown database: %v", err)
	}
}
