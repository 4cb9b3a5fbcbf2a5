package batch

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/tributary/tributary/e2e/testseed"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
)

const (
	joinLeft = `
I T
1 a
2 b
2 bb
NULL n
4 d`
	joinRight = `
I T
2 x
2 xx
3 y
NULL z
1 w`
)

func TestHashJoinKinds(t *testing.T) {
	l, r := values(t, joinLeft), values(t, joinRight)
	inner := "1 a 1 w\n2 b 2 x\n2 b 2 xx\n2 bb 2 x\n2 bb 2 xx"
	for _, tc := range []struct {
		kind plan.JoinKind
		want string
	}{
		{plan.InnerJoin, inner},
		{plan.LeftJoin, inner + "\nNULL n NULL NULL\n4 d NULL NULL"},
		{plan.RightJoin, inner + "\nNULL NULL 3 y\nNULL NULL NULL z"},
		{plan.FullJoin, inner + "\nNULL n NULL NULL\n4 d NULL NULL\nNULL NULL 3 y\nNULL NULL NULL z"},
		{plan.SemiJoin, "1 a\n2 b\n2 bb"},
		{plan.AntiJoin, "NULL n\n4 d"},
	} {
		t.Run(tc.kind.String(), func(t *testing.T) {
			j := &plan.Join{Kind: tc.kind, Left: l, Right: r, EqLeft: []int{0}, EqRight: []int{0}}
			expectSet(t, query(t, newEnv(), j), tc.want)
		})
	}
}

func TestHashJoinCond(t *testing.T) {
	l, r := values(t, joinLeft), values(t, joinRight)
	notX := call(t, "<>", col(3, types.TVarchar), expr.Literal(types.DString("x"), types.TVarchar))
	isBB := call(t, "=", col(1, types.TVarchar), expr.Literal(types.DString("bb"), types.TVarchar))
	inner := "1 a 1 w\n2 b 2 xx\n2 bb 2 xx"
	for _, tc := range []struct {
		kind plan.JoinKind
		cond expr.Expr
		want string
	}{
		{plan.InnerJoin, notX, inner},
		{plan.LeftJoin, notX, inner + "\nNULL n NULL NULL\n4 d NULL NULL"},
		{plan.RightJoin, notX, inner + "\nNULL NULL 2 x\nNULL NULL 3 y\nNULL NULL NULL z"},
		{plan.FullJoin, notX, inner + "\nNULL n NULL NULL\n4 d NULL NULL\nNULL NULL 2 x\nNULL NULL 3 y\nNULL NULL NULL z"},
		{plan.SemiJoin, isBB, "2 bb"},
		{plan.AntiJoin, isBB, "1 a\n2 b\nNULL n\n4 d"},
	} {
		t.Run(tc.kind.String(), func(t *testing.T) {
			j := &plan.Join{Kind: tc.kind, Left: l, Right: r, EqLeft: []int{0}, EqRight: []int{0}, Cond: tc.cond}
			expectSet(t, query(t, newEnv(), j), tc.want)
		})
	}
}

func TestNullAwareAntiJoin(t *testing.T) {
	l := values(t, joinLeft)
	for _, tc := range []struct {
		name, right, want string
	}{
		{"right has NULL", joinRight, ""},
		{"no NULL", "I T\n2 x\n3 y", "1 a\n4 d"},
		{"empty right", "I T", "1 a\n2 b\n2 bb\nNULL n\n4 d"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := &plan.Join{Kind: plan.AntiJoin, Left: l, Right: values(t, tc.right), EqLeft: []int{0}, EqRight: []int{0}, NullAware: true}
			expectSet(t, query(t, newEnv(), j), tc.want)
		})
	}
	// Two columns: (a, b) NOT IN (...) with partial NULLs.
	l2 := values(t, "I I\n1 1\n1 2\n2 NULL\n3 3")
	r2 := values(t, "I I\n1 NULL\n3 3")
	j := &plan.Join{Kind: plan.AntiJoin, Left: l2, Right: r2, EqLeft: []int{0, 1}, EqRight: []int{0, 1}, NullAware: true}
	// (1,1) vs (1,NULL) unknown; (1,2) unknown; (2,NULL) vs (1,NULL) false, vs (3,3) false: kept; (3,3) equal.
	expectSet(t, query(t, newEnv(), j), "2 NULL")
}

