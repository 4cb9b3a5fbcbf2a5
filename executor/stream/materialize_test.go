package stream

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/planner/plan"
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
