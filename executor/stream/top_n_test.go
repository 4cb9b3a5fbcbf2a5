package stream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tributary/tributary/e2e/testseed"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage/memkv"
	"github.com/tributary/tributary/storage/state"
)

// tnTypes maps the type letters of the top-N fixtures.
var tnTypes = map[string]types.T{"I": types.TInt64, "T": types.TVarchar, "N": types.TNumeric, "F": types.TFloat64}

// tnParse parses a chunk fixture: a header of type letters, then one row
// per line: an op (+, -, U-, U+), the values ("." is NULL), and an
// optional trailing "hidden" marking the row invisible.
func tnParse(t testing.TB, text string) *types.Chunk {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(text), "\n")
	var ts []types.T
	for _, f := range strings.Fields(lines[0]) {
		typ, ok := tnTypes[f]
		if !ok {
			t.Fatalf("fixture: unknown type letter %q", f)
		}
		ts = append(ts, typ)
	}
	c := types.NewChunk(ts, len(lines))
	var vis []bool
	for _, line := range lines[1:] {
		fs := strings.Fields(line)
		var op types.Op
		switch fs[0] {
		case "+":
			op = types.OpInsert
		case "-":
			op = types.OpDelete
		case "U-":
			op = types.OpUpdateDelete
		case "U+":
			op = types.OpUpdateInsert
		default:
			t.Fatalf("fixture: bad op in %q", line)
		}
		fs = fs[1:]
		hidden := len(fs) == len(ts)+1 && fs[len(ts)] == "hidden"
		if hidden {
			fs = fs[:len(ts)]
		}
		if len(fs) != len(ts) {
			t.Fatalf("fixture: row %q has %d values, want %d", line, len(fs), len(ts))
		}
		row := make([]types.Datum, len(ts))
		for i, f := range fs {
			if f == "." {
				row[i] = types.NullDatum
				continue
			}
			d, err := types.ParseText(ts[i], f)
			if err != nil {
				t.Fatalf("fixture: %v", err)
			}
			row[i] = d
		}
		c.AppendRowOp(op, row)
		vis = append(vis, !hidden)
	}
	if slices.Contains(vis, false) {
		c.Vis = vis
	}
	return c
}

func tnRowText(c *types.Chunk, i int) string {
	var b []byte
	for j := range c.Cols {
		if j > 0 {
			b = append(b, ' ')
		}
		d := c.Cols[j].Get(i)
		if d.Null {
			b = append(b, '.')
		} else {
			b = types.AppendText(b, c.Cols[j].Type, &d)
		}
	}
	return string(b)
}

// tnSource is a source executor fed by the test between barriers.
type tnSource struct {
	types []types.T
	msgs  []Message
	each  func() // when set, called on every pull: the previous message is applied
}

func (s *tnSource) Schema() []types.T { return s.types }
func (s *tnSource) Next(ctx context.Context) (Message, error) {
	if err := ctx.Err(); err != nil {
		return Message{}, err
	}
	if s.each != nil {
		s.each()
	}
	if len(s.msgs) == 0 {
		return Message{}, errors.New("test source: no message queued")
	}
	m := s.msgs[0]
	s.msgs = s.msgs[1:]
	return m, nil
}

// tnHarness runs a TopN over memkv and keeps its output applied to a view
// keyed by the output stream key, as a materialized view would.
type tnHarness struct {
	t      *testing.T
	ctx    context.Context
	kv     *memkv.Store
	node   *plan.StreamTopN
	cache  int
	actx   *ActorContext
	src    *tnSource
	exec   Executor
	epoch  uint64
	view   map[string]string // stream key -> row
	outKey []int
}

// tnNode builds a StreamTopN over an input of the given types and stream key.
func tnNode(in []types.T, key []int, n plan.StreamTopN) *plan.StreamTopN {
	var fs []plan.Field
	for i, t := range in {
		fs = append(fs, plan.Field{Name: fmt.Sprintf("c%d", i), Type: t})
	}
	n.Input = &plan.StreamValues{Out: fs, Key: key}
	n.Out = slices.Clone(fs)
	if n.Rank != "" {
		n.Out = append(n.Out, plan.Field{Name: n.Rank, Type: types.TInt64})
	}
	st := n.StateLayouts()
	for i := range st {
		st[i].ID = 100 + uint32(i)
	}
	n.SetState(st)
	return &n
}

func newTNHarness(t *testing.T, n *plan.StreamTopN, cache int) *tnHarness {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	h := &tnHarness{t: t, ctx: ctx, kv: memkv.New(), node: n, cache: cache, epoch: 1 << 16,
		view: make(map[string]string), outKey: n.Input.StreamKey()}
	t.Cleanup(func() { h.kv.Close() })
	h.restart()
	return h
}

