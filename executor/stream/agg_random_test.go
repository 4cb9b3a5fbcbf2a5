package stream

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage/memkv"
	"github.com/tributary/tributary/storage/memory"
)

// The randomized oracle: a random stream of inserts, deletes and updates
// (moving rows between groups too) with random crashes (an epoch never
// committed, then a restart) and clean restarts, against the batch
// aggregates of sql/expr recomputed over the live rows after every epoch.

// agRandCols: id, g, x, s, b, sep, n, f.
var agRandTypes = []types.T{types.TInt64, types.TInt64, types.TInt32, types.TVarchar, types.TBool,
	types.TVarchar, types.TNumeric, types.TFloat64}

func agRandCalls(t testing.TB) []plan.AggCall {
	in := agRandTypes
	return []plan.AggCall{
		agCall(t, in, "count", false, -1),
		agCall(t, in, "count", false, -1, 2),
		agCall(t, in, "sum", false, -1, 2),
		agCall(t, in, "avg", false, -1, 2),
		agCall(t, in, "min", false, -1, 2),
		agCall(t, in, "max", false, -1, 3),
		agCall(t, in, "count", true, -1, 2),
		agCall(t, in, "sum", true, -1, 2),
		agCall(t, in, "string_agg", false, -1, 3, 5),
		agCall(t, in, "string_agg", true, -1, 3, 5),
		agCall(t, in, "bool_and", false, -1, 4),
		agCall(t, in, "bool_or", false, -1, 4),
		agCall(t, in, "count", false, 4),
		agCall(t, in, "max", false, 4, 2),
		agCall(t, in, "sum", false, -1, 6),
		agCall(t, in, "avg", false, -1, 6),
		agCall(t, in, "sum", false, -1, 7),
		agCall(t, in, "min", true, -1, 3),
		// DISTINCT aggregates sharing arguments with the two above, with and
		// without a FILTER (one table with ShareDistinct).
		agCall(t, in, "count", true, 4, 2),
		agCall(t, in, "count", true, -1, 3),
		agCall(t, in, "count", true, 4, 3),
		agCall(t, in, "sum", true, 4, 7),
		// Ordered aggregates; each ORDER BY ends with id so that the
		// result does not depend on how ties are broken.
		agOrdered(agCall(t, in, "string_agg", false, -1, 3, 5), plan.SortKey{Col: 2, Desc: true, NullsFirst: true}, plan.SortKey{Col: 0}),
		agOrdered(agCall(t, in, "string_agg", false, 4, 3, 5), plan.SortKey{Col: 7, NullsFirst: true}, plan.SortKey{Col: 0, Desc: true, NullsFirst: true}),
		agOrdered(agCall(t, in, "first_value", false, -1, 2), plan.SortKey{Col: 3}, plan.SortKey{Col: 0}),
		agOrdered(agCall(t, in, "last_value", false, -1, 3), plan.SortKey{Col: 7, NullsFirst: true}, plan.SortKey{Col: 0}),
		agOrdered(agCall(t, in, "first_value", false, -1, 6), plan.SortKey{Col: 4, Desc: true}, plan.SortKey{Col: 2}, plan.SortKey{Col: 0}),
		agOrdered(agCall(t, in, "last_value", false, 4, 7), plan.SortKey{Col: 2, Desc: true, NullsFirst: true}, plan.SortKey{Col: 0, Desc: true, NullsFirst: true}),
		agOrdered(agCall(t, in, "string_agg", true, -1, 3, 5), plan.SortKey{Col: 3}),
	}
}

// agOrdered gives c an ORDER BY.
func agOrdered(c plan.AggCall, keys ...plan.SortKey) plan.AggCall {
	c.OrderBy = keys
	c.Name += fmt.Sprintf(" order by %v", keys)
	return c
}

