package state_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/tributary/tributary/e2e/testseed"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage"
	"github.com/tributary/tributary/storage/codec"
	"github.com/tributary/tributary/storage/state"
)

// blockSchema: (a int64, b int64, v varchar), pk (a, b), distributed by a
// (a few vnodes, many rows each), rows stored in blocks.
func blockSchema() state.Schema {
	return state.Schema{TableID: 41, Types: []types.T{types.TInt64, types.TInt64, types.TVarchar}, PK: []int{0, 1}, DistKey: []int{0}, Blocks: true}
}

type blockModel map[[2]int64]string

// blockAs are the values of a the tests write: vnodes 0 and 255 among them
// (a vnode's span ends differently there).
var blockAs = func() []int64 {
	tbl, err := state.New(nil, blockSchema())
	if err != nil {
		panic(err)
	}
	out := []int64{-1, -1, 7}
	for a := int64(0); out[0] < 0 || out[1] < 0; a++ {
		switch tbl.VnodeOfPK([]types.Datum{types.DInt(a), types.DInt(0)}) {
		case 0:
			out[0] = max(out[0], a)
		case 255:
			out[1] = max(out[1], a)
		}
	}
	return out
}()

func (m blockModel) clone() blockModel {
	out := blockModel{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// TestBlocksAgainstModel writes random epochs into a table with blocks (runs
// of fresh rows, which Seal stores as blocks, among inserts, updates and
// deletes of the same keys, several flushes an epoch, epochs committed one
// behind the next one's writes as the coordinator does) and after every
// commit compares every way of reading it with a map: Iter over all vnodes,
// one vnode and key ranges, GetAt, StoredKeys, state.Scan, state.GetRow and
// state.ChangedRows since earlier epochs. TEST_SEED replays a run's seed.
func TestBlocksAgainstModel(t *testing.T) {
	forEachStore(t, func(t *testing.T, kv storage.KV) {
		rng := rand.New(rand.NewPCG(testseed.For(t), 7))
		ctx := context.Background()
		tbl, err := state.New(kv, blockSchema())
		if err != nil {
			t.Fatal(err)
		}
		const as, bs = 3, 600
		model := blockModel{} // the table with every write so far
		cursor := [as][2]int64{{bs, 1 << 20}, {bs, 1 << 20}, {bs, 1 << 20}}
		history := map[uint64]blockModel{}
		var epochs []uint64
		epoch := uint64(1) << 16
		var inflight *storage.Batch // the last epoch's batch, committed after the next one's first writes
		var inflightEpoch uint64
		var inflightJob *state.SealJob // its fresh rows, written just before the commit
		staged := 0
		blocks, rows := 0, 0 // the most stored at once
		commit := func() {
			if inflight == nil {
				return
			}
			if inflightJob != nil {
				inflightJob.Write(inflight)
				inflightJob = nil
			}
			if err := kv.Commit(ctx, inflightEpoch, inflight); err != nil {
				t.Fatal(err)
			}
			inflight = nil
		}
		row := func(a, b int64, v string) []types.Datum {
			return []types.Datum{types.DInt(a), types.DInt(b), types.DString(v)}
		}
		for round := range 40 {
			epoch++
			b := new(storage.Batch)
			flushes := 1 + rng.IntN(3)
			for f := range flushes {
				if round%13 == 12 && f == 0 {
					// A TRUNCATE: the blocks, then every row as read now.
					if err := tbl.DeleteBlocks(ctx, kv.CommittedEpoch()); err != nil {
						t.Fatal(err)
					}
					it, err := tbl.Iter(ctx, state.IterOptions{Vnode: state.AllVnodes})
					if err != nil {
						t.Fatal(err)
					}
					var all [][]types.Datum
					for it.Next() == nil {
						all = append(all, slices.Clone(it.Row()))
					}
					if err := it.Close(); err != nil {
						t.Fatal(err)
					}
					if len(all) != len(model) {
						t.Fatalf("round %d: the truncate read %d rows, want %d", round, len(all), len(model))
					}
					for _, r := range all {
						if err := tbl.Delete(r); err != nil {
							t.Fatal(err)
						}
					}
					model = blockModel{}
				}
				// A run of fresh keys: absent from the table now. Half the
				// time from one of two copies of a's keys in key order (two
				// splits: disjoint ranges, each above its keys so far, both
				// in one epoch at times); else among the stored keys, a run
				// of its own as an INSERT statement's (an epoch's runs among
				// them may interleave).
				ai := rng.IntN(as)
				a := blockAs[ai]
				lo, hi := int64(rng.IntN(bs)), int64(bs)
				run := state.RunTag(fmt.Sprint("among", round, f))
				if rng.IntN(2) == 0 {
					sp := rng.IntN(2)
					lo = cursor[ai][sp]
					cursor[ai][sp] += int64(20 + rng.IntN(300))
					hi = cursor[ai][sp]
					run = state.RunTag(fmt.Sprint(ai, sp))
				}
				for k := lo; k < min(lo+int64(20+rng.IntN(300)), hi); k++ {
					if _, ok := model[[2]int64{a, k}]; ok {
						continue
					}
					v := fmt.Sprintf("f%d.%d", round, k)
					if err := tbl.InsertFresh(row(a, k, v), run); err != nil {
						t.Fatal(err)
					}
					model[[2]int64{a, k}] = v
				}
				// Updates, inserts and deletes of random keys.
				for range rng.IntN(60) {
					k := [2]int64{blockAs[rng.IntN(as)], int64(rng.IntN(bs))}
					if len(model) > 0 && rng.IntN(2) == 0 {
						keys := sortedModel(model)
						k = keys[rng.IntN(len(keys))]
					}
					if old, ok := model[k]; ok && rng.IntN(2) == 0 {
						if err := tbl.Delete(row(k[0], k[1], old)); err != nil {
							t.Fatal(err)
						}
						delete(model, k)
						continue
					}
					v := fmt.Sprintf("u%d.%d", round, rng.IntN(1000))
					if err := tbl.Insert(row(k[0], k[1], v)); err != nil {
						t.Fatal(err)
					}
					model[k] = v
				}
				// A pending read sees the writes.
				k := [2]int64{blockAs[rng.IntN(as)], int64(rng.IntN(bs))}
				got, found, err := tbl.Get(ctx, []types.Datum{types.DInt(k[0]), types.DInt(k[1])}, nil)
				if err != nil {
					t.Fatal(err)
				}
				if want, ok := model[k]; ok != found || (found && got[2].S != want) {
					t.Fatalf("round %d flush %d: pending Get %v = %v %v, want %q %v", round, f, k, got, found, want, ok)
				}
				if rng.IntN(4) == 0 {
					// A big statement stages its writes (and the epoch's
					// earlier ones) into the store ahead of the commit,
					// sealing its fresh rows there.
					commit()
					sb := new(storage.Batch)
					for i := range b.Len() {
						k, v, del := b.Entry(i)
						if del {
							sb.Delete(k)
						} else {
							sb.Put(k, v)
						}
					}
					b.Reset()
					tbl.Stage(epoch, sb)
					if err := kv.Stage(ctx, epoch, sb); err != nil {
						t.Fatal(err)
					}
					staged++
				} else {
					tbl.Flush(epoch, b)
				}
				if f == 0 {
					commit() // the previous epoch commits while this one is written
				}
			}
			inflight, inflightEpoch, inflightJob = b, epoch, tbl.TakeFresh(epoch)
			if rng.IntN(3) == 0 {
				commit()
			}
			commit()
			history[epoch] = model.clone()
			epochs = append(epochs, epoch)
			checkBlocks(t, ctx, kv, tbl, model, epoch, rng)
			// Changes since an earlier epoch.
			since := epochs[rng.IntN(len(epochs))]
			checkChanged(t, ctx, kv, history[since], model, since, epoch)
			nb, nr := countKeys(t, ctx, kv)
			blocks, rows = max(blocks, nb), max(rows, nr)
		}
		// Blocks were written, and some rows as rows.
		if blocks == 0 || rows == 0 {
			t.Fatalf("at most %d block keys and %d row keys stored, want both", blocks, rows)
		}
		t.Logf("%d rows in the model, %d block keys, %d row keys stored, %d stages", len(model), blocks, rows, staged)
		// Deletes leave little behind: rows the blocks hold and row keys
		// (tombstones included) are not many more than the rows.
		nb, nr, nbr, nt := storedEntries(t, ctx, kv)
		t.Logf("stored now: %d blocks holding %d rows, %d row keys of which %d tombstones, for %d rows", nb, nbr, nr, nt, len(model))
	})
}

func countKeys(t *testing.T, ctx context.Context, kv storage.KV) (blocks, rows int) {
	blocks, rows, _, _ = storedEntries(t, ctx, kv)
	return blocks, rows
}

// storedEntries counts the table's block keys and row keys at the committed
// epoch, the rows its blocks hold and the row keys that are tombstones.
func storedEntries(t *testing.T, ctx context.Context, kv storage.KV) (blocks, rows, blockRows, tombstones int) {
	lo, hi := codec.TableSpan(41)
	it, err := kv.Scan(ctx, lo, hi, kv.CommittedEpoch())
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	for it.Next() == nil {
		v := it.Value()
		switch {
		case it.Key()[codec.TablePrefixLen] == 0xFF:
			blocks++
			n, k := binary.Uvarint(v[1:]) // format | epoch | n
			n, _ = binary.Uvarint(v[1+k:])
			blockRows += int(n)
		case len(v) == 9 && v[0] == 0:
			tombstones++
			rows++
		default:
			rows++
		}
	}
	return blocks, rows, blockRows, tombstones
}

func sortedModel(m blockModel) [][2]int64 {
	keys := make([][2]int64, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(x, y [2]int64) int {
		if x[0] != y[0] {
			return int(x[0] - y[0])
		}
		return int(x[1] - y[1])
	})
	return keys
}

// checkBlocks compares the table's reads at epoch with the model.
func checkBlocks(t *testing.T, ctx context.Context, kv storage.KV, tbl *state.Table, model blockModel, epoch uint64, rng *rand.Rand) {
	t.Helper()
	keyOf := func(a, b int64) []byte {
		return tbl.RowKey(nil, []types.Datum{types.DInt(a), types.DInt(b), types.DString("")})
	}
	// Every row in key order, as a storage key and value: the expectation.
	type kvRow struct {
		key []byte
		v   string
	}
	var want []kvRow
	for _, k := range sortedModel(model) {
		want = append(want, kvRow{keyOf(k[0], k[1]), model[k]})
	}
	slices.SortFunc(want, func(x, y kvRow) int { return bytes.Compare(x.key, y.key) })
	inRange := func(key, lo, hi []byte) bool {
		return bytes.Compare(key, lo) >= 0 && (hi == nil || bytes.Compare(key, hi) < 0)
	}
	iter := func(opts state.IterOptions) []kvRow {
		t.Helper()
		opts.Epoch = epoch
		it, err := tbl.Iter(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer it.Close()
		var got []kvRow
		for {
			err := it.Next()
			if errors.Is(err, io.EOF) {
				return got
			}
			if err != nil {
				t.Fatal(err)
			}
			r := it.Row()
			got = append(got, kvRow{keyOf(r[0].I, r[1].I), r[2].S})
		}
	}
	// Iter over every vnode.
	got := iter(state.IterOptions{Vnode: state.AllVnodes})
	compareRows := func(what string, got []kvRow, lo, hi []byte) {
		t.Helper()
		var exp []kvRow
		for _, w := range want {
			if inRange(w.key, lo, hi) {
				exp = append(exp, w)
			}
		}
		for i := range max(len(got), len(exp)) {
			switch {
			case i == len(got):
				t.Fatalf("epoch %d, %s: %d rows, want %d: %x %q is missing", epoch, what, len(got), len(exp), exp[i].key, exp[i].v)
			case i == len(exp):
				t.Fatalf("epoch %d, %s: %d rows, want %d: %x %q is extra", epoch, what, len(got), len(exp), got[i].key, got[i].v)
			case !bytes.Equal(got[i].key, exp[i].key) || got[i].v != exp[i].v:
				t.Fatalf("epoch %d, %s: row %d is %x %q, want %x %q", epoch, what, i, got[i].key, got[i].v, exp[i].key, exp[i].v)
			}
		}
	}
	lo, hi := codec.TableSpan(41)
	compareRows("Iter over all vnodes", got, lo, hi)
	// Iter over one vnode and a key range.
	a := blockAs[rng.IntN(3)]
	vnode := tbl.VnodeOfPK([]types.Datum{types.DInt(a), types.DInt(0)})
	b1, b2 := int64(rng.IntN(600)), int64(rng.IntN(600))
	b1, b2 = min(b1, b2), max(b1, b2)
	start := tbl.EncodePK(nil, []types.Datum{types.DInt(a), types.DInt(b1)})
	end := tbl.EncodePK(nil, []types.Datum{types.DInt(a), types.DInt(b2)})
	got = iter(state.IterOptions{Vnode: int(vnode), Range: state.KeyRange{Start: start, End: end}})
	prefix := codec.AppendTablePrefix(nil, 41, vnode)
	rlo, rhi := append(slices.Clone(prefix), start...), append(slices.Clone(prefix), end...)
	compareRows("Iter over a key range", got, rlo, rhi)
	// Iter over each written vnode, whole.
	for _, a := range blockAs {
		vnode := tbl.VnodeOfPK([]types.Datum{types.DInt(a), types.DInt(0)})
		got = iter(state.IterOptions{Vnode: int(vnode)})
		vlo, vhi := codec.VnodeSpan(41, vnode)
		compareRows(fmt.Sprintf("Iter over vnode %d", vnode), got, vlo, vhi)
	}
	// state.Scan over the table, over the range, and from the range's start to the end.
	for _, span := range [][2][]byte{{lo, hi}, {rlo, rhi}, {rlo, hi}, {lo, rhi}} {
		sc, err := state.Scan(ctx, kv, span[0], span[1], epoch, true)
		if err != nil {
			t.Fatal(err)
		}
		got = got[:0]
		for {
			err := sc.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			d, err := codec.DecodeRow(blockSchema().Types, sc.Value(), nil)
			if err != nil {
				t.Fatalf("scan %x: %v", sc.Key(), err)
			}
			got = append(got, kvRow{slices.Clone(sc.Key()), d[2].S})
		}
		sc.Close()
		compareRows(fmt.Sprintf("state.Scan [%x, %x)", span[0], span[1]), got, span[0], span[1])
	}
	// Point reads: GetAt, state.GetRow and StoredKeys, present keys and absent ones.
	var keys [][]byte
	var exp []bool
	for range 64 {
		k := [2]int64{blockAs[rng.IntN(3)], int64(rng.IntN(600))}
		v, ok := model[k]
		r, found, err := tbl.GetAt(ctx, epoch, []types.Datum{types.DInt(k[0]), types.DInt(k[1])}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if found != ok || (ok && r[2].S != v) {
			t.Fatalf("epoch %d: GetAt %v = %v %v, want %q %v", epoch, k, r, found, v, ok)
		}
		raw, found, err := state.GetRow(ctx, kv, keyOf(k[0], k[1]), epoch, nil, true)
		if err != nil {
			t.Fatal(err)
		}
		if found != ok {
			t.Fatalf("epoch %d: GetRow %v found %v, want %v", epoch, k, found, ok)
		}
		if ok {
			d, err := codec.DecodeRow(blockSchema().Types, raw, nil)
			if err != nil || d[2].S != v {
				t.Fatalf("epoch %d: GetRow %v = %v (%v), want %q", epoch, k, d, err, v)
			}
		}
		keys = append(keys, keyOf(k[0], k[1]))
		exp = append(exp, ok)
	}
	found := make([]bool, len(keys))
	if err := tbl.StoredKeys(ctx, epoch, keys, found); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(found, exp) {
		t.Fatalf("epoch %d: StoredKeys %v, want %v", epoch, found, exp)
	}
}

// checkChanged compares state.ChangedRows over (since, until] with the
// difference of the model at both: every row that differs is listed, once,
// in key order, with its row at until.
func checkChanged(t *testing.T, ctx context.Context, kv storage.KV, before, after blockModel, since, until uint64) {
	t.Helper()
	tbl, err := state.New(kv, blockSchema())
	if err != nil {
		t.Fatal(err)
	}
	byKey := func(m blockModel) map[string]string {
		out := map[string]string{}
		for k, v := range m {
			out[string(tbl.RowKey(nil, []types.Datum{types.DInt(k[0]), types.DInt(k[1]), types.DString("")}))] = v
		}
		return out
	}
	was, now := byKey(before), byKey(after)
	lo, hi := codec.TableSpan(41)
	it, err := state.ChangedRows(ctx, kv, lo, hi, since, until, true)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	seen := map[string]bool{}
	var last []byte
	for {
		err := it.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		k := string(it.Key())
		if last != nil && bytes.Compare(it.Key(), last) <= 0 {
			t.Fatalf("ChangedRows (%d, %d]: key %x after %x", since, until, k, last)
		}
		last = slices.Clone(it.Key())
		seen[k] = true
		v, ok := now[k]
		if it.Deleted() == ok {
			t.Fatalf("ChangedRows (%d, %d]: key %x deleted %v, want %v", since, until, k, it.Deleted(), !ok)
		}
		if ok {
			d, err := codec.DecodeRow(blockSchema().Types, it.Value(), nil)
			if err != nil || d[2].S != v {
				t.Fatalf("ChangedRows (%d, %d]: key %x row %v (%v), want %q", since, until, k, d, err, v)
			}
		}
	}
	for k, v := range now {
		if w, ok := was[k]; (!ok || w != v) && !seen[k] {
			t.Fatalf("ChangedRows (%d, %d] misses %x (now %q)", since, until, k, v)
		}
	}
	for k := range was {
		if _, ok := now[k]; !ok && !seen[k] {
			t.Fatalf("ChangedRows (%d, %d] misses the delete of %x", since, until, k)
		}
	}
}

// TestDeleteBlockRows: deleting rows that blocks hold rewrites the blocks
// without them and leaves no tombstone; a block whose rows are all gone is
// deleted, and so is a tombstone the rewrite makes needless; two epochs
// editing one block, the second before the first commits, both count.
func TestDeleteBlockRows(t *testing.T) {
	forEachStore(t, func(t *testing.T, kv storage.KV) {
		ctx := context.Background()
		tbl, a := newBlockTable(t, kv)
		row := func(k int64, v string) []types.Datum {
			return []types.Datum{types.DInt(a), types.DInt(k), types.DString(v)}
		}
		epoch := uint64(1) << 16
		var inflight *storage.Batch
		var inflightEpoch uint64
		commit := func() {
			if inflight != nil {
				if err := kv.Commit(ctx, inflightEpoch, inflight); err != nil {
					t.Fatal(err)
				}
				inflight = nil
			}
		}
		// end flushes the epoch; it commits after the next one's writes
		// unless now.
		b := new(storage.Batch) // the open epoch's
		end := func(now bool) {
			tbl.Flush(epoch, b)
			commit()
			if j := tbl.TakeFresh(epoch); j != nil {
				j.Write(b)
			}
			inflight, inflightEpoch = b, epoch
			if now {
				commit()
			}
			epoch++
			b = new(storage.Batch)
		}
		model := map[int64]string{}
		check := func(what string, wantTombs int) {
			t.Helper()
			it, err := tbl.Iter(ctx, state.IterOptions{Vnode: state.AllVnodes})
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for it.Next() == nil {
				r := it.Row()
				if v, ok := model[r[1].I]; !ok || v != r[2].S {
					t.Fatalf("%s: row %d %q, want %q (%v)", what, r[1].I, r[2].S, v, ok)
				}
				n++
			}
			if err := it.Close(); err != nil {
				t.Fatal(err)
			}
			if n != len(model) {
				t.Fatalf("%s: %d rows, want %d", what, n, len(model))
			}
			_, rows, blockRows, tombs := storedEntries(t, ctx, kv)
			if tombs != wantTombs || blockRows+rows-tombs != len(model) {
				t.Fatalf("%s: %d block rows, %d row keys of which %d tombstones stored for %d rows, want %d tombstones", what, blockRows, rows, tombs, len(model), wantTombs)
			}
		}
		for k := range int64(2000) {
			if err := tbl.InsertFresh(row(k, fmt.Sprint("v", k)), 0); err != nil {
				t.Fatal(err)
			}
			model[k] = fmt.Sprint("v", k)
		}
		end(true)
		if nb, _ := countKeys(t, ctx, kv); nb < 4 {
			t.Fatalf("%d blocks for 2000 fresh rows", nb)
		}
		check("loaded", 0)
		// Every third row deleted, over two flushes of one epoch.
		for k := int64(0); k < 2000; k += 3 {
			if err := tbl.Delete(row(k, model[k])); err != nil {
				t.Fatal(err)
			}
			delete(model, k)
			if k == 999 {
				tbl.Flush(epoch, b) // two flushes in the epoch
			}
		}
		end(true)
		check("every third deleted", 0)
		// Updates of some rows (row keys over the blocks), then deletes
		// in two epochs, the second written before the first commits.
		for k := int64(1); k < 2000; k += 30 {
			if err := tbl.Insert(row(k, "u")); err != nil {
				t.Fatal(err)
			}
			model[k] = "u"
		}
		end(true)
		for k := int64(1); k < 1000; k++ {
			if v, ok := model[k]; ok {
				if err := tbl.Delete(row(k, v)); err != nil {
					t.Fatal(err)
				}
				delete(model, k)
			}
		}
		end(false)
		for k := int64(1000); k < 2000; k++ {
			if v, ok := model[k]; ok && k%2 == 0 {
				if err := tbl.Delete(row(k, v)); err != nil {
					t.Fatal(err)
				}
				delete(model, k)
			}
		}
		end(true)
		check("half deleted over two epochs", 0)
		for k, v := range model {
			if err := tbl.Delete(row(k, v)); err != nil {
				t.Fatal(err)
			}
			delete(model, k)
		}
		end(true)
		check("all deleted", 0)
		if nb, nr := countKeys(t, ctx, kv); nb != 0 || nr != 0 {
			t.Fatalf("%d blocks and %d row keys left after deleting every row", nb, nr)
		}
	})
}

// TestStoredKeysInFlight: a key check while the table's writes are still
// in flight (flushed, not committed) must not conclude from the store that
// no key lies above it: once they commit, StoredKeys finds them, rows and
// blocks alike.
func TestStoredKeysInFlight(t *testing.T) {
	forEachStore(t, func(t *testing.T, kv storage.KV) {
		ctx := context.Background()
		tbl, a := newBlockTable(t, kv)
		key := func(k int64) []byte {
			return tbl.RowKey(nil, []types.Datum{types.DInt(a), types.DInt(k), types.DString("")})
		}
		stored := func(ks ...int64) []bool {
			t.Helper()
			var keys [][]byte
			for _, k := range ks {
				keys = append(keys, key(k))
			}
			found := make([]bool, len(keys))
			if err := tbl.StoredKeys(ctx, kv.CommittedEpoch(), keys, found); err != nil {
				t.Fatal(err)
			}
			return found
		}
		epoch := uint64(1) << 16
		if err := tbl.Insert([]types.Datum{types.DInt(a), types.DInt(100), types.DString("row")}); err != nil {
			t.Fatal(err)
		}
		for k := int64(200); k < 300; k++ {
			if err := tbl.InsertFresh([]types.Datum{types.DInt(a), types.DInt(k), types.DString("fresh")}, 0); err != nil {
				t.Fatal(err)
			}
		}
		b := new(storage.Batch)
		tbl.Flush(epoch, b)
		job := tbl.TakeFresh(epoch)
		// In flight: the store holds nothing yet (16 keys and more are
		// read in key order).
		var early []int64
		for k := int64(0); k < 20; k++ {
			early = append(early, 10+k)
		}
		if got := stored(early...); slices.Contains(got, true) {
			t.Fatalf("before the commit: %v", got)
		}
		job.Write(b)
		if err := kv.Commit(ctx, epoch, b); err != nil {
			t.Fatal(err)
		}
		tbl.Flush(epoch+1, new(storage.Batch)) // drops the committed layer
		if nb, _ := countKeys(t, ctx, kv); nb == 0 {
			t.Fatal("no block written")
		}
		ks := []int64{50, 100, 150, 200, 299, 300}
		want := []bool{false, true, false, true, true, false}
		for k := int64(0); k < 12; k++ {
			ks, want = append(ks, 400+k), append(want, false)
		}
		if got := stored(ks...); !slices.Equal(got, want) {
			t.Fatalf("after the commit: %v, want %v", got, want)
		}
	})
}

// scanCounter counts the iterators opened on a store.
type scanCounter struct {
	storage.KV
	scans atomic.Int32
}

func (c *scanCounter) Scan(ctx context.Context, lower, upper []byte, epoch uint64) (storage.Iterator, error) {
	c.scans.Add(1)
	return c.KV.Scan(ctx, lower, upper, epoch)
}

// sealCounted flushes tbl's writes at epoch, seals its fresh rows and commits, and returns the
// iterators the seal opened on kv (its lookups of stored blocks).
func sealCounted(t *testing.T, kv *scanCounter, tbl *state.Table, epoch uint64) int32 {
	t.Helper()
	b := new(storage.Batch)
	tbl.Flush(epoch, b)
	before := kv.scans.Load()
	if job := tbl.TakeFresh(epoch); job != nil {
		job.Write(b)
	}
	looked := kv.scans.Load() - before
	if err := kv.Commit(context.Background(), epoch, b); err != nil {
		t.Fatal(err)
	}
	return looked
}

// TestSealLearnsNoBlocks: a seal job that looked for stored blocks of a vnode and found none
// tells its table, so a copy's next seal above its rows looks for none (one lookup per vnode,
// not per epoch); the rows of both are read back.
func TestSealLearnsNoBlocks(t *testing.T) {
	forEachStore(t, func(t *testing.T, store storage.KV) {
		ctx := context.Background()
		kv := &scanCounter{KV: store}
		tbl, a := newBlockTable(t, kv)
		epoch := uint64(1) << 16
		seal := func(from int64) int32 {
			t.Helper()
			epoch++
			for k := from; k < from+100; k++ {
				if err := tbl.InsertFresh([]types.Datum{types.DInt(a), types.DInt(k), types.DString("fresh")}, 0); err != nil {
					t.Fatal(err)
				}
			}
			return sealCounted(t, kv, tbl, epoch)
		}
		if n := seal(200); n != 1 {
			t.Fatalf("the first seal looked for blocks %d times, want once", n)
		}
		if n := seal(300); n != 0 {
			t.Fatalf("the second seal, above the first's rows, looked for blocks %d times, want none", n)
		}
		tbl.Flush(epoch+1, new(storage.Batch)) // drops the committed layers
		if nb, _ := countKeys(t, ctx, store); nb == 0 {
			t.Fatal("no block written")
		}
		for _, k := range []int64{200, 299, 300, 399} {
			row, ok, err := tbl.Get(ctx, []types.Datum{types.DInt(a), types.DInt(k)}, nil)
			if err != nil || !ok || row[2].S != "fresh" {
				t.Fatalf("row %d after the seals: %v %v %v", k, row, ok, err)
			}
		}
	})
}

// TestSealRunsApart: two runs of fresh keys in one epoch (two INSERT statements, each a run of
// its own) make blocks of their own, not one spanning the range between them: the next
// statement of the first fills that range, and its keys go as a block too. Every row is read
// back, by point reads and by key checks.
func TestSealRunsApart(t *testing.T) {
	forEachStore(t, func(t *testing.T, kv storage.KV) {
		ctx := context.Background()
		tbl, a := newBlockTable(t, kv)
		seal := func(epoch uint64, runs ...[]int64) {
			t.Helper()
			for i, keys := range runs {
				for _, k := range keys {
					if err := tbl.InsertFresh(gapRow(a, k), state.RunTag(fmt.Sprint("statement", epoch, i))); err != nil {
						t.Fatal(err)
					}
				}
			}
			b := new(storage.Batch)
			tbl.Flush(epoch, b)
			if j := tbl.TakeFresh(epoch); j != nil {
				j.Write(b)
			}
			if err := kv.Commit(ctx, epoch, b); err != nil {
				t.Fatal(err)
			}
		}
		seal(1, []int64{10, 20, 30, 40}, []int64{50, 60, 70, 80})
		seal(2, []int64{42, 44, 46, 48})
		tbl.Flush(3, new(storage.Batch)) // drops the committed layers: reads go to the store
		if nb, nr := countKeys(t, ctx, kv); nb != 3 || nr != 0 {
			t.Errorf("%d blocks and %d rows stored, want 3 blocks", nb, nr)
		}
		for _, k := range []int64{10, 20, 30, 40, 42, 44, 46, 48, 50, 60, 70, 80} {
			if _, ok, err := tbl.GetAt(ctx, 2, []types.Datum{types.DInt(a), types.DInt(k)}, nil); err != nil || !ok {
				t.Errorf("row %d: found %v, %v", k, ok, err)
			}
		}
		if got := storedRange(t, tbl, a, 35, 2); !slices.Equal(got, []int64{40, 42, 44, 46, 48, 50}) {
			t.Errorf("stored among 35..54: %v, want [40 42 44 46 48 50]", got)
		}
	})
}

// newBlockTable opens a table of blockSchema over kv and returns it with the
// value of a its rows take (one vnode).
func newBlockTable(t *testing.T, kv storage.KV) (*state.Table, int64) {
	t.Helper()
	tbl, err := state.New(kv, blockSchema())
	if err != nil {
		t.Fatal(err)
	}
	return tbl, blockAs[2]
}

// TestFreshWritesIndexedWhenNeeded: a buffer of fresh writes only keeps no key index, and
// builds it when a read or another write needs it: a pending read finds a fresh row, a delete
// and a fresh write again of its key replace it, and the epoch commits those values.
func TestFreshWritesIndexedWhenNeeded(t *testing.T) {
	forEachStore(t, func(t *testing.T, kv storage.KV) {
		ctx := context.Background()
		tbl, a := newBlockTable(t, kv)
		row := func(k int64, v string) []types.Datum {
			return []types.Datum{types.DInt(a), types.DInt(k), types.DString(v)}
		}
		get := func(k int64) (string, bool) {
			t.Helper()
			got, found, err := tbl.Get(ctx, []types.Datum{types.DInt(a), types.DInt(k)}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !found {
				return "", false
			}
			return got[2].S, true
		}
		for k := int64(0); k < 100; k++ {
			if err := tbl.InsertFresh(row(k, "fresh"), 0); err != nil {
				t.Fatal(err)
			}
		}
		if v, ok := get(7); !ok || v != "fresh" {
			t.Fatalf("pending read of a fresh row: %q %v", v, ok)
		}
		if err := tbl.Delete(row(7, "fresh")); err != nil {
			t.Fatal(err)
		}
		if _, ok := get(7); ok {
			t.Fatal("a deleted fresh row still read")
		}
		if err := tbl.InsertFresh(row(7, "again"), 0); err != nil {
			t.Fatal(err)
		}
		for k := int64(100); k < 200; k++ { // fresh writes after the index was built
			if err := tbl.InsertFresh(row(k, "later"), 0); err != nil {
				t.Fatal(err)
			}
		}
		if err := tbl.Update(row(150, "later"), row(150, "updated")); err != nil {
			t.Fatal(err)
		}
		epoch := uint64(1) << 16
		b := new(storage.Batch)
		tbl.Flush(epoch, b)
		tbl.TakeFresh(epoch).Write(b)
		if err := kv.Commit(ctx, epoch, b); err != nil {
			t.Fatal(err)
		}
		tbl.Flush(epoch+1, new(storage.Batch)) // drops the committed layer
		want := map[int64]string{0: "fresh", 7: "again", 99: "fresh", 100: "later", 150: "updated", 199: "later"}
		for k, w := range want {
			if v, ok := get(k); !ok || v != w {
				t.Errorf("key %d after the commit: %q %v, want %q", k, v, ok, w)
			}
		}
		if _, ok := get(200); ok {
			t.Error("key 200 read, never written")
		}
	})
}

// TestSealKeepsGaps: two runs of a parallel copy write one vnode, the lower one below the
// upper one's stored blocks: the lower run's seals look the vnode's next block up once (the
// keys up to it are a gap no block holds, less what the table seals), not every epoch; a
// fresh key written among the sealed ones later still lands where no block overlaps it.
func TestSealKeepsGaps(t *testing.T) {
	forEachStore(t, func(t *testing.T, store storage.KV) {
		ctx := context.Background()
		kv := &scanCounter{KV: store}
		tbl, a := newBlockTable(t, kv)
		epoch := uint64(1) << 16
		lower, upper := state.RunTag("0"), state.RunTag("1")
		seal := func(write func()) int32 {
			t.Helper()
			epoch++
			write()
			return sealCounted(t, kv, tbl, epoch)
		}
		insert := func(from, to int64, step int64, run uint32) func() {
			return func() {
				for k := from; k < to; k += step {
					if err := tbl.InsertFresh([]types.Datum{types.DInt(a), types.DInt(k), types.DString("fresh")}, run); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		both := func(lo, hi int64) func() {
			return func() { insert(lo, lo+100, 2, lower)(); insert(hi, hi+100, 1, upper)() }
		}
		seal(both(0, 10000))
		seal(both(100, 10100)) // the lower run's blocks: one lookup, the gap up to 10000 kept
		if n := seal(both(200, 10200)); n != 0 {
			t.Fatalf("a seal of both runs, each above its blocks, looked for blocks %d times, want none", n)
		}
		// Fresh keys among the lower run's (odd ones, absent): they overlap its blocks and
		// go as rows; every row reads back.
		seal(insert(1, 300, 2, state.RunTag("among")))
		tbl.Flush(epoch+1, new(storage.Batch))
		for _, k := range []int64{0, 1, 150, 151, 298, 299, 10000, 10299} {
			row, ok, err := tbl.Get(ctx, []types.Datum{types.DInt(a), types.DInt(k)}, nil)
			if err != nil || !ok || row[2].S != "fresh" {
				t.Fatalf("row %d after the seals: %v %v %v", k, row, ok, err)
			}
		}
		blocks, rows := countKeys(t, ctx, store)
		if blocks == 0 || rows < 150 {
			t.Fatalf("%d blocks and %d row keys, want blocks and the 150 keys among the blocks as rows", blocks, rows)
		}
	})
}

// TestSealWritesAscending: a SealJob writes a vnode's rows before its blocks, so that its
// writes are one run of ascending keys (the epoch's batch then merges rather than sorts
// them), also when two statements' interleaving runs leave one-row segments between a vnode's
// blocks; every row reads back after the commit.
func TestSealWritesAscending(t *testing.T) {
	forEachStore(t, func(t *testing.T, kv storage.KV) {
		ctx := context.Background()
		tbl, a := newBlockTable(t, kv)
		for i, keys := range [][]int64{{10, 11, 20, 21, 40}, {15, 30, 31, 50, 51}} {
			for _, k := range keys {
				if err := tbl.InsertFresh(gapRow(a, k), state.RunTag(fmt.Sprint("statement", i))); err != nil {
					t.Fatal(err)
				}
			}
		}
		b := new(storage.Batch)
		tbl.Flush(1, b)
		j := tbl.TakeFresh(1)
		if j == nil {
			t.Fatal("no seal job")
		}
		sealed := new(storage.Batch)
		j.Write(sealed)
		blocks, rows := 0, 0
		for i := 0; i < sealed.Len(); i++ {
			if i > 0 && bytes.Compare(sealed.Key(i-1), sealed.Key(i)) >= 0 {
				t.Fatalf("write %d's key %x is not above write %d's %x", i, sealed.Key(i), i-1, sealed.Key(i-1))
			}
			if bytes.Contains(sealed.Key(i), []byte{0xFF}) {
				blocks++
			} else {
				rows++
			}
		}
		if blocks < 2 || rows < 2 {
			t.Fatalf("%d blocks and %d rows written: the runs should leave rows between blocks", blocks, rows)
		}
		b.Append(sealed)
		if err := kv.Commit(ctx, 1, b); err != nil {
			t.Fatal(err)
		}
		tbl.Flush(2, new(storage.Batch)) // drops the committed layers: reads go to the store
		for _, k := range []int64{10, 11, 15, 20, 21, 30, 31, 40, 50, 51} {
			if _, ok, err := tbl.GetAt(ctx, 1, []types.Datum{types.DInt(a), types.DInt(k)}, nil); err != nil || !ok {
				t.Errorf("row %d: found %v, %v", k, ok, err)
			}
		}
	})
}
