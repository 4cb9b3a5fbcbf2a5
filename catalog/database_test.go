package catalog

import (
	"errors"
	"testing"

	"github.com/tributary/tributary/sql/types"
)

// TestDatabasesScopeNames checks that each database resolves its own
// relations and schemas, that a three-part name (the parser's CrossDBSep
// encoding) reaches another database, and that the system tables are
// shared.
func TestDatabasesScopeNames(t *testing.T) {
	c := New(SystemRelations())
	c.SetDatabases([]DatabaseDesc{{Name: "d1", OID: c.NextID(), Owner: Owner}})
	c.SetSchemas(map[string]uint32{SchemaKey("d1", "s"): c.NextID()})
	devT := &Relation{ID: c.NextID(), Schema: DefaultSchema, Name: "t", Kind: KindTable}
	d1T := &Relation{ID: c.NextID(), Database: "d1", Schema: DefaultSchema, Name: "t", Kind: KindTable}
	d1S := &Relation{ID: c.NextID(), Database: "d1", Schema: "s", Name: "u", Kind: KindTable}
	for _, r := range []*Relation{devT, d1T, d1S} {
		if err := c.Add(r); err != nil {
			t.Fatalf("add %s.%s.%s: %v", r.DB(), r.Schema, r.Name, err)
		}
	}
	if err := c.Add(&Relation{ID: c.NextID(), Schema: "s", Name: "v", Kind: KindTable}); !errors.Is(err, types.ErrInvalidSchemaName) {
		t.Fatalf("schema s of d1 used in dev: %v", err)
	}
	if err := c.Add(&Relation{ID: c.NextID(), Database: "nope", Schema: DefaultSchema, Name: "v", Kind: KindTable}); !errors.Is(err, types.ErrInvalidCatalogName) {
		t.Fatalf("relation in an unknown database: %v", err)
	}
	dev, d1 := Path{Catalog: c, Search: []string{DefaultSchema}}, Path{Catalog: c, Database: "d1", Search: []string{DefaultSchema}}
	for _, tc := range []struct {
		p            Path
		schema, name string
		want         *Relation
		kind         error
	}{
		{dev, "", "t", devT, nil},
		{d1, "", "t", d1T, nil},
		{d1, "s", "u", d1S, nil},
		{dev, "s", "u", nil, types.ErrUndefinedTable},
		{dev, "d1" + CrossDBSep + "s", "u", d1S, nil},
		{d1, "dev" + CrossDBSep + "public", "t", devT, nil},
		{dev, "nope" + CrossDBSep + "public", "t", nil, types.ErrInvalidCatalogName},
	} {
		got, err := tc.p.Lookup(tc.schema, tc.name)
		if tc.kind != nil {
			if !errors.Is(err, tc.kind) {
				t.Errorf("%s: %q.%q: got %v, want %v", tc.p.db(), tc.schema, tc.name, err, tc.kind)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: %q.%q: got %v, %v", tc.p.db(), tc.schema, tc.name, got, err)
		}
	}
	if _, err := d1.Lookup("", "pg_class"); err != nil {
		t.Errorf("system table from d1: %v", err)
	}
	count := func(rels []*Relation) (n int) {
		for _, r := range rels {
			if r.ID >= FirstUserID {
				n++
			}
		}
		return n
	}
	if n, m := count(dev.Relations()), count(d1.Relations()); n != 1 || m != 2 {
		t.Errorf("user relations listed: dev %d, d1 %d; want 1 and 2", n, m)
	}
	if !d1.HasSchema("s") || dev.HasSchema("s") {
		t.Error("schema s must exist in d1 alone")
	}
	rels, schemas := c.DatabaseContents("d1")
	if len(rels) != 2 || len(schemas) != 1 {
		t.Errorf("d1 holds %d relations and schemas %v", len(rels), schemas)
	}
	if got := c.Databases(); len(got) != 2 || got[0].Name != Database || got[1].Name != "d1" {
		t.Errorf("databases: %v", got)
	}
}
