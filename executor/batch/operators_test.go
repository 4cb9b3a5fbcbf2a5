package batch

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
)

func TestValuesFilterProject(t *testing.T) {
	in := values(t, `
I T
1 a
2 NULL
3 c
NULL d`)
	f := &plan.Filter{Input: in, Cond: call(t, ">", col(0, types.TInt64), lit(1))}
	p := &plan.Project{
		Input: f,
		Exprs: []expr.Expr{col(1, types.TVarchar), call(t, "*", col(0, types.TInt64), lit(10))},
		Out:   fields(types.TVarchar, types.TInt64),
	}
	expectRows(t, query(t, newEnv(), p), `
NULL 20
c 30`)
	// Every row passes, and none does.
	all := &plan.Filter{Input: in, Cond: expr.Literal(types.DBool(true), types.TBool)}
	if got := query(t, newEnv(), all); len(got) != 4 {
		t.Errorf("true filter kept %d rows", len(got))
	}
	none := &plan.Filter{Input: in, Cond: expr.Literal(types.NullDatum, types.TBool)}
	expectRows(t, query(t, newEnv(), none), ``)
}

func TestProjectNoColumns(t *testing.T) {
	// count(*) over a projection of no columns still sees every row.
	in := values(t, "I\n1\n2\n3")
	p := &plan.Project{Input: in, Out: nil}
	a := &plan.Agg{Input: p, Aggs: []plan.AggCall{{Agg: agg(t, "count", false), Filter: -1}}, Out: fields(types.TInt64)}
	expectRows(t, query(t, newEnv(), a), "3")
}

func TestFilterSkipsInvisibleRows(t *testing.T) {
	// A row hidden by the input's visibility mask must not be evaluated (1/0 here).
	c := chunkOf(t, "I\n0\n2\n4")
	c.Vis = []bool{false, true, true}
	src := &chunkSource{ts: c.Types(), chunks: []*types.Chunk{c}}
	cond := call(t, "<", call(t, "/", lit(4), col(0, types.TInt64)), lit(2))
	x := newFilter(newEnv(), &plan.Filter{Cond: cond}, src)
	got, err := collect(t, x)
	if err != nil {
		t.Fatal(err)
	}
	expectRows(t, got, "4")
	if !src.closed {
		t.Error("input not closed")
	}
}

func TestSort(t *testing.T) {
	in := values(t, `
I T
2 b
NULL a
1 NULL
2 a
1 c
NULL NULL`)
	for _, tc := range []struct {
		keys []plan.SortKey
		want string
	}{
		{[]plan.SortKey{{Col: 0}, {Col: 1}}, "1 c\n1 NULL\n2 a\n2 b\nNULL a\nNULL NULL"},
		{[]plan.SortKey{{Col: 0, Desc: true, NullsFirst: true}, {Col: 1, Desc: true, NullsFirst: true}},
			"NULL NULL\nNULL a\n2 b\n2 a\n1 NULL\n1 c"},
		{[]plan.SortKey{{Col: 0, NullsFirst: true}, {Col: 1, Desc: true}}, "NULL a\nNULL NULL\n1 c\n1 NULL\n2 b\n2 a"},
		{[]plan.SortKey{{Col: 1, Desc: true}}, "1 c\n2 b\nNULL a\n2 a\n1 NULL\nNULL NULL"}, // stable
	} {
		expectRows(t, query(t, newEnv(), &plan.Sort{Input: in, Keys: tc.keys}), tc.want)
	}
}

// bigValues returns n rows (i, i%mod) for i in [0, n).
func bigValues(t testing.TB, n, mod int) *plan.Values {
	var b strings.Builder
	b.WriteString("I I\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "%d %d\n", i, i%mod)
	}
	return values(t, b.String())
}

func TestSortManyChunks(t *testing.T) {
	in := bigValues(t, 3000, 7)
	got := query(t, newEnv(), &plan.Sort{Input: in, Keys: []plan.SortKey{{Col: 1}, {Col: 0, Desc: true}}})
	if len(got) != 3000 {
		t.Fatalf("got %d rows", len(got))
	}
	if got[0] != "2996 0" || got[len(got)-1] != "6 6" {
		t.Errorf("first %q last %q", got[0], got[len(got)-1])
	}
}