// agSortRows orders rows (stably) as an aggregate's ORDER BY does.
func agSortRows(rows [][]types.Datum, keys []plan.SortKey) [][]types.Datum {
	rows = slices.Clone(rows)
	slices.SortStableFunc(rows, func(a, b []types.Datum) int {
		for _, k := range keys {
			x, y := &a[k.Col], &b[k.Col]
			switch {
			case x.Null && y.Null:
				continue
			case x.Null || y.Null:
				if x.Null == k.NullsFirst {
					return -1
				}
				return 1
			}
			r := types.CompareNonNull(agRandTypes[k.Col], x, y)
			if k.Desc {
				r = -r
			}
			if r != 0 {
				return r
			}
		}
		return 0
	})
	return rows
}

func agRandRow(rng *rand.Rand, id int64, groups int) []types.Datum {
	row := make([]types.Datum, len(agRandTypes))
	row[0] = types.DInt(id)
	row[1] = types.DInt(int64(rng.IntN(groups)))
	if rng.IntN(5) == 0 {
		row[1] = types.NullDatum // a NULL group
	}
	row[2] = types.DInt(int64(rng.IntN(20) - 5))
	row[3] = types.DString(string(rune('a' + rng.IntN(6))))
	row[4] = types.DBool(rng.IntN(2) == 0)
	row[5] = types.DString(",")
	n, _ := types.ParseText(types.TNumeric, fmt.Sprintf("%d.%02d", rng.IntN(100)-50, rng.IntN(100)))
	row[6] = n
	row[7] = types.DFloat(float64(rng.IntN(64)-32) / 4)
	for _, c := range []int{2, 3, 4, 6, 7} {
		if rng.IntN(6) == 0 {
			row[c] = types.NullDatum
		}
	}
	return row
}

// agOracle computes the expected view with the batch aggregates.
func agOracle(t testing.TB, n *plan.StreamAgg, live map[int64][]types.Datum) string {
	t.Helper()
	ids := make([]int64, 0, len(live))
	for id := range live {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	groups := map[string][][]types.Datum{}
	var order []string
	groupText := func(row []types.Datum) string {
		var parts []string
		for _, g := range n.GroupBy {
			parts = append(parts, agDatumText(agRandTypes[g], &row[g]))
		}
		return strings.Join(parts, " ")
	}
	if len(n.GroupBy) == 0 {
		groups[""], order = nil, []string{""}
	}
	for _, id := range ids {
		k := groupText(live[id])
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], live[id])
	}
	var lines []string
	for _, k := range order {
		rows := groups[k]
		var parts []string
		if k != "" {
			parts = append(parts, k)
		}
		for _, c := range n.Aggs {
			feed := rows
			if len(c.OrderBy) > 0 {
				feed = agSortRows(rows, c.OrderBy)
			} else if c.Agg.Distinct {
				// PostgreSQL's DISTINCT aggregates see their arguments sorted.
				feed = slices.Clone(rows)
				slices.SortStableFunc(feed, func(a, b []types.Datum) int {
					for _, col := range c.Args {
						if r := types.Compare(agRandTypes[col], &a[col], &b[col]); r != 0 {
							return r
						}
					}
					return 0
				})
			}
			st := c.Agg.NewState()
			args := make([]types.Datum, len(c.Args))
			for _, row := range feed {
				if c.Filter >= 0 && (row[c.Filter].Null || row[c.Filter].I == 0) {
					continue
				}
				for i, col := range c.Args {
					args[i] = row[col]
				}
				if err := st.Add(args); err != nil {
					t.Fatal(err)
				}
			}
			d := st.Result()
			parts = append(parts, agDatumText(c.Agg.Result, &d))
		}
		lines = append(lines, strings.Join(parts, " "))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

func agDatumText(t types.T, d *types.Datum) string {
	if d.Null {
		return "NULL"
	}
	return string(types.AppendText(nil, t, d))
}

func TestAggRandom(t *testing.T) {
	defer goleak.VerifyNone(t)
	for i, tc := range []struct {
		name    string
		groupBy []int
		cache   int
		groups  int
		shared  bool // plan.StreamAgg.ShareDistinct
	}{
		{"hash", []int{1}, 0, 6, false},
		{"hash-cache2", []int{1}, 2, 12, false},
		{"hash-two-keys-cache3", []int{1, 4}, 3, 5, false},
		{"simple", nil, 0, 3, false},
		{"hash-shared-distinct", []int{1}, 2, 12, true},
		{"simple-shared-distinct", nil, 0, 3, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seed := uint64(1000 + i)
			t.Logf("seed %d", seed)
			n := agNode(agRandTypes, []int{0}, tc.groupBy, agRandCalls(t)...)
			if tc.shared {
				agShareDistinct(t, n)
			}
			agRandomRun(t, rand.New(rand.NewPCG(seed, seed)), newAGHarness(t, n, tc.cache), n, tc.groups)
		})
	}
}

