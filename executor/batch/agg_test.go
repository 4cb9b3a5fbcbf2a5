package batch

import (
	"testing"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/types"
)

const aggInput = `
T I B
a 1 t
b 2 f
a NULL t
NULL 4 t
b 5 t
a 3 f
a 3 t`

func TestHashAgg(t *testing.T) {
	in := values(t, aggInput)
	count := agg(t, "count", false)
	countX := agg(t, "count", false, types.TInt64)
	countDistinct := agg(t, "count", true, types.TInt64)
	sum := agg(t, "sum", false, types.TInt64)
	maxX := agg(t, "max", false, types.TInt64)
	n := &plan.Agg{
		Input:   in,
		GroupBy: []int{0},
		Aggs: []plan.AggCall{
			{Agg: count, Filter: -1, Name: "count(*)"},
			{Agg: countX, Args: []int{1}, Filter: -1},
			{Agg: countDistinct, Args: []int{1}, Filter: -1},
			{Agg: sum, Args: []int{1}, Filter: -1},
			{Agg: sum, Args: []int{1}, Filter: 2},
			{Agg: maxX, Args: []int{1}, Filter: -1},
		},
		Out: fields(types.TVarchar, count.Result, countX.Result, countDistinct.Result, sum.Result, sum.Result, maxX.Result),
	}
	expectRows(t, query(t, newEnv(), n), `
a 4 3 2 7 4 3
b 2 2 2 7 5 5
NULL 1 1 1 4 4 4`)

	// Empty input: one row without GROUP BY, none with it.
	empty := values(t, "T I B")
	n.Input = empty
	expectRows(t, query(t, newEnv(), n), "")
	n.GroupBy = nil
	n.Out = n.Out[1:]
	expectRows(t, query(t, newEnv(), n), "0 0 0 NULL NULL NULL")
}

func TestHashAggManyGroups(t *testing.T) {
	in := bigValues(t, 5000, 1500)
	count := agg(t, "count", false)
	n := &plan.Agg{Input: in, GroupBy: []int{1}, Aggs: []plan.AggCall{{Agg: count, Filter: -1}}, Out: fields(types.TInt64, count.Result)}
	got := query(t, newEnv(), n)
	if len(got) != 1500 {
		t.Fatalf("%d groups", len(got))
	}
	if got[0] != "0 4" || got[1499] != "1499 3" {
		t.Errorf("first %q last %q", got[0], got[1499])
	}
}

func TestWindow(t *testing.T) {
	in := values(t, `
T I
a 2
b 5
a 1
a 3
b NULL
a 2`)
	sum := agg(t, "sum", false, types.TInt64)
	byP := []int{0}
	byO := []plan.SortKey{{Col: 1}}
	n := &plan.Window{
		Input: in,
		Funcs: []plan.WindowFunc{
			{Name: "row_number", PartitionBy: byP, OrderBy: byO, Type: types.TInt64},
			{Name: "rank", PartitionBy: byP, OrderBy: byO, Type: types.TInt64},
			{Name: "dense_rank", PartitionBy: byP, OrderBy: byO, Type: types.TInt64},
			{Name: "sum", Agg: sum, Args: []int{1}, PartitionBy: byP, OrderBy: byO, Type: sum.Result},
			{Name: "sum", Agg: sum, Args: []int{1}, PartitionBy: byP, Type: sum.Result},
		},
		Out: fields(types.TVarchar, types.TInt64, types.TInt64, types.TInt64, types.TInt64, sum.Result, sum.Result),
	}
	got := query(t, newEnv(), n)
	expectSet(t, got, `
a 1 1 1 1 1 8
a 2 2 2 2 5 8
a 2 3 2 2 5 8
a 3 4 4 3 8 8
b 5 1 1 1 5 5
b NULL 2 2 2 5 5`)
	// Without PARTITION BY or ORDER BY: one partition, every row its own peer group... of all rows.
	n.Funcs = []plan.WindowFunc{{Name: "rank", Type: types.TInt64}, {Name: "row_number", Type: types.TInt64}}
	n.Out = fields(types.TVarchar, types.TInt64, types.TInt64, types.TInt64)
	expectRows(t, query(t, newEnv(), n), `
a 2 1 1
b 5 1 2
a 1 1 3
a 3 1 4
b NULL 1 5
a 2 1 6`)
	n.Funcs = []plan.WindowFunc{{Name: "nope", Type: types.TInt64}}
	if _, err := Build(newEnv(), &plan.Query{Root: n}); err == nil {
		t.Error("unsupported window function accepted")
	}
}
