package badger

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/tributary/tributary/storage"
)

// TestOpenAfterEmptyLogFile reproduces a crash while Badger created its next
// value-log file (dgraph-io/badger#2207): the empty file must not stop Open.
func TestOpenAfterEmptyLogFile(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir, MinFreeBytes: 1})
	if err != nil {
		t.Fatal(err)
	}
	var b storage.Batch
	b.Put([]byte("k"), []byte("v"))
	if err := s.Commit(context.Background(), 10, &b); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"000099.vlog", "00099.mem"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err = Open(Options{Dir: dir, MinFreeBytes: 1})
	if err != nil {
		t.Fatalf("open with empty log files: %v", err)
	}
	defer s.Close()
	v, ok, err := s.Get(context.Background(), []byte("k"), s.CommittedEpoch(), nil)
	if err != nil || !ok || string(v) != "v" {
		t.Fatalf("after reopen: %q %v %v", v, ok, err)
	}
}
