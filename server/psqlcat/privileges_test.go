package psqlcat

import (
	"os"
	"strings"
	"testing"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/sql/types"
)

// TestListPrivileges answers psql 15's \dp query (testdata/psql15-dp.sql,
// as psql -E prints it) without and with a name pattern.
func TestListPrivileges(t *testing.T) {
	b, err := os.ReadFile("testdata/psql15-dp.sql")
	if err != nil {
		t.Fatal(err)
	}
	dp := string(b)
	c := fixtureCatalog(t)
	for _, r := range []*catalog.Relation{
		{ID: 16420, Schema: "public", Name: "acc", Kind: catalog.KindTable, Owner: "alice", Columns: []catalog.Column{{Name: "id", Type: types.TInt32}},
			Grants: map[string][]string{"public": {"select"}, "bob": {"delete", "insert", "select", "update"}, "Mixed Case": {"select"}}},
		{ID: 16421, Schema: "public", Name: "acc_m", Kind: catalog.KindMaterializedView, Owner: "alice", Columns: []catalog.Column{{Name: "s", Type: types.TInt64}},
			Grants: map[string][]string{"bob": {"select"}}},
	} {
		if err := c.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	cols, rows, ok, err := Answer(c, dp)
	if !ok || err != nil {
		t.Fatalf("\\dp not answered: %v %v", ok, err)
	}
	if got := len(cols); got != 6 || cols[3].Name != "Access privileges" {
		t.Fatalf("columns: %+v", cols)
	}
	var got []string
	for _, r := range rows {
		got = append(got, r[1].S+"|"+r[2].S+"|"+strings.ReplaceAll(datumText(r[3]), "\n", ","))
	}
	want := []string{
		`acc|table|alice=arwdDxt/alice,"Mixed Case"=r/alice,bob=arwd/alice,=r/alice`,
		"acc_m|materialized view|alice=arwdDxt/alice,bob=r/alice",
		"mv|materialized view|NULL", "t|table|NULL", "v|view|NULL",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("\\dp rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// \dp acc* and \dp public.acc
	for pattern, n := range map[string]int{
		"  AND c.relname OPERATOR(pg_catalog.~) '^(acc.*)$' COLLATE pg_catalog.default\n  AND n.nspname !~ '^pg_' AND pg_catalog.pg_table_is_visible(c.oid)":          2,
		"  AND c.relname OPERATOR(pg_catalog.~) '^(acc)$' COLLATE pg_catalog.default\n  AND n.nspname OPERATOR(pg_catalog.~) '^(public)$' COLLATE pg_catalog.default": 1,
	} {
		q := strings.Replace(dp, "  AND n.nspname !~ '^pg_' AND pg_catalog.pg_table_is_visible(c.oid)", pattern, 1)
		_, rows, ok, err := Answer(c, q)
		if !ok || err != nil || len(rows) != n {
			t.Fatalf("\\dp with %q: %d rows, %v %v", pattern, len(rows), ok, err)
		}
	}
}

func datumText(d types.Datum) string {
	if d.Null {
		return "NULL"
	}
	return d.S
}
