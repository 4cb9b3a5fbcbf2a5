package badger

import (
	"context"
	"fmt"
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