func TestLimit(t *testing.T) {
	in := bigValues(t, 2500, 1000)
	for _, tc := range []struct {
		count, offset expr.Expr
		n             int
		first         string
	}{
		{lit(3), nil, 3, "0 0"},
		{lit(3), lit(1023), 3, "1023 23"},
		{lit(2000), lit(100), 2000, "100 100"},
		{nil, lit(2400), 100, "2400 400"},
		{lit(10), lit(5000), 0, ""},
		{lit(0), nil, 0, ""},
		{expr.Literal(types.NullDatum, types.TInt64), expr.Literal(types.NullDatum, types.TInt64), 2500, "0 0"},
	} {
		got := query(t, newEnv(), &plan.Limit{Input: in, Count: tc.count, Offset: tc.offset})
		if len(got) != tc.n || (tc.n > 0 && got[0] != tc.first) {
			t.Errorf("limit %v offset %v: %d rows, first %v; want %d, %q", tc.count, tc.offset, len(got), got[:min(1, len(got))], tc.n, tc.first)
		}
	}
	_, err := queryErr(t, newEnv(), &plan.Limit{Input: in, Count: lit(-1)})
	expectKind(t, err, types.ErrInvalidLimit) // 2201W
	_, err = queryErr(t, newEnv(), &plan.Limit{Input: in, Offset: lit(-1)})
	expectKind(t, err, types.ErrInvalidOffset) // 2201X
	// A parameter, set before the first Next.
	env := newEnv()
	env.Ctx.Params = []types.Datum{types.DInt(2)}
	expectRows(t, query(t, env, &plan.Limit{Input: in, Count: expr.Param(0, types.TInt64)}), "0 0\n1 1")
}

func TestDistinct(t *testing.T) {
	in := values(t, `
I T
1 a
2 b
1 a
NULL a
NULL a
1 b
2 b`)
	expectRows(t, query(t, newEnv(), &plan.Distinct{Input: in}), "1 a\n2 b\nNULL a\n1 b")
	expectRows(t, query(t, newEnv(), &plan.Distinct{Input: in, On: []int{1}}), "1 a\n2 b")
	expectRows(t, query(t, newEnv(), &plan.Distinct{Input: in, On: []int{0}}), "1 a\n2 b\nNULL a")
}

func TestSetOps(t *testing.T) {
	a := values(t, "I\n1\n1\n1\n2\nNULL\nNULL\n3")
	b := values(t, "I\n1\n1\nNULL\n4")
	c := values(t, "I\n1")
	out := fields(types.TInt64)
	run := func(kind plan.SetOpKind, all bool, ins ...plan.Node) []string {
		return query(t, newEnv(), &plan.SetOp{Kind: kind, All: all, Inputs: ins, Out: out})
	}
	expectSet(t, run(plan.Union, true, a, b), "1\n1\n1\n2\nNULL\nNULL\n3\n1\n1\nNULL\n4")
	expectRows(t, run(plan.Union, false, a, b), "1\n2\nNULL\n3\n4")
	expectRows(t, run(plan.Intersect, false, a, b), "1\nNULL")
	expectRows(t, run(plan.Intersect, true, a, b), "1\n1\nNULL")
	expectRows(t, run(plan.Except, false, a, b), "2\n3")
	expectRows(t, run(plan.Except, true, a, b), "1\n2\nNULL\n3")
	expectRows(t, run(plan.Except, true, a, b, c), "2\nNULL\n3")
	expectRows(t, run(plan.Intersect, true, a, b, c), "1")
	expectRows(t, run(plan.Except, false, b, a), "4")
}

func TestCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	x, err := Build(newEnv(), &plan.Query{Root: &plan.Sort{Input: bigValues(t, 10, 2)}})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	_, err = x.Next(ctx)
	expectKind(t, err, types.ErrQueryCanceled)
}

