package stream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tributary/tributary/e2e/testseed"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage"
	"github.com/tributary/tributary/storage/codec"
	"github.com/tributary/tributary/storage/memkv"
	"github.com/tributary/tributary/storage/memory"
	"github.com/tributary/tributary/storage/state"
)

// Hash join tests. Fixtures are text (STYLE 10): a chunk is a header of type
// letters then one row per line, "op v1 v2 ...", op one of + - U- U+, an op
// prefixed by "!" marks the row invisible; NULL is NULL. Each scripted epoch
// gives the left and right chunks and the join's whole expected content after
// its barrier; the harness applies the emitted changes to a multiset, failing
// on a retraction of an absent row and on duplicate stream keys.

var hjTypeLetters = map[string]types.T{"I": types.TInt64, "i": types.TInt32, "T": types.TVarchar, "N": types.TNumeric,
	"TS": types.TTimestamp}

func hjParseChunk(t testing.TB, text string) *types.Chunk {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(text), "\n")
	var ts []types.T
	for _, f := range strings.Fields(lines[0]) {
		ty, ok := hjTypeLetters[f]
		if !ok {
			t.Fatalf("fixture: unknown type letter %q", f)
		}
		ts = append(ts, ty)
	}
	c := types.NewChunk(ts, len(lines))
	row := make([]types.Datum, len(ts))
	var vis []bool
	for _, line := range lines[1:] {
		fs := strings.Fields(line)
		if len(fs) != len(ts)+1 {
			t.Fatalf("fixture: row %q has %d values, want %d", line, len(fs)-1, len(ts))
		}
		visible := !strings.HasPrefix(fs[0], "!")
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
			d, err := types.ParseText(ts[i], f)
			if err != nil {
				t.Fatalf("fixture: %v", err)
			}
			row[i] = d
		}
		c.AppendRowOp(op, row)
		vis = append(vis, visible)
	}
	if slices.Contains(vis, false) {
		c.Vis = vis
	}
	return c
}

// hjFormatRow prints a row as space-separated text.
func hjFormatRow(c *types.Chunk, i int) string {
	var b []byte
	for j := range c.Cols {
		if j > 0 {
			b = append(b, ' ')
		}
		d := c.Cols[j].Get(i)
		if d.Null {
			b = append(b, "NULL"...)
		} else {
			b = types.AppendText(b, c.Cols[j].Type, &d)
		}
	}
	return string(b)
}

// hjSource emits scripted messages, then io.EOF.
type hjSource struct {
	ts   []types.T
	msgs []Message
}

func (s *hjSource) Schema() []types.T { return s.ts }

func (s *hjSource) Next(ctx context.Context) (Message, error) {
	if err := ctx.Err(); err != nil {
		return Message{}, err
	}
	if len(s.msgs) == 0 {
		return Message{}, io.EOF
	}
	m := s.msgs[0]
	s.msgs = s.msgs[1:]
	return m, nil
}

// hjEpoch is one scripted epoch: chunk fixtures per side (without the type
// header, which the harness adds) and the expected join content after it.
type hjEpoch struct {
	left, right []string
	want        string
}

// hjHarness runs join instances over one store, as an actor would, keeping
// the output's committed content (what a downstream MV would hold).
type hjHarness struct {
	t          testing.TB
	kv         storage.KV
	n          *plan.StreamHashJoin
	lHdr, rHdr string
	lts, rts   []types.T
	cacheRows  int
	pool       *memory.Pool      // the caches' byte budget (nil: none)
	each       func(j *hashJoin) // when set, called after every message the join returns
	epoch      uint64
	view       map[string]int // committed output content
	keyCols    []int          // output stream key
}

func newHJHarness(t testing.TB, kind plan.JoinKind, lHdr, rHdr string, eqL, eqR []int, cond expr.Expr) *hjHarness {
	h := &hjHarness{t: t, kv: memkv.New(), lHdr: lHdr, rHdr: rHdr, epoch: 1, view: map[string]int{}}
	h.lts = hjParseChunk(t, lHdr).Types()
	h.rts = hjParseChunk(t, rHdr).Types()
	node := func(ts []types.T) plan.StreamNode {
		fs := make([]plan.Field, len(ts))
		for i, ty := range ts {
			fs[i] = plan.Field{Name: fmt.Sprintf("c%d", i), Type: ty}
		}
		return &plan.StreamValues{Out: fs, Key: []int{0}}
	}
	h.n = &plan.StreamHashJoin{Kind: kind, Left: node(h.lts), Right: node(h.rts), EqLeft: eqL, EqRight: eqR, Cond: cond}
	layouts := h.n.StateLayouts()
	for i := range layouts {
		layouts[i].ID = uint32(100 + i)
	}
	h.n.SetState(layouts)
	h.keyCols = h.n.StreamKey()
	return h
}