// restart rebuilds the executor over the committed store, as recovery does.
func (h *tnHarness) restart() {
	h.t.Helper()
	var in []types.T
	for _, f := range h.node.Input.Schema() {
		in = append(in, f.Type)
	}
	h.actx = &ActorContext{ID: 1, Store: h.kv, CacheRows: h.cache}
	h.src = &tnSource{types: in}
	e, err := NewTopN(h.actx, h.node, h.src)
	if err != nil {
		h.t.Fatal(err)
	}
	h.exec = e
}

// step feeds chunks (fixture texts) and a barrier, applies the output to
// the view, commits the epoch, and returns the output changes as text.
func (h *tnHarness) step(chunks ...string) string {
	h.t.Helper()
	for _, c := range chunks {
		h.src.msgs = append(h.src.msgs, ChunkMsg(tnParse(h.t, c)))
	}
	return h.stepMsgs(nil)
}

func (h *tnHarness) stepMsgs(mut Mutation, msgs ...Message) string {
	h.t.Helper()
	b := &Barrier{Epoch: Epoch{Prev: h.epoch, Curr: h.epoch + 1}, Checkpoint: true, Mutation: mut}
	h.epoch++
	h.src.msgs = append(h.src.msgs, msgs...)
	h.src.msgs = append(h.src.msgs, BarrierMsg(b))
	var out strings.Builder
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
		if m.Watermark != nil {
			fmt.Fprintf(&out, "watermark $%d %d\n", m.Watermark.Col, m.Watermark.Val.I)
			continue
		}
		if err := h.apply(m.Chunk); err != nil {
			h.t.Fatal(err)
		}
		for i := 0; i < m.Chunk.Len(); i++ {
			if m.Chunk.Visible(i) {
				fmt.Fprintf(&out, "%s %s\n", m.Chunk.Op(i), tnRowText(m.Chunk, i))
			}
		}
	}
	if len(h.src.msgs) != 0 {
		h.t.Fatalf("%d input messages left after the barrier", len(h.src.msgs))
	}
	h.actx.Flush(b.Epoch.Prev)
	if err := h.kv.Commit(h.ctx, b.Epoch.Prev, h.actx.TakeWrites()); err != nil {
		h.t.Fatal(err)
	}
	if x, ok := h.exec.(*TopN); ok && x.cached > x.budget.limit() {
		h.t.Fatalf("after the barrier %d rows cached, bound %d", x.cached, x.budget.limit())
	}
	return out.String()
}

// apply applies a change chunk to the view, checking the op discipline:
// inserts of new keys, deletes and updates of present rows, U- then U+.
func (h *tnHarness) apply(c *types.Chunk) error {
	key := func(i int) string {
		var parts []string
		for _, k := range h.outKey {
			d := c.Cols[k].Get(i)
			parts = append(parts, string(types.AppendText(nil, c.Cols[k].Type, &d)))
		}
		return strings.Join(parts, ",")
	}
	for i := 0; i < c.Len(); i++ {
		if !c.Visible(i) {
			continue
		}
		k, row := key(i), tnRowText(c, i)
		switch c.Op(i) {
		case types.OpInsert:
			if old, ok := h.view[k]; ok {
				return fmt.Errorf("insert of %s over present %s", row, old)
			}
			h.view[k] = row
		case types.OpDelete:
			if h.view[k] != row {
				return fmt.Errorf("delete of %s, present %q", row, h.view[k])
			}
			delete(h.view, k)
		case types.OpUpdateDelete:
			if i+1 >= c.Len() || c.Op(i+1) != types.OpUpdateInsert || key(i+1) != k {
				return fmt.Errorf("U- %s not followed by its U+", row)
			}
			if h.view[k] != row {
				return fmt.Errorf("U- of %s, present %q", row, h.view[k])
			}
			h.view[k] = tnRowText(c, i+1)
			i++
		default:
			return fmt.Errorf("lone U+ %s", row)
		}
	}
	return nil
}

// content returns the view's rows sorted, one per line.
func (h *tnHarness) content() string {
	var rows []string
	for _, r := range h.view {
		rows = append(rows, r)
	}
	slices.Sort(rows)
	return strings.Join(rows, "\n")
}

