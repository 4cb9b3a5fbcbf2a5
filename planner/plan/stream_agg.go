package plan

import (
	"fmt"
	"strings"

	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
)

// Aggregation state layout (StreamAgg.StateLayouts), g = len(GroupBy):
//
//   - table 0, "agg state": one row per group: the group columns (the key,
//     distribution key), the group's row count (int8), then each aggregate's
//     state columns (AggStateTypes). Simple aggregation (no GroupBy) keys its
//     single row by a constant int2 column 0 instead and is not distributed.
//   - then, for each aggregate in order that needs one (AggInputOf), one table:
//     AggInputMinMax "agg min/max input": (group, value, input stream key),
//     all key, value descending for max, so the extreme is the first row of
//     the group's range (none over an append-only input: the extreme in the
//     state row is final, as nothing is retracted); AggInputString "agg string_agg input": (group, input
//     stream key, value, separator), all key, scanned in key order;
//     AggInputDistinct "agg distinct": (group, args..., count), keyed by
//     group and args, counting the rows holding each distinct argument tuple
//     (for string_agg(DISTINCT ...) it is also the input scanned for the result);
//     with ShareDistinct, the DISTINCT aggregates over the same arguments
//     (but string_agg and array_agg, which read it) keep one table, at the
//     place of the first: (group, args..., one count per aggregate in order);
//     AggInputOrdered "agg ordered input" (string_agg, first_value,
//     last_value and array_agg: order-sensitive): (group, per AggOrder key an optional
//     NULL flag (bool, as in TopNStateRow) then the key, input stream key,
//     arguments), keyed by all but the arguments, so a group's range is in
//     the aggregate's order; first_value and last_value read its first row.
//
// Every table is distributed by the group columns, so a group's rows share a vnode.

// AggInput says which extra state table an aggregate keeps.
type AggInput uint8

// Extra state tables.
const (
	AggInputNone     AggInput = iota // its state columns in "agg state" suffice
	AggInputMinMax                   // min/max: materialized input
	AggInputString                   // string_agg: materialized input
	AggInputDistinct                 // DISTINCT (except min/max): (group, args) -> count
	AggInputOrdered                  // string_agg, first_value, last_value: input in the call's order
)

// AggOrder returns the order in which an AggInputOrdered aggregate's table
// keeps a group's rows: the call's ORDER BY, reversed for last_value (whose
// result is then the first row too).
func AggOrder(c *AggCall) []SortKey {
	keys := make([]SortKey, len(c.OrderBy))
	for i, k := range c.OrderBy {
		if c.Agg.Kind == expr.AggLastValue {
			k.Desc, k.NullsFirst = !k.Desc, !k.NullsFirst
		}
		keys[i] = k
	}
	return keys
}

// AggInputOf returns the extra state table a streaming aggregate keeps;
// appendOnly says the aggregation's input only inserts (StreamAgg.AppendOnlyInput).
func AggInputOf(c *AggCall, appendOnly bool) AggInput {
	switch c.Agg.Kind {
	case expr.AggMin, expr.AggMax:
		if appendOnly {
			return AggInputNone // a new extreme only ever replaces the old one
		}
		return AggInputMinMax // DISTINCT changes nothing for min/max
	}
	if c.Agg.Distinct {
		return AggInputDistinct
	}
	switch {
	case c.Agg.Kind == expr.AggFirstValue || c.Agg.Kind == expr.AggLastValue || c.Agg.Kind == expr.AggArrayAgg:
		return AggInputOrdered
	case c.Agg.Kind == expr.AggPercentileCont || c.Agg.Kind == expr.AggPercentileDisc || c.Agg.Kind == expr.AggMode:
		return AggInputOrdered
	case c.Agg.Kind == expr.AggStringAgg && len(c.OrderBy) > 0:
		return AggInputOrdered
	case c.Agg.Kind == expr.AggStringAgg:
		return AggInputString
	}
	return AggInputNone
}

