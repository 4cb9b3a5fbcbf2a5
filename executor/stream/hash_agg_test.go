package stream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage/memkv"
	"github.com/tributary/tributary/storage/memory"
)

// Aggregation tests. Fixtures are text (STYLE 10): a chunk is a header of
// type letters (I int8, i int4, T text, N numeric, F float8, B bool, V
// interval) then one row per line, "op v1 v2 ...", op one of + - U- U+ (a
// "!" prefix hides the row), NULL is NULL and "_" stands for a space inside a
// value. Each step feeds chunks and a barrier, applies the emitted changes to
// a view keyed by the group columns (failing on a retraction of an absent
// row, an update that is not a U-/U+ pair on one key, or a duplicate key),
// commits the epoch and compares the view with the expected content.

var agTypeLetters = map[string]types.T{"I": types.TInt64, "i": types.TInt32, "T": types.TVarchar,
	"N": types.TNumeric, "F": types.TFloat64, "B": types.TBool, "V": types.TInterval}

func agTypes(t testing.TB, header string) []types.T {
	t.Helper()
	var ts []types.T
	for _, f := range strings.Fields(header) {
		ty, ok := agTypeLetters[f]
		if !ok {
			t.Fatalf("fixture: unknown type letter %q", f)
		}
		ts = append(ts, ty)
	}
	return ts
}

// agParse parses rows (without header) of the given types.
func agParse(t testing.TB, ts []types.T, text string) *types.Chunk {
	t.Helper()
	c := types.NewChunk(ts, 8)
	row := make([]types.Datum, len(ts))
	var vis []bool
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		fs := strings.Fields(line)
		if len(fs) == 0 {
			continue
		}
		if len(fs) != len(ts)+1 {
			t.Fatalf("fixture: row %q has %d values, want %d", line, len(fs)-1, len(ts))
		}
		var op types.Op
		switch strings.TrimPrefix(fs[0], "!") {
		case "+":
			op = types.OpInsert
		case "-":
			op = types.OpDelete
		case "U-":
			op = types.OpUpdateDelete
		case "U+":
			op = types.OpUpdateInsert
		default:
			t.Fatalf("fixture: unknown op %q", fs[0])
		}
		for i, f := range fs[1:] {
			if f == "NULL" {
				row[i] = types.NullDatum
				continue
			}
			d, err := types.ParseText(ts[i], strings.ReplaceAll(f, "_", " "))
			if err != nil {
				t.Fatalf("fixture: %v", err)
			}
			row[i] = d
		}
		c.AppendRowOp(op, row)
		vis = append(vis, !strings.HasPrefix(fs[0], "!"))
	}
	if slices.Contains(vis, false) {
		c.Vis = vis
	}
	return c
}

// agRowText renders row i of c, space separated, NULL as NULL.
func agRowText(c *types.Chunk, i int) string {
	parts := make([]string, len(c.Cols))
	var d types.Datum
	for j := range c.Cols {
		c.Cols[j].GetInto(i, &d)
		if d.Null {
			parts[j] = "NULL"
			continue
		}
		parts[j] = string(types.AppendText(nil, c.Cols[j].Type, &d))
	}
	return strings.Join(parts, " ")
}

// agSource is a source executor fed by the test between barriers.
type agSource struct {
	ts   []types.T
	msgs []Message
}

func (s *agSource) Schema() []types.T { return s.ts }
func (s *agSource) Next(ctx context.Context) (Message, error) {
	if err := ctx.Err(); err != nil {
		return Message{}, err
	}
	if len(s.msgs) == 0 {
		return Message{}, errors.New("test source: no message queued")
	}
	m := s.msgs[0]
	s.msgs = s.msgs[1:]
	return m, nil
}

