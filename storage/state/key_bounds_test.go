package state_test

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage"
	"github.com/tributary/tributary/storage/codec"
	"github.com/tributary/tributary/storage/state"
)

// countingKV counts the store reads a table makes.
type countingKV struct {
	storage.KV
	gets, scans, reverse int
}

func (c *countingKV) Get(ctx context.Context, key []byte, epoch uint64, dst []byte) ([]byte, bool, error) {
	c.gets++
	return c.KV.Get(ctx, key, epoch, dst)
}

func (c *countingKV) Scan(ctx context.Context, lower, upper []byte, epoch uint64) (storage.Iterator, error) {
	c.scans++
	return c.KV.Scan(ctx, lower, upper, epoch)
}

func (c *countingKV) ReverseScan(ctx context.Context, lower, upper []byte, epoch uint64) (storage.Iterator, error) {
	c.reverse++
	return c.KV.ReverseScan(ctx, lower, upper, epoch)
}

// groupSchema: (grp int64, seq int64, v int64), pk (grp, seq), dist key (grp)
// or none (every row on one vnode): a join side's or a top-N's layout, read by
// group prefix.
func groupSchema(id uint32, dist bool) state.Schema {
	s := state.Schema{
		TableID: id,
		Types:   []types.T{types.TInt64, types.TInt64, types.TInt64},
		PK:      []int{0, 1},
	}
	if dist {
		s.DistKey = []int{0}
	}
	return s
}

func groupRow(g, s, v int64) []types.Datum {
	return []types.Datum{types.DInt(g), types.DInt(s), types.DInt(v)}
}