// agShareDistinct lets n's DISTINCT aggregates share their tables (laid out
// anew): count(DISTINCT c2) with sum(DISTINCT c2) and count(DISTINCT c2)
// FILTER, count(DISTINCT c3) with its FILTERed twin.
func agShareDistinct(t *testing.T, n *plan.StreamAgg) {
	t.Helper()
	before := len(n.StateLayouts())
	n.ShareDistinct = true
	st := n.StateLayouts()
	if len(st) != before-3 {
		t.Fatalf("%d state tables with shared distinct tables, %d without: want 3 fewer", len(st), before)
	}
	for i := range st {
		st[i].ID = 200 + uint32(i)
	}
	n.SetState(st)
}

// agRandTwoPhaseCalls are the aggregates of agRandCalls with a partial
// form (plan.LocalAggPartials), and FILTERed ones.
func agRandTwoPhaseCalls(t testing.TB) []plan.AggCall {
	in := agRandTypes
	return []plan.AggCall{
		agCall(t, in, "count", false, -1),
		agCall(t, in, "count", false, -1, 2),
		agCall(t, in, "sum", false, -1, 2),
		agCall(t, in, "avg", false, -1, 2),
		agCall(t, in, "count", false, 4),
		agCall(t, in, "sum", false, 4, 2),
		agCall(t, in, "count", false, -1, 3),
		agCall(t, in, "sum", false, -1, 1), // int8
		agCall(t, in, "avg", false, 4, 1),
	}
}

// TestAggRandomTwoPhase is the randomized oracle over a local aggregation
// feeding a merging one, the local phase holding few groups (so that it
// sends partials mid-epoch too).
func TestAggRandomTwoPhase(t *testing.T) {
	defer goleak.VerifyNone(t)
	for i, tc := range []struct {
		name        string
		groupBy     []int
		cache       int
		groups      int
		localGroups int
	}{
		{"hash", []int{1}, 0, 6, 0},
		{"hash-local2-cache2", []int{1}, 2, 12, 2},
		{"hash-two-keys-local1", []int{1, 4}, 3, 5, 1},
		{"simple", nil, 0, 3, 0},
		{"distinct", []int{1, 3}, 0, 4, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seed := uint64(2000 + i)
			t.Logf("seed %d", seed)
			calls := agRandTwoPhaseCalls(t)
			if tc.name == "distinct" {
				calls = nil // SELECT DISTINCT g, s
			}
			agRandomWith(t, rand.New(rand.NewPCG(seed, seed)), tc.groupBy, tc.cache, tc.groups, calls, tc.localGroups)
		})
	}
}

// TestAggRandomBytes is the randomized oracle with a row bound that never
// binds and a memory pool of a few groups' bytes: the byte budget alone
// evicts groups (and the pool is empty once the executors are gone).
func TestAggRandomBytes(t *testing.T) {
	defer goleak.VerifyNone(t)
	defer func(n int64) { minBudgetRows = n }(minBudgetRows)
	minBudgetRows = 1
	seed := uint64(3000)
	t.Logf("seed %d", seed)
	pool := memory.NewPool(6000)
	t.Run("hash", func(t *testing.T) {
		n := agNode(agRandTypes, []int{0}, []int{1}, agRandCalls(t)...)
		h := newAGHarness(t, n, 1000)
		h.pool = pool
		h.restart()
		agRandomRun(t, rand.New(rand.NewPCG(seed, seed)), h, n, 12)
		if !h.bytesBound {
			t.Error("the memory pool never bound the cache")
		}
	})
	if pool.Used() != 0 || len(pool.Accounts()) != 0 {
		t.Errorf("pool after the executors ended: %d bytes in %d accounts", pool.Used(), len(pool.Accounts()))
	}
}

