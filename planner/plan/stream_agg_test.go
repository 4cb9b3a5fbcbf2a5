package plan

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
)

func TestStreamAggStateLayouts(t *testing.T) {
	// Input (id int8, g text, x int4, s text, f float8), stream key id. Agg
	// state: group (or a constant int2), row count, then count: n; sum(x): n,
	// sum; avg(f): n, sum, nan, +inf, -inf; max(x): extreme; count(DISTINCT
	// x): n; string_agg and string_agg(DISTINCT): result.
	in := []Field{{Name: "id", Type: types.TInt64}, {Name: "g", Type: types.TVarchar}, {Name: "x", Type: types.TInt32},
		{Name: "s", Type: types.TVarchar}, {Name: "f", Type: types.TFloat64}}
	call := func(name string, distinct bool, args ...int) AggCall {
		ts := make([]types.T, len(args))
		for i, a := range args {
			ts[i] = in[a].Type
		}
		a, err := expr.LookupAgg(name, ts, distinct)
		if err != nil {
			t.Fatal(err)
		}
		return AggCall{Agg: a, Args: args, Filter: -1, Name: name}
	}
	aggs := []AggCall{call("count", false), call("sum", false, 2), call("avg", false, 4), call("max", false, 2),
		call("count", true, 2), call("string_agg", false, 3, 3), call("string_agg", true, 3, 3)}
	for _, tc := range []struct {
		groupBy []int
		want    string
	}{
		{[]int{1}, `
agg state(id=0 pk=[0] dist=[0]) [character varying bigint bigint bigint numeric bigint double precision bigint bigint bigint integer bigint character varying character varying] desc=[]
agg max input (max)(id=0 pk=[0 1 2] dist=[0]) [character varying integer bigint] desc=[false true false]
agg distinct (count)(id=0 pk=[0 1] dist=[0]) [character varying integer bigint] desc=[]
agg string_agg input (string_agg)(id=0 pk=[0 1 2 3] dist=[0]) [character varying bigint character varying character varying] desc=[]
agg distinct (string_agg)(id=0 pk=[0 1 2] dist=[0]) [character varying character varying character varying bigint] desc=[]`},
		{nil, `
agg state(id=0 pk=[0] dist=[]) [smallint bigint bigint bigint numeric bigint double precision bigint bigint bigint integer bigint character varying character varying] desc=[]
agg max input (max)(id=0 pk=[0 1] dist=[]) [integer bigint] desc=[true false]
agg distinct (count)(id=0 pk=[0] dist=[]) [integer bigint] desc=[]
agg string_agg input (string_agg)(id=0 pk=[0 1 2] dist=[]) [bigint character varying character varying] desc=[]
agg distinct (string_agg)(id=0 pk=[0 1] dist=[]) [character varying character varying bigint] desc=[]`},
	} {
		n := &StreamAgg{Input: &StreamValues{Out: in, Key: []int{0}}, GroupBy: tc.groupBy, Aggs: aggs}
		var b strings.Builder
		for _, st := range n.StateLayouts() {
			fmt.Fprintf(&b, "\n%s %v desc=%v", st, st.Types, st.PKDesc)
		}
		if got := b.String(); got != tc.want {
			t.Errorf("group by %v:%s\nwant:%s", tc.groupBy, got, tc.want)
		}
	}
	// Sharing distinct tables: count(DISTINCT x), sum(DISTINCT x) FILTER and
	// count(DISTINCT x) FILTER share one; count(DISTINCT s) has its own;
	// string_agg(DISTINCT s) keeps its own (it reads it for the result).
	filtered := func(c AggCall, name string) AggCall {
		c.Filter, c.Name = 4, name
		return c
	}
	n := &StreamAgg{Input: &StreamValues{Out: in, Key: []int{0}}, GroupBy: []int{1}, ShareDistinct: true, Aggs: []AggCall{
		call("count", true, 2), call("count", false), filtered(call("sum", true, 2), "sum_f"), call("count", true, 3),
		call("string_agg", true, 3, 3), filtered(call("count", true, 2), "count_f")}}
	var b strings.Builder
	for _, st := range n.StateLayouts() {
		fmt.Fprintf(&b, "\n%s %v", st, st.Types)
	}
	table, count := n.AggTables()
	fmt.Fprintf(&b, "\ntables %v counts %v", table, count)
	want := `
agg state(id=0 pk=[0] dist=[0]) [character varying bigint bigint bigint bigint numeric bigint character varying bigint]
agg distinct (count, sum_f, count_f)(id=0 pk=[0 1] dist=[0]) [character varying integer bigint bigint bigint]
agg distinct (count)(id=0 pk=[0 1] dist=[0]) [character varying character varying bigint]
agg distinct (string_agg)(id=0 pk=[0 1 2] dist=[0]) [character varying character varying character varying bigint]
tables [1 0 1 2 3 1] counts [0 -1 1 0 -1 2]`
	if got := b.String(); got != want {
		t.Errorf("shared distinct tables:%s\nwant:%s", got, want)
	}
	if _, err := AggStateTypes(&AggCall{Agg: &expr.Agg{Name: "var_pop", Kind: expr.AggVarPop, Args: []types.T{types.TInt64}}}); err == nil {
		t.Error("var_pop has a streaming state")
	}
}
