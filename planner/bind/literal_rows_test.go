package bind

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/e2e/testseed"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/parser"
	"github.com/tributary/tributary/sql/types"
)

// TestLiteralValue: each literal of an INSERT's VALUES rows that the parser's fast path took
// (parser.Query.Rows) binds to the same constant, or the same error, as its TiDB expression
// (parser.Literal.Expr) binds to: integers at the edges of int4 and int8, with and without a
// minus, decimals, strings, NULL, TRUE and FALSE.
func TestLiteralValue(t *testing.T) {
	seed := testseed.For(t)
	rng := rand.New(rand.NewPCG(seed, 9))
	lits := []string{"0", "-0", "1", "-1", "2147483647", "-2147483647", "2147483648", "-2147483648",
		"2147483649", "-2147483649", "9223372036854775807", "-9223372036854775807",
		"9223372036854775808", "-9223372036854775808", "18446744073709551615", "-18446744073709551616",
		"99999999999999999999999999999999999999", "007", "1.5", "-0.25", "3.000", "12345678901234567890.123456789",
		"'abc'", "''", "'it''s'", "E'tab\\there'", "NULL", "TRUE", "false"}
	for range 200 {
		lits = append(lits, fmt.Sprint(rng.Int64()>>rng.IntN(64)), fmt.Sprint(-rng.Int64()>>rng.IntN(64)),
			fmt.Sprintf("%d.%d", rng.IntN(1e6), rng.IntN(1e4)))
	}
	b := New(nil, nil)
	for i, row := range literalRows(t, lits) {
		c := &exprCtx{scope: &scope{}, clause: "VALUES"}
		got, gerr := b.literalValue(c, row[0])
		want, werr := b.bindExpr(c, row[0].Expr())
		if fmt.Sprint(gerr) != fmt.Sprint(werr) || !reflect.DeepEqual(got, want) {
			t.Errorf("seed %d: %s: literalValue %#v, %v; bindExpr %#v, %v", seed, lits[i], got, gerr, want, werr)
		}
	}
}

// TestLiteralConst: where literalConst takes a literal into a column of a
// type, its constant is the one literalValue and assignCast make; it takes
// integers into integer columns and strings into varchar, and leaves every
// literal that fails there to them.
func TestLiteralConst(t *testing.T) {
	lits := []string{"0", "-0", "1", "-1", "32767", "32768", "-32768", "-32769", "2147483647", "2147483648",
		"-2147483648", "-2147483649", "9223372036854775807", "-9223372036854775807", "9223372036854775808",
		"-9223372036854775808", "007", "1.5", "'abc'", "''", "'it''s'", "'12'", "NULL", "TRUE"}
	cols := []types.T{types.TInt16, types.TInt32, types.TInt64, types.TVarchar, {ID: types.Varchar, Width: 2}, types.TNumeric, types.TBool, types.TFloat64}
	b := New(nil, nil)
	taken := map[string]bool{}
	for i, row := range literalRows(t, lits) {
		for _, ct := range cols {
			col := &catalog.Column{Name: "c", Type: ct}
			c := &exprCtx{scope: &scope{}, clause: "VALUES"}
			want, werr := b.literalValue(c, row[0])
			if werr == nil {
				want, werr = assignCast(b.coerceParam(want, ct), col)
			}
			d, ok := literalConst(row[0], ct)
			if !ok {
				continue
			}
			taken[lits[i]+" "+ct.String()] = true
			if got := (&expr.Const{Value: d, Typ: ct}); werr != nil || !reflect.DeepEqual(expr.Expr(got), want) {
				t.Errorf("%s into %s: literalConst %#v; literalValue and assignCast %#v, %v", lits[i], ct, got, want, werr)
			}
		}
	}
	for _, k := range []string{"1 bigint", "-32768 smallint", "2147483647 integer", "'abc' character varying", "NULL bigint", "NULL character varying"} {
		if !taken[k] {
			t.Errorf("literalConst does not take %s", k)
		}
	}
}

// literalRows parses an INSERT of a row (1) and then one row of each literal, and returns the
// literal rows the parser's fast path took (all of them, or the test fails).
func literalRows(t *testing.T, lits []string) [][]parser.Literal {
	t.Helper()
	var sql strings.Builder
	sql.WriteString("INSERT INTO t VALUES (1)")
	for _, l := range lits {
		fmt.Fprintf(&sql, ", (%s)", l)
	}
	stmts, err := parser.Parse(sql.String())
	if err != nil {
		t.Fatal(err)
	}
	q := stmts[0].(*parser.Query)
	if len(q.Rows) != len(lits) {
		t.Fatalf("the fast path took %d rows of %d", len(q.Rows), len(lits))
	}
	return q.Rows
}