func (h *tnHarness) expect(want string) {
	h.t.Helper()
	lines := strings.Split(strings.TrimSpace(want), "\n")
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	if strings.TrimSpace(want) == "" {
		lines = nil
	}
	slices.Sort(lines)
	if got := h.content(); got != strings.Join(lines, "\n") {
		h.t.Fatalf("view:\n%s\nwant:\n%s", got, strings.Join(lines, "\n"))
	}
}

func tnExpectOut(t *testing.T, got, want string) {
	t.Helper()
	norm := func(s string) string {
		var out []string
		for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
			out = append(out, strings.Join(strings.Fields(l), " "))
		}
		return strings.Join(out, "\n")
	}
	if norm(got) != norm(want) {
		t.Fatalf("output:\n%s\nwant:\n%s", got, want)
	}
}

var tnII = []types.T{types.TInt64, types.TInt64}

func TestTopNInsertDeleteUpdate(t *testing.T) {
	defer goleak.VerifyNone(t)
	// ORDER BY c1 LIMIT 2, key c0.
	h := newTNHarness(t, tnNode(tnII, []int{0}, plan.StreamTopN{OrderBy: []plan.SortKey{{Col: 1}}, Limit: 2}), 0)
	tnExpectOut(t, h.step("I I\n + 1 10\n + 2 20\n + 3 30"), "+ 1 10\n+ 2 20")
	tnExpectOut(t, h.step("I I\n - 1 10"), "- 1 10\n+ 3 30")
	// An update inside the top stays an update.
	tnExpectOut(t, h.step("I I\n U- 2 20\n U+ 2 25"), "U- 2 20\nU+ 2 25")
	// An update moving a row down within the top.
	tnExpectOut(t, h.step("I I\n U- 2 25\n U+ 2 40"), "U- 2 25\nU+ 2 40")
	h.expect("2 40\n3 30")
	tnExpectOut(t, h.step("I I\n + 4 5"), "- 2 40\n+ 4 5")
	// Changes that cancel within an epoch emit nothing; hidden rows are ignored.
	tnExpectOut(t, h.step("I I\n + 5 1\n + 6 99 hidden", "I I\n - 5 1"), "")
	h.expect("3 30\n4 5")
	// Deleting every row of the top refills it from state.
	h.step("I I\n - 3 30\n - 4 5")
	h.expect("2 40")
	h.step("I I\n - 2 40")
	h.expect("")
}

func TestTopNOffset(t *testing.T) {
	defer goleak.VerifyNone(t)
	// ORDER BY c1 DESC LIMIT 2 OFFSET 1.
	h := newTNHarness(t, tnNode(tnII, []int{0}, plan.StreamTopN{OrderBy: []plan.SortKey{{Col: 1, Desc: true, NullsFirst: true}}, Limit: 2, Offset: 1}), 0)
	h.step("I I\n + 1 10\n + 2 20\n + 3 30\n + 4 40")
	h.expect("3 30\n2 20")
	tnExpectOut(t, h.step("I I\n + 5 50"), "- 2 20\n+ 4 40")
	h.step("I I\n - 5 50\n - 4 40")
	h.expect("2 20\n1 10")
	// NULL sorts first descending: it takes the skipped position.
	h.step("I I\n + 6 .")
	h.expect("3 30\n2 20")
}

func TestTopNNullsOrder(t *testing.T) {
	defer goleak.VerifyNone(t)
	// ORDER BY c1 ASC NULLS FIRST LIMIT 2: the state key needs a NULL flag.
	n := tnNode(tnII, []int{0}, plan.StreamTopN{OrderBy: []plan.SortKey{{Col: 1, NullsFirst: true}}, Limit: 2})
	if l := n.StateRow(); l.NullFlag[0] != 2 || len(l.Types) != 3 {
		t.Fatalf("layout %+v: want a null flag in column 2", l)
	}
	h := newTNHarness(t, n, 0)
	h.step("I I\n + 1 10\n + 2 20\n + 3 .")
	h.expect("1 10\n3 .")
	h.step("I I\n + 4 .")
	h.expect("3 .\n4 .")
	// DESC NULLS LAST.
	n = tnNode(tnII, []int{0}, plan.StreamTopN{OrderBy: []plan.SortKey{{Col: 1, Desc: true}}, Limit: 2})
	h = newTNHarness(t, n, 0)
	h.step("I I\n + 1 10\n + 2 . \n + 3 .")
	h.expect("1 10\n2 .")
	h.step("I I\n + 4 11")
	h.expect("1 10\n4 11")
}

