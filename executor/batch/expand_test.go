package batch

import (
	"testing"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
)

// TestExpandRollup: ROLLUP (a, b) as Expand under Agg; the empty set gives
// its row over no input too.
func TestExpandRollup(t *testing.T) {
	rollup := func(in plan.Node) plan.Node {
		// (a, b, gid placeholder, amount): keys 0 and 1, the set id in 2.
		sets := [][]int{{0, 1}, {0}, {}}
		x := &plan.Expand{Input: in, Keys: 2, Sets: sets, GID: 2}
		sum := plan.AggCall{Agg: mustAgg(t, "sum", types.TInt64), Args: []int{3}, Filter: -1, Name: "sum"}
		return &plan.Agg{Input: x, GroupBy: []int{0, 1, 2}, Aggs: []plan.AggCall{sum},
			Out: fields(types.TVarchar, types.TVarchar, types.TInt64, types.TNumeric), EmptySets: []int64{2}, GID: 2}
	}
	got := query(t, newEnv(), &plan.Sort{Input: rollup(values(t, `
T T I I
x p 0 1
x q 0 2
y p 0 4`)), Keys: []plan.SortKey{{Col: 2}, {Col: 0}, {Col: 1}}})
	expectRows(t, got, `
x p 0 1
x q 0 2
y p 0 4
x NULL 1 3
y NULL 1 4
NULL NULL 2 7`)
	empty := &plan.Values{Out: fields(types.TVarchar, types.TVarchar, types.TInt64, types.TInt64)}
	expectRows(t, query(t, newEnv(), rollup(empty)), `NULL NULL 2 NULL`)
}

func mustAgg(t *testing.T, name string, arg types.T) *expr.Agg {
	t.Helper()
	a, err := expr.LookupAgg(name, []types.T{arg}, false)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
