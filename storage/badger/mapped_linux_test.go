package badger

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/tributary/tributary/storage"
)

// TestTrimMapped: reading a store's tables leaves their pages resident in the process;
// TrimMapped hands them back, and every value reads the same afterwards.
func TestTrimMapped(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	open := func() *Store {
		s, err := Open(Options{Dir: dir, MemTableSize: 2 << 20, BlockCacheSize: 1 << 20, MinFreeBytes: 1})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	const keys, size = 16000, 512
	value := func(i int) []byte { return bytes.Repeat([]byte{byte(i)}, size) }
	s := open()
	for epoch := range 16 {
		var b storage.Batch
		for i := epoch; i < keys; i += 16 {
			b.Put(fmt.Appendf(nil, "key%06d", i), value(i))
		}
		if err := s.Commit(ctx, uint64(epoch+1), &b); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Reopened, the 8 MB are in tables (the memtables were flushed at Close).
	s = open()
	defer s.Close()
	scan := func(when string) {
		t.Helper()
		it, err := s.Scan(ctx, nil, nil, 16)
		if err != nil {
			t.Fatal(err)
		}
		defer it.Close()
		n := 0
		for it.Next() == nil {
			if want := value(n); !bytes.Equal(it.Value(), want) {
				t.Fatalf("%s: %s = %x..., want %x...", when, it.Key(), it.Value()[:4], want[:4])
			}
			n++
		}
		if n != keys {
			t.Fatalf("%s: %d keys, want %d", when, n, keys)
		}
	}
	scan("before the trim")
	resident, err := s.MappedTables()
	if err != nil {
		t.Fatal(err)
	}
	if resident < keys*size/2 {
		t.Fatalf("%d bytes of tables resident after reading %d", resident, keys*size)
	}
	// Under its limit nothing is handed back.
	if b, a, err := s.TrimMapped(1 << 50); err != nil || b != a || b < resident {
		t.Fatalf("trim under the limit: %d before, %d after, %v (%d resident)", b, a, err, resident)
	}
	if n, err := s.MappedTables(); err != nil || n < resident/2 {
		t.Fatalf("after a trim under the limit %d bytes resident (%v), were %d", n, err, resident)
	}
	before, after, err := s.TrimMapped(0)
	if err != nil {
		t.Fatal(err)
	}
	measured, err := s.MappedTables()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("resident table bytes: %d before the trim, %d after (%d measured)", before, after, measured)
	if before < resident/2 || after > before/4 || measured > before/4 {
		t.Fatalf("trim: %d bytes resident before, %d after, %d measured after (%d measured before)", before, after, measured, resident)
	}
	scan("after the trim")
}

// TestParseSmaps: only shared mappings of the directory's table and value-log files count, with
// their Rss.
func TestParseSmaps(t *testing.T) {
	const smaps = `00400000-00452000 r-xp 00000000 08:02 173521      /usr/bin/server
Rss:                 300 kB
VmFlags: rd ex mr mw me dw sd
7f0000000000-7f0000100000 rw-s 00000000 08:02 1001       /data/000001.sst
Size:               1024 kB
Rss:                 256 kB
Pss:                 256 kB
VmFlags: rd wr sh mr mw me ms sd
7f0000100000-7f0000200000 r--p 00000000 08:02 1002       /data/000002.sst
Rss:                 512 kB
7f0000200000-7f0000300000 rw-s 00000000 08:02 1003       /data/00005.mem
Rss:                 128 kB
7f0000600000-7f0000700000 rw-s 00000000 08:02 1006       /data/000006.vlog
Rss:                 16 kB
7f0000300000-7f0000400000 rw-s 00000000 08:02 1004       /other/000003.sst
Rss:                 64 kB
7f0000400000-7f0000500000 rw-p 00000000 00:00 0
Rss:                 32 kB
7f0000500000-7f0000600000 rw-s 00000000 08:02 1005       /data/000004.sst
Rss:                   4 kB
`
	ms, err := parseSmaps(bufio.NewScanner(strings.NewReader(smaps)), "/data")
	if err != nil {
		t.Fatal(err)
	}
	want := []mapping{{0x7f0000000000, 0x7f0000100000, 256 << 10}, {0x7f0000600000, 0x7f0000700000, 16 << 10}, {0x7f0000500000, 0x7f0000600000, 4 << 10}}
	if fmt.Sprint(ms) != fmt.Sprint(want) {
		t.Fatalf("mappings %v, want %v", ms, want)
	}
}