// agCall resolves an aggregate call over input columns args (types from in).
func agCall(t testing.TB, in []types.T, name string, distinct bool, filter int, args ...int) plan.AggCall {
	t.Helper()
	ts := make([]types.T, len(args))
	for i, a := range args {
		ts[i] = in[a]
	}
	a, err := expr.LookupAgg(name, ts, distinct)
	if err != nil {
		t.Fatal(err)
	}
	label := name
	if distinct {
		label += " distinct"
	}
	return plan.AggCall{Agg: a, Args: args, Filter: filter, Name: fmt.Sprintf("%s%v", label, args)}
}

// agNode builds a StreamAgg over an input of types in with stream key key.
func agNode(in []types.T, key, groupBy []int, calls ...plan.AggCall) *plan.StreamAgg {
	var fs []plan.Field
	for i, t := range in {
		fs = append(fs, plan.Field{Name: fmt.Sprintf("c%d", i), Type: t})
	}
	n := &plan.StreamAgg{Input: &plan.StreamValues{Out: fs, Key: key}, GroupBy: groupBy, Aggs: calls}
	for _, g := range groupBy {
		n.Out = append(n.Out, fs[g])
	}
	for _, c := range calls {
		n.Out = append(n.Out, plan.Field{Name: c.Name, Type: c.Agg.Result})
	}
	st := n.StateLayouts()
	for i := range st {
		st[i].ID = 200 + uint32(i)
	}
	n.SetState(st)
	return n
}

// agHarness runs an aggregation over memkv and keeps its output applied to a
// view keyed by the group columns, as a materialized view would.
type agHarness struct {
	t     testing.TB
	ctx   context.Context
	kv    *memkv.Store
	node  *plan.StreamAgg
	in    []types.T
	cache int
	pool  *memory.Pool // the caches' byte budget (nil: none)
	// bytesBound is set when, after a barrier, the pool held the cache
	// under its row bound.
	bytesBound bool
	actx       *ActorContext
	src        *agSource
	exec       Executor // agg, or the view over it when node.ViewState is set
	agg        *aggExec
	// local, when set, is the first phase of a two-phase aggregation (node
	// has Merge): the source feeds it and it feeds node; localGroups bounds
	// its groups (0: LocalAggGroups).
	local       *plan.StreamLocalAgg
	localGroups int
	epoch       uint64
	view        map[string]string // group key -> row
	// committed is the view as of the last committed epoch (what a restart
	// after a crash starts from).
	committed map[string]string
	outRows   int // rows emitted in the last step
}

func newAGHarness(t testing.TB, n *plan.StreamAgg, cache int) *agHarness {
	t.Helper()
	return newAGHarnessLocal(t, n, cache, nil, 0)
}

// newAGHarnessLocal is newAGHarness for a two-phase aggregation: local
// (unless nil) feeds n, holding up to localGroups groups.
func newAGHarnessLocal(t testing.TB, n *plan.StreamAgg, cache int, local *plan.StreamLocalAgg, localGroups int) *agHarness {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	in := plan.Types(n.Input.Schema())
	if local != nil {
		in = plan.Types(local.Input.Schema())
	}
	h := &agHarness{t: t, ctx: ctx, kv: memkv.New(), node: n, in: in, cache: cache, local: local, localGroups: localGroups,
		epoch: 1 << 16, view: map[string]string{}, committed: map[string]string{}}
	t.Cleanup(func() { h.kv.Close() })
	h.restart()
	return h
}

