package bind

import (
	"strings"
	"testing"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/parser"
	"github.com/tributary/tributary/sql/types"
)

// TestInsertLiteralChunk: an INSERT's literal rows that bind to plain constants of every
// column go into one chunk (plan.Values.Lit), each value in its column's place whatever
// the column list's order; rows that miss a column, hold DEFAULT or a value literalConst
// leaves to the expression path, or a table with a generated or identity column, bind value
// by value as before (and fail as before).
func TestInsertLiteralChunk(t *testing.T) {
	c := catalog.New(nil)
	add := func(name string, cols []catalog.Column) {
		r := &catalog.Relation{ID: c.NextID(), Schema: "public", Name: name, Kind: catalog.KindTable, Columns: cols, PK: []int{0}}
		if err := c.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	add("w", []catalog.Column{{Name: "a", Type: types.TInt32}, {Name: "b", Type: types.TInt64},
		{Name: "c", Type: types.TVarchar}, {Name: "d", Type: types.TInt16}})
	add("n", []catalog.Column{{Name: "a", Type: types.TInt32}, {Name: "x", Type: types.TNumeric}})
	add("g", []catalog.Column{{Name: "a", Type: types.TInt32}, {Name: "b", Type: types.TInt32, Generated: "a + 1"}})
	for _, tc := range []struct {
		sql  string
		rows string // the chunk's rows; "" for none
		err  string
	}{
		{sql: "INSERT INTO w VALUES (0, 0, 'first', 0), (1, -2, 'x', 3), (4, NULL, NULL, -32768)",
			rows: "1 -2 x 3|4 NULL NULL -32768"},
		{sql: "INSERT INTO w (c, d, b, a) VALUES ('first', 0, 0, 0), ('y', 7, 9223372036854775807, -1)",
			rows: "-1 9223372036854775807 y 7"},
		{sql: "INSERT INTO w (a, b, c) VALUES (0, 0, 'z'), (1, 2, 'z')"},   // d defaults
		{sql: "INSERT INTO w VALUES (0, 0, 'z', 0), (1, DEFAULT, 'z', 0)"}, // a DEFAULT
		{sql: "INSERT INTO w VALUES (0, 0, 'z', 0), (1, 2, 3, 0)"},         // a number into varchar
		{sql: "INSERT INTO w VALUES (0, 0, 'z', 0), (1, 2, 'z', 32768)", err: "out of range"},
		{sql: "INSERT INTO w VALUES (0, 0, 'z', 0, 5), (1, 2, 'z', 0, 5)", err: "more expressions than target columns"},
		{sql: "INSERT INTO n VALUES (0, 1), (1, 2)"},
		{sql: "INSERT INTO g (a) VALUES (0), (1)"},
	} {
		stmts, err := parser.Parse(tc.sql)
		if err != nil {
			t.Fatalf("%s: %v", tc.sql, err)
		}
		q := stmts[0].(*parser.Query)
		if q.Rows == nil {
			t.Fatalf("%s: the parser took no literal rows", tc.sql)
		}
		n, _, err := New(c, nil).Insert(q)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", tc.sql, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.sql, err)
		}
		var v *plan.Values
		for in := n.Input; v == nil; {
			switch x := in.(type) {
			case *plan.Values:
				v = x
			case *plan.Project:
				in = x.Input
			default:
				t.Fatalf("%s: input %T", tc.sql, in)
			}
		}
		var got []string
		if v.Lit != nil {
			for i := 0; i < v.Lit.Len(); i++ {
				var cols []string
				for j := range v.Lit.Cols {
					d := v.Lit.Cols[j].Get(i)
					if d.Null {
						cols = append(cols, "NULL")
						continue
					}
					cols = append(cols, string(types.AppendText(nil, v.Lit.Cols[j].Type, &d)))
				}
				got = append(got, strings.Join(cols, " "))
			}
		}
		if g := strings.Join(got, "|"); g != tc.rows {
			t.Errorf("%s: literal chunk %q, want %q", tc.sql, g, tc.rows)
		}
		if want := 1 + len(q.Rows); v.NumRows() != want {
			t.Errorf("%s: %d rows, want %d", tc.sql, v.NumRows(), want)
		}
	}
}
