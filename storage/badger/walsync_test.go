package badger

import (
	"context"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/storage"
)

// newestLog returns the highest file number with the extension in dir.
func newestLog(t *testing.T, dir, ext string) int {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	newest := 0
	for _, e := range entries {
		if num, ok := strings.CutSuffix(e.Name(), ext); ok {
			if n, err := strconv.Atoi(num); err == nil && n > newest {
				newest = n
			}
		}
	}
	return newest
}

// Each commit syncs the memtable file it wrote, following Badger from file to file, and the
// value log when the batch put a value there.
func TestWALSyncFollowsFiles(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir, MemTableSize: 1 << 20, BlockCacheSize: 4 << 20, MinFreeBytes: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.wal == nil || s.redo == nil {
		t.Fatal("a store opened without NoSync does not sync its commits")
	}
	// Commits that do not go through the commit log (staged epochs, value-log values, batches
	// bigger than the log) sync Badger's files: test that path alone.
	if err := s.redo.close(); err != nil {
		t.Fatal(err)
	}
	s.redo = nil
	ctx := context.Background()
	var b storage.Batch
	val := make([]byte, 200)
	firstMem := s.wal.mem.fid
	e := s.MaxVersion()
	for ep := range 40 {
		b.Reset()
		for i := range 400 {
			b.Put([]byte(strconv.Itoa(ep*1000+i)), val)
		}
		if ep%10 == 9 {
			b.Put([]byte("big"), make([]byte, s.valueThreshold)) // goes to the value log
		}
		syncs := s.wal.syncs
		e = storage.NextEpoch(e)
		if err := s.Commit(ctx, e, &b); err != nil {
			t.Fatal(err)
		}
		if s.wal.syncs == syncs {
			t.Fatalf("epoch %d: commit did not sync", ep)
		}
		if got, want := s.wal.mem.fid, newestLog(t, dir, ".mem"); got != want {
			t.Fatalf("epoch %d: synced memtable file %d, newest is %d", ep, got, want)
		}
		if ep%10 == 9 {
			if got, want := s.wal.vlog.fid, newestLog(t, dir, ".vlog"); got != want {
				t.Fatalf("epoch %d: synced value log %d, newest is %d", ep, got, want)
			}
		}
	}
	if s.wal.mem.fid == firstMem {
		t.Fatal("no memtable file was filled: the test did not cover moving on")
	}
}

func TestNoSync(t *testing.T) {
	s, err := Open(Options{Dir: t.TempDir(), NoSync: true, MinFreeBytes: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.wal != nil {
		t.Fatal("NoSync store syncs")
	}
}

// TestNoSyncCommitAppliesLater: with NoSync a big enough commit returns before Badger takes
// its batch; the caller reuses the batch at once (the store keeps nothing of it), and a read
// right after the commit (a point read, a scan) still sees every key of the epoch.
func TestNoSyncCommitAppliesLater(t *testing.T) {
	s, err := Open(Options{Dir: t.TempDir(), NoSync: true, MinFreeBytes: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	const keys = 2 * parallelWriteEntries
	var b storage.Batch
	later := 0
	for e := uint64(1); e <= 40; e++ {
		b.Reset()
		for i := range keys {
			b.Put(fmt.Appendf(nil, "k%05d", i), fmt.Appendf(nil, "v%d", e))
		}
		if err := s.Commit(ctx, e, &b); err != nil {
			t.Fatal(err)
		}
		if op := s.applying.Load(); op != nil && op.epoch == e {
			later++
		}
		b.Reset() // reused by the caller: the applying write must not read it
		b.Put([]byte("k00000"), []byte("garbage"))
		if e%2 == 0 {
			v, ok, err := s.Get(ctx, fmt.Appendf(nil, "k%05d", keys-1), e, nil)
			if err != nil || !ok || string(v) != fmt.Sprintf("v%d", e) {
				t.Fatalf("epoch %d: get = %q %v %v right after the commit", e, v, ok, err)
			}
			continue
		}
		it, err := s.Scan(ctx, nil, nil, e)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for ; ; n++ {
			if err := it.Next(); err != nil {
				break
			}
			if string(it.Value()) != fmt.Sprintf("v%d", e) {
				t.Fatalf("epoch %d: %s = %s right after the commit", e, it.Key(), it.Value())
			}
		}
		it.Close()
		if n != keys {
			t.Fatalf("epoch %d: scan saw %d keys right after the commit, want %d", e, n, keys)
		}
	}
	if later == 0 {
		t.Fatal("no commit was applied after it returned: the test covered nothing")
	}
}

// TestNoSyncReadWaitPauses: a read that has to wait for a commit's write still applying makes
// the next maxDeferred commits write their batches before they return (sessions whose reads
// follow every commit gain nothing from the write running on), after which commits apply
// later again.
func TestNoSyncReadWaitPauses(t *testing.T) {
	s, err := Open(Options{Dir: t.TempDir(), NoSync: true, MinFreeBytes: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	// Commits apply one by one, as while the windows are paused (deferred.go).
	s.deferMu.pause = math.MaxInt32
	release := make(chan struct{})
	s.beforeApply = func() { <-release }
	commit := func(e uint64) {
		t.Helper()
		var b storage.Batch
		for i := range parallelWriteEntries {
			b.Put(fmt.Appendf(nil, "k%05d", i), fmt.Appendf(nil, "v%d", e))
		}
		if err := s.Commit(ctx, e, &b); err != nil {
			t.Fatal(err)
		}
	}
	commit(1)
	if op := s.applying.Load(); op == nil || op.epoch != 1 {
		t.Fatal("epoch 1 was written before Commit returned")
	}
	read := make(chan error, 1)
	go func() {
		v, ok, err := s.Get(ctx, []byte("k00000"), 1, nil)
		if err == nil && (!ok || string(v) != "v1") {
			err = fmt.Errorf("get = %q %v", v, ok)
		}
		read <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for s.applyPause.Load() == 0 { // the read waits for epoch 1's write
		if time.Now().After(deadline) {
			t.Fatal("the read never waited for the write applying")
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	if err := <-read; err != nil {
		t.Fatal(err)
	}
	s.beforeApply = nil
	for e := uint64(2); e < 2+maxDeferred; e++ {
		commit(e)
		if op := s.applying.Load(); op.epoch != 1 {
			t.Fatalf("epoch %d applied after Commit returned, within the pause", e)
		}
	}
	commit(2 + maxDeferred)
	if op := s.applying.Load(); op.epoch != 2+maxDeferred {
		t.Fatal("commits did not apply later again after the pause")
	}
}