func TestTopNRanks(t *testing.T) {
	defer goleak.VerifyNone(t)
	input := "I I\n + 1 10\n + 2 20\n + 3 20\n + 4 20\n + 5 30"
	for _, tc := range []struct {
		rank, first, second string
	}{
		{"row_number", "1 10 1\n2 20 2", "2 20 1\n3 20 2"},
		// rank <= 2 keeps every row tied at the edge.
		{"rank", "1 10 1\n2 20 2\n3 20 2\n4 20 2", "2 20 1\n3 20 1\n4 20 1"},
		{"dense_rank", "1 10 1\n2 20 2\n3 20 2\n4 20 2", "2 20 1\n3 20 1\n4 20 1\n5 30 2"},
	} {
		t.Run(tc.rank, func(t *testing.T) {
			h := newTNHarness(t, tnNode(tnII, []int{0}, plan.StreamTopN{OrderBy: []plan.SortKey{{Col: 1}}, Limit: 2, Rank: tc.rank}), 0)
			h.step(input)
			h.expect(tc.first)
			out := h.step("I I\n - 1 10")
			h.expect(tc.second)
			// A row whose rank changes is updated, not deleted and inserted.
			if !strings.Contains(out, "U- 2 20 2\nU+ 2 20 1") {
				t.Fatalf("rank change of row 2 not an update:\n%s", out)
			}
		})
	}
}

func TestTopNGroups(t *testing.T) {
	defer goleak.VerifyNone(t)
	// row_number() OVER (PARTITION BY c1 ORDER BY c2 DESC) <= 1, key c0.
	ts := []types.T{types.TInt64, types.TInt64, types.TInt64}
	h := newTNHarness(t, tnNode(ts, []int{0}, plan.StreamTopN{GroupBy: []int{1}, OrderBy: []plan.SortKey{{Col: 2, Desc: true, NullsFirst: true}}, Limit: 1, Rank: "row_number"}), 0)
	h.step("I I I\n + 1 1 5\n + 2 1 7\n + 3 2 1\n + 4 2 3")
	h.expect("2 1 7 1\n4 2 3 1")
	// Row 2 moves from group 1 to group 2: deleted from 1 before inserted into 2.
	out := h.step("I I I\n U- 2 1 7\n U+ 2 2 7")
	tnExpectOut(t, out, "- 2 1 7 1\n- 4 2 3 1\n+ 1 1 5 1\n+ 2 2 7 1")
	h.expect("1 1 5 1\n2 2 7 1")
}

func TestTopNRestart(t *testing.T) {
	defer goleak.VerifyNone(t)
	h := newTNHarness(t, tnNode(tnII, []int{0}, plan.StreamTopN{OrderBy: []plan.SortKey{{Col: 1}}, Limit: 2}), 0)
	h.step("I I\n + 1 10\n + 2 20\n + 3 30\n + 4 40\n + 5 50")
	h.restart()
	// The rebuilt operator refills its top from the committed state.
	tnExpectOut(t, h.step("I I\n - 1 10\n - 2 20"), "- 1 10\n- 2 20\n+ 3 30\n+ 4 40")
	h.restart()
	h.step("I I\n + 6 35")
	h.expect("3 30\n6 35")
}

func TestTopNWatermarkAndStop(t *testing.T) {
	defer goleak.VerifyNone(t)
	ts := []types.T{types.TInt64, types.TInt64, types.TInt64}
	h := newTNHarness(t, tnNode(ts, []int{0}, plan.StreamTopN{GroupBy: []int{1}, OrderBy: []plan.SortKey{{Col: 2}}, Limit: 1}), 0)
	out := h.stepMsgs(nil,
		ChunkMsg(tnParse(t, "I I I\n + 1 1 5")),
		WatermarkMsg(&Watermark{Col: 1, Val: types.DInt(1)}),
		WatermarkMsg(&Watermark{Col: 2, Val: types.DInt(3)}),
		WatermarkMsg(&Watermark{Col: 1, Val: types.DInt(2)}))
	// The group column's latest watermark follows the epoch's changes; others are dropped.
	tnExpectOut(t, out, "+ 1 1 5\nwatermark $1 2")
	h.stepMsgs(&StopActors{Actors: map[ActorID]bool{1: true}})
	if _, err := h.exec.Next(h.ctx); err != io.EOF {
		t.Fatalf("after the stopping barrier: %v, want io.EOF", err)
	}
}