// agRandomWith runs the oracle for calls; localGroups >= 0 plans them in two
// phases (a local aggregation holding up to localGroups groups, 0 for the
// default, feeding a merging one).
func agRandomWith(t *testing.T, rng *rand.Rand, groupBy []int, cache, groups int, calls []plan.AggCall, localGroups int) {
	n := agNode(agRandTypes, []int{0}, groupBy, calls...)
	var h *agHarness
	if localGroups < 0 {
		h = newAGHarness(t, n, cache)
	} else {
		local, merged := agTwoPhase(t, n)
		h = newAGHarnessLocal(t, merged, cache, local, localGroups)
	}
	agRandomRun(t, rng, h, n, groups)
}

// TestAggRandomAppendOnly is the randomized oracle over an input that only
// inserts (StreamAgg.AppendOnlyInput: min and max keep their extreme alone,
// in the state row), with crashes and restarts, and the error a retraction
// into such an aggregation gets.
func TestAggRandomAppendOnly(t *testing.T) {
	defer goleak.VerifyNone(t)
	for i, tc := range []struct {
		name    string
		groupBy []int
		cache   int
		groups  int
		shared  bool
	}{
		{"hash", []int{1}, 0, 6, false},
		{"hash-cache2", []int{1}, 2, 12, false},
		{"simple", nil, 0, 3, false},
		{"hash-shared-distinct", []int{1}, 2, 12, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seed := uint64(4000 + i)
			t.Logf("seed %d", seed)
			n := agAppendOnlyNode(t, tc.groupBy)
			if tc.shared {
				agShareDistinct(t, n)
			}
			h := newAGHarness(t, n, tc.cache)
			agRandomRunOps(t, rand.New(rand.NewPCG(seed, seed)), h, n, tc.groups, true)
		})
	}
	t.Run("retraction", func(t *testing.T) {
		n := agAppendOnlyNode(t, []int{1})
		kv := memkv.New()
		defer kv.Close()
		row := agRandRow(rand.New(rand.NewPCG(1, 1)), 1, 3)
		row[2] = types.DInt(7) // min's argument: not NULL
		c := types.NewChunk(agRandTypes, 2)
		c.AppendRowOp(types.OpInsert, row)
		c.AppendRowOp(types.OpDelete, row)
		src := &agSource{ts: agRandTypes, msgs: []Message{ChunkMsg(c), BarrierMsg(&Barrier{Epoch: Epoch{Prev: 1, Curr: 2}})}}
		actx := &ActorContext{ID: 1, Store: kv}
		defer actx.Release()
		e, err := NewAgg(actx, n, src)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Next(context.Background()); err == nil || !strings.Contains(err.Error(), "append-only input received a retraction") {
			t.Fatalf("a retraction: error %v", err)
		}
	})
}

// agAppendOnlyNode is agRandCalls' aggregation over an input that only
// inserts: its min and max keep no input table.
func agAppendOnlyNode(t *testing.T, groupBy []int) *plan.StreamAgg {
	n := agNode(agRandTypes, []int{0}, groupBy)
	n.Aggs, n.Out = agRandCalls(t), n.Out[:len(groupBy)]
	for _, c := range n.Aggs {
		n.Out = append(n.Out, plan.Field{Name: c.Name, Type: c.Agg.Result})
	}
	n.AppendOnlyInput = true
	st := n.StateLayouts()
	for i := range st {
		st[i].ID = 200 + uint32(i)
	}
	n.SetState(st)
	legacy := *n
	legacy.AppendOnlyInput = false
	if got, old := len(st), len(legacy.StateLayouts()); got != old-4 { // min, max, max FILTER, min(DISTINCT)
		t.Fatalf("%d state tables over an append-only input, %d otherwise: want 4 fewer", got, old)
	}
	return n
}