// restart rebuilds the executor over the committed store, as recovery does;
// the view goes back to the last committed epoch.
func (h *agHarness) restart() {
	h.t.Helper()
	if h.actx != nil {
		h.actx.Release()
	}
	h.actx = &ActorContext{ID: 1, Store: h.kv, CacheRows: h.cache, Memory: h.pool}
	h.t.Cleanup(h.actx.Release)
	h.src = &agSource{ts: h.in}
	var in Executor = h.src
	if h.local != nil {
		le, err := NewLocalAgg(h.local, h.src)
		if err != nil {
			h.t.Fatal(err)
		}
		if h.localGroups > 0 {
			le.(*localAggExec).maxGroups = h.localGroups
		}
		in = le
	}
	e, err := NewAgg(h.actx, h.node, in)
	if err != nil {
		h.t.Fatal(err)
	}
	h.exec, h.agg = e, e.(*aggExec)
	if st := h.node.ViewState; st != nil {
		// The view the aggregation keeps its groups in, above it in the actor (through a
		// projection placing the output's columns as ViewCols says).
		var below plan.StreamNode = h.node
		if cols := h.node.ViewCols; cols != nil {
			p := &plan.StreamProject{Input: h.node, Exprs: make([]expr.Expr, len(cols)), Out: make([]plan.Field, len(cols))}
			for j, c := range cols {
				p.Exprs[c], p.Out[c] = expr.Column(j, h.node.Out[j].Type), h.node.Out[j]
			}
			for _, k := range h.node.StreamKey() {
				p.Key = append(p.Key, cols[k])
			}
			if e, err = NewProject(h.actx, p, e); err != nil {
				h.t.Fatal(err)
			}
			below = p
		}
		m := &plan.StreamMaterialize{Input: below, Relation: &catalog.Relation{ID: st.ID, Name: "mv"}, PK: st.PK, Dist: st.Dist}
		m.SetState([]plan.StateTable{*st})
		if h.exec, err = NewMaterialize(h.actx, m, e); err != nil {
			h.t.Fatal(err)
		}
		if cols := h.node.ViewCols; cols != nil {
			// The view's changes back in the aggregation's column order, for apply.
			p := &plan.StreamProject{Input: m, Exprs: make([]expr.Expr, len(cols)), Out: h.node.Out, Key: h.node.StreamKey()}
			for j, c := range cols {
				p.Exprs[j] = expr.Column(c, h.node.Out[j].Type)
			}
			if h.exec, err = NewProject(h.actx, p, h.exec); err != nil {
				h.t.Fatal(err)
			}
		}
	}
	h.view = agClone(h.committed)
}

// step feeds chunks and a barrier, applies the output, commits the epoch and
// returns the view's content.
func (h *agHarness) step(chunks ...string) string { return h.stepCommit(true, chunks...) }

func (h *agHarness) stepCommit(commit bool, chunks ...string) string {
	h.t.Helper()
	for _, c := range chunks {
		h.src.msgs = append(h.src.msgs, ChunkMsg(agParse(h.t, h.in, c)))
	}
	return h.stepMsgs(commit)
}

func (h *agHarness) stepMsgs(commit bool, msgs ...Message) string {
	h.t.Helper()
	b := &Barrier{Epoch: Epoch{Prev: h.epoch, Curr: h.epoch + 1}, Checkpoint: true}
	h.epoch++
	h.src.msgs = append(h.src.msgs, msgs...)
	h.src.msgs = append(h.src.msgs, BarrierMsg(b))
	h.outRows = 0
	for {
		m, err := h.exec.Next(h.ctx)
		if err != nil {
			h.t.Fatalf("next: %v", err)
		}
		if m.Barrier != nil {
			if m.Barrier != b {
				h.t.Fatalf("got barrier %v, want %v", m.Barrier, b)
			}
			break
		}
		if m.Chunk != nil {
			if err := h.apply(m.Chunk); err != nil {
				h.t.Fatal(err)
			}
		}
	}
	if len(h.src.msgs) != 0 {
		h.t.Fatalf("%d input messages left after the barrier", len(h.src.msgs))
	}
	if x := h.agg; len(x.run.groups) > x.run.budget.limit() {
		h.t.Fatalf("after the barrier %d groups cached, bound %d", len(x.run.groups), x.run.budget.limit())
	} else if x.run.budget != nil && x.run.budget.limit() < x.run.budget.maxRows {
		h.bytesBound = true
	}
	h.actx.Flush(b.Epoch.Prev)
	if commit {
		if err := h.kv.Commit(h.ctx, b.Epoch.Prev, h.actx.TakeWrites()); err != nil {
			h.t.Fatal(err)
		}
		h.committed = agClone(h.view)
	}
	return h.content()
}