// TestTopNCleansBelowWatermark: a watermark on the (leading or second) group column deletes the
// groups below it from the state table; the output keeps their tops, and groups at or above it
// go on as before, also after a restart.
func TestTopNCleansBelowWatermark(t *testing.T) {
	defer goleak.VerifyNone(t)
	ts := []types.T{types.TInt64, types.TInt64, types.TInt64}
	for _, group := range [][]int{{1}, {2, 1}} {
		h := newTNHarness(t, tnNode(ts, []int{0}, plan.StreamTopN{GroupBy: group, OrderBy: []plan.SortKey{{Col: 0}}, Limit: 1}), 0)
		h.step("I I I\n + 1 1 5\n + 2 1 5\n + 3 2 5\n + 4 2 5\n + 5 3 5")
		stateRows := func() int {
			t.Helper()
			n := 0
			it, err := h.exec.(*TopN).table.Iter(h.ctx, state.IterOptions{Vnode: state.AllVnodes})
			if err != nil {
				t.Fatal(err)
			}
			defer it.Close()
			for it.Next() == nil {
				n++
			}
			return n
		}
		if n := stateRows(); n != 5 {
			t.Fatalf("group %v: %d state rows before the watermark, want 5", group, n)
		}
		out := h.stepMsgs(nil, WatermarkMsg(&Watermark{Col: 1, Val: types.DInt(3)}))
		tnExpectOut(t, out, "watermark $1 3")
		if n := stateRows(); n != 1 {
			t.Fatalf("group %v: %d state rows after the watermark 3 on $1, want 1 (group 3's)", group, n)
		}
		h.expect("1 1 5\n3 2 5\n5 3 5")
		h.restart()
		tnExpectOut(t, h.step("I I I\n + 0 3 5\n - 5 3 5"), "- 5 3 5\n+ 0 3 5")
		h.expect("0 3 5\n1 1 5\n3 2 5")
	}
}

func TestTopNErrors(t *testing.T) {
	actx := &ActorContext{ID: 1, Store: memkv.New()}
	src := &tnSource{types: tnII}
	for _, n := range []*plan.StreamTopN{
		tnNode(tnII, []int{0}, plan.StreamTopN{OrderBy: []plan.SortKey{{Col: 1}}, Limit: -1}),
		tnNode(tnII, []int{0}, plan.StreamTopN{OrderBy: []plan.SortKey{{Col: 1}}, Limit: 1, Rank: "ntile"}),
	} {
		if _, err := NewTopN(actx, n, src); err == nil {
			t.Fatalf("%s: no error", n.Describe())
		}
	}
	n := tnNode(tnII, []int{0}, plan.StreamTopN{OrderBy: []plan.SortKey{{Col: 1}}, Limit: 1})
	n.SetState(nil)
	if _, err := NewTopN(actx, n, src); err == nil {
		t.Fatal("no error without a state table")
	}
}