// agRandomRun feeds h random changes over groups groups for 60 epochs,
// checking the view against a recomputation of n.
func agRandomRun(t *testing.T, rng *rand.Rand, h *agHarness, n *plan.StreamAgg, groups int) {
	agRandomRunOps(t, rng, h, n, groups, false)
}

// agRandomRunOps is agRandomRun, with only inserts when insertsOnly.
func agRandomRunOps(t *testing.T, rng *rand.Rand, h *agHarness, n *plan.StreamAgg, groups int, insertsOnly bool) {
	groupBy := n.GroupBy
	live := map[int64][]types.Datum{}
	committed := map[int64][]types.Datum{}
	nextID := int64(1)
	everCommitted := false
	for epoch := 0; epoch < 60; epoch++ {
		var msgs []Message
		for range rng.IntN(3) + 1 {
			c := types.NewChunk(agRandTypes, 16)
			var vis []bool
			for range rng.IntN(12) {
				ids := make([]int64, 0, len(live))
				for id := range live {
					ids = append(ids, id)
				}
				slices.Sort(ids)
				switch op := rng.IntN(10); {
				case op < 4 || len(ids) == 0 || insertsOnly:
					row := agRandRow(rng, nextID, groups)
					nextID++
					live[row[0].I] = row
					c.AppendRowOp(types.OpInsert, row)
					vis = append(vis, true)
				case op < 6:
					id := ids[rng.IntN(len(ids))]
					c.AppendRowOp(types.OpDelete, live[id])
					vis = append(vis, true)
					delete(live, id)
				case op < 9:
					id := ids[rng.IntN(len(ids))]
					row := agRandRow(rng, id, groups)
					if rng.IntN(2) == 0 {
						row[1] = live[id][1] // same group
					}
					c.AppendRowOp(types.OpUpdateDelete, live[id])
					c.AppendRowOp(types.OpUpdateInsert, row)
					vis = append(vis, true, true)
					live[id] = row
				default:
					// An invisible row is not part of the stream.
					c.AppendRowOp(types.OpDelete, agRandRow(rng, 1<<40, groups))
					vis = append(vis, false)
				}
			}
			if slices.Contains(vis, false) {
				c.Vis = vis
			}
			msgs = append(msgs, ChunkMsg(c))
		}
		crash := rng.IntN(8) == 0
		got := h.stepMsgs(!crash, msgs...)
		if want := agOracle(t, n, live); got != want {
			t.Fatalf("epoch %d: view:\n%s\nwant:\n%s", epoch, got, want)
		}
		switch {
		case crash:
			h.restart()
			live = agCloneRows(committed)
			if got, want := h.content(), agOracle(t, n, live); got != want && (groupBy != nil || everCommitted) {
				// (Simple aggregation has no row before its first committed epoch.)
				t.Fatalf("epoch %d: view after the crash:\n%s\nwant:\n%s", epoch, got, want)
			}
		default:
			committed = agCloneRows(live)
			everCommitted = true
			if rng.IntN(6) == 0 {
				h.restart()
			}
		}
	}
}

