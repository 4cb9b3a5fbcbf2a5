package stream

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/e2e/testseed"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage"
	"github.com/tributary/tributary/storage/memkv"
	"github.com/tributary/tributary/storage/state"
)

// stTableRows lists a state table's committed rows, sorted, one per line.
func stTableRows(t testing.TB, kv storage.KV, st plan.StateTable) string {
	t.Helper()
	tab, err := state.New(kv, state.Schema{TableID: st.ID, Types: st.Types, PK: st.PK, PKDesc: st.PKDesc, DistKey: st.Dist})
	if err != nil {
		t.Fatal(err)
	}
	it, err := tab.Iter(context.Background(), state.IterOptions{Vnode: state.AllVnodes})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var lines []string
	for {
		err := it.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		c := types.NewChunk(st.Types, 1)
		c.AppendRow(it.Row())
		lines = append(lines, FormatRow(c, 0))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

func stMVNode(id uint32, pk []int, ts ...types.T) *plan.StreamMaterialize {
	rel := &catalog.Relation{ID: id, Schema: "public", Name: "mv", Kind: catalog.KindMaterializedView, PK: pk}
	for _, t := range ts {
		rel.Columns = append(rel.Columns, catalog.Column{Name: "c", Type: t})
	}
	n := &plan.StreamMaterialize{Relation: rel, PK: pk}
	n.SetState(n.StateLayouts())
	return n
}

func TestMaterialize(t *testing.T) {
	i64 := types.TInt64
	ts := []types.T{i64, i64}
	n := stMVNode(100, []int{0}, i64, i64)
	kv := memkv.New()
	first := stChunk(t, " I I\n + 1 10\n + 2 20\n + 3 30\n + 9 90 D")
	src := NewMockSource(ts, stBarrier(1, 2), ChunkMsg(first), stBarrier(2, 3),
		// An update, a delete, an upsert overwrite, an update changing the key.
		ChunkMsg(stChunk(t, `
			 I I
			U- 1 10
			U+ 1 11
			 - 2 20
			 + 3 33
			U- 3 33
			U+ 4 33`)),
		stStop(3, 4, 1))
	actx := stActx(kv)
	e, err := NewMaterialize(actx, n, src)
	if err != nil {
		t.Fatal(err)
	}
	ctx := stCtx(t)
	var got []string
	for {
		m, err := e.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if m.Chunk != nil && m.Chunk == first && len(got) != 1 {
			t.Fatal("chunk forwarded out of order")
		}
		if b := m.Barrier; b != nil {
			actx.Flush(b.Epoch.Prev)
			if err := kv.Commit(ctx, b.Epoch.Prev, actx.TakeWrites()); err != nil {
				t.Fatal(err)
			}
			got = append(got, stTableRows(t, kv, n.State()[0]))
		}
	}
	want := []string{"", "1 10\n2 20\n3 30", "1 11\n4 33"}
	if !slices.Equal(got, want) {
		t.Fatalf("table after each barrier:\n%q\nwant\n%q", got, want)
	}

	// A restart over the committed store continues from the table.
	src = NewMockSource(ts, stBarrier(4, 5), ChunkMsg(stChunk(t, " I I\n - 4 33\n + 5 50\nU- 1 11\nU+ 1 12")), stStop(5, 6, 1))
	actx = stActx(kv)
	if e, err = NewMaterialize(actx, n, src); err != nil {
		t.Fatal(err)
	}
	stDrive(t, e, actx, nil)
	if got := stTableRows(t, kv, n.State()[0]); got != "1 12\n5 50" {
		t.Fatalf("after restart: %q", got)
	}
}

func TestMaterializeSchemaMismatch(t *testing.T) {
	n := stMVNode(100, []int{0}, types.TInt64, types.TInt64)
	src := NewMockSource([]types.T{types.TInt64})
	if _, err := NewMaterialize(stActx(memkv.New()), n, src); err == nil {
		t.Fatal("an input of another width was accepted")
	}
}

// TestFilterProjectMaterializeRandom runs Filter -> Project -> Materialize
// over random changes (with invisible rows mixed in) and restarts, checking
// after every barrier that the view's table and its change stream equal the
// query recomputed over the upstream rows.
func TestFilterProjectMaterializeRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(testseed.For(t), 0))
	i64 := types.TInt64
	ts := []types.T{i64, i64}
	// SELECT id, v * 2, v % 5 FROM up WHERE v % 3 <> 0
	cond := stCall(t, "<>", stCall(t, "%", expr.Column(1, i64), expr.Literal(types.DInt(3), i64)), expr.Literal(types.DInt(0), i64))
	proj := &plan.StreamProject{
		Exprs: []expr.Expr{expr.Column(0, i64),
			stCall(t, "*", expr.Column(1, i64), expr.Literal(types.DInt(2), i64)),
			stCall(t, "%", expr.Column(1, i64), expr.Literal(types.DInt(5), i64))},
		Out: stFields(i64, i64, i64), Key: []int{0},
	}
	mv := stMVNode(300, []int{0}, i64, i64, i64)
	kv := memkv.New()
	ctx := stCtx(t)
	var src *MockSource
	var actx *ActorContext
	var root Executor
	build := func() {
		src, actx = NewMockSource(ts), stActx(kv)
		f, err := NewFilter(actx, &plan.StreamFilter{Cond: cond}, src)
		if err != nil {
			t.Fatal(err)
		}
		p, err := NewProject(actx, proj, f)
		if err != nil {
			t.Fatal(err)
		}
		if root, err = NewMaterialize(actx, mv, p); err != nil {
			t.Fatal(err)
		}
	}
	build()
	up := map[int64]int64{}
	set := NewRowSet([]int{0})
	row := make([]types.Datum, 2)
	for round := range 200 {
		c := types.NewChunk(ts, 32)
		var vis []bool
		add := func(op types.Op, id, v int64, visible bool) {
			row[0], row[1] = types.DInt(id), types.DInt(v)
			c.AppendRowOp(op, row)
			vis = append(vis, visible)
		}
		for range rng.IntN(12) {
			if rng.IntN(6) == 0 { // noise that is not part of the stream
				add(types.Op(rng.IntN(2)), rng.Int64N(50), rng.Int64N(100), false)
				continue
			}
			id := rng.Int64N(50)
			v, present := up[id]
			switch nv := rng.Int64N(100); {
			case !present:
				add(types.OpInsert, id, nv, true)
				up[id] = nv
			case rng.IntN(2) == 0:
				add(types.OpDelete, id, v, true)
				delete(up, id)
			default:
				add(types.OpUpdateDelete, id, v, true)
				add(types.OpUpdateInsert, id, nv, true)
				up[id] = nv
			}
		}
		c.Vis = vis
		epoch := uint64(round + 1)
		src.Push(ChunkMsg(c), stBarrier(epoch, epoch+1))
		for {
			m, err := root.Next(ctx)
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			if m.Chunk != nil {
				if err := set.Apply(m.Chunk); err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
			}
			if m.Barrier != nil {
				break
			}
		}
		actx.Flush(epoch)
		if err := kv.Commit(ctx, epoch, actx.TakeWrites()); err != nil {
			t.Fatal(err)
		}
		var want []string
		for id, v := range up {
			if v%3 != 0 {
				want = append(want, fmt.Sprintf("%d %d %d", id, v*2, v%5))
			}
		}
		slices.Sort(want)
		w := strings.Join(want, "\n")
		if got := stTableRows(t, kv, mv.State()[0]); got != w {
			t.Fatalf("round %d: table\n%s\nwant\n%s", round, got, w)
		}
		if got := set.String(); got != w {
			t.Fatalf("round %d: change stream\n%s\nwant\n%s", round, got, w)
		}
		if rng.IntN(10) == 0 {
			build()
		}
	}
}