// TestTopNRandom checks many shapes against a recomputation from the live
// input after every barrier, with a small cache, restarts and hidden rows.
// Input: c0 key, c1 group, c2 order (small range, NULLs), c3 second order.
func TestTopNRandom(t *testing.T) {
	defer goleak.VerifyNone(t)
	seed := int64(testseed.For(t))
	rng := rand.New(rand.NewSource(seed))
	ts := []types.T{types.TInt64, types.TInt64, types.TInt64, types.TVarchar}
	shapes := []plan.StreamTopN{
		{OrderBy: []plan.SortKey{{Col: 2}}, Limit: 5},
		{OrderBy: []plan.SortKey{{Col: 2, Desc: true}}, Limit: 3, Offset: 2},
		{OrderBy: []plan.SortKey{{Col: 2, NullsFirst: true}, {Col: 3, Desc: true, NullsFirst: true}}, Limit: 4, Rank: "rank"},
		{GroupBy: []int{1}, OrderBy: []plan.SortKey{{Col: 2, NullsFirst: true}}, Limit: 2, Rank: "row_number"},
		{GroupBy: []int{1}, OrderBy: []plan.SortKey{{Col: 2, Desc: true, NullsFirst: true}}, Limit: 2, Rank: "rank"},
		{GroupBy: []int{1}, OrderBy: []plan.SortKey{{Col: 2}, {Col: 3}}, Limit: 2, Rank: "dense_rank"},
		{GroupBy: []int{1}, OrderBy: []plan.SortKey{{Col: 2, Desc: true}}, Limit: 3, Offset: 1},
		{GroupBy: []int{1, 2}, OrderBy: []plan.SortKey{{Col: 0}}, Limit: 1},
		{GroupBy: []int{1}, Limit: 2},
	}
	for si, shape := range slices.Concat(shapes, shapes) {
		appendOnly := si >= len(shapes) // inserts only, the state holding each group's top alone
		shape.AppendOnlyInput = appendOnly
		n := tnNode(ts, []int{0}, shape)
		t.Run(fmt.Sprintf("%d", si), func(t *testing.T) {
			h := newTNHarness(t, n, 2+rng.Intn(40)) // from a few rows, so groups are evicted within epochs
			live := map[int64][]types.Datum{}
			nextID := int64(1)
			groups := 1 + rng.Intn(25)
			randRow := func(id int64) []types.Datum {
				r := []types.Datum{types.DInt(id), types.DInt(int64(rng.Intn(groups))), types.DInt(int64(rng.Intn(8))), types.DString(fmt.Sprint(rng.Intn(3)))}
				if rng.Intn(10) == 0 {
					r[2] = types.NullDatum
				}
				if rng.Intn(10) == 0 {
					r[3] = types.NullDatum
				}
				return r
			}
			for epoch := 0; epoch < 60; epoch++ {
				var msgs []Message
				for range rng.Intn(3) {
					c := types.NewChunk(ts, 16)
					var vis []bool
					for range rng.Intn(40) {
						if rng.Intn(12) == 0 { // garbage the mask hides
							c.AppendRowOp(types.OpDelete, randRow(999999))
							vis = append(vis, false)
							continue
						}
						ids := make([]int64, 0, len(live))
						for id := range live {
							ids = append(ids, id)
						}
						slices.Sort(ids)
						switch k := rng.Intn(10); {
						case k < 5 || len(ids) == 0 || appendOnly:
							r := randRow(nextID)
							nextID++
							live[r[0].I] = r
							c.AppendRowOp(types.OpInsert, r)
							vis = append(vis, true)
						case k < 7:
							id := ids[rng.Intn(len(ids))]
							c.AppendRowOp(types.OpDelete, live[id])
							delete(live, id)
							vis = append(vis, true)
						default:
							id := ids[rng.Intn(len(ids))]
							r := randRow(id)
							c.AppendRowOp(types.OpUpdateDelete, live[id])
							c.AppendRowOp(types.OpUpdateInsert, r)
							live[id] = r
							vis = append(vis, true, true)
						}
					}
					if slices.Contains(vis, false) {
						c.Vis = vis
					}
					msgs = append(msgs, ChunkMsg(c))
				}
				h.stepMsgs(nil, msgs...)
				if want := tnOracle(n, live); h.content() != want {
					t.Fatalf("seed %d shape %s epoch %d:\nview:\n%s\nwant:\n%s", seed, n.Describe(), epoch, h.content(), want)
				}
				if want := tnOracleKept(n, live); appendOnly && h.stateRows() != want {
					t.Fatalf("seed %d shape %s epoch %d: %d state rows, want %d (the rows ranked within offset + limit)", seed, n.Describe(), epoch, h.stateRows(), want)
				}
				if rng.Intn(8) == 0 {
					h.restart()
				}
			}
		})
	}
}

// stateRows counts the rows of the top-N's state table at the last commit.
func (h *tnHarness) stateRows() int {
	h.t.Helper()
	it, err := h.kv.Scan(h.ctx, nil, nil, h.kv.CommittedEpoch())
	if err != nil {
		h.t.Fatal(err)
	}
	defer it.Close()
	n := 0
	for {
		switch err := it.Next(); err {
		case nil:
			n++
		case io.EOF:
			return n
		default:
			h.t.Fatal(err)
		}
	}
}

// tnOracleKept counts the live rows ranked within Offset+Limit of their
// group: what a top-N over an append-only input keeps in its state.
func tnOracleKept(n *plan.StreamTopN, live map[int64][]types.Datum) int {
	m := *n
	m.Limit, m.Offset = n.Offset+n.Limit, 0
	if s := tnOracle(&m, live); s != "" {
		return strings.Count(s, "\n") + 1
	}
	return 0
}

