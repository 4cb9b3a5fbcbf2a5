package badger

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

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
