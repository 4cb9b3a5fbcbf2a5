package expr

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/tributary/tributary/sql/types"
)

// randomChunk builds n rows over ts with about 10% NULLs.
func randomChunk(r *rand.Rand, ts []types.T, n int) *types.Chunk {
	c := types.NewChunk(ts, n)
	words := []string{"", "a", "abc", "Hello", "héllo wörld", "x%y", "2024-01-01", "ABC_def"}
	row := make([]types.Datum, len(ts))
	for i := 0; i < n; i++ {
		for j, t := range ts {
			var d types.Datum
			if r.IntN(10) == 0 {
				d = types.NullDatum
			} else {
				switch t.ID {
				case types.Bool:
					d = types.DBool(r.IntN(2) == 0)
				case types.Int16, types.Int32:
					d = types.DInt(int64(r.IntN(2001) - 1000))
				case types.Int64:
					d = types.DInt(r.Int64N(1<<40) - 1<<39)
				case types.Float64:
					d = types.DFloat(r.NormFloat64() * 100)
				case types.Numeric:
					d.Dec.SetFinite(r.Int64N(2000000)-1000000, -int32(r.IntN(4)))
				case types.Varchar:
					d = types.DString(words[r.IntN(len(words))])
				case types.Date:
					d = types.DInt(int64(r.IntN(40000) - 10000))
				case types.Timestamp, types.Timestamptz:
					d = types.DInt(r.Int64N(4e15) - 1e15)
				case types.Interval:
					d = types.DInterval(types.IntervalValue{Months: int32(r.IntN(30)), Days: int32(r.IntN(60) - 30), Micros: r.Int64N(1e11)})
				}
			}
			row[j] = d
		}
		c.AppendRow(row)
	}
	return c
}

// TestEvalMatchesEvalRow checks that vectorised Eval agrees with EvalRow on
// random chunks, including errors (both must fail or neither).
func TestEvalMatchesEvalRow(t *testing.T) {
	seed := uint64(20261204) // fixed: every run checks the same cases
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 7))
	cols := []types.T{types.TInt32, types.TInt64, types.TFloat64, types.TNumeric, types.TVarchar, types.TBool,
		types.TDate, types.TTimestamp, types.TInterval, types.TInt16}
	exprs := []string{
		"$0 + $1", "$0 * 3", "$1 - $0", "$0 / ($0 % 7 + 1)", "$9 + $9", "-$0", "$0 % 5",
		"$2 * 2::float8 + $0", "$3 + $0", "$3 * $3", "$3 / 7", "round($3, 1)",
		"$0 < $1", "$0 = 5", "$4 = 'abc'", "$4 < $4", "$3 >= 1.5", "$2 <> $2", "$0 <=> $9",
		"$5 and $0 > 0", "$5 or $0 > 0", "not $5", "$0 in (1, 2, $9)", "$0 between -10 and 10",
		"coalesce($0, $9, 0)", "nullif($0, 3)", "greatest($0, $9)", "upper($4)", "lower($4) || '!'",
		"length($4)", "substr($4, 2, 2)", "$4 like 'a%'", "$4 ilike '%L%'", "$4 ~ 'b.'",
		"$6 + 3", "$7 + $8", "$7 - '1 day'::interval", "date_trunc('day', $7)", "extract('year', $6)",
		"$0::int8", "$0::text", "$1::int2", "$3::int4", "$2::numeric", "$6::timestamp",
		"$0 > 0 and 100 / $0 > 1", "case($0 = 0, 0, 100 / $0)", "case($5, $4, $4 || 'x')",
		"concat($4, $0, NULL)", "is_null($0)", "is_not_null($4)", "is_true($5)", "is_not_false($5)",
	}
	for _, s := range exprs {
		e, err := parseExpr(s, cols...)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		for round := 0; round < 3; round++ {
			in := randomChunk(r, cols, 1+r.IntN(300))
			ctx := &Ctx{}
			out := types.NewVector(e.Type(), in.Len())
			verr := e.Eval(ctx, in, out)
			var rerr error
			var want []types.Datum
			row := make([]types.Datum, len(cols))
			for i := 0; i < in.Len(); i++ {
				d, err := e.EvalRow(ctx, in.Row(i, row))
				if err != nil {
					rerr = err
					break
				}
				want = append(want, d.Copy())
			}
			if (verr == nil) != (rerr == nil) {
				t.Fatalf("%s: Eval error %v, EvalRow error %v", s, verr, rerr)
			}
			if verr != nil {
				if !errors.Is(verr, errors.Unwrap(rerr)) {
					t.Fatalf("%s: error kinds differ: %v vs %v", s, verr, rerr)
				}
				continue
			}
			if out.Len() != in.Len() {
				t.Fatalf("%s: Eval wrote %d rows for %d", s, out.Len(), in.Len())
			}
			for i := range want {
				got := out.Get(i)
				if got.Null != want[i].Null || (!got.Null && types.CompareNonNull(e.Type(), &got, &want[i]) != 0) {
					t.Fatalf("%s row %d: Eval %s, EvalRow %s", s, i, show(e.Type(), &got), show(e.Type(), &want[i]))
				}
			}
		}
	}
}

