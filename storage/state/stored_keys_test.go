package state_test

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage"
)

// TestStoredKeys: for random sets of asked keys (dense, sparse, repeated, beyond every stored
// key), StoredKeys answers as GetAt at the same epoch, and PendingAt then GetAt's pending part:
// committed rows, deleted rows, another table's rows after the table's and uncommitted writes
// kept aside.
func TestStoredKeys(t *testing.T) {
	forEachStore(t, func(t *testing.T, kv storage.KV) {
		seed := rand.Uint64()
		t.Logf("seed %d", seed)
		rng := rand.New(rand.NewPCG(seed, 2))
		ctx := context.Background()
		tb := mustNew(t, kv, userSchema(7))
		other := mustNew(t, kv, userSchema(8))
		stored := map[int64]bool{}
		for id := int64(0); id < 3000; id++ {
			if rng.IntN(3) == 0 {
				if err := tb.Insert(row(id, "x", id)); err != nil {
					t.Fatal(err)
				}
				stored[id] = true
			}
			if err := other.Insert(row(id, "o", id)); err != nil {
				t.Fatal(err)
			}
		}
		commit(t, kv, 1, tb, other)
		for id := range stored {
			if id%5 == 0 {
				if err := tb.Delete(row(id, "x", id)); err != nil {
					t.Fatal(err)
				}
				delete(stored, id)
			}
		}
		commit(t, kv, 2, tb)
		// Pending writes: StoredKeys leaves them aside, PendingAt knows them.
		if err := tb.Insert(row(5001, "p", 1)); err != nil {
			t.Fatal(err)
		}
		if err := tb.Delete(row(3, "x", 3)); err != nil {
			t.Fatal(err)
		}
		for round := 0; round < 40; round++ {
			n := 1 + rng.IntN(300)
			ids := make([]int64, n)
			for i := range ids {
				switch rng.IntN(4) {
				case 0:
					ids[i] = rng.Int64N(3000)
				case 1:
					ids[i] = 3000 + rng.Int64N(3000) // beyond every stored key
				case 2:
					ids[i] = int64(round*10 + i) // a dense run
				default:
					ids[i] = ids[rng.IntN(i+1)] // repeated
				}
			}
			keys := make([][]byte, n)
			for i, id := range ids {
				keys[i] = tb.RowKey(nil, row(id, "", 0))
			}
			found := make([]bool, n)
			if err := tb.StoredKeys(ctx, 2, keys, found); err != nil {
				t.Fatal(err)
			}
			for i, id := range ids {
				if found[i] != stored[id] {
					t.Fatalf("round %d: id %d: stored %v, want %v", round, id, found[i], stored[id])
				}
				exists, known := tb.PendingAt(2, keys[i])
				if !known {
					exists = found[i]
				}
				_, want, err := tb.GetAt(ctx, 2, []types.Datum{types.DInt(id)}, nil)
				if err != nil {
					t.Fatal(err)
				}
				if exists != want {
					t.Fatalf("round %d: id %d: PendingAt+StoredKeys say %v, GetAt %v", round, id, exists, want)
				}
			}
		}
		if err := tb.StoredKeys(ctx, 2, make([][]byte, 2), make([]bool, 1)); err == nil {
			t.Error("StoredKeys with fewer answers than keys: no error")
		}
	})
}

// countingKV counts the point reads and scans of a storage.KV.
type countingKV struct {
	storage.KV
	gets, scans int
}

func (c *countingKV) Get(ctx context.Context, key []byte, epoch uint64, dst []byte) ([]byte, bool, error) {
	c.gets++
	return c.KV.Get(ctx, key, epoch, dst)
}

func (c *countingKV) Scan(ctx context.Context, lower, upper []byte, epoch uint64) (storage.Iterator, error) {
	c.scans++
	return c.KV.Scan(ctx, lower, upper, epoch)
}