// apply applies a change chunk to the view, checking the op discipline.
func (h *agHarness) apply(c *types.Chunk) error {
	g := len(h.node.GroupBy)
	key := func(i int) string {
		row := agRowText(c, i)
		return strings.Join(strings.Fields(row)[:g], " ")
	}
	for i := 0; i < c.Len(); i++ {
		if !c.Visible(i) {
			continue
		}
		h.outRows++
		k, row := key(i), agRowText(c, i)
		switch c.Op(i) {
		case types.OpInsert:
			if old, ok := h.view[k]; ok {
				return fmt.Errorf("insert of %q: key present as %q", row, old)
			}
			h.view[k] = row
		case types.OpDelete:
			if h.view[k] != row {
				return fmt.Errorf("delete of %q: view holds %q", row, h.view[k])
			}
			delete(h.view, k)
		case types.OpUpdateDelete:
			if i+1 >= c.Len() || c.Op(i+1) != types.OpUpdateInsert || !c.Visible(i+1) || key(i+1) != k {
				return fmt.Errorf("U- %q not followed by a U+ of the same key", row)
			}
			if h.view[k] != row {
				return fmt.Errorf("U- of %q: view holds %q", row, h.view[k])
			}
			h.view[k] = agRowText(c, i+1)
			h.outRows++
			i++
		case types.OpUpdateInsert:
			return fmt.Errorf("U+ %q without a U-", row)
		}
	}
	return nil
}