func show(t types.T, d *types.Datum) string {
	if d.Null {
		return "NULL"
	}
	return types.FormatText(t, d)
}

func TestCase(t *testing.T) {
	for _, c := range []struct{ expr, want string }{
		{"case(1 = 2, 'a', 'b')", "b"},
		{"case(1 = 2, 'a')", "NULL"},
		{"case(NULL::bool, 1, 2.5)", "2.5"},
		{"case(true, 1, 1 / 0)", "1"},
	} {
		got, err := evalText(c.expr, nil)
		if err != nil || got != c.want {
			t.Errorf("%s = %q (%v), want %q", c.expr, got, err, c.want)
		}
	}
	// simple CASE with operand
	e, err := Case(Column(0, types.TInt32), []Expr{Literal(types.DInt(1), types.TInt32), Literal(types.DString("2"), types.TUnknown)},
		[]Expr{Literal(types.DString("one"), types.TUnknown), Literal(types.DString("two"), types.TUnknown)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if e.Type() != types.TVarchar {
		t.Fatalf("type %v", e.Type())
	}
	d, err := e.EvalRow(nil, []types.Datum{types.DInt(2)})
	if err != nil || d.S != "two" {
		t.Fatalf("got %v %v", d, err)
	}
	if got := e.String(); got != "CASE $0 WHEN 1 THEN 'one' WHEN 2 THEN 'two' END" {
		t.Errorf("String %q", got)
	}
	if _, err := Case(nil, []Expr{Literal(types.DBool(true), types.TBool)}, []Expr{Literal(types.DInt(1), types.TInt32)},
		Literal(types.DString("x"), types.TVarchar)); !errors.Is(err, types.ErrDatatypeMismatch) {
		t.Errorf("CASE int/text: %v", err)
	}
}

func TestCommonType(t *testing.T) {
	for _, c := range []struct {
		in   []types.T
		want types.T
		ok   bool
	}{
		{[]types.T{types.TInt32, types.TInt64}, types.TInt64, true},
		{[]types.T{types.TInt32, types.TNumeric, types.TUnknown}, types.TNumeric, true},
		{[]types.T{types.TNumeric, types.TFloat64}, types.TFloat64, true},
		{[]types.T{types.TUnknown, types.TUnknown}, types.TVarchar, true},
		{[]types.T{types.TDate, types.TTimestamptz}, types.TTimestamptz, true},
		{[]types.T{{ID: types.Varchar, Width: 5}, {ID: types.Varchar, Width: 5}}, types.T{ID: types.Varchar, Width: 5}, true},
		{[]types.T{{ID: types.Varchar, Width: 5}, types.TVarchar}, types.TVarchar, true},
		{[]types.T{types.TInt32, types.TVarchar}, types.TUnknown, false},
		{[]types.T{types.TDate, types.TTime}, types.TUnknown, false},
	} {
		got, err := CommonType(c.in)
		if (err == nil) != c.ok || (c.ok && got != c.want) {
			t.Errorf("CommonType(%v) = %v, %v", c.in, got, err)
		}
		if err != nil && !errors.Is(err, types.ErrDatatypeMismatch) {
			t.Errorf("CommonType(%v) error kind %v", c.in, err)
		}
	}
}

func TestFoldWalkString(t *testing.T) {
	e, err := parseExpr("$0 + (1 + 2) * 3", types.TInt32)
	if err != nil {
		t.Fatal(err)
	}
	if IsConst(e) {
		t.Fatal("column expression is not constant")
	}
	f, err := Fold(e)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.String(); got != "($0 + 9)" {
		t.Errorf("folded %q", got)
	}
	if got := e.String(); got != "($0 + ((1 + 2) * 3))" {
		t.Errorf("String %q", got)
	}
	n := 0
	Walk(e, func(x Expr) bool { n++; return true })
	if n != 7 {
		t.Errorf("Walk visited %d nodes", n)
	}
	r, _ := Call("random", nil)
	now, _ := Call("now", nil)
	if IsConst(r) || IsConst(now) {
		t.Error("random() and now() must not fold")
	}
	if _, err := Fold(mustParse(t, "1 / 0")); !errors.Is(err, types.ErrDivisionByZero) {
		t.Errorf("folding 1/0: %v", err)
	}
	p := Param(0, types.TInt64)
	d, err := p.EvalRow(&Ctx{Params: []types.Datum{types.DInt(5)}}, nil)
	if err != nil || d.I != 5 {
		t.Errorf("param: %v %v", d, err)
	}
	if _, err := p.EvalRow(&Ctx{}, nil); !errors.Is(err, types.ErrUndefinedParameter) {
		t.Errorf("missing param: %v", err)
	}
	for s, want := range map[string]string{
		"upper($1)":          "upper($1)",
		"current_user":       "current_user",
		"'a'::varchar(3)":    "'a'::character varying(3)",
		"$1 like 'a%'":       "($1 LIKE 'a%')",
		"$0 in (1, 2)":       "($0 IN (1, 2))",
		"$1::int4":           "$1::integer",
		"'2024-01-01'::date": "'2024-01-01'::date",
	} {
		got := mustParse(t, s, types.TInt32, types.TVarchar).String()
		if got != want {
			t.Errorf("String(%s) = %q, want %q", s, got, want)
		}
	}
}

func mustParse(t *testing.T, s string, cols ...types.T) Expr {
	t.Helper()
	e, err := parseExpr(s, cols...)
	if err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return e
}

func TestContextFunctions(t *testing.T) {
	ctx := &Ctx{Now: 1700000000123456, User: "alice", BackendPID: 42, Rand: rand.New(rand.NewPCG(1, 2))}
	for s, want := range map[string]string{
		"now()":                "2023-11-14 22:13:20.123456+00",
		"current_timestamp":    "2023-11-14 22:13:20.123456+00",
		"current_date":         "2023-11-14",
		"localtimestamp":       "2023-11-14 22:13:20.123456",
		"current_user":         "alice",
		"current_database()":   "dev",
		"current_schema()":     "public",
		"pg_backend_pid()":     "42",
		"random() < 1::float8": "t",
		"age('2023-11-14 00:00'::timestamp) > '0 days'::interval": "f",
	} {
		got, err := evalText(s, ctx)
		if err != nil || got != want {
			t.Errorf("%s = %q (%v), want %q", s, got, err, want)
		}
	}
	if got, _ := evalText("version()", nil); got != Version {
		t.Errorf("version() = %q", got)
	}
}

func TestImplicitCast(t *testing.T) {
	lit := func(s string) Expr { return Literal(types.DString(s), types.TUnknown) }
	txt := func(s string) Expr { return Literal(types.DString(s), types.TVarchar) }
	if _, err := ImplicitCast(txt("12"), types.TInt32); !errors.Is(err, types.ErrDatatypeMismatch) {
		t.Errorf("text to int on assignment: %v", err)
	}
	if e, err := ImplicitCast(lit("12"), types.TInt32); err != nil || fmt.Sprint(e) != "12" {
		t.Errorf("unknown to int: %v %v", e, err)
	}
	if e, err := ImplicitCast(Literal(types.DInt(5), types.TInt64), types.TVarchar); err != nil || e.String() != "'5'" {
		t.Errorf("int to text: %v %v", e, err)
	}
	if _, err := ImplicitCast(txt("abcd"), types.T{ID: types.Varchar, Width: 3}); !errors.Is(err, types.ErrStringTruncation) {
		t.Errorf("varchar(3) overflow on assignment: %v", err)
	}
	if e, err := ImplicitCast(txt("abc  "), types.T{ID: types.Varchar, Width: 3}); err != nil || e.String() != "'abc'::character varying(3)" {
		t.Errorf("trailing spaces: %v %v", e, err)
	}
	if e, err := ImplicitCast(Literal(types.DFloat(2.5), types.TFloat64), types.TInt32); err != nil || e.String() != "2" {
		t.Errorf("float to int on assignment: %v %v", e, err)
	}
	if _, err := ImplicitCast(Literal(types.DInt(1), types.TInt32), types.TBool); !errors.Is(err, types.ErrDatatypeMismatch) {
		t.Errorf("int to bool on assignment: %v", err)
	}
}
