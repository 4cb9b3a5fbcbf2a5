package state_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/tributary/tributary/e2e/testseed"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage"
	"github.com/tributary/tributary/storage/badger"
	"github.com/tributary/tributary/storage/memkv"
	"github.com/tributary/tributary/storage/state"
)

type storeCase struct {
	name string
	open func(t testing.TB) storage.KV
}

var stores = []storeCase{
	{"memkv", func(t testing.TB) storage.KV { return memkv.New() }},
	{"badger", func(t testing.TB) storage.KV {
		s, err := badger.Open(badger.Options{Dir: t.TempDir(), MemTableSize: 8 << 20, BlockCacheSize: 16 << 20})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}},
}

func forEachStore(t *testing.T, fn func(t *testing.T, kv storage.KV)) {
	for _, sc := range stores {
		t.Run(sc.name, func(t *testing.T) {
			kv := sc.open(t)
			t.Cleanup(func() {
				if err := kv.Close(); err != nil {
					t.Error(err)
				}
			})
			fn(t, kv)
		})
	}
}

// schema: (id int64, name varchar, score int32), pk (id), dist key (id).
func userSchema(id uint32) state.Schema {
	return state.Schema{
		TableID: id,
		Types:   []types.T{types.TInt64, types.TVarchar, types.TInt32},
		PK:      []int{0},
		DistKey: []int{0},
	}
}

func row(id int64, name string, score int64) []types.Datum {
	r := []types.Datum{types.DInt(id), types.DString(name), types.DInt(score)}
	if name == "<null>" {
		r[1] = types.NullDatum
	}
	return r
}

func fmtRow(r []types.Datum) string {
	name := r[1].S
	if r[1].Null {
		name = "<null>"
	}
	return fmt.Sprintf("%d:%s:%d", r[0].I, name, r[2].I)
}

func mustNew(t testing.TB, kv storage.KV, s state.Schema) *state.Table {
	t.Helper()
	tb, err := state.New(kv, s)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

func get(t testing.TB, tb *state.Table, id int64) string {
	t.Helper()
	r, ok, err := tb.Get(context.Background(), []types.Datum{types.DInt(id)}, nil)
	if err != nil {
		t.Fatalf("get %d: %v", id, err)
	}
	if !ok {
		return "<missing>"
	}
	return fmtRow(r)
}

func collect(t testing.TB, tb *state.Table, opts state.IterOptions) []string {
	t.Helper()
	it, err := tb.Iter(context.Background(), opts)
	if err != nil {
		t.Fatalf("iter: %v", err)
	}
	var out []string
	for {
		err := it.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("next: %v", err)
		}
		out = append(out, fmtRow(it.Row()))
	}
	if err := it.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	return out
}

// sortedByID returns rows in id order, to compare an all-vnode scan regardless of vnode order.
func sortedByID(rows []string) []string {
	out := slices.Clone(rows)
	sort.Slice(out, func(i, j int) bool {
		var a, b int64
		fmt.Sscanf(out[i], "%d:", &a)
		fmt.Sscanf(out[j], "%d:", &b)
		return a < b
	})
	return out
}

func commit(t testing.TB, kv storage.KV, epoch uint64, tables ...*state.Table) {
	t.Helper()
	var b storage.Batch
	for _, tb := range tables {
		tb.Flush(epoch, &b)
	}
	if err := kv.Commit(context.Background(), epoch, &b); err != nil {
		t.Fatalf("commit %d: %v", epoch, err)
	}
}

func TestSchemaErrors(t *testing.T) {
	kv := memkv.New()
	defer kv.Close()
	bad := []state.Schema{
		{TableID: 1, Types: []types.T{types.TInt64}, DistKey: []int{0}}, // dist key without a pk
		{TableID: 1, Types: []types.T{types.TInt64}, PK: []int{1}},
		{TableID: 1, Types: []types.T{types.TInt64, types.TInt64}, PK: []int{0}, DistKey: []int{1}},
		{TableID: 1, Types: []types.T{types.TInt64}, PK: []int{0}, PKDesc: []bool{true, false}},
		{TableID: 0xFFFFFFFF, Types: []types.T{types.TInt64}, PK: []int{0}},
	}
	for i, s := range bad {
		if _, err := state.New(kv, s); !errors.Is(err, state.ErrSchema) {
			t.Errorf("schema %d: %v", i, err)
		}
	}
}

