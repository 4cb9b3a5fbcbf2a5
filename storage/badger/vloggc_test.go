package badger

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tributary/tributary/storage"
)

// openVlogStore opens a store whose value log rolls over every MiB and is collected by hand.
func openVlogStore(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(Options{Dir: dir, MemTableSize: 2 << 20, BlockCacheSize: 1 << 20, ValueLogFileSize: 1 << 20, ValueLogGCInterval: -1})
	if err != nil {
		t.Fatalf("open %s: %v", dir, err)
	}
	return s
}

func vlogKey(i int) []byte { return []byte(fmt.Sprintf("big%05d", i)) }

// vlogValue is key i's value at epoch e: bigger than valueLogThreshold, so in the value log.
func vlogValue(i int, e uint64) []byte {
	return bytes.Repeat([]byte(fmt.Sprintf("%05d@%03d;", i, e)), valueLogThreshold/10+1)
}

// fillValueLog commits epochs 1..epochs, each putting perEpoch keys (epoch e: keys
// (e-1)*perEpoch...) with values in the value log.
func fillValueLog(t *testing.T, s *Store, epochs, perEpoch int) {
	t.Helper()
	for e := 1; e <= epochs; e++ {
		var b storage.Batch
		for i := (e - 1) * perEpoch; i < e*perEpoch; i++ {
			b.Put(vlogKey(i), vlogValue(i, uint64(e)))
		}
		b.Put([]byte("junk"), []byte("x")) // for DropPrefix, which compacts every table holding it
		if err := s.Commit(context.Background(), uint64(e), &b); err != nil {
			t.Fatal(err)
		}
	}
}

func countValueLogs(t *testing.T, dir string) int {
	t.Helper()
	names, err := valueLogFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	return len(names)
}

// checkLive reads keys lo..hi-1 at epoch at: each holds the value its epoch wrote.
func checkLive(t *testing.T, s *Store, lo, hi, perEpoch int, at uint64) {
	t.Helper()
	for i := lo; i < hi; i++ {
		v, ok, err := s.Get(context.Background(), vlogKey(i), at, nil)
		if err != nil || !ok {
			t.Fatalf("key %d at %d: found %v, %v", i, at, ok, err)
		}
		if want := vlogValue(i, uint64(i/perEpoch+1)); !bytes.Equal(v, want) {
			t.Fatalf("key %d at %d: %d bytes %q..., want %q...", i, at, len(v), v[:16], want[:16])
		}
	}
}