// tnOracle computes the expected top-N content from the live input rows.
func tnOracle(n *plan.StreamTopN, live map[int64][]types.Datum) string {
	ts := make([]types.T, 0, len(n.Out))
	for _, f := range n.Input.Schema() {
		ts = append(ts, f.Type)
	}
	groups := map[string][][]types.Datum{}
	for _, r := range live {
		var g []string
		for _, c := range n.GroupBy {
			g = append(g, string(types.AppendText(nil, ts[c], &r[c])))
		}
		k := strings.Join(g, ",")
		groups[k] = append(groups[k], r)
	}
	cmpOrder := func(a, b []types.Datum) int {
		for _, k := range n.OrderBy {
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
			c := types.Compare(ts[k.Col], x, y)
			if k.Desc {
				c = -c
			}
			if c != 0 {
				return c
			}
		}
		return 0
	}
	var rows []string
	for _, g := range groups {
		slices.SortFunc(g, func(a, b []types.Datum) int {
			if c := cmpOrder(a, b); c != 0 {
				return c
			}
			return types.Compare(ts[0], &a[0], &b[0])
		})
		var r int64
		for i, row := range g {
			switch {
			case n.Rank == "rank" && (i == 0 || cmpOrder(g[i-1], row) != 0):
				r = int64(i) + 1
			case n.Rank == "dense_rank" && (i == 0 || cmpOrder(g[i-1], row) != 0):
				r++
			case n.Rank != "rank" && n.Rank != "dense_rank":
				r = int64(i) + 1
			}
			if r <= n.Offset || r > n.Offset+n.Limit {
				continue
			}
			var parts []string
			for j := range row {
				if row[j].Null {
					parts = append(parts, ".")
				} else {
					parts = append(parts, string(types.AppendText(nil, ts[j], &row[j])))
				}
			}
			if n.Rank != "" {
				parts = append(parts, fmt.Sprint(r))
			}
			rows = append(rows, strings.Join(parts, " "))
		}
	}
	slices.Sort(rows)
	return strings.Join(rows, "\n")
}

// tnRandomRows returns a chunk inserting rows (id, id*7919 % 10007) for ids in [from, to).
func tnRandomRows(from, to int64) (*types.Chunk, map[int64][]types.Datum) {
	c := types.NewChunk(tnII, int(to-from))
	live := map[int64][]types.Datum{}
	for id := from; id < to; id++ {
		r := []types.Datum{types.DInt(id), types.DInt(id * 7919 % 10007)}
		c.AppendRowOp(types.OpInsert, r)
		live[id] = r
	}
	return c, live
}

func TestTopNLargeTop(t *testing.T) {
	defer goleak.VerifyNone(t)
	// A top larger than a chunk and than the cache: output spans chunks, and
	// the group is evicted after every barrier and reloaded from state.
	for _, cache := range []int{0, 100} {
		n := tnNode(tnII, []int{0}, plan.StreamTopN{OrderBy: []plan.SortKey{{Col: 1}}, Limit: 1500, Rank: "row_number"})
		h := newTNHarness(t, n, cache)
		c, live := tnRandomRows(0, 4000)
		h.stepMsgs(nil, ChunkMsg(c))
		if got, want := h.content(), tnOracle(n, live); got != want {
			t.Fatalf("cache %d: view differs from the oracle after the load", cache)
		}
		// Every rank shifts: 1500 update pairs plus an insert, matched by key.
		d := types.NewChunk(tnII, 1)
		d.AppendRowOp(types.OpInsert, []types.Datum{types.DInt(-1), types.DInt(-1)})
		live[-1] = []types.Datum{types.DInt(-1), types.DInt(-1)}
		h.stepMsgs(nil, ChunkMsg(d))
		if got, want := h.content(), tnOracle(n, live); got != want {
			t.Fatalf("cache %d: view differs from the oracle after the shift", cache)
		}
	}
}

func TestTopNCacheBound(t *testing.T) {
	defer goleak.VerifyNone(t)
	// 200 groups of 5 rows, top 1 per group, 50 cached rows.
	ts := []types.T{types.TInt64, types.TInt64, types.TInt64}
	n := tnNode(ts, []int{0}, plan.StreamTopN{GroupBy: []int{1}, OrderBy: []plan.SortKey{{Col: 2}}, Limit: 1})
	h := newTNHarness(t, n, 50)
	live := map[int64][]types.Datum{}
	c := types.NewChunk(ts, 1000)
	for id := int64(0); id < 1000; id++ {
		r := []types.Datum{types.DInt(id), types.DInt(id % 200), types.DInt(id / 200)}
		c.AppendRowOp(types.OpInsert, r)
		live[id] = r
	}
	h.stepMsgs(nil, ChunkMsg(c))
	x := h.exec.(*TopN)
	if len(x.groups) == 0 || len(x.groups) > 50 {
		t.Fatalf("%d groups cached, want 1..50", len(x.groups))
	}
	// Deleting every group's top refills evicted groups from state.
	d := types.NewChunk(ts, 200)
	for id := int64(0); id < 200; id++ {
		d.AppendRowOp(types.OpDelete, live[id])
		delete(live, id)
	}
	h.stepMsgs(nil, ChunkMsg(d))
	if got, want := h.content(), tnOracle(n, live); got != want {
		t.Fatalf("view:\n%s\nwant:\n%s", got, want)
	}
}