func TestPendingAndCommitted(t *testing.T) {
	forEachStore(t, func(t *testing.T, kv storage.KV) {
		tb := mustNew(t, kv, userSchema(1))
		ctx := context.Background()
		for i := int64(1); i <= 5; i++ {
			if err := tb.Insert(row(i, fmt.Sprint("u", i), i*10)); err != nil {
				t.Fatal(err)
			}
		}
		// Pending writes are visible before any flush.
		if g := get(t, tb, 3); g != "3:u3:30" {
			t.Fatalf("pending get = %q", g)
		}
		all := []string{"1:u1:10", "2:u2:20", "3:u3:30", "4:u4:40", "5:u5:50"}
		if got := sortedByID(collect(t, tb, state.IterOptions{Vnode: state.AllVnodes})); fmt.Sprint(got) != fmt.Sprint(all) {
			t.Fatalf("pending scan %v", got)
		}
		// Flushed but not committed: still visible to this table, not to another reader.
		var b storage.Batch
		tb.Flush(100, &b)
		if b.Len() != 5 || tb.PendingRows() != 0 {
			t.Fatalf("flush wrote %d entries, %d pending", b.Len(), tb.PendingRows())
		}
		if g := get(t, tb, 3); g != "3:u3:30" {
			t.Fatalf("flushed get = %q", g)
		}
		other := mustNew(t, kv, userSchema(1))
		if g := get(t, other, 3); g != "<missing>" {
			t.Fatalf("another reader sees uncommitted row %q", g)
		}
		// Epoch 200's writes on top of flushed 100.
		if err := tb.Delete(row(2, "", 0)); err != nil {
			t.Fatal(err)
		}
		if err := tb.Update(row(3, "u3", 30), row(3, "<null>", 33)); err != nil {
			t.Fatal(err)
		}
		if err := tb.Update(row(4, "u4", 40), row(14, "u14", 140)); err != nil { // pk change
			t.Fatal(err)
		}
		want := []string{"1:u1:10", "3:<null>:33", "5:u5:50", "14:u14:140"}
		if got := sortedByID(collect(t, tb, state.IterOptions{Vnode: state.AllVnodes})); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("layered scan %v, want %v", got, want)
		}
		if err := kv.Commit(ctx, 100, &b); err != nil {
			t.Fatal(err)
		}
		if g := get(t, other, 4); g != "4:u4:40" {
			t.Fatalf("committed get = %q", g)
		}
		if g := get(t, tb, 4); g != "<missing>" {
			t.Fatalf("pending delete not applied: %q", g)
		}
		commit(t, kv, 200, tb)
		if got := sortedByID(collect(t, other, state.IterOptions{Vnode: state.AllVnodes})); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("committed scan %v, want %v", got, want)
		}
		// Reading an older committed epoch.
		if got := sortedByID(collect(t, other, state.IterOptions{Vnode: state.AllVnodes, Epoch: 100})); fmt.Sprint(got) != fmt.Sprint(all) {
			t.Fatalf("scan at 100 %v", got)
		}
	})
}

func TestVnodeAndRange(t *testing.T) {
	forEachStore(t, func(t *testing.T, kv storage.KV) {
		// pk (grp, id desc), dist key (grp): every row of a group on one vnode, ids descending.
		s := state.Schema{
			TableID: 7,
			Types:   []types.T{types.TVarchar, types.TInt64, types.TInt32},
			PK:      []int{0, 1},
			PKDesc:  []bool{false, true},
			DistKey: []int{0},
		}
		tb := mustNew(t, kv, s)
		for _, g := range []string{"a", "b"} {
			for id := int64(1); id <= 6; id++ {
				if err := tb.Insert([]types.Datum{types.DString(g), types.DInt(id), types.DInt(0)}); err != nil {
					t.Fatal(err)
				}
			}
		}
		commit(t, kv, 1, tb)
		// Uncommitted change inside the range.
		if err := tb.Delete([]types.Datum{types.DString("a"), types.DInt(4), types.DInt(0)}); err != nil {
			t.Fatal(err)
		}
		vn := tb.VnodeOfRow([]types.Datum{types.DString("a"), types.DInt(0), types.DInt(0)})
		if vn != tb.VnodeOfPK([]types.Datum{types.DString("a"), types.DInt(99)}) {
			t.Fatal("VnodeOfRow and VnodeOfPK disagree")
		}
		ids := func(opts state.IterOptions) []int64 {
			it, err := tb.Iter(context.Background(), opts)
			if err != nil {
				t.Fatal(err)
			}
			defer it.Close()
			var out []int64
			for it.Next() == nil {
				if it.Row()[0].S == "a" {
					out = append(out, it.Row()[1].I)
				}
				if it.Vnode() != tb.VnodeOfRow(it.Row()) {
					t.Fatalf("row %v reported on vnode %d", it.Row(), it.Vnode())
				}
			}
			return out
		}
		pk := func(g string, id int64) []byte {
			return tb.EncodePK(nil, []types.Datum{types.DString(g), types.DInt(id)})
		}
		if got := ids(state.IterOptions{Vnode: int(vn)}); fmt.Sprint(got) != "[6 5 3 2 1]" {
			t.Fatalf("vnode scan %v", got)
		}
		// Descending ids: the range [pk(a,5), pk(a,2)) holds 5, 3 (4 deleted).
		r := state.KeyRange{Start: pk("a", 5), End: pk("a", 2)}
		if got := ids(state.IterOptions{Vnode: int(vn), Range: r}); fmt.Sprint(got) != "[5 3]" {
			t.Fatalf("ranged vnode scan %v", got)
		}
		if got := ids(state.IterOptions{Vnode: state.AllVnodes, Range: r}); fmt.Sprint(got) != "[5 3]" {
			t.Fatalf("ranged all-vnode scan %v", got)
		}
		// "After pk (a, 3)": Start = pk + 0x00.
		after := state.KeyRange{Start: append(pk("a", 3), 0)}
		if got := ids(state.IterOptions{Vnode: int(vn), Range: after}); fmt.Sprint(got) != "[2 1]" {
			t.Fatalf("scan after (a,3) %v", got)
		}
		if _, err := tb.Iter(context.Background(), state.IterOptions{Vnode: 256}); err == nil {
			t.Fatal("vnode 256 accepted")
		}
	})
}