// TestValueLogCollection: values of deleted keys in the value log are reclaimed a file at a
// time; the live values stay readable, before and after a reopen, and no link is left.
func TestValueLogCollection(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openVlogStore(t, dir)
	const epochs, perEpoch = 40, 20 // 800 values of 4 KiB: about 3 MiB, several files
	fillValueLog(t, s, epochs, perEpoch)
	before := countValueLogs(t, dir)
	if before < 3 {
		t.Fatalf("%d value-log files after %d epochs, want several", before, epochs)
	}
	// Epoch 41 deletes every key but the last epoch's; reads below 41 are given up.
	var del storage.Batch
	for i := 0; i < (epochs-1)*perEpoch; i++ {
		del.Delete(vlogKey(i))
	}
	if err := s.SetDiscardEpoch(epochs + 1); err == nil {
		t.Fatal("a discard epoch above the committed one was taken")
	}
	if err := s.Commit(ctx, epochs+1, &del); err != nil {
		t.Fatal(err)
	}
	if err := s.SetDiscardEpoch(epochs + 1); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, epochs+2, &storage.Batch{}); err != nil { // applies the discard epoch
		t.Fatal(err)
	}
	// Compactions find the garbage: DropPrefix flushes the memtables and compacts every
	// table holding the prefix.
	if err := s.db.DropPrefix([]byte("junk")); err != nil {
		t.Fatal(err)
	}
	n, err := s.collectValueLog()
	if err != nil {
		t.Fatal(err)
	}
	after := countValueLogs(t, dir)
	t.Logf("value-log files: %d before, %d after rewriting %d", before, after, n)
	if n == 0 || after >= before {
		t.Fatalf("collection rewrote %d files; %d value-log files before, %d after", n, before, after)
	}
	if links, _ := filepath.Glob(filepath.Join(dir, "*"+gcLinkExt)); len(links) > 0 {
		t.Fatalf("links left: %v", links)
	}
	live := (epochs - 1) * perEpoch
	checkLive(t, s, live, epochs*perEpoch, perEpoch, epochs+2)
	if _, ok, err := s.Get(ctx, vlogKey(0), epochs+2, nil); err != nil || ok {
		t.Fatalf("deleted key 0: found %v, %v", ok, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openVlogStore(t, dir)
	defer s.Close()
	checkLive(t, s, live, epochs*perEpoch, perEpoch, epochs+2)
}

// TestValueLogRestore: a value-log file a collection removed but whose link survived (a crash
// before the rewritten values were synced) is put back at Open; a link beside its file goes.
func TestValueLogRestore(t *testing.T) {
	dir := t.TempDir()
	s := openVlogStore(t, dir)
	const epochs, perEpoch = 40, 20
	fillValueLog(t, s, epochs, perEpoch)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	names, err := valueLogFiles(dir)
	if err != nil || len(names) < 3 {
		t.Fatalf("value-log files %v, %v: want at least 3", names, err)
	}
	links := map[string]bool{}
	if err := linkValueLogs(dir, links); err != nil || len(links) != len(names)-1 {
		t.Fatalf("links %v, %v: want one per file but the newest", links, err)
	}
	// The crash: the first file is gone, its link stays; the second keeps both names.
	if err := os.Remove(filepath.Join(dir, names[0])); err != nil {
		t.Fatal(err)
	}
	s = openVlogStore(t, dir)
	defer s.Close()
	checkLive(t, s, 0, epochs*perEpoch, perEpoch, epochs)
	if left, _ := filepath.Glob(filepath.Join(dir, "*"+gcLinkExt)); len(left) > 0 {
		t.Fatalf("links left after Open: %v", left)
	}
	for _, name := range names {
		if !exists(filepath.Join(dir, name)) {
			t.Fatalf("%s is gone after Open", name)
		}
	}
}

// TestValueLogCollectionLoop: the store's own loop collects, and Close stops it.
func TestValueLogCollectionLoop(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir, MemTableSize: 2 << 20, ValueLogFileSize: 1 << 20, ValueLogGCInterval: 1})
	if err != nil {
		t.Fatal(err)
	}
	fillValueLog(t, s, 5, 20)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.gc.done:
	default:
		t.Fatal("the collection loop runs on after Close")
	}
}

// TestValueLogCollectionUnderLoad: the collection loop runs every few milliseconds while epochs
// overwrite a set of keys with values in the value log (compactions forced now and then, so
// there is garbage to find); every read at a committed epoch sees that epoch's values, files are
// reclaimed, and a reopen reads the same.
func TestValueLogCollectionUnderLoad(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir, MemTableSize: 2 << 20, BlockCacheSize: 1 << 20, ValueLogFileSize: 1 << 20, ValueLogGCInterval: 2 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	const keys, perEpoch, epochs = 50, 10, 300 // 3,000 values of 4 KiB: about 12 MiB written
	written := map[int]uint64{}                // key -> the epoch of its value
	check := func(s *Store, at uint64) {
		t.Helper()
		for i, e := range written {
			v, ok, err := s.Get(ctx, vlogKey(i), at, nil)
			if err != nil || !ok || !bytes.Equal(v, vlogValue(i, e)) {
				t.Fatalf("key %d at %d: found %v (%d bytes), %v; want its value of epoch %d", i, at, ok, len(v), err, e)
			}
		}
	}
	for e := uint64(1); e <= epochs; e++ {
		var b storage.Batch
		for j := range perEpoch {
			i := (int(e)*perEpoch + j) % keys
			b.Put(vlogKey(i), vlogValue(i, e))
			written[i] = e
		}
		b.Put([]byte("junk"), []byte("x"))
		if err := s.Commit(ctx, e, &b); err != nil {
			t.Fatal(err)
		}
		if e > 1 {
			if err := s.SetDiscardEpoch(e - 1); err != nil {
				t.Fatal(err)
			}
		}
		if e%50 == 0 {
			if err := s.db.DropPrefix([]byte("junk")); err != nil {
				t.Fatal(err)
			}
		}
		if e%10 == 0 {
			check(s, e)
		}
	}
	// The last round of garbage: compacted, then collected by the loop.
	if err := s.db.DropPrefix([]byte("junk")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for countValueLogs(t, dir) > 6 {
		if time.Now().After(deadline) {
			t.Fatalf("%d value-log files for %d live values of 4 KiB after 30 s", countValueLogs(t, dir), keys)
		}
		time.Sleep(5 * time.Millisecond)
	}
	check(s, epochs)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openVlogStore(t, dir)
	defer s.Close()
	check(s, epochs)
}