func TestInitPlans(t *testing.T) {
	one := values(t, "I\n42")
	two := values(t, "I\n1\n2")
	empty := values(t, "I")
	q := &plan.Query{
		ParamBase: 1,
		InitPlans: []plan.InitPlan{
			{Kind: plan.ScalarSubquery, Plan: one},
			{Kind: plan.ScalarSubquery, Plan: empty},
			{Kind: plan.ExistsSubquery, Plan: two},
			{Kind: plan.ExistsSubquery, Plan: empty},
		},
		Root: &plan.Project{
			Input: values(t, "I\n7"),
			Exprs: []expr.Expr{
				expr.Param(0, types.TInt64), expr.Param(1, types.TInt64), expr.Param(2, types.TInt64),
				expr.Param(3, types.TBool), expr.Param(4, types.TBool),
			},
			Out: fields(types.TInt64, types.TInt64, types.TInt64, types.TBool, types.TBool),
		},
	}
	env := newEnv()
	env.Ctx.Params = []types.Datum{types.DInt(5)}
	x, err := Build(env, q)
	if err != nil {
		t.Fatal(err)
	}
	got, err := collect(t, x)
	if err != nil {
		t.Fatal(err)
	}
	expectRows(t, got, "5 42 NULL t f")

	q = &plan.Query{InitPlans: []plan.InitPlan{{Kind: plan.ScalarSubquery, Plan: two}}, Root: values(t, "I\n1")}
	x, err = Build(newEnv(), q)
	if err != nil {
		t.Fatal(err)
	}
	_, err = collect(t, x)
	expectKind(t, err, types.ErrCardinality)
}

func TestValuesUnknownLiterals(t *testing.T) {
	// A string literal of undecided type takes the column's type (INSERT ... VALUES ('12', 'x')).
	v := &plan.Values{
		Rows: [][]expr.Expr{{expr.Literal(types.DString("12"), types.TUnknown), expr.Literal(types.DString("x"), types.TUnknown)}},
		Out:  fields(types.TInt64, types.TVarchar),
	}
	expectRows(t, query(t, newEnv(), v), "12 x")
	v.Rows[0][0] = expr.Literal(types.DString("oops"), types.TUnknown)
	_, err := queryErr(t, newEnv(), v)
	expectKind(t, err, types.ErrInvalidText)
}

func TestProjectUntypedLiteral(t *testing.T) {
	p := &plan.Project{Input: values(t, "I\n1\n2"),
		Exprs: []expr.Expr{expr.Literal(types.NullDatum, types.TUnknown), expr.Literal(types.DString("7"), types.TUnknown), col(0, types.TInt64)},
		Out:   fields(types.TInt64, types.TInt64, types.TInt64)}
	f := &plan.Filter{Input: p, Cond: call(t, ">", col(2, types.TInt64), lit(1))}
	expectRows(t, query(t, newEnv(), f), "NULL 7 2")
}

// TestLimitWithTies checks FETCH ... WITH TIES across chunk boundaries: the
// rows after the count-th that equal it on the ORDER BY keys pass too.
func TestLimitWithTies(t *testing.T) {
	keys := []plan.SortKey{{Col: 1}}
	// 5000 rows, column 1 = i % 7: 715 rows each of 0 and 1, 714 of 2..6.
	in := &plan.Sort{Input: bigValues(t, 5000, 7), Keys: keys}
	for _, tc := range []struct {
		count, offset expr.Expr
		n             int
		last          string
	}{
		{lit(1000), nil, 1430, "4999 1"},
		{lit(715), nil, 715, "4998 0"},
		{lit(716), nil, 1430, "4999 1"},
		{lit(1000), lit(700), 1444, "4993 2"},
		{lit(0), nil, 0, ""},
		{lit(1), lit(4999), 1, "4997 6"},
		{lit(2), lit(4286), 714, "4997 6"},
		{lit(2), lit(4280), 6, "4996 5"},
		{nil, nil, 5000, "4997 6"},
	} {
		got := query(t, newEnv(), &plan.Limit{Input: in, Count: tc.count, Offset: tc.offset, Ties: keys})
		if len(got) != tc.n || (tc.last != "" && got[len(got)-1] != tc.last) {
			t.Errorf("limit %v offset %v with ties: %d rows, last %v; want %d, %q", tc.count, tc.offset, len(got), got[max(0, len(got)-1):], tc.n, tc.last)
		}
	}
}