func TestTwoTablesOneEpoch(t *testing.T) {
	forEachStore(t, func(t *testing.T, kv storage.KV) {
		a, b := mustNew(t, kv, userSchema(1)), mustNew(t, kv, userSchema(2))
		if err := a.Insert(row(1, "a", 1)); err != nil {
			t.Fatal(err)
		}
		if err := b.Insert(row(1, "b", 1)); err != nil {
			t.Fatal(err)
		}
		commit(t, kv, 5, a, b)
		a2, b2 := mustNew(t, kv, userSchema(1)), mustNew(t, kv, userSchema(2))
		if get(t, a2, 1) != "1:a:1" || get(t, b2, 1) != "1:b:1" {
			t.Fatalf("tables mixed: %s %s", get(t, a2, 1), get(t, b2, 1))
		}
		if got := collect(t, a2, state.IterOptions{Vnode: state.AllVnodes}); len(got) != 1 {
			t.Fatalf("table 1 scan sees %v", got)
		}
	})
}

// TestRandomAgainstModel drives a table through random writes, flushes and lagging commits, and
// checks Get and Iter against a map after every step.
func TestRandomAgainstModel(t *testing.T) {
	forEachStore(t, func(t *testing.T, kv storage.KV) {
		seed := testseed.For(t)
		rng := rand.New(rand.NewPCG(seed, 3))
		ctx := context.Background()
		tb := mustNew(t, kv, userSchema(3))
		model := map[int64]string{}
		var pending []*storage.Batch // flushed, not yet committed, oldest first
		var pendingEpochs []uint64
		epoch := uint64(0)
		check := func(step int) {
			var want []string
			for _, v := range model {
				want = append(want, v)
			}
			want = sortedByID(want)
			got := sortedByID(collect(t, tb, state.IterOptions{Vnode: state.AllVnodes}))
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("seed %d step %d: scan\n got %v\nwant %v", seed, step, got, want)
			}
			for range 5 {
				id := rng.Int64N(40)
				w, ok := model[id]
				if !ok {
					w = "<missing>"
				}
				if g := get(t, tb, id); g != w {
					t.Fatalf("seed %d step %d: get %d = %q, want %q", seed, step, id, g, w)
				}
			}
		}
		for step := 0; step < 300; step++ {
			switch r := rng.IntN(10); {
			case r < 6:
				id := rng.Int64N(40)
				rw := row(id, fmt.Sprint("n", rng.IntN(100)), rng.Int64N(1000))
				if err := tb.Insert(rw); err != nil {
					t.Fatal(err)
				}
				model[id] = fmtRow(rw)
			case r < 8:
				id := rng.Int64N(40)
				if err := tb.Delete(row(id, "", 0)); err != nil {
					t.Fatal(err)
				}
				delete(model, id)
			case r < 9:
				if n := len(pending); n > 0 && pendingEpochs[n-1] == epoch && rng.IntN(2) == 0 {
					// Another flush within the same epoch (a writer sealing per chunk).
					tb.Flush(epoch, pending[n-1])
					break
				}
				epoch++
				b := new(storage.Batch)
				tb.Flush(epoch, b)
				pending = append(pending, b)
				pendingEpochs = append(pendingEpochs, epoch)
			default:
				if len(pending) > 0 {
					if err := kv.Commit(ctx, pendingEpochs[0], pending[0]); err != nil {
						t.Fatal(err)
					}
					pending, pendingEpochs = pending[1:], pendingEpochs[1:]
				}
			}
			check(step)
		}
	})
}

func TestIterSeesSnapshot(t *testing.T) {
	forEachStore(t, func(t *testing.T, kv storage.KV) {
		tb := mustNew(t, kv, userSchema(1))
		for i := int64(0); i < 10; i++ {
			if err := tb.Insert(row(i, "x", i)); err != nil {
				t.Fatal(err)
			}
		}
		it, err := tb.Iter(context.Background(), state.IterOptions{Vnode: state.AllVnodes})
		if err != nil {
			t.Fatal(err)
		}
		defer it.Close()
		// Writes after Iter are not seen.
		if err := tb.Insert(row(100, "late", 0)); err != nil {
			t.Fatal(err)
		}
		n := 0
		for it.Next() == nil {
			if it.Row()[0].I == 100 {
				t.Fatal("iterator saw a later write")
			}
			if !bytes.Equal(it.PK(), tb.EncodePK(nil, it.Row()[:1])) {
				t.Fatalf("PK %x does not encode row %v", it.PK(), it.Row())
			}
			n++
		}
		if n != 10 {
			t.Fatalf("saw %d rows", n)
		}
	})
}
