package state_test

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/tributary/tributary/e2e/testseed"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage"
)

// TestStoredKeys: for random sets of asked keys (dense, sparse, repeated, beyond every stored
// key), StoredKeys answers as GetAt at the same epoch, and PendingAt then GetAt's pending part:
// committed rows, deleted rows, another table's rows after the table's and uncommitted writes
// kept aside.
func TestStoredKeys(t *testing.T) {
	forEachStore(t, func(t *testing.T, kv storage.KV) {
		seed := testseed.For(t)
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