// AggStateTypes returns the state columns an aggregate keeps in the "agg
// state" row (DISTINCT aggregates keep their inner aggregate's columns, fed
// once per distinct argument tuple):
//
//	count(*), count(x)            n int8
//	sum, avg over integers        n int8, sum numeric
//	sum, avg over floats          n int8, sum float8, nan int8, +inf int8, -inf int8
//	sum, avg over numeric         n int8, sum numeric, nan int8, +inf int8, -inf int8
//	sum, avg over interval        n int8, sum interval
//	bool_and, bool_or             trues int8, falses int8
//	min, max                      the current extreme (NULL: none)
//	string_agg                    the current result
//	first_value, last_value       the current result
//	array_agg                     the current result
//	percentile_cont, percentile_disc, mode   the current result
//	approx_percentile             its sketch's bucket counts (bytea, expr.EncodeSketch)
//
// n counts the non-NULL inputs. An aggregate streaming does not support
// (variance and stddev) gives an error.
func AggStateTypes(c *AggCall) ([]types.T, error) {
	a := c.Agg
	i8 := types.TInt64
	switch a.Kind {
	case expr.AggCountStar, expr.AggCount:
		return []types.T{i8}, nil
	case expr.AggSum, expr.AggAvg:
		switch in := a.Args[0]; {
		case in.IsInteger():
			return []types.T{i8, types.TNumeric}, nil
		case in.ID == types.Float32 || in.ID == types.Float64:
			return []types.T{i8, types.TFloat64, i8, i8, i8}, nil
		case in.ID == types.Numeric:
			return []types.T{i8, types.TNumeric, i8, i8, i8}, nil
		case in.ID == types.Interval:
			return []types.T{i8, types.TInterval}, nil
		}
	case expr.AggBoolAnd, expr.AggBoolOr:
		return []types.T{i8, i8}, nil
	case expr.AggMin, expr.AggMax:
		return []types.T{a.Result}, nil
	case expr.AggStringAgg:
		return []types.T{types.TVarchar}, nil
	case expr.AggApproxPercentile:
		return []types.T{types.TBytea}, nil
	case expr.AggFirstValue, expr.AggLastValue, expr.AggArrayAgg, expr.AggPercentileCont, expr.AggPercentileDisc, expr.AggMode:
		return []types.T{a.Result}, nil
	}
	if a.Kind == expr.AggJSONObjectAgg {
		return nil, types.Errorf(types.ErrUnsupported, "%s is not supported in materialized views", a.Name)
	}
	return nil, fmt.Errorf("streaming aggregate %s(%v) is not supported", a.Name, a.Args)
}

// AggTables returns, for each of n's aggregates, the index in StateLayouts
// of its extra table (0: none) and, for an aggregate sharing a distinct
// table (ShareDistinct), which of the table's counts is its (-1: a table of
// its own).
func (n *StreamAgg) AggTables() (table, count []int) {
	table, count = make([]int, len(n.Aggs)), make([]int, len(n.Aggs))
	type share struct{ table, members int }
	shares := map[string]*share{}
	next := 1
	for i := range n.Aggs {
		c := &n.Aggs[i]
		count[i] = -1
		in := AggInputOf(c, n.AppendOnlyInput)
		if in == AggInputNone {
			continue
		}
		if in == AggInputDistinct && n.ShareDistinct && c.Agg.Kind != expr.AggStringAgg && c.Agg.Kind != expr.AggArrayAgg {
			args := fmt.Sprint(c.Args)
			if s := shares[args]; s != nil {
				table[i], count[i] = s.table, s.members
				s.members++
				continue
			}
			shares[args] = &share{table: next, members: 1}
			count[i] = 0
		}
		table[i] = next
		next++
	}
	return table, count
}