// TestTopNCacheBoundInEpoch: one epoch touches far more groups than the
// cache holds; after every chunk the cache holds at most the bound (counted
// as the executor counts: rows plus one per group) or, when more groups than
// that changed in the epoch, one per changed group; the barrier's output is
// right although the groups changed were read back from state.
func TestTopNCacheBoundInEpoch(t *testing.T) {
	defer goleak.VerifyNone(t)
	ts := []types.T{types.TInt64, types.TInt64, types.TInt64}
	n := tnNode(ts, []int{0}, plan.StreamTopN{GroupBy: []int{1}, OrderBy: []plan.SortKey{{Col: 2}}, Limit: 2})
	const bound = 30
	h := newTNHarness(t, n, bound)
	live := map[int64][]types.Datum{}
	checks := 0
	h.src.each = func() {
		x := h.exec.(*TopN)
		rows := 0
		for _, g := range x.groups {
			rows += len(g.rows) + 1
		}
		// A group changed in the epoch keeps its entry (counted as one row) until
		// the barrier: more of them than the bound is the floor.
		if rows != x.cached || rows > max(bound, len(x.dirty)) {
			t.Fatalf("cache holds %d rows, counted %d, bound %d, %d groups changed", rows, x.cached, bound, len(x.dirty))
		}
		checks++
	}
	id := int64(0)
	for epoch := 0; epoch < 3; epoch++ {
		var msgs []Message
		for chunk := 0; chunk < 20; chunk++ {
			c := types.NewChunk(ts, 10)
			for j := 0; j < 10; j++ {
				r := []types.Datum{types.DInt(id), types.DInt(id % 97), types.DInt((id * 7919) % 13)}
				c.AppendRowOp(types.OpInsert, r)
				live[id] = r
				id++
			}
			msgs = append(msgs, ChunkMsg(c))
		}
		// And delete some tops of the epoch before.
		if epoch > 0 {
			d := types.NewChunk(ts, 50)
			for k := id - 400; k < id-350; k++ {
				d.AppendRowOp(types.OpDelete, live[k])
				delete(live, k)
			}
			msgs = append(msgs, ChunkMsg(d))
		}
		h.stepMsgs(nil, msgs...)
		if got, want := h.content(), tnOracle(n, live); got != want {
			t.Fatalf("epoch %d: view:\n%s\nwant:\n%s", epoch, got, want)
		}
	}
	if checks < 60 {
		t.Fatalf("cache checked %d times", checks)
	}
}

func BenchmarkTopN(b *testing.B) {
	n := tnNode(tnII, []int{0}, plan.StreamTopN{OrderBy: []plan.SortKey{{Col: 1, Desc: true, NullsFirst: true}}, Limit: 10})
	kv := memkv.New()
	defer kv.Close()
	actx := &ActorContext{ID: 1, Store: kv}
	src := &tnSource{types: tnII}
	e, err := NewTopN(actx, n, src)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	rng := rand.New(rand.NewSource(1))
	chunks := make([]*types.Chunk, 64)
	id := int64(0)
	for i := range chunks {
		chunks[i] = types.NewChunk(tnII, types.DefaultChunkSize)
		for range types.DefaultChunkSize {
			chunks[i].AppendRowOp(types.OpInsert, []types.Datum{types.DInt(id), types.DInt(rng.Int63n(1 << 40))})
			id++
		}
	}
	epoch := uint64(1 << 16)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		src.msgs = append(src.msgs, ChunkMsg(chunks[i%len(chunks)]))
		if i%8 == 7 || i == b.N-1 {
			src.msgs = append(src.msgs, BarrierMsg(&Barrier{Epoch: Epoch{Prev: epoch, Curr: epoch + 1}}))
			epoch++
			for {
				m, err := e.Next(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if m.Barrier != nil {
					break
				}
			}
			actx.Flush(epoch - 1)
			if err := kv.Commit(ctx, epoch-1, actx.TakeWrites()); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.SetBytes(types.DefaultChunkSize) // "MB/s" reads as million rows/s
}

func TestTopNNoKey(t *testing.T) {
	defer goleak.VerifyNone(t)
	// LIMIT 1 over a one-row stream without a key (a simple aggregate's output).
	h := newTNHarness(t, tnNode([]types.T{types.TInt64}, nil, plan.StreamTopN{Limit: 1}), 0)
	tnExpectOut(t, h.step("I\n + 5"), "+ 5")
	tnExpectOut(t, h.step("I\n U- 5\n U+ 6"), "U- 5\nU+ 6")
	h.restart()
	tnExpectOut(t, h.step("I\n - 6"), "- 6")
	h.expect("")
}
