package psqlcat

import (
	"errors"
	"slices"
	"testing"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/sql/types"
)

type withFuncs struct {
	*catalog.Catalog
	funcs []Func
}

func (w withFuncs) Functions() []Func { return w.funcs }

// dfQuery is psql 15's \df query with the conditions where.
func dfQuery(where string) string {
	return funcsQuery + where + " ORDER BY 1, 2, 4;"
}

// TestListFunctions: \df answers from the functions, in pg_catalog: hidden
// without a pattern, filtered by name, schema and kind, sorted by name and
// arguments; a bad pattern is 2201B.
func TestListFunctions(t *testing.T) {
	r := withFuncs{catalog.New(catalog.SystemRelations()), []Func{
		{Name: "abs", Args: []types.T{types.TInt64}, Result: types.TInt64},
		{Name: "abs", Args: []types.T{types.TFloat64}, Result: types.TFloat64},
		{Name: "concat_ws", Args: []types.T{types.TVarchar, types.TVarchar}, Variadic: true, Result: types.TVarchar},
		{Name: "count", Result: types.TInt64, Agg: true},
		{Name: "count", AnyArg: true, Result: types.TInt64, Agg: true},
	}}
	visible := "pg_catalog.pg_function_is_visible(p.oid)"
	for _, c := range []struct {
		where string
		want  [][]string
	}{
		{visible + " AND n.nspname <> 'pg_catalog' AND n.nspname <> 'information_schema'", nil},
		{"p.proname OPERATOR(pg_catalog.~) '^(abs)$' COLLATE pg_catalog.default AND " + visible,
			[][]string{{"pg_catalog", "abs", "bigint", "bigint", "func"}, {"pg_catalog", "abs", "double precision", "double precision", "func"}}},
		{"p.proname OPERATOR(pg_catalog.~) '^(c.*)$' COLLATE pg_catalog.default AND n.nspname OPERATOR(pg_catalog.~) '^(pg_catalog)$' COLLATE pg_catalog.default",
			[][]string{{"pg_catalog", "concat_ws", "text", "text, VARIADIC text[]", "func"},
				{"pg_catalog", "count", "bigint", "", "agg"}, {"pg_catalog", "count", "bigint", `"any"`, "agg"}}},
		{"p.proname OPERATOR(pg_catalog.~) '^(.*)$' COLLATE pg_catalog.default AND n.nspname OPERATOR(pg_catalog.~) '^(public)$' COLLATE pg_catalog.default", nil},
		{"( p.prokind = 'a' ) AND p.proname OPERATOR(pg_catalog.~) '^(.*)$' COLLATE pg_catalog.default AND " + visible,
			[][]string{{"pg_catalog", "count", "bigint", "", "agg"}, {"pg_catalog", "count", "bigint", `"any"`, "agg"}}},
	} {
		cols, rows, ok, err := Answer(r, dfQuery(c.where))
		if !ok || err != nil || len(cols) != 5 {
			t.Fatalf("%s: ok %v, err %v, %d columns", c.where, ok, err, len(cols))
		}
		got := texts(rows)
		if len(got) != len(c.want) {
			t.Fatalf("%s: rows %q, want %q", c.where, got, c.want)
		}
		for i := range got {
			if len(got[i]) != len(c.want[i]) {
				t.Fatalf("%s: row %d %q, want %q", c.where, i, got[i], c.want[i])
			}
			for j := range got[i] {
				if got[i][j] != c.want[i][j] {
					t.Errorf("%s: row %d %q, want %q", c.where, i, got[i], c.want[i])
				}
			}
		}
	}
	_, _, ok, err := Answer(r, dfQuery("p.proname OPERATOR(pg_catalog.~) '^(()$' COLLATE pg_catalog.default AND "+visible))
	if !ok || !errors.Is(err, types.ErrInvalidRegex) {
		t.Errorf("bad pattern: ok %v, err %v", ok, err)
	}
	if _, _, ok, _ := Answer(r.Catalog, dfQuery(visible)); ok {
		t.Error("answered \\df without functions")
	}
}

// TestListTypesAndExtensions: \dT lists the non-array types by pattern
// (typname or format_type's name), none without one; \dx lists nothing.
func TestListTypesAndExtensions(t *testing.T) {
	r := catalog.New(catalog.SystemRelations())
	where := "(t.typrelid = 0 OR (SELECT c.relkind = 'c' FROM pg_catalog.pg_class c WHERE c.oid = t.typrelid)) AND NOT EXISTS(SELECT 1 FROM pg_catalog.pg_type el WHERE el.oid = t.typelem AND el.typarray = t.oid) "
	for cond, want := range map[string][]string{
		"AND n.nspname <> 'pg_catalog' AND n.nspname <> 'information_schema' AND pg_catalog.pg_type_is_visible(t.oid)": nil,
		"AND (t.typname OPERATOR(pg_catalog.~) '^(int.*)$' COLLATE pg_catalog.default OR pg_catalog.format_type(t.oid, NULL) OPERATOR(pg_catalog.~) '^(int.*)$' COLLATE pg_catalog.default) AND pg_catalog.pg_type_is_visible(t.oid)": {
			"bigint", "integer", "interval", "smallint"},
		"AND (t.typname OPERATOR(pg_catalog.~) '^(boolean)$' COLLATE pg_catalog.default OR pg_catalog.format_type(t.oid, NULL) OPERATOR(pg_catalog.~) '^(boolean)$' COLLATE pg_catalog.default) AND pg_catalog.pg_type_is_visible(t.oid)": {
			"boolean"},
	} {
		_, rows, ok, err := Answer(r, typesQuery+where+cond+" ORDER BY 1, 2;")
		if !ok || err != nil {
			t.Fatalf("%s: ok %v err %v", cond, ok, err)
		}
		if got := names(texts(rows), 1); !slices.Equal(got, want) {
			t.Errorf("%s: types %q, want %q", cond, got, want)
		}
	}
	cols, rows, ok, err := Answer(r, extensionsQuery+" ORDER BY 1;")
	if !ok || err != nil || len(cols) != 4 || len(rows) != 0 {
		t.Errorf("\\dx: ok %v, err %v, %d columns, %d rows", ok, err, len(cols), len(rows))
	}
}

// texts formats rows as psql would read them (NULL as "").
func texts(rows [][]types.Datum) [][]string {
	out := make([][]string, len(rows))
	for i, row := range rows {
		out[i] = make([]string, len(row))
		for j := range row {
			if !row[j].Null {
				out[i][j] = row[j].S
			}
		}
	}
	return out
}