func agClone(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func (h *agHarness) content() string {
	rows := make([]string, 0, len(h.view))
	for _, r := range h.view {
		rows = append(rows, r)
	}
	slices.Sort(rows)
	return strings.Join(rows, "\n")
}

func (h *agHarness) expect(got, want string) {
	h.t.Helper()
	want = strings.TrimSpace(want)
	var lines []string
	for _, l := range strings.Split(want, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	slices.Sort(lines)
	if w := strings.Join(lines, "\n"); got != w {
		h.t.Fatalf("epoch %d: view:\n%s\nwant:\n%s", h.epoch-1, got, w)
	}
}

func TestAggCountSumAvg(t *testing.T) {
	defer goleak.VerifyNone(t)
	// (id, g, x): group by g; count(*), count(x), sum(x), avg(x).
	in := agTypes(t, "I I I")
	n := agNode(in, []int{0}, []int{1},
		agCall(t, in, "count", false, -1), agCall(t, in, "count", false, -1, 2),
		agCall(t, in, "sum", false, -1, 2), agCall(t, in, "avg", false, -1, 2))
	h := newAGHarness(t, n, 0)
	h.expect(h.step(`
		+ 1 10 5
		+ 2 10 7
		+ 3 20 NULL
		!+ 9 30 1`), `
		10 2 2 12 6.0000000000000000
		20 1 0 NULL NULL`)
	if h.outRows != 2 {
		t.Fatalf("%d output rows for 2 new groups", h.outRows)
	}
	// Delete, update in place, update moving a row between groups.
	h.expect(h.step(`
		- 1 10 5
		U- 2 10 7
		U+ 2 20 8
		+ 4 20 1`), `
		20 3 2 9 4.5000000000000000`)
	h.expect(h.step(`
		U- 4 20 1
		U+ 4 20 -3
		+ 5 30 2`), `
		20 3 2 5 2.5000000000000000
		30 1 1 2 2.0000000000000000`)
	// A group emptied and refilled in the same epoch: one change.
	h.expect(h.step(`
		- 5 30 2
		+ 6 30 4`), `
		20 3 2 5 2.5000000000000000
		30 1 1 4 4.0000000000000000`)
	if h.outRows != 2 {
		t.Fatalf("%d output rows for one changed group, want one update pair", h.outRows)
	}
	// No change in the result: nothing emitted.
	h.expect(h.step(`
		U- 6 30 4
		U+ 6 30 4`), `
		20 3 2 5 2.5000000000000000
		30 1 1 4 4.0000000000000000`)
	if h.outRows != 0 {
		t.Fatalf("%d output rows for an unchanged result", h.outRows)
	}
}

func TestAggSumTypes(t *testing.T) {
	defer goleak.VerifyNone(t)
	// (id, g, i4, numeric, float, interval)
	in := agTypes(t, "I I i N F V")
	n := agNode(in, []int{0}, []int{1},
		agCall(t, in, "sum", false, -1, 2), agCall(t, in, "sum", false, -1, 3), agCall(t, in, "avg", false, -1, 3),
		agCall(t, in, "sum", false, -1, 4), agCall(t, in, "avg", false, -1, 4),
		agCall(t, in, "sum", false, -1, 5), agCall(t, in, "avg", false, -1, 5))
	h := newAGHarness(t, n, 0)
	h.expect(h.step(`
		+ 1 1 2147483647 1.50 0.5 1_day
		+ 2 1 2147483647 2.25 Infinity 2_hours
		+ 3 1 1 NaN -Infinity 1_mon`), `
		1 4294967295 NaN NaN NaN NaN 1 mon 1 day 02:00:00 10 days 08:40:00`)
	h.expect(h.step(`
		- 3 1 1 NaN -Infinity 1_mon`), `
		1 4294967294 3.75 1.8750000000000000 Infinity Infinity 1 day 02:00:00 13:00:00`)
	h.expect(h.step(`
		- 2 1 2147483647 2.25 Infinity 2_hours`), `
		1 2147483647 1.50 1.50000000000000000000 0.5 0.5 1 day 1 day`)
}

func TestAggInt64Overflow(t *testing.T) {
	defer goleak.VerifyNone(t)
	in := agTypes(t, "I I I")
	n := agNode(in, []int{0}, []int{1}, agCall(t, in, "sum", false, -1, 2))
	h := newAGHarness(t, n, 0)
	h.expect(h.step(`
		+ 1 1 9223372036854775807
		+ 2 1 9223372036854775807
		+ 3 1 -9223372036854775808`), `
		1 9223372036854775806`)
	h.restart()
	h.expect(h.step(`
		+ 4 1 9223372036854775807`), `
		1 18446744073709551613`)
	h.expect(h.step(`
		- 1 1 9223372036854775807
		- 4 1 9223372036854775807`), `
		1 -1`)
}

func TestAggMinMax(t *testing.T) {
	defer goleak.VerifyNone(t)
	// (id, g, x, s)
	in := agTypes(t, "I I I T")
	n := agNode(in, []int{0}, []int{1},
		agCall(t, in, "min", false, -1, 2), agCall(t, in, "max", false, -1, 2),
		agCall(t, in, "min", false, -1, 3), agCall(t, in, "max", true, -1, 3))
	h := newAGHarness(t, n, 0)
	h.expect(h.step(`
		+ 1 1 5 b
		+ 2 1 9 a
		+ 3 1 9 c
		+ 4 1 1 NULL
		+ 5 2 NULL NULL`), `
		1 1 9 a c
		2 NULL NULL NULL NULL`)
	// Delete the minimum; delete one of two maxima.
	h.expect(h.step(`
		- 4 1 1 NULL
		- 2 1 9 a`), `
		1 5 9 b c
		2 NULL NULL NULL NULL`)
	h.restart()
	// Delete the other maximum and the max string after a restart.
	h.expect(h.step(`
		- 3 1 9 c`), `
		1 5 5 b b
		2 NULL NULL NULL NULL`)
	// Update moving the extreme to another group; a new extreme from an update.
	h.expect(h.step(`
		U- 1 1 5 b
		U+ 1 2 7 z
		+ 6 1 3 x`), `
		1 3 3 x x
		2 7 7 z z`)
	// Delete the extreme and insert a better one in the same epoch.
	h.expect(h.step(`
		- 1 2 7 z
		+ 7 2 8 y
		+ 8 2 -1 y`), `
		1 3 3 x x
		2 -1 8 y y`)
	h.expect(h.step(`
		- 5 2 NULL NULL
		- 7 2 8 y
		- 8 2 -1 y
		- 6 1 3 x`), ``)
}

func TestAggStringAgg(t *testing.T) {
	defer goleak.VerifyNone(t)
	// (id, g, s, sep)
	in := agTypes(t, "I I T T")
	n := agNode(in, []int{0}, []int{1},
		agCall(t, in, "string_agg", false, -1, 2, 3), agCall(t, in, "string_agg", true, -1, 2, 3))
	h := newAGHarness(t, n, 0)
	h.expect(h.step(`
		+ 3 1 c ,
		+ 1 1 a ;
		+ 2 1 b ,
		+ 4 1 a ,
		+ 5 2 NULL ,`), `
		1 a,b,c,a a;a,b,c
		2 NULL NULL`)
	h.expect(h.step(`
		- 1 1 a ;
		U- 3 1 c ,
		U+ 3 1 d -`), `
		1 b-d,a a,b-d
		2 NULL NULL`)
	h.restart()
	h.expect(h.step(`
		+ 6 2 x NULL
		+ 7 2 y NULL`), `
		1 b-d,a a,b-d
		2 xy xy`)
}

func TestAggDistinct(t *testing.T) {
	defer goleak.VerifyNone(t)
	// (id, g, x)
	in := agTypes(t, "I I I")
	n := agNode(in, []int{0}, []int{1},
		agCall(t, in, "count", true, -1, 2), agCall(t, in, "sum", true, -1, 2),
		agCall(t, in, "avg", true, -1, 2), agCall(t, in, "count", false, -1, 2))
	h := newAGHarness(t, n, 0)
	h.expect(h.step(`
		+ 1 1 5
		+ 2 1 5
		+ 3 1 7
		+ 4 1 NULL`), `
		1 2 12 6.0000000000000000 3`)
	h.expect(h.step(`
		- 1 1 5`), `
		1 2 12 6.0000000000000000 2`)
	h.restart()
	h.expect(h.step(`
		U- 2 1 5
		U+ 2 1 7`), `
		1 1 7 7.0000000000000000 2`)
	h.expect(h.step(`
		U- 2 1 7
		U+ 2 2 7`), `
		1 1 7 7.0000000000000000 1
		2 1 7 7.0000000000000000 1`)
}

func TestAggBoolAndFilter(t *testing.T) {
	defer goleak.VerifyNone(t)
	// (id, g, b, x)
	in := agTypes(t, "I I B I")
	n := agNode(in, []int{0}, []int{1},
		agCall(t, in, "bool_and", false, -1, 2), agCall(t, in, "bool_or", false, -1, 2),
		agCall(t, in, "count", false, 2), agCall(t, in, "sum", false, 2, 3))
	h := newAGHarness(t, n, 0)
	h.expect(h.step(`
		+ 1 1 true 10
		+ 2 1 false 20
		+ 3 1 NULL 30
		+ 4 2 NULL 40`), `
		1 f t 1 10
		2 NULL NULL 0 NULL`)
	h.expect(h.step(`
		- 2 1 false 20
		+ 5 2 true 1`), `
		1 t t 1 10
		2 t t 1 1`)
	h.expect(h.step(`
		U- 1 1 true 10
		U+ 1 1 false 10`), `
		1 f f 0 NULL
		2 t t 1 1`)
}

func TestAggSimple(t *testing.T) {
	defer goleak.VerifyNone(t)
	// (id, x, s, sep)
	in := agTypes(t, "I I T T")
	n := agNode(in, []int{0}, nil,
		agCall(t, in, "count", false, -1), agCall(t, in, "sum", false, -1, 1),
		agCall(t, in, "max", false, -1, 1), agCall(t, in, "string_agg", false, -1, 2, 3))
	h := newAGHarness(t, n, 0)
	// The initial row at the first barrier, with no input.
	h.expect(h.step(), `0 NULL NULL NULL`)
	if h.outRows != 1 {
		t.Fatalf("%d rows for the initial row", h.outRows)
	}
	h.expect(h.step(`
		+ 1 5 a ,
		+ 2 7 b ,`), `2 12 7 a,b`)
	h.restart()
	h.expect(h.step(), `2 12 7 a,b`)
	if h.outRows != 0 {
		t.Fatalf("restart emitted %d rows", h.outRows)
	}
	// Emptied: the row stays, never deleted.
	h.expect(h.step(`
		- 1 5 a ,
		- 2 7 b ,`), `0 NULL NULL NULL`)
	h.expect(h.step(`+ 3 1 c ,`), `1 1 1 c`)
}

func TestAggSimpleInitialWithInput(t *testing.T) {
	defer goleak.VerifyNone(t)
	in := agTypes(t, "I I")
	n := agNode(in, []int{0}, nil, agCall(t, in, "count", false, -1))
	h := newAGHarness(t, n, 0)
	h.expect(h.step(`+ 1 5`), `1`)
	if h.outRows != 1 {
		t.Fatalf("%d rows for the first epoch, want one insert", h.outRows)
	}
}

func TestAggDistinctOnly(t *testing.T) {
	defer goleak.VerifyNone(t)
	// SELECT DISTINCT a, b over (id, a, b).
	in := agTypes(t, "I I T")
	n := agNode(in, []int{0}, []int{1, 2})
	h := newAGHarness(t, n, 0)
	h.expect(h.step(`
		+ 1 1 x
		+ 2 1 x
		+ 3 2 NULL`), `
		1 x
		2 NULL`)
	h.expect(h.step(`
		- 1 1 x
		U- 3 2 NULL
		U+ 3 2 y`), `
		1 x
		2 y`)
	h.expect(h.step(`- 2 1 x`), `2 y`)
}

func TestAggCacheEviction(t *testing.T) {
	defer goleak.VerifyNone(t)
	// (id, g, x): 500 groups through a cache of 2; every group changes every
	// epoch (many mid-epoch flushes), then half of them empty out.
	in := agTypes(t, "I I I")
	n := agNode(in, []int{0}, []int{1}, agCall(t, in, "count", false, -1), agCall(t, in, "sum", false, -1, 2),
		agCall(t, in, "max", false, -1, 2), agCall(t, in, "count", true, -1, 2))
	h := newAGHarness(t, n, 2)
	const groups = 500
	var want []string
	for epoch := int64(1); epoch <= 3; epoch++ {
		var b strings.Builder
		for g := int64(0); g < groups; g++ {
			fmt.Fprintf(&b, "+ %d %d %d\n", epoch*groups+g, (g*7)%groups, epoch)
		}
		want = want[:0]
		for g := 0; g < groups; g++ {
			want = append(want, fmt.Sprintf("%d %d %d %d %d", g, epoch, epoch*(epoch+1)/2, epoch, epoch))
		}
		h.expect(h.step(b.String()), strings.Join(want, "\n"))
		if epoch == 2 {
			h.restart()
		}
	}
	var b strings.Builder
	want = want[:0]
	for g := int64(0); g < groups; g++ {
		if g%2 == 0 {
			for epoch := int64(1); epoch <= 3; epoch++ {
				fmt.Fprintf(&b, "- %d %d %d\n", epoch*groups+g, (g*7)%groups, epoch)
			}
		} else {
			// Delete the maximum (3) of the groups that stay.
			fmt.Fprintf(&b, "- %d %d %d\n", 3*groups+g, (g*7)%groups, 3)
		}
	}
	for g := 1; g < groups; g += 2 { // (g*7)%groups has g's parity: the odd groups stay
		want = append(want, fmt.Sprintf("%d 2 3 2 2", g))
	}
	h.expect(h.step(b.String()), strings.Join(want, "\n"))
}

func TestAggRecoverUncommitted(t *testing.T) {
	defer goleak.VerifyNone(t)
	in := agTypes(t, "I I I")
	n := agNode(in, []int{0}, []int{1}, agCall(t, in, "count", false, -1), agCall(t, in, "min", false, -1, 2),
		agCall(t, in, "count", true, -1, 2))
	h := newAGHarness(t, n, 0)
	h.expect(h.step(`
		+ 1 1 5
		+ 2 1 3`), `1 2 3 2`)
	// An epoch that is never committed (crash): its state is lost and replayed.
	h.expect(h.stepCommit(false, `
		- 2 1 3
		+ 3 2 1`), `
		1 1 5 1
		2 1 1 1`)
	h.restart()
	h.expect(h.content(), `1 2 3 2`)
	h.expect(h.step(`
		- 2 1 3
		+ 3 2 1`), `
		1 1 5 1
		2 1 1 1`)
}

func TestAggWatermark(t *testing.T) {
	defer goleak.VerifyNone(t)
	in := agTypes(t, "I I I")
	n := agNode(in, []int{0}, []int{2}, agCall(t, in, "count", false, -1))
	h := newAGHarness(t, n, 0)
	b := &Barrier{Epoch: Epoch{Prev: h.epoch, Curr: h.epoch + 1}}
	h.src.msgs = append(h.src.msgs, WatermarkMsg(&Watermark{Col: 2, Val: types.DInt(4)}),
		ChunkMsg(agParse(t, in, "+ 1 1 7")), WatermarkMsg(&Watermark{Col: 1, Val: types.DInt(9)}), BarrierMsg(b))
	var got []string
	for {
		m, err := h.exec.Next(h.ctx)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case m.Chunk != nil:
			got = append(got, "chunk")
		case m.Watermark != nil:
			got = append(got, fmt.Sprintf("watermark $%d %d", m.Watermark.Col, m.Watermark.Val.I))
		}
		if m.Barrier != nil {
			break
		}
	}
	if want := []string{"chunk", "watermark $0 4"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestAggStop(t *testing.T) {
	defer goleak.VerifyNone(t)
	in := agTypes(t, "I I")
	n := agNode(in, []int{0}, []int{1}, agCall(t, in, "count", false, -1))
	h := newAGHarness(t, n, 0)
	b := &Barrier{Epoch: Epoch{Prev: h.epoch, Curr: h.epoch + 1}, Mutation: &StopActors{Actors: map[ActorID]bool{1: true}}}
	h.src.msgs = append(h.src.msgs, ChunkMsg(agParse(t, in, "+ 1 1")), BarrierMsg(b))
	msgs := []Message{}
	for {
		m, err := h.exec.Next(h.ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, m)
	}
	if len(msgs) != 2 || msgs[0].Chunk == nil || msgs[1].Barrier != b {
		t.Fatalf("got %d messages before EOF, want the chunk and the stopping barrier", len(msgs))
	}
}

func TestAggBadPlan(t *testing.T) {
	in := agTypes(t, "I I")
	n := agNode(in, []int{0}, []int{1}, agCall(t, in, "var_pop", false, -1, 1))
	kv := memkv.New()
	defer kv.Close()
	if _, err := NewAgg(&ActorContext{ID: 1, Store: kv}, n, &agSource{ts: in}); err == nil {
		t.Fatal("var_pop accepted")
	}
	n = agNode(in, []int{0}, []int{1}, agCall(t, in, "count", false, -1))
	n.SetState(nil)
	if _, err := NewAgg(&ActorContext{ID: 1, Store: kv}, n, &agSource{ts: in}); err == nil {
		t.Fatal("missing state tables accepted")
	}
}

func TestAggNegativeCount(t *testing.T) {
	in := agTypes(t, "I I")
	n := agNode(in, []int{0}, []int{1}, agCall(t, in, "count", false, -1))
	kv := memkv.New()
	defer kv.Close()
	src := &agSource{ts: in, msgs: []Message{ChunkMsg(agParse(t, in, "- 1 1")), BarrierMsg(&Barrier{Epoch: Epoch{Prev: 1, Curr: 2}})}}
	e, err := NewAgg(&ActorContext{ID: 1, Store: kv}, n, src)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Next(context.Background()); err == nil || !strings.Contains(err.Error(), "never inserted") {
		t.Fatalf("got %v, want an inconsistent-input error", err)
	}
}