// TestStoredKeysAboveTops: StoredKeys answers keys above every key of their vnode (the store's
// at the epoch it first read the vnode, and every key the table wrote since) without a read,
// and stays right across epochs of inserts (ascending and random ids) and deletes through the
// table: each answer is compared with a point read of the store. A check at an epoch below
// one the tops were read at reads the store.
func TestStoredKeysAboveTops(t *testing.T) {
	forEachStore(t, func(t *testing.T, store storage.KV) {
		seed := rand.Uint64()
		t.Logf("seed %d", seed)
		rng := rand.New(rand.NewPCG(seed, 3))
		ctx := context.Background()
		kv := &countingKV{KV: store}
		// Rows stored before the table below exists (another writer, earlier).
		first := mustNew(t, kv, userSchema(9))
		live := map[int64]bool{}
		for id := int64(0); id < 2000; id += 1 + rng.Int64N(3) {
			if err := first.Insert(row(id, "a", id)); err != nil {
				t.Fatal(err)
			}
			live[id] = true
		}
		commit(t, kv, 1, first)
		tb := mustNew(t, kv, userSchema(9))
		next := int64(2000)
		check := func(epoch uint64, ids []int64) {
			t.Helper()
			keys := make([][]byte, len(ids))
			for i, id := range ids {
				keys[i] = tb.RowKey(nil, row(id, "", 0))
			}
			found := make([]bool, len(ids))
			if err := tb.StoredKeys(ctx, epoch, keys, found); err != nil {
				t.Fatal(err)
			}
			for i, key := range keys {
				_, want, err := store.Get(ctx, key, epoch, nil)
				if err != nil {
					t.Fatal(err)
				}
				if found[i] != want {
					t.Fatalf("epoch %d: id %d: StoredKeys says %v, the store %v", epoch, ids[i], found[i], want)
				}
			}
		}
		for epoch := uint64(2); epoch <= 30; epoch++ {
			for range 1 + rng.IntN(40) {
				switch rng.IntN(4) {
				case 0, 1: // an ascending id
					if err := tb.Insert(row(next, "n", next)); err != nil {
						t.Fatal(err)
					}
					live[next] = true
					next += 1 + rng.Int64N(2)
				case 2: // a random id, maybe an existing one (replaced)
					id := rng.Int64N(next + 10)
					if err := tb.Insert(row(id, "r", id)); err != nil {
						t.Fatal(err)
					}
					live[id] = true
				default: // a delete, maybe of the largest key of its vnode
					id := next - 1 - rng.Int64N(20)
					if err := tb.Delete(row(id, "", 0)); err != nil {
						t.Fatal(err)
					}
					delete(live, id)
				}
			}
			commit(t, kv, epoch, tb)
			var ids []int64
			for range 1 + rng.IntN(60) {
				switch rng.IntN(3) {
				case 0:
					ids = append(ids, next+rng.Int64N(50)) // above everything
				case 1:
					ids = append(ids, next-1-rng.Int64N(60)) // recent writes and deletes
				default:
					ids = append(ids, rng.Int64N(next))
				}
			}
			check(epoch, ids)
			if epoch > 3 && rng.IntN(4) == 0 {
				check(epoch-2, ids) // below the epoch the tops were read at
			}
		}
		// A run of new ascending keys: one read per vnode at most the first time, none after.
		for round := range 2 {
			ids := make([]int64, 50)
			for i := range ids {
				ids[i] = next + int64(i)
			}
			gets, scans := kv.gets, kv.scans
			keys := make([][]byte, len(ids))
			for i, id := range ids {
				keys[i] = tb.RowKey(nil, row(id, "", 0))
			}
			found := make([]bool, len(ids))
			if err := tb.StoredKeys(ctx, 30, keys, found); err != nil {
				t.Fatal(err)
			}
			if round == 1 && (kv.gets != gets || kv.scans != scans) {
				t.Fatalf("keys above every stored key: %d point reads and %d scans, want none", kv.gets-gets, kv.scans-scans)
			}
			for i, f := range found {
				if f {
					t.Fatalf("new id %d reported stored", ids[i])
				}
			}
		}
		_ = live
	})
}

// TestStoredKeysBelowTopsEpoch: the largest key of a vnode, deleted after the vnode's top was
// read, is still found at an epoch before its delete.
func TestStoredKeysBelowTopsEpoch(t *testing.T) {
	forEachStore(t, func(t *testing.T, kv storage.KV) {
		ctx := context.Background()
		first := mustNew(t, kv, userSchema(10))
		for id := int64(0); id < 100; id++ {
			if err := first.Insert(row(id, "a", id)); err != nil {
				t.Fatal(err)
			}
		}
		commit(t, kv, 1, first)
		tb := mustNew(t, kv, userSchema(10))
		for id := int64(50); id < 100; id++ {
			if err := tb.Delete(row(id, "", 0)); err != nil {
				t.Fatal(err)
			}
		}
		commit(t, kv, 2, tb)
		for _, c := range []struct {
			epoch uint64
			want  bool
		}{{2, false}, {1, true}} {
			keys := [][]byte{tb.RowKey(nil, row(99, "", 0))}
			found := []bool{false}
			if err := tb.StoredKeys(ctx, c.epoch, keys, found); err != nil {
				t.Fatal(err)
			}
			if found[0] != c.want {
				t.Fatalf("id 99 at epoch %d: StoredKeys says %v, want %v", c.epoch, found[0], c.want)
			}
		}
	})
}