// TestValuesLiteralChunk: an INSERT's literal rows bound into a chunk (plan.Values.Lit)
// come after the expression rows, in order, across output chunks.
func TestValuesLiteralChunk(t *testing.T) {
	env := newEnv()
	out := fields(types.TInt64, types.TVarchar)
	n := types.DefaultChunkSize + 7
	ch := types.NewChunk(plan.Types(out), n)
	var want []string
	want = append(want, "0 first")
	for i := 1; i <= n; i++ {
		row := []types.Datum{types.DInt(int64(i)), types.DString(fmt.Sprint("r", i))}
		w := fmt.Sprintf("%d r%d", i, i)
		if i%5 == 0 {
			row[1] = types.NullDatum
			w = fmt.Sprintf("%d NULL", i)
		}
		ch.AppendRow(row)
		want = append(want, w)
	}
	v := &plan.Values{Rows: [][]expr.Expr{{lit(0), expr.Literal(types.DString("first"), types.TVarchar)}}, Out: out, Lit: ch}
	if v.NumRows() != n+1 {
		t.Fatalf("NumRows %d, want %d", v.NumRows(), n+1)
	}
	expectRows(t, query(t, env, v), strings.Join(want, "\n"))
	// The expression row and the literal rows share the first chunk.
	e := newValues(env, v)
	c, err := e.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if c.Len() != types.DefaultChunkSize {
		t.Errorf("first chunk: %d rows, want %d", c.Len(), types.DefaultChunkSize)
	}
	v.Rows = nil // the literal rows alone
	expectRows(t, query(t, env, v), strings.Join(want[1:], "\n"))
}

// TestValuesDirect checks VALUES rows of constants and parameters (read
// column by column, appendDirect) against the same rows evaluated row by
// row: a row with any other expression sends the whole list that way.
func TestValuesDirect(t *testing.T) {
	env := newEnv()
	env.Ctx.Params = []types.Datum{types.DInt(7), types.DString("p"), types.NullDatum, types.DFloat(2.5)}
	direct := [][]expr.Expr{
		{lit(1), expr.Param(1, types.TVarchar), expr.Param(3, types.TFloat64)},
		{expr.Param(0, types.TInt64), expr.Literal(types.DString("s"), types.TVarchar), expr.Literal(types.NullDatum, types.TUnknown)},
		{expr.Param(2, types.TInt64), expr.Literal(types.NullDatum, types.TUnknown), expr.Literal(types.DFloat(1), types.TFloat64)},
	}
	want := "1 p 2.5\n7 s NULL\nNULL NULL 1"
	v := &plan.Values{Rows: direct, Out: fields(types.TInt64, types.TVarchar, types.TFloat64)}
	if !directRows(v.Rows, plan.Types(v.Out), env.Ctx.Params) {
		t.Fatal("constants and parameters of their columns' types are not read directly")
	}
	expectRows(t, query(t, env, v), want)
	// An untyped literal needs conform, and a call evaluation: the rows are
	// not direct, and read the same.
	for _, x := range []expr.Expr{expr.Literal(types.DString("1"), types.TUnknown), call(t, "+", lit(0), lit(1))} {
		rows := [][]expr.Expr{slices.Clone(direct[0]), direct[1], direct[2]}
		rows[0][0] = x
		v := &plan.Values{Rows: rows, Out: v.Out}
		if directRows(v.Rows, plan.Types(v.Out), env.Ctx.Params) {
			t.Fatalf("%s is read directly", x)
		}
		expectRows(t, query(t, env, v), want)
	}
	// A missing parameter fails as it does row by row.
	v = &plan.Values{Rows: [][]expr.Expr{{lit(1), expr.Param(9, types.TVarchar), lit(2)}}, Out: fields(types.TInt64, types.TVarchar, types.TInt64)}
	_, err := queryErr(t, env, v)
	expectKind(t, err, types.ErrUndefinedParameter)
}