func TestNestedLoopJoinKinds(t *testing.T) {
	l, r := values(t, joinLeft), values(t, joinRight)
	less := call(t, "<", col(0, types.TInt64), col(2, types.TInt64))
	inner := "1 a 2 x\n1 a 2 xx\n1 a 3 y\n2 b 3 y\n2 bb 3 y"
	for _, tc := range []struct {
		kind plan.JoinKind
		want string
	}{
		{plan.InnerJoin, inner},
		{plan.LeftJoin, inner + "\nNULL n NULL NULL\n4 d NULL NULL"},
		{plan.RightJoin, inner + "\nNULL NULL NULL z\nNULL NULL 1 w"},
		{plan.FullJoin, inner + "\nNULL n NULL NULL\n4 d NULL NULL\nNULL NULL NULL z\nNULL NULL 1 w"},
		{plan.SemiJoin, "1 a\n2 b\n2 bb"},
		{plan.AntiJoin, "NULL n\n4 d"},
	} {
		t.Run(tc.kind.String(), func(t *testing.T) {
			j := &plan.Join{Kind: tc.kind, Left: l, Right: r, Cond: less}
			expectSet(t, query(t, newEnv(), j), tc.want)
		})
	}
	cross := query(t, newEnv(), &plan.Join{Kind: plan.InnerJoin, Left: l, Right: r})
	if len(cross) != 25 {
		t.Errorf("cross join: %d rows", len(cross))
	}
	// Semi/anti without any condition: whether the right side has rows.
	expectSet(t, query(t, newEnv(), &plan.Join{Kind: plan.SemiJoin, Left: l, Right: values(t, "I\n1")}), "1 a\n2 b\n2 bb\nNULL n\n4 d")
	expectSet(t, query(t, newEnv(), &plan.Join{Kind: plan.AntiJoin, Left: l, Right: values(t, "I")}), "1 a\n2 b\n2 bb\nNULL n\n4 d")
	expectSet(t, query(t, newEnv(), &plan.Join{Kind: plan.AntiJoin, Left: l, Right: values(t, "I\n1")}), "")
}

// randomTable returns n rows (key, val) with keys in [0, keys) and some NULLs.
func randomTable(t testing.TB, rng *rand.Rand, n, keys int) *plan.Values {
	var b strings.Builder
	b.WriteString("I I\n")
	for i := 0; i < n; i++ {
		k := fmt.Sprint(rng.IntN(keys))
		if rng.IntN(20) == 0 {
			k = "NULL"
		}
		fmt.Fprintf(&b, "%s %d\n", k, rng.IntN(100))
	}
	return values(t, b.String())
}

// TestHashJoinMatchesNestedLoop compares the hash join with a nested loop join
// on the same equality (as a condition) over random inputs larger than a chunk.
func TestHashJoinMatchesNestedLoop(t *testing.T) {
	seed := testseed.For(t)
	rng := rand.New(rand.NewPCG(seed, 0))
	l, r := randomTable(t, rng, 1500, 40), randomTable(t, rng, 300, 40)
	eq := call(t, "=", col(0, types.TInt64), col(2, types.TInt64))
	extra := call(t, "<", col(1, types.TInt64), col(3, types.TInt64))
	for _, kind := range []plan.JoinKind{plan.InnerJoin, plan.LeftJoin, plan.RightJoin, plan.FullJoin, plan.SemiJoin, plan.AntiJoin} {
		for _, withExtra := range []bool{false, true} {
			hj := &plan.Join{Kind: kind, Left: l, Right: r, EqLeft: []int{0}, EqRight: []int{0}}
			nl := &plan.Join{Kind: kind, Left: l, Right: r, Cond: eq}
			if withExtra {
				hj.Cond = extra
				nl.Cond = call(t, "and", eq, extra)
			}
			got, want := query(t, newEnv(), hj), query(t, newEnv(), nl)
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("%v extra=%v: hash join %d rows, nested loop %d rows", kind, withExtra, len(got), len(want))
			}
			if kind == plan.InnerJoin && !withExtra && len(got) < 5000 {
				t.Errorf("inner join only %d rows: inputs too small to cross chunks", len(got))
			}
		}
	}
}

// TestJoinLargeFanout crosses the pair batch size within one left row.
func TestJoinLargeFanout(t *testing.T) {
	var b strings.Builder
	b.WriteString("I I\n")
	for i := 0; i < 2500; i++ {
		fmt.Fprintf(&b, "1 %d\n", i)
	}
	r := values(t, b.String())
	l := values(t, "I I\n1 0\n2 0\n1 100000")
	lt := call(t, "<", col(1, types.TInt64), col(3, types.TInt64))
	for _, tc := range []struct {
		kind plan.JoinKind
		cond expr.Expr
		want int
	}{
		{plan.InnerJoin, nil, 5000},
		{plan.InnerJoin, lt, 2499},
		{plan.LeftJoin, lt, 2499 + 2},
		{plan.RightJoin, lt, 2499 + 1},
		{plan.FullJoin, lt, 2499 + 2 + 1},
		{plan.SemiJoin, lt, 1},
		{plan.AntiJoin, lt, 2},
	} {
		j := &plan.Join{Kind: tc.kind, Left: l, Right: r, EqLeft: []int{0}, EqRight: []int{0}, Cond: tc.cond}
		if got := query(t, newEnv(), j); len(got) != tc.want {
			t.Errorf("%v cond=%v: %d rows, want %d", tc.kind, tc.cond != nil, len(got), tc.want)
		}
	}
}
