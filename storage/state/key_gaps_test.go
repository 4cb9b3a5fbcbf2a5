package state_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/tributary/tributary/e2e/testseed"
	"github.com/tributary/tributary/storage"
	"github.com/tributary/tributary/storage/state"
)

// TestStoredKeysSessions: eight sessions insert ascending ids from ranges of
// their own into one table with blocks, as 1000-row INSERTs from eight
// connections do, some statements sharing an epoch (group commit), with
// deletes and re-inserts of keys below and inside the gaps StoredKeys keeps.
// Every key check (StoredKeys, then PendingAt) answers as a model of the
// table does, and the ascending keys are mostly answered without a seek.
func TestStoredKeysSessions(t *testing.T) {
	forEachStore(t, func(t *testing.T, kv storage.KV) {
		seed := testseed.For(t)
		rng := rand.New(rand.NewPCG(seed, 3))
		ctx := context.Background()
		schema := userSchema(9)
		schema.Blocks = true
		counted := &seekCounter{KV: kv}
		tb, err := state.New(counted, schema)
		if err != nil {
			t.Fatal(err)
		}
		const sessions = 8
		next := make([]int64, sessions) // each session's next id
		for s := range next {
			next[s] = int64(s) * 1_000_000
		}
		model := map[int64]bool{} // committed and pending rows
		var ids []int64           // every id ever inserted, for re-inserts
		epoch := uint64(1)
		var open storage.Batch // the open epoch's flushed writes
		commitOpen := func() {
			t.Helper()
			if err := kv.Commit(ctx, epoch, &open); err != nil {
				t.Fatal(err)
			}
			open = storage.Batch{}
			epoch++
		}
		checks := 0
		for round := 0; round < 300; round++ {
			s := rng.IntN(sessions)
			var ask []int64
			for range 20 + rng.IntN(60) {
				next[s] += 1 + rng.Int64N(3)
				ask = append(ask, next[s])
			}
			// Keys inserted before (stored, deleted or pending), in gaps or not.
			for range rng.IntN(4) {
				if len(ids) > 0 {
					ask = append(ask, ids[rng.IntN(len(ids))])
				}
			}
			keys := make([][]byte, len(ask))
			for i, id := range ask {
				keys[i] = tb.RowKey(nil, row(id, "", 0))
			}
			found := make([]bool, len(keys))
			if err := tb.StoredKeys(ctx, kv.CommittedEpoch(), keys, found); err != nil {
				t.Fatal(err)
			}
			checks += len(keys)
			seen := map[int64]bool{}
			for i, id := range ask {
				if seen[id] {
					continue // asked twice: the first answer was acted on
				}
				seen[id] = true
				exists, known := tb.PendingAt(kv.CommittedEpoch(), keys[i])
				if !known {
					exists = found[i]
				}
				if exists != model[id] {
					t.Fatalf("seed %d round %d: id %d (session %d) exists %v, want %v", seed, round, id, id/1_000_000, exists, model[id])
				}
				switch {
				case !exists:
					if err := tb.Insert(row(id, "r", id)); err != nil {
						t.Fatal(err)
					}
					model[id] = true
					ids = append(ids, id)
				case rng.IntN(3) == 0:
					if err := tb.Delete(row(id, "r", id)); err != nil {
						t.Fatal(err)
					}
					delete(model, id)
				}
			}
			tb.Flush(epoch, &open)
			if rng.IntN(3) > 0 {
				commitOpen()
			}
		}
		commitOpen()
		// Every key of the model, and none other, is stored.
		var keys [][]byte
		var want []bool
		for _, id := range ids {
			keys, want = append(keys, tb.RowKey(nil, row(id, "", 0))), append(want, model[id])
		}
		found := make([]bool, len(keys))
		if err := tb.StoredKeys(ctx, kv.CommittedEpoch(), keys, found); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(found, want) {
			t.Fatalf("seed %d: stored keys at the end differ from the model", seed)
		}
		seeks := counted.seeks.Load()
		t.Logf("%d key checks, %d seeks", checks, seeks)
		// Without the gaps three checks in four seek (a session's next key lies
		// below the keys of the sessions above it in its vnode); with them, a
		// session's first key in each vnode and the re-inserts.
		if seeks*4 > int64(checks) {
			t.Errorf("%d seeks for %d key checks: the gaps answered too few", seeks, checks)
		}
		// Keys that all lie in gaps (or above their vnodes' keys) open no
		// iterator: a scan would write the store's waiting commits first.
		for s := range next {
			var keys [][]byte
			for id := next[s] + 1; id <= next[s]+40; id++ {
				keys = append(keys, tb.RowKey(nil, row(id, "", 0)))
			}
			found := make([]bool, len(keys))
			if err := tb.StoredKeys(ctx, kv.CommittedEpoch(), keys, found); err != nil {
				t.Fatal(err)
			}
			scans := counted.scans.Load()
			if err := tb.StoredKeys(ctx, kv.CommittedEpoch(), keys, found); err != nil {
				t.Fatal(err)
			}
			if slices.Contains(found, true) {
				t.Fatalf("seed %d: session %d: a key never inserted is stored", seed, s)
			}
			if n := counted.scans.Load() - scans; n > 0 {
				t.Errorf("session %d: keys in gaps opened %d iterators", s, n)
			}
		}
	})
}

// seekCounter counts the iterators opened on a store and their seeks.
type seekCounter struct {
	storage.KV
	scans, seeks atomic.Int64
}

func (c *seekCounter) Scan(ctx context.Context, lower, upper []byte, epoch uint64) (storage.Iterator, error) {
	c.scans.Add(1)
	it, err := c.KV.Scan(ctx, lower, upper, epoch)
	if err != nil {
		return nil, err
	}
	if sk, ok := it.(storage.Seeker); ok {
		return &countedSeeker{Iterator: it, sk: sk, n: &c.seeks}, nil
	}
	return it, nil
}

type countedSeeker struct {
	storage.Iterator
	sk storage.Seeker
	n  *atomic.Int64
}

func (s *countedSeeker) Seek(key []byte) error {
	s.n.Add(1)
	return s.sk.Seek(key)
}
