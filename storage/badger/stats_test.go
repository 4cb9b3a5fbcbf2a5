package badger

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/tributary/tributary/storage"
)

// TestStats: the value log's files and the LSM levels are measured, and
// Badger's stall and slow-compaction messages are counted.
func TestStats(t *testing.T) {
	s, err := Open(Options{Dir: t.TempDir(), MemTableSize: 8 << 20, BlockCacheSize: 16 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var b storage.Batch
	for i := 0; i < 1000; i++ {
		b.Put(fmt.Appendf(nil, "key%06d", i), make([]byte, 100))
	}
	if err := s.Commit(context.Background(), 1, &b); err != nil {
		t.Fatal(err)
	}
	st := s.Stats()
	if st.VlogBytes <= 0 || len(st.Levels) == 0 || st.Levels[0].Level != 0 || st.L0StallTables <= 0 {
		t.Errorf("stats: %+v", st)
	}
	// The newest value-log file is preallocated (sparse) to twice valueLogFileSize; what it
	// takes is its header.
	if runtime.GOOS == "linux" && st.VlogBytes >= valueLogFileSize {
		t.Errorf("value log %d bytes with nothing in it", st.VlogBytes)
	}
	s.events.note("L0 was stalled for %s\n", []any{1500 * time.Millisecond})
	s.events.note("[%d]%s LOG Compact %d->%d (%d, %d -> %d tables with %d splits).", nil)
	s.events.note("All %d tables opened in %s\n", nil)
	st = s.Stats()
	if st.WriteStalls != 1 || st.WriteStallTime != 1500*time.Millisecond || st.SlowCompactions != 1 {
		t.Errorf("events: %d stalls for %v, %d slow compactions; want 1, 1.5s, 1", st.WriteStalls, st.WriteStallTime, st.SlowCompactions)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.LSMBytes != 0 || len(st.Levels) != 0 {
		t.Errorf("a closed store measured its levels: %+v", st)
	}
}

// TestMemorySizes: a share at or above the defaults keeps them; a small one
// scales them down within the share; the store reports its sizes and its
// caches shrink and grow back with ScaleCaches.
func TestMemorySizes(t *testing.T) {
	for _, share := range []int64{0, DefaultMemory, 4 * DefaultMemory} {
		if m := MemorySizesFor(share); m.Total() != DefaultMemory || m.NumMemtables != DefaultNumMemtables {
			t.Errorf("share %d: %+v, want the defaults", share, m)
		}
	}
	for _, share := range []int64{16 << 20, 100 << 20, DefaultMemory - 1} {
		m := MemorySizesFor(share)
		if m.Total() > share || m.MemTableSize < minMemTableSize || m.BlockCacheSize < minCacheSize {
			t.Errorf("share %d: %+v (total %d)", share, m, m.Total())
		}
	}
	s, err := Open(Options{Dir: t.TempDir(), MemoryShare: 16 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want := MemorySizesFor(16 << 20)
	if got := s.Memory().Sizes; got != want {
		t.Errorf("Memory().Sizes = %+v, want %+v", got, want)
	}
	s.ScaleCaches(0.5)
	if got := s.Memory().Sizes.BlockCacheSize; got != max(want.BlockCacheSize/2, minCacheSize) {
		t.Errorf("block cache at scale 0.5 = %d, want %d", got, want.BlockCacheSize/2)
	}
	s.ScaleCaches(1)
	if got := s.Memory().Sizes; got != want {
		t.Errorf("after scale 1: %+v, want %+v", got, want)
	}
}