func agCloneRows(m map[int64][]types.Datum) map[int64][]types.Datum {
	out := make(map[int64][]types.Datum, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// agTwoPhase splits single-phase aggregation n into a local aggregation and
// the merging aggregation it feeds, as the planner does.
func agTwoPhase(t testing.TB, n *plan.StreamAgg) (*plan.StreamLocalAgg, *plan.StreamAgg) {
	t.Helper()
	out, ok := plan.LocalAggOut(n.Input.Schema(), n.GroupBy, n.Aggs)
	if !ok {
		t.Fatal("an aggregate without a partial form")
	}
	local := &plan.StreamLocalAgg{Input: n.Input, GroupBy: n.GroupBy, Aggs: n.Aggs, Out: out}
	group := make([]int, len(n.GroupBy))
	for i := range group {
		group[i] = i
	}
	merged := &plan.StreamAgg{Input: local, GroupBy: group, Aggs: n.Aggs, Out: n.Out, Merge: true}
	merged.SetState(n.State())
	return local, merged
}

// TestAggRandomStateInView is the randomized oracle over an aggregation that keeps its
// groups in the rows of the view above it (plan.StreamAgg.ViewState), with crashes,
// restarts and a cache of a few groups, so groups are read back from the view's table,
// pending writes included: counts (one-phase and merging partials), and min and max
// over an input that only inserts. The actor must open the view's table alone.
func TestAggRandomStateInView(t *testing.T) {
	defer goleak.VerifyNone(t)
	in := agRandTypes
	counts := []plan.AggCall{
		agCall(t, in, "count", false, 4, 2), // FILTERed: not the row count
		agCall(t, in, "count", false, -1),
		agCall(t, in, "count", false, -1, 3),
		agCall(t, in, "count", false, 4),
	}
	extremes := append(slices.Clone(counts), agCall(t, in, "min", false, -1, 2), agCall(t, in, "max", false, 4, 3))
	for i, tc := range []struct {
		name        string
		groupBy     []int
		calls       []plan.AggCall
		cache       int
		groups      int
		twoPhase    bool
		insertsOnly bool
		reorder     bool // the view's columns reversed: ViewCols
	}{
		{"counts", []int{1}, counts, 0, 6, false, false, false},
		{"counts-reordered-cache2", []int{1, 4}, counts, 2, 8, false, false, true},
		{"counts-cache2", []int{1}, counts, 2, 12, false, false, false},
		{"counts-two-keys-cache3", []int{1, 4}, counts, 3, 5, false, false, false},
		{"counts-two-phase-cache2", []int{1}, counts, 2, 12, true, false, false},
		{"append-only-min-max-cache2", []int{1}, extremes, 2, 12, false, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seed := uint64(5000 + i)
			t.Logf("seed %d", seed)
			oracle := agNode(in, []int{0}, tc.groupBy, tc.calls...)
			oracle.AppendOnlyInput = tc.insertsOnly
			n := oracle
			var local *plan.StreamLocalAgg
			if tc.twoPhase {
				local, n = agTwoPhase(t, oracle)
			}
			if !plan.StateInView(n) {
				t.Fatalf("plan.StateInView: false for %s", n.Describe())
			}
			cols := make([]int, len(n.Out)) // the view column of each output column
			for j := range cols {
				cols[j] = j
				if tc.reorder {
					cols[j] = len(cols) - 1 - j
				}
			}
			view := make([]types.T, len(cols))
			for j, c := range cols {
				view[c] = n.Out[j].Type
			}
			keys := cols[:len(tc.groupBy)]
			n.ViewState = &plan.StateTable{ID: 300, Name: "materialized view", Types: view, PK: keys, Dist: keys}
			if tc.reorder {
				n.ViewCols = cols
			}
			n.SetState(n.StateLayouts())
			h := newAGHarnessLocal(t, n, tc.cache, local, 0)
			agRandomRunOps(t, rand.New(rand.NewPCG(seed, seed)), h, oracle, tc.groups, tc.insertsOnly)
			if len(h.actx.tables) != 1 || h.actx.tables[0].Schema().TableID != 300 {
				t.Errorf("the actor opened %d tables, want the view's alone", len(h.actx.tables))
			}
		})
	}
	t.Run("not-state", func(t *testing.T) {
		for _, calls := range [][]plan.AggCall{
			{agCall(t, in, "count", false, 4)},                                      // no unfiltered count(*)
			{agCall(t, in, "count", false, -1), agCall(t, in, "sum", false, -1, 2)}, // sum keeps a count too
			{agCall(t, in, "count", false, -1), agCall(t, in, "min", false, -1, 2)}, // min over retractions keeps its input
			{agCall(t, in, "count", false, -1), agCall(t, in, "count", true, -1, 2)},
			nil, // SELECT DISTINCT: no count at all
		} {
			if n := agNode(in, []int{0}, []int{1}, calls...); plan.StateInView(n) {
				t.Errorf("plan.StateInView: true for %s", n.Describe())
			}
		}
		if n := agNode(in, []int{0}, nil, counts...); plan.StateInView(n) {
			t.Errorf("plan.StateInView: true for simple aggregation %s", n.Describe())
		}
	})
}