// readGroup returns a group's rows through a prefix Iter, as "seq:v".
func readGroup(t testing.TB, tb *state.Table, g int64) []string {
	t.Helper()
	key := []types.Datum{types.DInt(g)}
	prefix := codec.AppendKey(nil, []types.T{types.TInt64}, key, []int{0}, nil)
	vnode := tb.VnodeOfRow(groupRow(g, 0, 0))
	it, err := tb.Iter(context.Background(), state.IterOptions{Vnode: int(vnode), Range: state.KeyRange{Start: prefix, End: codec.PrefixEnd(prefix)}, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var out []string
	for {
		err := it.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%d:%d", it.Row()[1].I, it.Row()[2].I))
	}
}

func getGroupRow(t testing.TB, tb *state.Table, g, s int64) string {
	t.Helper()
	r, ok, err := tb.Get(context.Background(), []types.Datum{types.DInt(g), types.DInt(s)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		return "<missing>"
	}
	return fmt.Sprint(r[2].I)
}

// TestTrackedKeysAgainstModel: a table that tracks its keys (and one that
// tracks its prefixes too) answers every read as a model does, through
// inserts (mostly of growing groups, some old, some anywhere below), updates,
// deletes, flushes, commits in arrears and restarts (a new Table over the
// committed state, as a recovered actor gets). Its rows share one vnode, so
// every read after the first relies on the bound and the prefix filter.
func TestTrackedKeysAgainstModel(t *testing.T) {
	for _, prefixes := range []bool{false, true} {
		t.Run(fmt.Sprintf("prefixes=%v", prefixes), func(t *testing.T) { trackedKeysAgainstModel(t, prefixes) })
	}
}

func trackedKeysAgainstModel(t *testing.T, prefixes bool) {
	forEachStore(t, func(t *testing.T, kv storage.KV) {
		const seed = 20261203
		t.Logf("seed %d", seed)
		rng := rand.New(rand.NewPCG(seed, 7))
		ctx := context.Background()
		open := func() *state.Table {
			tb := mustNew(t, kv, groupSchema(9, false))
			tb.TrackKeys()
			if prefixes {
				if err := tb.TrackPrefixes(1); err != nil {
					t.Fatal(err)
				}
			}
			return tb
		}
		tb := open()
		type key struct{ g, s int64 }
		model := map[key]int64{}     // what reads see: committed and pending
		committed := map[key]int64{} // what a restart finds
		var pending []*storage.Batch
		var pendingModels []map[key]int64
		epoch := uint64(0)
		top := int64(0)
		check := func(step int) {
			for range 4 {
				g := rng.Int64N(top + 3) // mostly known groups, some just above
				var want []string
				for s := range int64(4) {
					if v, ok := model[key{g, s}]; ok {
						want = append(want, fmt.Sprintf("%d:%d", s, v))
					}
				}
				if got := readGroup(t, tb, g); !slices.Equal(got, want) {
					t.Fatalf("seed %d step %d: group %d = %v, want %v", seed, step, g, got, want)
				}
				s := rng.Int64N(4)
				want1 := "<missing>"
				if v, ok := model[key{g, s}]; ok {
					want1 = fmt.Sprint(v)
				}
				if got := getGroupRow(t, tb, g, s); got != want1 {
					t.Fatalf("seed %d step %d: get (%d,%d) = %s, want %s", seed, step, g, s, got, want1)
				}
			}
		}
		snapshot := func() map[key]int64 {
			m := make(map[key]int64, len(model))
			for k, v := range model {
				m[k] = v
			}
			return m
		}
		for step := range 1500 {
			switch r := rng.IntN(20); {
			case r < 10:
				g := top - rng.Int64N(6)
				switch rng.IntN(6) {
				case 0, 1:
					top++
					g = top
				case 2:
					g = rng.Int64N(top + 1) // anywhere below: a group long unwritten, or new
				}
				k, v := key{max(g, 0), rng.Int64N(4)}, rng.Int64N(1000)
				if err := tb.Insert(groupRow(k.g, k.s, v)); err != nil {
					t.Fatal(err)
				}
				model[k] = v
			case r < 14:
				g := max(top-rng.Int64N(8), 0)
				k := key{g, rng.Int64N(4)}
				if v, ok := model[k]; ok && rng.IntN(3) == 0 {
					// Move the row to another group (its key changes: a delete and a write).
					to := key{rng.Int64N(top + 1), k.s}
					if err := tb.Update(groupRow(k.g, k.s, v), groupRow(to.g, to.s, v+1)); err != nil {
						t.Fatal(err)
					}
					delete(model, k)
					model[to] = v + 1
					break
				}
				if err := tb.Delete(groupRow(k.g, k.s, 0)); err != nil {
					t.Fatal(err)
				}
				delete(model, k)
			case r < 16:
				epoch++
				b := new(storage.Batch)
				tb.Flush(epoch, b)
				pending = append(pending, b)
				pendingModels = append(pendingModels, snapshot())
			case r < 19:
				if len(pending) > 0 {
					if err := kv.Commit(ctx, kv.CommittedEpoch()+1, pending[0]); err != nil {
						t.Fatal(err)
					}
					committed = pendingModels[0]
					pending, pendingModels = pending[1:], pendingModels[1:]
				}
			default:
				// Restart: uncommitted writes are lost, a new Table learns anew.
				tb = open()
				model = make(map[key]int64, len(committed))
				for k, v := range committed {
					model[k] = v
				}
				pending, pendingModels = nil, nil
				epoch = kv.CommittedEpoch()
			}
			check(step)
		}
	})
}

// TestTrackedKeysReadNothingAbove: once a vnode's bound is known (one
// reverse seek), reads of keys above it, and of keys the table wrote above it
// since, read the store no more; a read below it does.
func TestTrackedKeysReadNothingAbove(t *testing.T) {
	forEachStore(t, func(t *testing.T, inner storage.KV) {
		kv := &countingKV{KV: inner}
		tb := mustNew(t, kv, groupSchema(4, true))
		tb.TrackKeys()
		for g := range int64(100) {
			if err := tb.Insert(groupRow(g, 0, g)); err != nil {
				t.Fatal(err)
			}
		}
		commit(t, kv, 1, tb)

		tb = mustNew(t, kv, groupSchema(4, true))
		tb.TrackKeys()
		readNew := func(from, to int64) {
			for g := from; g < to; g++ {
				if got := readGroup(t, tb, g); got != nil {
					t.Fatalf("group %d = %v, want none", g, got)
				}
				if got := getGroupRow(t, tb, g, 0); got != "<missing>" {
					t.Fatalf("get %d = %s", g, got)
				}
			}
		}
		readNew(100, 3100) // new groups: each vnode learns its bound (a scan, maybe a reverse seek)
		if kv.gets != 0 || kv.scans == 0 || kv.scans > codec.VnodeCount || kv.reverse > kv.scans {
			t.Fatalf("learning reads: %d scans, %d gets, %d reverse seeks; want 1..%d, 0, at most one a scan", kv.scans, kv.gets, kv.reverse, codec.VnodeCount)
		}
		learned := *kv
		readNew(3100, 3400) // then nothing
		if kv.scans != learned.scans || kv.gets != 0 || kv.reverse != learned.reverse {
			t.Fatalf("reads of new groups after learning: %d scans, %d gets, %d reverse seeks", kv.scans-learned.scans, kv.gets, kv.reverse-learned.reverse)
		}
		// Written since: found in the pending writes, still no store read.
		if err := tb.Insert(groupRow(500, 1, 7)); err != nil {
			t.Fatal(err)
		}
		if got := readGroup(t, tb, 500); !slices.Equal(got, []string{"1:7"}) {
			t.Fatalf("group 500 = %v", got)
		}
		commit(t, kv, 2, tb)
		if got := readGroup(t, tb, 500); !slices.Equal(got, []string{"1:7"}) {
			t.Fatalf("group 500 after commit = %v", got)
		}
		// A stored group is read from the store.
		before := kv.scans + kv.gets
		if got := readGroup(t, tb, 42); !slices.Equal(got, []string{"0:42"}) {
			t.Fatalf("group 42 = %v", got)
		}
		if kv.scans+kv.gets == before {
			t.Fatalf("a stored group was answered without the store")
		}
		// A read of an older epoch, from before a delete lowered the store's
		// greatest key, still reads the store.
		if err := tb.Delete(groupRow(500, 1, 0)); err != nil {
			t.Fatal(err)
		}
		commit(t, kv, 3, tb)
		tb = mustNew(t, kv, groupSchema(4, true))
		tb.TrackKeys()
		if got := readGroup(t, tb, 500); got != nil {
			t.Fatalf("group 500 after its delete = %v", got)
		}
		r, ok, err := tb.GetAt(context.Background(), 2, []types.Datum{types.DInt(500), types.DInt(1)}, nil)
		if err != nil || !ok || r[2].I != 7 {
			t.Fatalf("group 500 at epoch 2 = %v %v %v, want its row", r, ok, err)
		}
		// An untracked table always reads.
		plain := mustNew(t, kv, groupSchema(4, true))
		before = kv.scans
		readGroup(t, plain, 1000)
		if kv.scans != before+1 {
			t.Fatalf("untracked read: %d scans, want 1", kv.scans-before)
		}
	})
}

// TestTrackedKeysReverseSeekOverTwoKeys: a vnode learns its bound with a
// forward scan, and seeks in reverse only when it holds two keys or more
// (Badger's reverse seek on a vnode with fewer walks the store below it).
// The bound learned from no key, one key or many answers reads above it
// without the store and reads below it from the store.
func TestTrackedKeysReverseSeekOverTwoKeys(t *testing.T) {
	forEachStore(t, func(t *testing.T, inner storage.KV) {
		kv := &countingKV{KV: inner}
		for i, stored := range [][]int64{nil, {3}, {1, 3}, {1, 2, 3}} {
			id := uint32(20 + i)
			tb := mustNew(t, kv, groupSchema(id, false)) // every row on one vnode
			for _, g := range stored {
				if err := tb.Insert(groupRow(g, 0, g)); err != nil {
					t.Fatal(err)
				}
			}
			commit(t, kv, uint64(i+1), tb)
			tb = mustNew(t, kv, groupSchema(id, false))
			tb.TrackKeys()
			before := *kv
			if got := readGroup(t, tb, 5); got != nil {
				t.Fatalf("%v: group 5 = %v", stored, got)
			}
			wantReverse := 0
			if len(stored) >= 2 {
				wantReverse = 1
			}
			if scans, rev := kv.scans-before.scans, kv.reverse-before.reverse; scans != 1 || rev != wantReverse {
				t.Fatalf("%v: learning took %d scans and %d reverse seeks, want 1 and %d", stored, scans, rev, wantReverse)
			}
			if got := readGroup(t, tb, 4); got != nil || kv.scans != before.scans+1 {
				t.Fatalf("%v: group 4 = %v after %d scans; want none, from the bound", stored, got, kv.scans-before.scans)
			}
			for _, g := range stored {
				if got := readGroup(t, tb, g); !slices.Equal(got, []string{fmt.Sprintf("0:%d", g)}) {
					t.Fatalf("%v: group %d = %v", stored, g, got)
				}
			}
			if len(stored) > 0 && kv.scans == before.scans+1 {
				t.Fatalf("%v: stored groups were answered without the store", stored)
			}
		}
	})
}

// TestTrackedPrefixesReadNothingAbsent: a table tracking prefixes learns a
// vnode's stored prefixes with one scan, then reads of groups the store never
// held, below its greatest key too, read nothing from the store; stored
// groups, groups written since (pending and committed) and groups deleted
// since are read right.
func TestTrackedPrefixesReadNothingAbsent(t *testing.T) {
	forEachStore(t, func(t *testing.T, inner storage.KV) {
		kv := &countingKV{KV: inner}
		tb := mustNew(t, kv, groupSchema(5, false))
		for g := int64(0); g < 1000; g += 2 { // even groups only
			if err := tb.Insert(groupRow(g, 0, g)); err != nil {
				t.Fatal(err)
			}
		}
		commit(t, kv, 1, tb)
		open := func() *state.Table {
			tb := mustNew(t, kv, groupSchema(5, false))
			if err := tb.TrackPrefixes(1); err != nil {
				t.Fatal(err)
			}
			return tb
		}
		tb = open()
		if got := readGroup(t, tb, 1); got != nil { // learns: one scan of the vnode
			t.Fatalf("group 1 = %v, want none", got)
		}
		if kv.scans != 1 {
			t.Fatalf("learning took %d scans, want 1", kv.scans)
		}
		before := *kv
		for g := int64(3); g < 1000; g += 2 {
			if got := readGroup(t, tb, g); got != nil {
				t.Fatalf("group %d = %v, want none", g, got)
			}
		}
		if misses := kv.scans - before.scans; misses > 25 { // the filter's false positives: about 1% of 499
			t.Fatalf("%d of 499 absent groups read the store", misses)
		}
		for g := int64(0); g < 1000; g += 100 {
			if got := readGroup(t, tb, g); !slices.Equal(got, []string{fmt.Sprintf("0:%d", g)}) {
				t.Fatalf("group %d = %v", g, got)
			}
		}
		// Written since: read from the pending writes, then from the store.
		if err := tb.Insert(groupRow(501, 2, 9)); err != nil {
			t.Fatal(err)
		}
		if got := readGroup(t, tb, 501); !slices.Equal(got, []string{"2:9"}) {
			t.Fatalf("group 501 pending = %v", got)
		}
		commit(t, kv, 2, tb)
		if got := readGroup(t, tb, 501); !slices.Equal(got, []string{"2:9"}) {
			t.Fatalf("group 501 committed = %v", got)
		}
		// Deleted since, and restarted: learned again from the store.
		if err := tb.Delete(groupRow(500, 0, 0)); err != nil {
			t.Fatal(err)
		}
		commit(t, kv, 3, tb)
		tb = open()
		for g, want := range map[int64][]string{500: nil, 501: {"2:9"}, 502: {"0:502"}, 503: nil} {
			if got := readGroup(t, tb, g); !slices.Equal(got, want) {
				t.Fatalf("group %d after a restart = %v, want %v", g, got, want)
			}
		}
		// A read without a prefix reads the store.
		before = *kv
		it, err := tb.Iter(context.Background(), state.IterOptions{Vnode: int(tb.VnodeOfRow(groupRow(0, 0, 0)))})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for it.Next() == nil {
			n++
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		if n != 500 || kv.scans != before.scans+1 {
			t.Fatalf("the vnode: %d rows in %d scans, want 500 in 1", n, kv.scans-before.scans)
		}
		if err := mustNew(t, kv, state.Schema{TableID: 6, Types: []types.T{types.TInt64}, PK: []int{0}}).TrackPrefixes(2); err == nil {
			t.Fatal("tracking 2 of 1 key columns: no error")
		}
	})
}