// StateLayouts implements StatefulNode (layout described above). An
// unsupported aggregate contributes no state columns; the executor refuses it.
// With ViewState the view's table is the only one.
func (n *StreamAgg) StateLayouts() []StateTable {
	if n.ViewState != nil {
		return []StateTable{*n.ViewState}
	}
	in := Types(n.Input.Schema())
	g := len(n.GroupBy)
	groupTypes := make([]types.T, g)
	dist := make([]int, g)
	for i, c := range n.GroupBy {
		groupTypes[i], dist[i] = in[c], i
	}
	key := func(k int) []int {
		pk := make([]int, k)
		for i := range pk {
			pk[i] = i
		}
		return pk
	}
	state := StateTable{Name: "agg state"}
	if g == 0 {
		state.Types, state.PK, state.Dist = []types.T{types.TInt16}, []int{0}, nil
	} else {
		state.Types, state.PK, state.Dist = append([]types.T(nil), groupTypes...), key(g), dist
	}
	state.Types = append(state.Types, types.TInt64)
	tables := []StateTable{state}
	streamKey := n.Input.StreamKey()
	tableOf, countOf := n.AggTables()
	for i := range n.Aggs {
		c := &n.Aggs[i]
		if ts, err := AggStateTypes(c); err == nil {
			tables[0].Types = append(tables[0].Types, ts...)
		}
		if countOf[i] > 0 { // another count in a shared distinct table
			t := &tables[tableOf[i]]
			t.Name = strings.TrimSuffix(t.Name, ")") + ", " + c.Name + ")"
			t.Types = append(t.Types, types.TInt64)
			continue
		}
		var t StateTable
		switch AggInputOf(c, n.AppendOnlyInput) {
		case AggInputNone:
			continue
		case AggInputMinMax:
			t.Name = fmt.Sprintf("agg %s input (%s)", c.Agg.Name, c.Name)
			t.Types = append(append([]types.T(nil), groupTypes...), in[c.Args[0]])
			for _, k := range streamKey {
				t.Types = append(t.Types, in[k])
			}
			t.PK = key(len(t.Types))
			if c.Agg.Kind == expr.AggMax {
				t.PKDesc = make([]bool, len(t.PK))
				t.PKDesc[g] = true
			}
		case AggInputString:
			t.Name = fmt.Sprintf("agg string_agg input (%s)", c.Name)
			t.Types = append([]types.T(nil), groupTypes...)
			for _, k := range streamKey {
				t.Types = append(t.Types, in[k])
			}
			t.Types = append(t.Types, types.TVarchar, types.TVarchar)
			t.PK = key(len(t.Types))
		case AggInputOrdered:
			t.Name = fmt.Sprintf("agg ordered input (%s)", c.Name)
			t.Types = append([]types.T(nil), groupTypes...)
			t.PKDesc = make([]bool, g)
			for _, k := range AggOrder(c) {
				if k.NullsFirst != k.Desc {
					t.Types = append(t.Types, types.TBool)
					t.PKDesc = append(t.PKDesc, false)
				}
				t.Types = append(t.Types, in[k.Col])
				t.PKDesc = append(t.PKDesc, k.Desc)
			}
			for _, k := range streamKey {
				t.Types = append(t.Types, in[k])
				t.PKDesc = append(t.PKDesc, false)
			}
			t.PK = key(len(t.Types))
			for _, a := range c.Args {
				t.Types = append(t.Types, in[a])
			}
		case AggInputDistinct:
			t.Name = fmt.Sprintf("agg distinct (%s)", c.Name)
			t.Types = append([]types.T(nil), groupTypes...)
			for _, a := range c.Args {
				t.Types = append(t.Types, in[a])
			}
			t.PK = key(len(t.Types))
			t.Types = append(t.Types, types.TInt64)
		}
		t.Dist = dist
		tables = append(tables, t)
	}
	return tables
}

// StateInView reports whether n's groups can live in the rows of a materialized view of
// exactly its output, keyed by its group columns (plan.StreamAgg.ViewState): hash
// aggregation, not emitting on window close, whose every aggregate's state is its
// result (count(*) and count(x), min and max over an append-only input), with an
// unfiltered count(*) among them to give the group's row count (RowsFromView). A
// group's view row then exists exactly while the group has rows.
func StateInView(n *StreamAgg) bool {
	if len(n.GroupBy) == 0 || n.EmitOnWindowClose {
		return false
	}
	_, ok := RowsFromView(n)
	for i := range n.Aggs {
		if !StateIsResult(&n.Aggs[i], n.AppendOnlyInput) {
			return false
		}
	}
	return ok
}

// RowsFromView returns the output column of n's first unfiltered count(*), which
// counts a group's rows.
func RowsFromView(n *StreamAgg) (int, bool) {
	for i := range n.Aggs {
		c := &n.Aggs[i]
		if c.Agg.Kind == expr.AggCountStar && !c.Agg.Distinct && c.Filter < 0 {
			return len(n.GroupBy) + i, true
		}
	}
	return 0, false
}

// StateIsResult reports whether the aggregate's one state column (AggStateTypes) always
// equals its result: count(*), count(x), and min and max over an append-only input
// (which keep only their extreme).
func StateIsResult(c *AggCall, appendOnly bool) bool {
	if c.Agg.Distinct || len(c.OrderBy) > 0 {
		return false
	}
	switch c.Agg.Kind {
	case expr.AggCountStar, expr.AggCount:
		return true
	case expr.AggMin, expr.AggMax:
		return AggInputOf(c, appendOnly) == AggInputNone
	}
	return false
}