// run builds a join over the store and feeds it the epochs; the last barrier
// stops the actor. With commit, every epoch's writes are committed; without,
// every epoch but the last is, and the last one's output is discarded (a crash
// before its commit).
func (h *hjHarness) run(epochs []hjEpoch, commitLast bool) {
	t := h.t
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	actx := &ActorContext{ID: 7, Store: h.kv, CacheRows: h.cacheRows, Memory: h.pool}
	defer actx.Release() // the join is driven here, not by an Actor
	ls := &hjSource{ts: h.lts}
	rs := &hjSource{ts: h.rts}
	var barriers []*Barrier
	for i, ep := range epochs {
		for _, c := range ep.left {
			ls.msgs = append(ls.msgs, ChunkMsg(hjParseChunk(t, h.lHdr+"\n"+c)))
		}
		for _, c := range ep.right {
			rs.msgs = append(rs.msgs, ChunkMsg(hjParseChunk(t, h.rHdr+"\n"+c)))
		}
		b := &Barrier{Epoch: Epoch{Prev: h.epoch + uint64(i), Curr: h.epoch + uint64(i) + 1}, Checkpoint: true}
		if i == len(epochs)-1 {
			b.Mutation = &StopActors{Actors: map[ActorID]bool{actx.ID: true}}
		}
		barriers = append(barriers, b)
		ls.msgs = append(ls.msgs, BarrierMsg(b))
		rs.msgs = append(rs.msgs, BarrierMsg(b))
	}
	h.epoch += uint64(len(epochs))
	j, al, err := NewHashJoin(actx, h.n, ls, rs)
	if err != nil {
		t.Fatal(err)
	}
	defer al.Close()
	view := hjCopyView(h.view)
	for i := 0; ; {
		m, err := j.Next(ctx)
		if errors.Is(err, io.EOF) {
			if i != len(epochs) {
				t.Fatalf("join ended after %d of %d epochs", i, len(epochs))
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.each != nil {
			h.each(j.(*hashJoin))
		}
		switch {
		case m.Chunk != nil:
			h.apply(view, m.Chunk)
		case m.Barrier != nil:
			if m.Barrier != barriers[i] {
				t.Fatalf("epoch %d: got %v, want %v", i, m.Barrier, barriers[i])
			}
			h.check(view, epochs[i].want, fmt.Sprintf("epoch %d", i))
			hjCheckCache(t, j.(*hashJoin))
			actx.Flush(m.Barrier.Epoch.Prev)
			w := actx.TakeWrites()
			if i < len(epochs)-1 || commitLast {
				if err := h.kv.Commit(ctx, m.Barrier.Epoch.Prev, w); err != nil {
					t.Fatal(err)
				}
				h.view = hjCopyView(view)
			}
			i++
		}
	}
}

// hjCheckCache checks the join's cache after a barrier: its row count is
// right, within the bound, and nothing is left unwritten.
func hjCheckCache(t testing.TB, j *hashJoin) {
	t.Helper()
	for s, side := range j.run.sides {
		n := 0
		for _, e := range side.cache {
			n += max(len(e.dirty), 1)
			if len(e.rows) != len(e.dirty)*side.width || e.pending || len(e.gone) > 0 || slices.Contains(e.dirty, true) {
				t.Fatalf("side %d: cache entry not flushed or malformed: %d values, %d rows, pending %v", s, len(e.rows), len(e.dirty), e.pending)
			}
		}
		if n != side.cached || n > side.limit || side.limit > j.limit || len(side.pending) > 0 {
			t.Fatalf("side %d: cache holds %d rows, counted %d, bound %d (at most %d), %d entries pending", s, n, side.cached, side.limit, j.limit, len(side.pending))
		}
	}
}

func hjCopyView(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// apply adds a chunk's changes to a multiset, checking it stays consistent.
func (h *hjHarness) apply(view map[string]int, c *types.Chunk) {
	h.t.Helper()
	if want := len(h.n.Schema()); len(c.Cols) != want {
		h.t.Fatalf("output has %d columns, want %d", len(c.Cols), want)
	}
	for i := 0; i < c.Len(); i++ {
		if !c.Visible(i) {
			continue
		}
		row := hjFormatRow(c, i)
		switch c.Op(i) {
		case types.OpInsert:
			view[row]++
		case types.OpDelete:
			if view[row] == 0 {
				h.t.Fatalf("retraction of absent row %q", row)
			}
			view[row]--
			if view[row] == 0 {
				delete(view, row)
			}
		default:
			h.t.Fatalf("join emitted op %s (only Insert and Delete expected)", c.Op(i))
		}
	}
}

// check compares the multiset with the expected rows (one per line) and
// checks that the output stream key is unique.
func (h *hjHarness) check(view map[string]int, want, what string) {
	h.t.Helper()
	got := hjLines(view)
	var w []string
	for _, l := range strings.Split(strings.TrimSpace(want), "\n") {
		if l = strings.Join(strings.Fields(l), " "); l != "" {
			w = append(w, l)
		}
	}
	slices.Sort(w)
	if !slices.Equal(got, w) {
		h.t.Fatalf("%s: join content\n%s\nwant\n%s", what, strings.Join(got, "\n"), strings.Join(w, "\n"))
	}
	keys := map[string]bool{}
	for _, l := range got {
		fs := strings.Fields(l)
		var k []string
		for _, c := range h.keyCols {
			k = append(k, fs[c])
		}
		ks := strings.Join(k, " ")
		if keys[ks] {
			h.t.Fatalf("%s: stream key %q appears twice", what, ks)
		}
		keys[ks] = true
	}
}

func hjLines(view map[string]int) []string {
	var out []string
	for r, n := range view {
		for range n {
			out = append(out, r)
		}
	}
	slices.Sort(out)
	return out
}

func hjCall(t testing.TB, name string, args ...expr.Expr) expr.Expr {
	e, err := expr.Call(name, args)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// Left (id, k, v), right (id, k, v); key k.
const hjL, hjR = "I I I", "I I T"

func TestHashJoinInner(t *testing.T) {
	defer goleak.VerifyNone(t)
	h := newHJHarness(t, plan.InnerJoin, hjL, hjR, []int{1}, []int{1}, nil)
	h.run([]hjEpoch{
		{left: []string{"+ 1 10 100\n+ 2 20 200\n+ 3 NULL 300"}, right: []string{"+ 1 10 a\n+ 2 30 b\n+ 3 NULL c"},
			want: "1 10 100 1 10 a"},
		// many-to-many on key 10: 2 left x 3 right
		{left: []string{"+ 4 10 400"}, right: []string{"+ 4 10 d\n+ 5 10 e"},
			want: `1 10 100 1 10 a
			1 10 100 4 10 d
			1 10 100 5 10 e
			4 10 400 1 10 a
			4 10 400 4 10 d
			4 10 400 5 10 e`},
		// deletes on both sides, an update moving a row to another key, an invisible row
		{left: []string{"- 1 10 100\nU- 2 20 200\nU+ 2 30 201\n!+ 9 10 900"}, right: []string{"- 5 10 e"},
			want: `2 30 201 2 30 b
			4 10 400 1 10 a
			4 10 400 4 10 d`},
		// an update that keeps the key, on the right
		{right: []string{"U- 1 10 a\nU+ 1 10 z"},
			want: `2 30 201 2 30 b
			4 10 400 1 10 z
			4 10 400 4 10 d`},
	}, true)
}

func TestHashJoinLeft(t *testing.T) {
	defer goleak.VerifyNone(t)
	h := newHJHarness(t, plan.LeftJoin, hjL, hjR, []int{1}, []int{1}, nil)
	h.run([]hjEpoch{
		{left: []string{"+ 1 10 100\n+ 2 20 200\n+ 3 NULL 300"}, right: []string{"+ 3 NULL c"},
			want: `1 10 100 NULL NULL NULL
			2 20 200 NULL NULL NULL
			3 NULL 300 NULL NULL NULL`},
		// degree 0 -> 1 -> 2 for left 1
		{right: []string{"+ 1 10 a", "+ 2 10 b"},
			want: `1 10 100 1 10 a
			1 10 100 2 10 b
			2 20 200 NULL NULL NULL
			3 NULL 300 NULL NULL NULL`},
		// 2 -> 1 -> 0: padded row comes back; NULL-key row deleted
		{right: []string{"- 1 10 a", "- 2 10 b"}, left: []string{"- 3 NULL 300"},
			want: `1 10 100 NULL NULL NULL
			2 20 200 NULL NULL NULL`},
		// a right row arriving before its left row, then a right update moving it between keys
		{right: []string{"+ 4 30 d"}, left: []string{"+ 5 30 500"},
			want: `1 10 100 NULL NULL NULL
			2 20 200 NULL NULL NULL
			5 30 500 4 30 d`},
		{right: []string{"U- 4 30 d\nU+ 4 20 d"},
			want: `1 10 100 NULL NULL NULL
			2 20 200 4 20 d
			5 30 500 NULL NULL NULL`},
	}, true)
}

// TestHashJoinSemiAnti: a left row is in a semi join's output while it has
// a match (the condition included) and in an anti join's while it has none;
// a NULL key never matches.
func TestHashJoinSemiAnti(t *testing.T) {
	defer goleak.VerifyNone(t)
	cond := hjCall(t, "<", expr.Column(0, types.TInt64), expr.Column(3, types.TInt64))
	for _, kind := range []plan.JoinKind{plan.SemiJoin, plan.AntiJoin} {
		t.Run(kind.String(), func(t *testing.T) {
			h := newHJHarness(t, kind, hjL, hjR, []int{1}, []int{1}, cond)
			semi := func(semi, anti string) string {
				if kind == plan.SemiJoin {
					return semi
				}
				return anti
			}
			h.run([]hjEpoch{
				{left: []string{"+ 1 10 100\n+ 2 20 200\n+ 3 NULL 300"}, right: []string{"+ 5 10 a\n+ 1 20 b"},
					want: semi("1 10 100", "2 20 200\n3 NULL 300")},
				// a second match for left 1, then the first goes: still matched
				{right: []string{"+ 6 10 c", "- 5 10 a"},
					want: semi("1 10 100", "2 20 200\n3 NULL 300")},
				// the last match goes; left 2 gains one (the condition now passes)
				{right: []string{"- 6 10 c", "U- 1 20 b\nU+ 4 20 b"},
					want: semi("2 20 200", "1 10 100\n3 NULL 300")},
				// a left row moves to a key with a match and out again
				{left: []string{"U- 1 10 100\nU+ 1 20 100"},
					want: semi("1 20 100\n2 20 200", "3 NULL 300")},
				{left: []string{"- 1 20 100\n- 3 NULL 300"}, right: []string{"- 4 20 b"},
					want: semi("", "2 20 200")},
			}, true)
		})
	}
}

func TestHashJoinRight(t *testing.T) {
	defer goleak.VerifyNone(t)
	h := newHJHarness(t, plan.RightJoin, hjL, hjR, []int{1}, []int{1}, nil)
	h.run([]hjEpoch{
		{left: []string{"+ 1 10 100"}, right: []string{"+ 1 10 a\n+ 2 20 b\n+ 3 NULL c"},
			want: `1 10 100 1 10 a
			NULL NULL NULL 2 20 b
			NULL NULL NULL 3 NULL c`},
		{left: []string{"+ 2 20 200\n+ 3 20 300"},
			want: `1 10 100 1 10 a
			2 20 200 2 20 b
			3 20 300 2 20 b
			NULL NULL NULL 3 NULL c`},
		{left: []string{"- 2 20 200", "- 3 20 300\n- 1 10 100"}, right: []string{"- 3 NULL c"},
			want: `NULL NULL NULL 1 10 a
			NULL NULL NULL 2 20 b`},
	}, true)
}

func TestHashJoinFull(t *testing.T) {
	defer goleak.VerifyNone(t)
	h := newHJHarness(t, plan.FullJoin, hjL, hjR, []int{1}, []int{1}, nil)
	h.run([]hjEpoch{
		{left: []string{"+ 1 10 100\n+ 2 NULL 200"}, right: []string{"+ 1 20 a\n+ 2 NULL b"},
			want: `1 10 100 NULL NULL NULL
			2 NULL 200 NULL NULL NULL
			NULL NULL NULL 1 20 a
			NULL NULL NULL 2 NULL b`},
		{left: []string{"U- 1 10 100\nU+ 1 20 100"},
			want: `1 20 100 1 20 a
			2 NULL 200 NULL NULL NULL
			NULL NULL NULL 2 NULL b`},
		{right: []string{"+ 3 20 c\n- 1 20 a"}, left: []string{"+ 3 20 300"},
			want: `1 20 100 3 20 c
			3 20 300 3 20 c
			2 NULL 200 NULL NULL NULL
			NULL NULL NULL 2 NULL b`},
		{right: []string{"- 3 20 c"}, left: []string{"- 2 NULL 200"},
			want: `1 20 100 NULL NULL NULL
			3 20 300 NULL NULL NULL
			NULL NULL NULL 2 NULL b`},
	}, true)
}

// TestHashJoinCond: an extra condition decides degrees (left.v < right.v, over
// a numeric right column).
func TestHashJoinCond(t *testing.T) {
	defer goleak.VerifyNone(t)
	cond := hjCall(t, "<", expr.Column(2, types.TNumeric), expr.Column(5, types.TNumeric))
	h := newHJHarness(t, plan.FullJoin, "I I N", "I I N", []int{1}, []int{1}, cond)
	h.run([]hjEpoch{
		{left: []string{"+ 1 10 5.5"}, right: []string{"+ 1 10 1.25\n+ 2 10 NULL"},
			want: `1 10 5.5 NULL NULL NULL
			NULL NULL NULL 1 10 1.25
			NULL NULL NULL 2 10 NULL`},
		// right 1 now passes: both padded rows retracted
		{right: []string{"U- 1 10 1.25\nU+ 1 10 7.75"},
			want: `1 10 5.5 1 10 7.75
			NULL NULL NULL 2 10 NULL`},
		// a second left row that passes with right 1 only
		{left: []string{"+ 2 10 7"},
			want: `1 10 5.5 1 10 7.75
			2 10 7 1 10 7.75
			NULL NULL NULL 2 10 NULL`},
		// right 1 falls below both: everything unmatched
		{right: []string{"U- 1 10 7.75\nU+ 1 10 0"},
			want: `1 10 5.5 NULL NULL NULL
			2 10 7 NULL NULL NULL
			NULL NULL NULL 1 10 0
			NULL NULL NULL 2 10 NULL`},
		{left: []string{"- 1 10 5.5\n- 2 10 7"}, right: []string{"- 1 10 0"},
			want: `NULL NULL NULL 2 10 NULL`},
	}, true)
}

// TestHashJoinMultiKey joins on two columns of different types.
func TestHashJoinMultiKey(t *testing.T) {
	defer goleak.VerifyNone(t)
	h := newHJHarness(t, plan.LeftJoin, "I T I", "I I T", []int{2, 1}, []int{1, 2}, nil)
	h.run([]hjEpoch{
		{left: []string{"+ 1 x 10\n+ 2 y 10\n+ 3 NULL 10"}, right: []string{"+ 1 10 x\n+ 2 10 z\n+ 3 10 NULL"},
			want: `1 x 10 1 10 x
			2 y 10 NULL NULL NULL
			3 NULL 10 NULL NULL NULL`},
	}, true)
}

// TestHashJoinMixedIntKeys joins an int4 key with an int8 key (their state
// keys are encoded differently).
func TestHashJoinMixedIntKeys(t *testing.T) {
	defer goleak.VerifyNone(t)
	h := newHJHarness(t, plan.RightJoin, "I i", "I I", []int{1}, []int{1}, nil)
	h.run([]hjEpoch{
		{left: []string{"+ 1 -5\n+ 2 7"}, right: []string{"+ 1 -5\n+ 2 8"},
			want: `1 -5 1 -5
			NULL NULL 2 8`},
		{left: []string{"+ 3 8"}, right: []string{"- 1 -5"},
			want: `3 8 2 8`},
	}, true)
}

// TestHashJoinInvalid: plans the join cannot run are refused.
func TestHashJoinInvalid(t *testing.T) {
	defer goleak.VerifyNone(t)
	ok := func() *hjHarness { return newHJHarness(t, plan.InnerJoin, hjL, hjR, []int{1}, []int{1}, nil) }
	for name, mutate := range map[string]func(n *plan.StreamHashJoin){
		"semi":       func(n *plan.StreamHashJoin) { n.Kind = plan.SemiJoin },
		"no keys":    func(n *plan.StreamHashJoin) { n.EqLeft, n.EqRight = nil, nil },
		"key range":  func(n *plan.StreamHashJoin) { n.EqLeft = []int{3} },
		"key types":  func(n *plan.StreamHashJoin) { n.EqRight = []int{2} },
		"no state":   func(n *plan.StreamHashJoin) { n.SetState(nil) },
		"degree":     func(n *plan.StreamHashJoin) { n.Kind = plan.FullJoin },
		"state key":  func(n *plan.StreamHashJoin) { n.State()[0].PK = []int{0} },
		"uneven key": func(n *plan.StreamHashJoin) { n.EqRight = []int{1, 0} },
	} {
		h := ok()
		mutate(h.n)
		actx := &ActorContext{ID: 1, Store: h.kv}
		_, al, err := NewHashJoin(actx, h.n, &hjSource{ts: h.lts}, &hjSource{ts: h.rts})
		if err == nil {
			al.Close()
			t.Errorf("%s: join built", name)
		}
	}
}

// TestHashJoinRestart rebuilds the join over the committed store, once after a
// commit and once after a crash that lost an epoch (replayed).
func TestHashJoinRestart(t *testing.T) {
	defer goleak.VerifyNone(t)
	h := newHJHarness(t, plan.FullJoin, hjL, hjR, []int{1}, []int{1}, nil)
	h.run([]hjEpoch{
		{left: []string{"+ 1 10 100\n+ 2 20 200"}, right: []string{"+ 1 10 a"},
			want: `1 10 100 1 10 a
			2 20 200 NULL NULL NULL`},
	}, true)
	h.run([]hjEpoch{
		{right: []string{"+ 4 10 d"},
			want: `1 10 100 1 10 a
			1 10 100 4 10 d
			2 20 200 NULL NULL NULL`},
		// Lost: the actor crashes before this epoch commits.
		{left: []string{"- 1 10 100"}, right: []string{"+ 2 20 b"}, want: `2 20 200 2 20 b
			NULL NULL NULL 1 10 a
			NULL NULL NULL 4 10 d`},
	}, false)
	// A new join over the committed state has not seen the lost epoch's changes.
	next := hjEpoch{right: []string{"+ 2 20 b\n+ 3 30 c"},
		want: `1 10 100 1 10 a
		1 10 100 4 10 d
		2 20 200 2 20 b
		NULL NULL NULL 3 30 c`}
	h.run([]hjEpoch{next}, true)
	h.run([]hjEpoch{{left: []string{"- 1 10 100\n- 2 20 200"}, want: `NULL NULL NULL 1 10 a
		NULL NULL NULL 2 20 b
		NULL NULL NULL 3 30 c
		NULL NULL NULL 4 10 d`}}, true)
}

// TestHashJoinCacheBound: with a cache of 2 rows the join still answers from
// state, and the cache stays bounded after each barrier.
func TestHashJoinCacheBound(t *testing.T) {
	defer goleak.VerifyNone(t)
	h := newHJHarness(t, plan.LeftJoin, hjL, hjR, []int{1}, []int{1}, nil)
	h.cacheRows = 2
	var ep []hjEpoch
	var want []string
	for k := 0; k < 6; k++ {
		ep = append(ep, hjEpoch{
			left:  []string{fmt.Sprintf("+ %d %d 0\n+ %d %d 1", 2*k, k, 2*k+1, k)},
			right: []string{fmt.Sprintf("+ %d %d r", k, k)},
		})
		want = append(want, fmt.Sprintf("%d %d 0 %d %d r", 2*k, k, k, k), fmt.Sprintf("%d %d 1 %d %d r", 2*k+1, k, k, k))
		ep[k].want = strings.Join(want, "\n")
	}
	// Delete the right rows again: every left row becomes padded, read back from state.
	var del []string
	want = want[:0]
	for k := 0; k < 6; k++ {
		del = append(del, fmt.Sprintf("- %d %d r", k, k))
		want = append(want, fmt.Sprintf("%d %d 0 NULL NULL NULL", 2*k, k), fmt.Sprintf("%d %d 1 NULL NULL NULL", 2*k+1, k))
	}
	ep = append(ep, hjEpoch{right: []string{strings.Join(del, "\n")}, want: strings.Join(want, "\n")})
	h.run(ep, true)
}

// TestHashJoinCompleteSide: a side whose stored rows fit its cache is
// complete (from an empty start, and after a restart that reads it back):
// probes of keys it lacks read nothing and cache nothing, while the other
// side, over its bound, is not; the output stays right throughout.
func TestHashJoinCompleteSide(t *testing.T) {
	defer goleak.VerifyNone(t)
	h := newHJHarness(t, plan.InnerJoin, hjL, hjR, []int{1}, []int{1}, nil)
	h.cacheRows = 16 // 8 rows a side; a restart warms a side of at most 4
	var left []string
	for i := range 40 {
		left = append(left, fmt.Sprintf("+ %d %d %d", i, i%20, i))
	}
	var probes []string
	for i := range 20 {
		probes = append(probes, fmt.Sprintf("+ %d %d %d", 100+i, 1000+i, i)) // keys the right side never has
	}
	checkSides := func(what string) func(j *hashJoin) {
		return func(j *hashJoin) {
			l, r := j.run.sides[Left], j.run.sides[Right]
			if !r.complete || len(r.cache) != 2 {
				t.Fatalf("%s: right side complete %v with %d cached keys, want complete with its 2", what, r.complete, len(r.cache))
			}
			if l.complete && l.cached > 8 {
				t.Fatalf("%s: left side complete over its bound", what)
			}
			hjCacheRows(t, r)
		}
	}
	h.each = checkSides("fresh")
	h.run([]hjEpoch{
		{right: []string{"+ 1 3 a\n+ 2 5 b"}, left: []string{strings.Join(left, "\n")},
			want: "3 3 3 1 3 a\n5 5 5 2 5 b\n23 3 23 1 3 a\n25 5 25 2 5 b"},
		{left: []string{strings.Join(probes, "\n")},
			want: "3 3 3 1 3 a\n5 5 5 2 5 b\n23 3 23 1 3 a\n25 5 25 2 5 b"},
	}, true)
	for i := range probes {
		probes[i] = fmt.Sprintf("+ %d %d %d", 300+i, 2000+i, i)
	}
	h.each = checkSides("restarted")
	h.run([]hjEpoch{
		{left: []string{strings.Join(probes, "\n") + "\n+ 200 5 9"}, right: []string{"+ 3 3 c"},
			want: "3 3 3 1 3 a\n3 3 3 3 3 c\n5 5 5 2 5 b\n23 3 23 1 3 a\n23 3 23 3 3 c\n25 5 25 2 5 b\n200 5 9 2 5 b"},
	}, true)
}

// hjCacheRows counts the rows a side's cache entries hold, and the rows
// their arrays have room for, checking the side's own count.
func hjCacheRows(t testing.TB, s *joinSide) (rows, room int) {
	t.Helper()
	for _, e := range s.cache {
		rows += max(len(e.dirty), 1)
		room += cap(e.rows)/s.width + cap(e.gone)/s.width
	}
	if rows != s.cached {
		t.Fatalf("cache holds %d rows, counted %d", rows, s.cached)
	}
	return rows, room
}

// TestHashJoinCacheBoundInEpoch: one epoch brings far more rows than the
// cache bound, over many keys (each left row's key gets a right row, so
// entries are both read and written); after every chunk each side's cache
// holds at most its bound, and its arrays at most twice that, and the
// output is right.
func TestHashJoinCacheBoundInEpoch(t *testing.T) {
	defer goleak.VerifyNone(t)
	h := newHJHarness(t, plan.LeftJoin, "I I I", "I I I", []int{1}, []int{1}, nil)
	h.cacheRows = 40 // 20 per side
	const keys, perKey = 100, 3
	var ep [2]hjEpoch
	var want []string
	for k := 0; k < keys; k++ {
		var l []string
		for j := 0; j < perKey; j++ {
			id := k*perKey + j
			l = append(l, fmt.Sprintf("+ %d %d %d", id, k, j))
			want = append(want, fmt.Sprintf("%d %d %d %d %d 7", id, k, j, k, k))
		}
		ep[0].left = append(ep[0].left, strings.Join(l, "\n"))
		ep[0].right = append(ep[0].right, fmt.Sprintf("+ %d %d 7", k, k))
	}
	ep[0].want = strings.Join(want, "\n")
	// The next epoch deletes every right row: each left row is read back.
	want = want[:0]
	for k := 0; k < keys; k++ {
		ep[1].right = append(ep[1].right, fmt.Sprintf("- %d %d 7", k, k))
		for j := 0; j < perKey; j++ {
			want = append(want, fmt.Sprintf("%d %d %d NULL NULL NULL", k*perKey+j, k, j))
		}
	}
	ep[1].want = strings.Join(want, "\n")
	checks := 0
	h.each = func(j *hashJoin) {
		for i, s := range j.run.sides {
			rows, room := hjCacheRows(t, s)
			if rows > j.limit || room > 2*j.limit+4 {
				t.Fatalf("side %d: cache holds %d rows (room for %d), bound %d", i, rows, room, j.limit)
			}
		}
		checks++
	}
	h.run(ep[:], true)
	if checks < keys {
		t.Fatalf("cache checked %d times", checks)
	}
}

// TestHashJoinHotKey: a key with more rows than a side may cache is not
// cached at all; every probe reads it from state, and degrees updated by
// probes (a full join's) stay right.
func TestHashJoinHotKey(t *testing.T) {
	defer goleak.VerifyNone(t)
	h := newHJHarness(t, plan.FullJoin, "I I I", "I I I", []int{1}, []int{1}, nil)
	h.cacheRows = 8 // 4 per side
	var l, want []string
	for id := 0; id < 30; id++ {
		l = append(l, fmt.Sprintf("+ %d 1 %d", id, id))
		want = append(want, fmt.Sprintf("%d 1 %d NULL NULL NULL", id, id))
	}
	hot := func(j *hashJoin) {
		for i, s := range j.run.sides {
			if rows, _ := hjCacheRows(t, s); rows > j.limit {
				t.Fatalf("side %d: cache holds %d rows, bound %d", i, rows, j.limit)
			}
			var kb []byte
			kb = codec.AppendKey(kb, []types.T{types.TInt64}, []types.Datum{types.DInt(1)}, []int{0}, nil)
			if e := s.cache[string(kb)]; e != nil && len(e.dirty) > j.limit {
				t.Fatalf("side %d: the hot key is cached with %d rows", i, len(e.dirty))
			}
		}
	}
	h.each = hot
	ep := []hjEpoch{{left: []string{strings.Join(l, "\n")}, want: strings.Join(want, "\n")}}
	// A right row of the hot key matches all 30 (their degrees go to 1), then goes again.
	var joined []string
	for id := 0; id < 30; id++ {
		joined = append(joined, fmt.Sprintf("%d 1 %d 100 1 5", id, id))
	}
	ep = append(ep, hjEpoch{right: []string{"+ 100 1 5", "+ 101 2 6"}, want: strings.Join(append(joined, "NULL NULL NULL 101 2 6"), "\n")})
	ep = append(ep, hjEpoch{right: []string{"- 100 1 5"}, want: strings.Join(append(want, "NULL NULL NULL 101 2 6"), "\n")})
	h.run(ep, true)
	// A restart reads the degrees the probes wrote.
	h.run([]hjEpoch{{right: []string{"+ 102 1 9"}, want: strings.Join(append(func() []string {
		var out []string
		for id := 0; id < 30; id++ {
			out = append(out, fmt.Sprintf("%d 1 %d 102 1 9", id, id))
		}
		return out
	}(), "NULL NULL NULL 101 2 6"), "\n")}}, true)
}

// TestHashJoinHotKeyInBatches: a probe of a key with more rows than a side
// may cache reads them in batches of at most that many rows and keeps none of
// them (TestHashJoinHotKey checks the degrees batches write back).
func TestHashJoinHotKeyInBatches(t *testing.T) {
	defer goleak.VerifyNone(t)
	h := newHJHarness(t, plan.InnerJoin, "I I I", "I I I", []int{1}, []int{1}, nil)
	h.cacheRows = 8 // 4 per side
	var l, joined []string
	for id := 0; id < 30; id++ {
		l = append(l, fmt.Sprintf("+ %d 1 %d", id, id))
		joined = append(joined, fmt.Sprintf("%d 1 %d 100 1 5", id, id))
	}
	checked := false
	h.each = func(j *hashJoin) {
		s := j.run.sides[Left]
		if checked || s.cached > 0 || j.run.tick < 30 {
			return // not yet flushed
		}
		checked = true
		s.encodeKey([]types.Datum{types.DInt(1)})
		var batches []int
		e, err := s.read(context.Background(), []types.Datum{types.DInt(1)}, j.run.tick+1, func(b *joinEntry) error {
			batches = append(batches, len(b.dirty))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		total := 0
		for _, n := range batches {
			if n > s.limit {
				t.Errorf("a batch of %d rows, bound %d", n, s.limit)
			}
			total += n
		}
		if e != nil || total != 30 || len(batches) < 2 || s.cache[string(s.keyBuf)] != nil {
			t.Errorf("read the hot key: entry %v, batches %v (want 30 rows), cached %v", e != nil, batches, s.cache[string(s.keyBuf)] != nil)
		}
	}
	h.run([]hjEpoch{
		{left: []string{strings.Join(l, "\n")}, want: ""},
		{right: []string{"+ 100 1 5"}, want: strings.Join(joined, "\n")},
		{right: []string{"- 100 1 5", "+ 101 1 6"}, want: strings.Join(slices.Collect(func(yield func(string) bool) {
			for id := 0; id < 30; id++ {
				if !yield(fmt.Sprintf("%d 1 %d 101 1 6", id, id)) {
					return
				}
			}
		}), "\n")},
	}, true)
	if !checked {
		t.Fatal("the hot key was never read in batches")
	}
}

// TestHashJoinRandom compares the join with a recomputation after every
// epoch, for every kind with and without a condition, over random changes on
// both sides with a tiny cache, restarts and lost epochs.
func TestHashJoinRandom(t *testing.T) {
	seed := testseed.For(t)
	for _, kind := range []plan.JoinKind{plan.InnerJoin, plan.LeftJoin, plan.RightJoin, plan.FullJoin, plan.SemiJoin, plan.AntiJoin} {
		for _, withCond := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/cond=%v", kind, withCond), func(t *testing.T) {
				defer goleak.VerifyNone(t)
				hjRandom(t, rand.New(rand.NewPCG(seed, uint64(kind)*2+map[bool]uint64{false: 0, true: 1}[withCond])), kind, withCond, nil)
			})
		}
	}
}

// TestHashJoinRandomBytes is TestHashJoinRandom with a row bound that never
// binds and a memory pool of a few rows' bytes: the byte budget alone evicts,
// and the pool is left empty when the actors end.
func TestHashJoinRandomBytes(t *testing.T) {
	seed := testseed.For(t)
	defer func(n int64) { minBudgetRows = n }(minBudgetRows)
	minBudgetRows = 1
	for _, kind := range []plan.JoinKind{plan.InnerJoin, plan.FullJoin, plan.SemiJoin} {
		t.Run(kind.String(), func(t *testing.T) {
			defer goleak.VerifyNone(t)
			pool := memory.NewPool(3000)
			hjRandom(t, rand.New(rand.NewPCG(seed, uint64(kind))), kind, true, pool)
			if pool.Used() != 0 || len(pool.Accounts()) != 0 {
				t.Errorf("pool after the actors ended: %d bytes in %d accounts", pool.Used(), len(pool.Accounts()))
			}
		})
	}
}

// TestHashJoinRandomIndexed is TestHashJoinRandom with entries indexed from
// two rows on: removals find rows through the index, loads skip a partial
// entry's removed rows through a set.
func TestHashJoinRandomIndexed(t *testing.T) {
	seed := testseed.For(t)
	defer func(n int) { indexMin = n }(indexMin)
	indexMin = 2
	for _, kind := range []plan.JoinKind{plan.InnerJoin, plan.LeftJoin, plan.FullJoin, plan.SemiJoin, plan.AntiJoin} {
		t.Run(kind.String(), func(t *testing.T) {
			defer goleak.VerifyNone(t)
			hjRandom(t, rand.New(rand.NewPCG(seed, 100+uint64(kind))), kind, true, nil)
		})
	}
}

// TestHashJoinPartialRemoved: rows of a key removed before any probe read
// them (a partial entry's removals) are left out when a probe reads the key,
// whether they are compared one by one or through a set.
func TestHashJoinPartialRemoved(t *testing.T) {
	defer func(n int) { indexMin = n }(indexMin)
	for _, min := range []int{32, 2} {
		indexMin = min
		t.Run(fmt.Sprintf("indexMin=%d", min), func(t *testing.T) {
			defer goleak.VerifyNone(t)
			h := newHJHarness(t, plan.InnerJoin, "I I I", "I I I", []int{1}, []int{1}, nil)
			h.cacheRows = 8 // 4 a side: a restart does not warm (and complete) the left side
			h.run([]hjEpoch{{left: []string{"+ 1 1 1\n+ 2 1 2\n+ 3 1 3\n+ 4 1 4\n+ 5 1 5"}}}, true)
			// A new join, nothing cached: removing three rows makes a partial
			// entry (no read); a probe's read then merges in the other two.
			read := false
			h.each = func(j *hashJoin) {
				if read {
					return
				}
				read = true
				s := j.run.sides[Left]
				kd := []types.Datum{types.DInt(1)}
				s.encodeKey(kd)
				te := s.loadForWrite(j.run.tick + 1)
				for id := range int64(3) {
					s.remove(te, []types.Datum{types.DInt(id + 1), types.DInt(1), types.DInt(id + 1)})
				}
				if !te.partial || len(te.gone) != 3*s.width {
					t.Fatalf("partial %v, %d removed values", te.partial, len(te.gone))
				}
				e, err := s.read(context.Background(), kd, j.run.tick+1, nil)
				if err != nil {
					t.Fatal(err)
				}
				var ids []int64
				for i := range e.dirty {
					ids = append(ids, e.rows[i*s.width].I)
				}
				slices.Sort(ids)
				if !slices.Equal(ids, []int64{4, 5}) {
					t.Errorf("read after removing 1, 2 and 3: rows %v", ids)
				}
				if err := s.flush(); err != nil { // as the barrier would (this epoch is not committed)
					t.Fatal(err)
				}
			}
			h.run([]hjEpoch{{}}, false)
			if !read {
				t.Fatal("never read")
			}
		})
	}
}

type hjRow struct{ id, k, v int64 }

func hjRandom(t *testing.T, rng *rand.Rand, kind plan.JoinKind, withCond bool, pool *memory.Pool) {
	var cond expr.Expr
	if withCond {
		cond = hjCall(t, "<=", expr.Column(2, types.TInt64), expr.Column(5, types.TInt64))
	}
	h := newHJHarness(t, kind, "I I I", "I I I", []int{1}, []int{1}, cond)
	h.cacheRows = 4
	bytesBound := false // the pool held a side under its row bound
	if pool != nil {
		h.cacheRows, h.pool = 1000, pool
		h.each = func(j *hashJoin) {
			for _, s := range j.run.sides {
				bytesBound = bytesBound || s.limit < j.limit
			}
		}
		defer func() {
			if !bytesBound {
				t.Error("the memory pool never bound a side's cache")
			}
		}()
	}
	var sides [2]map[int64]hjRow
	sides[0], sides[1] = map[int64]hjRow{}, map[int64]hjRow{}
	nextID := int64(1)
	keyText := func(k int64) string {
		if k < 0 {
			return "NULL"
		}
		return fmt.Sprint(k)
	}
	randKey := func() int64 {
		if rng.IntN(8) == 0 {
			return -1 // NULL
		}
		return rng.Int64N(4)
	}
	rowText := func(op string, r hjRow) string {
		return fmt.Sprintf("%s %d %s %d\n", op, r.id, keyText(r.k), r.v)
	}
	// changes makes one chunk of random changes to a side's model.
	changes := func(m map[int64]hjRow) string {
		var b strings.Builder
		for range 1 + rng.IntN(6) {
			ids := make([]int64, 0, len(m))
			for id := range m {
				ids = append(ids, id)
			}
			slices.Sort(ids)
			switch x := rng.IntN(10); {
			case x < 5 || len(ids) == 0:
				r := hjRow{id: nextID, k: randKey(), v: rng.Int64N(5)}
				nextID++
				m[r.id] = r
				b.WriteString(rowText("+", r))
			case x < 7:
				r := m[ids[rng.IntN(len(ids))]]
				delete(m, r.id)
				b.WriteString(rowText("-", r))
			default:
				old := m[ids[rng.IntN(len(ids))]]
				r := old
				if rng.IntN(2) == 0 {
					r.k = randKey()
				} else {
					r.v = rng.Int64N(5)
				}
				m[r.id] = r
				b.WriteString(rowText("U-", old))
				b.WriteString(rowText("U+", r))
			}
		}
		return b.String()
	}
	expected := func() string {
		var out []string
		matchedR := map[int64]bool{}
		for _, l := range sides[0] {
			n := 0
			for _, r := range sides[1] {
				if l.k < 0 || l.k != r.k || (withCond && l.v > r.v) {
					continue
				}
				n++
				matchedR[r.id] = true
				if kind != plan.SemiJoin && kind != plan.AntiJoin {
					out = append(out, fmt.Sprintf("%d %d %d %d %d %d", l.id, l.k, l.v, r.id, r.k, r.v))
				}
			}
			if kind == plan.SemiJoin && n > 0 || kind == plan.AntiJoin && n == 0 {
				out = append(out, fmt.Sprintf("%d %s %d", l.id, keyText(l.k), l.v))
			}
			if n == 0 && (kind == plan.LeftJoin || kind == plan.FullJoin) {
				out = append(out, fmt.Sprintf("%d %s %d NULL NULL NULL", l.id, keyText(l.k), l.v))
			}
		}
		if kind == plan.RightJoin || kind == plan.FullJoin {
			for _, r := range sides[1] {
				if !matchedR[r.id] {
					out = append(out, fmt.Sprintf("NULL NULL NULL %d %s %d", r.id, keyText(r.k), r.v))
				}
			}
		}
		return strings.Join(out, "\n")
	}
	snapshot := func() [2]map[int64]hjRow {
		var s [2]map[int64]hjRow
		for i := range s {
			s[i] = map[int64]hjRow{}
			for k, v := range sides[i] {
				s[i][k] = v
			}
		}
		return s
	}
	for round := 0; round < 8; round++ {
		// A run of 1-4 epochs; sometimes its last epoch is lost and the model rolls back.
		committed := snapshot()
		var eps []hjEpoch
		for range 1 + rng.IntN(4) {
			committed = snapshot()
			var ep hjEpoch
			for range rng.IntN(3) {
				ep.left = append(ep.left, changes(sides[0]))
			}
			for range rng.IntN(3) {
				ep.right = append(ep.right, changes(sides[1]))
			}
			ep.want = expected()
			eps = append(eps, ep)
		}
		commit := rng.IntN(3) > 0
		h.run(eps, commit)
		if !commit {
			sides = committed
		}
	}
}

// TestHashJoinWatermarks: an inner join sends the lesser of both sides'
// watermarks on a join key, on the key's left and right output columns,
// once both have one and when it rises; an outer join sends none.
func TestHashJoinWatermarks(t *testing.T) {
	for _, kind := range []plan.JoinKind{plan.InnerJoin, plan.LeftJoin} {
		h := newHJHarness(t, kind, "I I", "I I I", []int{1}, []int{2}, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		wm := func(col int, v int64) Message { return WatermarkMsg(&Watermark{Col: col, Val: types.DInt(v)}) }
		b := &Barrier{Epoch: Epoch{Prev: 1, Curr: 2}, Checkpoint: true}
		ls := &hjSource{ts: h.lts, msgs: []Message{wm(1, 10), wm(0, 99), wm(1, 30), BarrierMsg(b)}}
		rs := &hjSource{ts: h.rts, msgs: []Message{wm(2, 20), wm(2, 15), wm(2, 40), BarrierMsg(b)}}
		actx := &ActorContext{ID: 7, Store: h.kv}
		j, al, err := NewHashJoin(actx, h.n, ls, rs)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for {
			m, err := j.Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if m.Barrier != nil {
				break
			}
			if m.Watermark != nil {
				got = append(got, fmt.Sprintf("$%d=%d", m.Watermark.Col, m.Watermark.Val.I))
			}
		}
		al.Close()
		cancel()
		if kind != plan.InnerJoin {
			if len(got) > 0 {
				t.Errorf("%s join sent watermarks %v", kind, got)
			}
			continue
		}
		// Sides are read in any order: the values sent rise in pairs ($1, $4)
		// and end at min(30, 40).
		if len(got) == 0 || len(got)%2 != 0 || got[len(got)-2] != "$1=30" || got[len(got)-1] != "$4=30" {
			t.Fatalf("inner join watermarks %v: want pairs ($1, $4) ending at 30", got)
		}
		for i := 0; i+1 < len(got); i += 2 {
			if got[i][:3] != "$1=" || got[i+1][:3] != "$4=" || got[i][3:] != got[i+1][3:] {
				t.Fatalf("inner join watermarks %v: not pairs ($1, $4)", got)
			}
		}
	}
}

// TestHashJoinWatermarkCleansState: once an inner join's key watermark
// passes a key, both sides' rows of that key leave the state (and cache);
// rows above it still join.
func TestHashJoinWatermarkCleansState(t *testing.T) {
	h := newHJHarness(t, plan.InnerJoin, "I I", "I I", []int{1}, []int{1}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	wm := func(v int64) Message { return WatermarkMsg(&Watermark{Col: 1, Val: types.DInt(v)}) }
	bar := func(e uint64) Message {
		return BarrierMsg(&Barrier{Epoch: Epoch{Prev: e, Curr: e + 1}, Checkpoint: true})
	}
	chunk := func(text string) Message { return ChunkMsg(hjParseChunk(t, "I I\n"+text)) }
	ls := &hjSource{ts: h.lts, msgs: []Message{chunk("+ 1 10\n+ 2 20"), bar(1), wm(15), bar(2), chunk("+ 3 20"), bar(3)}}
	rs := &hjSource{ts: h.rts, msgs: []Message{chunk("+ 7 10\n+ 8 20\n+ 9 30"), bar(1), wm(16), bar(2), bar(3)}}
	actx := &ActorContext{ID: 7, Store: h.kv}
	j, al, err := NewHashJoin(actx, h.n, ls, rs)
	if err != nil {
		t.Fatal(err)
	}
	defer al.Close()
	stateRows := func() int {
		n := 0
		for _, s := range j.(*hashJoin).run.sides {
			it, err := s.table.Iter(ctx, state.IterOptions{Vnode: state.AllVnodes})
			if err != nil {
				t.Fatal(err)
			}
			for it.Next() == nil {
				n++
			}
			if err := it.Close(); err != nil {
				t.Fatal(err)
			}
		}
		return n
	}
	var out []string
	var rows []int
	for epoch := 0; epoch < 3; {
		m, err := j.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case m.Chunk != nil:
			for i := 0; i < m.Chunk.Len(); i++ {
				out = append(out, hjFormatRow(m.Chunk, i))
			}
		case m.Watermark != nil:
			out = append(out, fmt.Sprintf("watermark $%d %d", m.Watermark.Col, m.Watermark.Val.I))
		case m.Barrier != nil:
			actx.Flush(m.Barrier.Epoch.Prev)
			if err := h.kv.Commit(ctx, m.Barrier.Epoch.Prev, actx.TakeWrites()); err != nil {
				t.Fatal(err)
			}
			rows = append(rows, stateRows())
			epoch++
		}
	}
	want := []string{"1 10 7 10", "2 20 8 20", "watermark $1 15", "watermark $3 15", "3 20 8 20"}
	slices.Sort(want[:2])
	got := slices.Clone(out)
	if len(got) >= 2 {
		slices.Sort(got[:2])
	}
	if !slices.Equal(got, want) {
		t.Fatalf("output %q, want %q", got, want)
	}
	// 5 rows; after the watermark 15 the key 10 rows are gone; then one more.
	if !slices.Equal(rows, []int{5, 3, 4}) {
		t.Fatalf("state rows after each barrier %v, want [5 3 4]", rows)
	}
}

// TestHashJoinIntervalCleansState: an interval join (l.ts BETWEEN r.ts - 10s
// AND r.ts) deletes a side's rows once the other side's watermark less the
// band and its own watermark have passed them; later rows still join.
func TestHashJoinIntervalCleansState(t *testing.T) {
	ts := types.TTimestamp
	ten, err := types.ParseInterval("10 seconds")
	if err != nil {
		t.Fatal(err)
	}
	// (id, k, ts) on each side, joined on k.
	cond := hjCall(t, "between", expr.Column(2, ts),
		hjCall(t, "-", expr.Column(5, ts), expr.Literal(types.DInterval(ten), types.TInterval)), expr.Column(5, ts))
	h := newHJHarness(t, plan.InnerJoin, "I I TS", "I I TS", []int{1}, []int{1}, cond)
	if got := fmt.Sprint(h.n.Bands()); got != "[{0 2 2 10000000} {1 2 2 0}]" {
		t.Fatalf("bands %s", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	at := func(s string) types.Datum {
		d, err := types.ParseText(ts, s)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	wm := func(s string) Message { return WatermarkMsg(&Watermark{Col: 2, Val: at(s)}) }
	bar := func(e uint64) Message {
		return BarrierMsg(&Barrier{Epoch: Epoch{Prev: e, Curr: e + 1}, Checkpoint: true})
	}
	chunk := func(text string) Message { return ChunkMsg(hjParseChunk(t, "I I TS\n"+text)) }
	ls := &hjSource{ts: h.lts, msgs: []Message{chunk("+ 1 1 2024-01-01T10:00:05\n+ 2 1 2024-01-01T10:00:30"), bar(1),
		wm("2024-01-01 10:00:20"), bar(2), bar(3)}}
	rs := &hjSource{ts: h.rts, msgs: []Message{chunk("+ 7 1 2024-01-01T10:00:10"), bar(1),
		wm("2024-01-01 10:00:25"), bar(2), chunk("+ 8 1 2024-01-01T10:00:35"), bar(3)}}
	actx := &ActorContext{ID: 7, Store: h.kv}
	j, al, err := NewHashJoin(actx, h.n, ls, rs)
	if err != nil {
		t.Fatal(err)
	}
	defer al.Close()
	var out []string
	var rows []int
	for epoch := 0; epoch < 3; {
		m, err := j.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case m.Chunk != nil:
			for i := 0; i < m.Chunk.Len(); i++ {
				out = append(out, hjFormatRow(m.Chunk, i))
			}
		case m.Barrier != nil:
			actx.Flush(m.Barrier.Epoch.Prev)
			if err := h.kv.Commit(ctx, m.Barrier.Epoch.Prev, actx.TakeWrites()); err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, s := range j.(*hashJoin).run.sides {
				it, err := s.table.Iter(ctx, state.IterOptions{Vnode: state.AllVnodes})
				if err != nil {
					t.Fatal(err)
				}
				for it.Next() == nil {
					n++
				}
				it.Close()
			}
			rows = append(rows, n)
			epoch++
		}
	}
	want := []string{"1 1 2024-01-01 10:00:05 7 1 2024-01-01 10:00:10", "2 1 2024-01-01 10:00:30 8 1 2024-01-01 10:00:35"}
	if !slices.Equal(out, want) {
		t.Fatalf("output %q, want %q", out, want)
	}
	if !slices.Equal(rows, []int{3, 1, 2}) {
		t.Fatalf("state rows after each barrier %v, want [3 1 2]", rows)
	}
}
