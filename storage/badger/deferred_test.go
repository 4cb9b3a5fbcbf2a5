package badger

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/tributary/tributary/e2e/testseed"
	"github.com/tributary/tributary/storage"
)

// dieForTest closes s as a killed process leaves it: the deferred batches never reach Badger
// (which then closes on its own; the commit log keeps their records).
func dieForTest(t *testing.T, s *Store) {
	t.Helper()
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	s.closeMu.closed = true
	s.wal.close()
	_ = s.redo.close()
	if err := s.db.Close(); err != nil {
		t.Fatal(err)
	}
}

func deferredCount(s *Store) int {
	s.deferMu.Lock()
	defer s.deferMu.Unlock()
	return len(s.deferMu.commits)
}

// TestDeferredCommits: small commits wait for Badger until a scan needs them (point reads find
// them in memory), a commit that cannot wait (an empty one) or the bound; every read sees every
// committed epoch; after a crash they come back from the commit log.
func TestDeferredCommits(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := openRedoStore(t, dir, false)
	if err != nil {
		t.Fatal(err)
	}
	put := func(e uint64, keys ...string) {
		t.Helper()
		var b storage.Batch
		for _, k := range keys {
			b.Put([]byte(k), fmt.Appendf(nil, "v%d", e))
		}
		if err := s.Commit(ctx, e, &b); err != nil {
			t.Fatalf("commit %d: %v", e, err)
		}
	}
	get := func(key string, epoch uint64) string {
		t.Helper()
		v, ok, err := s.Get(ctx, []byte(key), epoch, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return "-"
		}
		return string(v)
	}
	put(1, "a")
	put(2, "b")
	put(3, "a") // a's newer version
	if n := deferredCount(s); n != 3 {
		t.Fatalf("%d commits deferred, want 3", n)
	}
	// Point reads find them in memory, without writing them.
	if got := get("a", 3) + get("b", 3) + get("a", 2) + get("b", 1) + get("a", 1); got != "v3v2v1-v1" {
		t.Fatalf("a, b at 3, a at 2, b and a at 1: %s, want v3v2v1-v1", got)
	}
	var del storage.Batch
	del.Delete([]byte("b"))
	if err := s.Commit(ctx, 4, &del); err != nil {
		t.Fatal(err)
	}
	if got := get("b", 4) + get("b", 3) + get("z", 4); got != "-v2-" {
		t.Fatalf("b at 4 (deleted), at 3, z at 4: %s, want -v2-", got)
	}
	if n := deferredCount(s); n != 4 {
		t.Fatalf("after point reads: %d commits deferred, want 4", n)
	}
	// A scan writes them first.
	it, err := s.Scan(ctx, []byte("a"), []byte("c"), 4)
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for it.Next() == nil {
		seen = append(seen, string(it.Key())+"="+string(it.Value()))
	}
	it.Close()
	if fmt.Sprint(seen) != "[a=v3]" {
		t.Fatalf("scan at 4: %v, want [a=v3]", seen)
	}
	if n := deferredCount(s); n != 0 {
		t.Fatalf("after a scan at 4: %d commits deferred, want 0", n)
	}
	// A read had to write them: the next maxDeferred commits go straight in.
	e := uint64(5)
	for ; e < 5+maxDeferred; e++ {
		put(e, fmt.Sprintf("k%03d", e))
		if n := deferredCount(s); n != 0 {
			t.Fatalf("epoch %d, after a read wrote the deferred commits: %d deferred, want 0", e, n)
		}
	}
	// Then they wait again, up to the bound; an empty commit (the barrier loop's idle epoch)
	// writes them.
	most := 0
	for ; e < 5+3*maxDeferred; e++ {
		put(e, fmt.Sprintf("k%03d", e))
		n := deferredCount(s)
		if n > maxDeferred {
			t.Fatalf("epoch %d: %d commits deferred, bound %d", e, n, maxDeferred)
		}
		most = max(most, n)
	}
	if most != maxDeferred {
		t.Fatalf("at most %d commits deferred at once, want the bound %d", most, maxDeferred)
	}
	if err := s.Commit(ctx, e, nil); err != nil {
		t.Fatal(err)
	}
	if n := deferredCount(s); n != 0 {
		t.Fatalf("after an empty commit: %d commits deferred, want 0", n)
	}
	committed, _, err := s.readMeta()
	if err != nil || committed != e {
		t.Fatalf("Badger's watermark %d (%v), want %d", committed, err, e)
	}
	// Deferred when the process dies: the commit log has them.
	put(e+1, "x")
	put(e+2, "y", "a")
	if n := deferredCount(s); n != 2 {
		t.Fatalf("%d commits deferred, want 2", n)
	}
	dieForTest(t, s)
	if s, err = openRedoStore(t, dir, false); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if c := s.CommittedEpoch(); c != e+2 {
		t.Fatalf("committed %d after the restart, want %d", c, e+2)
	}
	if got := get("x", e+2) + get("y", e+2) + get("a", e+2) + get("a", 3) + get("k010", e); got != fmt.Sprintf("v%dv%dv%dv3v10", e+1, e+2, e+2) {
		t.Fatalf("after the restart: %s", got)
	}
}

// TestDeferredCommitsConcurrentReads: readers at the committed epoch, beside a writer of small
// commits, always see every committed epoch's key.
func TestDeferredCommitsConcurrentReads(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := openRedoStore(t, t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	seed := testseed.For(t)
	const epochs = 400
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for e := uint64(1); e <= epochs; e++ {
			var b storage.Batch
			b.Put(fmt.Appendf(nil, "k%04d", e), []byte("v"))
			if e%50 == 0 {
				b = storage.Batch{} // an empty epoch now and then
			}
			if err := s.Commit(ctx, e, &b); err != nil {
				errs <- err
				return
			}
		}
	}()
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(r)))
			for s.CommittedEpoch() < epochs {
				if ctx.Err() != nil {
					errs <- ctx.Err()
					return
				}
				c := s.CommittedEpoch()
				if c == 0 {
					continue
				}
				e := 1 + rng.Uint64N(c)
				_, ok, err := s.Get(ctx, fmt.Appendf(nil, "k%04d", e), c, nil)
				if err != nil {
					errs <- err
					return
				}
				if !ok && e%50 != 0 {
					errs <- fmt.Errorf("epoch %d's key missing at committed epoch %d", e, c)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
