package badger_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"syscall"
	"testing"

	"github.com/tributary/tributary/storage"
	"github.com/tributary/tributary/storage/badger"
	"github.com/tributary/tributary/storage/storagetest"
)

func openAt(t testing.TB, dir string) *badger.Store {
	t.Helper()
	s, err := badger.Open(badger.Options{Dir: dir, MemTableSize: 8 << 20, BlockCacheSize: 16 << 20})
	if err != nil {
		t.Fatalf("open %s: %v", dir, err)
	}
	return s
}

func TestConformance(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.KV { return openAt(t, t.TempDir()) })
}

func TestReopen(t *testing.T) {
	storagetest.RunReopen(t, func(t *testing.T, dir string) storage.KV { return openAt(t, dir) })
}

func TestDirInUse(t *testing.T) {
	dir := t.TempDir()
	s := openAt(t, dir)
	defer s.Close()
	_, err := badger.Open(badger.Options{Dir: dir})
	if !errors.Is(err, badger.ErrInUse) {
		t.Fatalf("second open: %v, want ErrInUse", err)
	}
}

func TestDiskFull(t *testing.T) {
	dir := t.TempDir()
	s := openAt(t, dir)
	defer s.Close()
	if _, err := badger.Open(badger.Options{Dir: t.TempDir(), MinFreeBytes: math.MaxUint64}); !errors.Is(err, storage.ErrDiskFull) {
		t.Fatalf("open with huge minimum: %v, want ErrDiskFull", err)
	}
	ctx := context.Background()
	var b storage.Batch
	b.Put([]byte("k"), []byte("v"))
	s.SetMinFreeBytes(math.MaxUint64 / 2)
	if err := s.Commit(ctx, 1, &b); !errors.Is(err, storage.ErrDiskFull) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("commit with huge minimum: %v, want ErrDiskFull (ENOSPC, 53100 at the wire)", err)
	}
	if s.CommittedEpoch() != 0 || s.MaxVersion() != 0 {
		t.Fatalf("refused commit moved epochs: committed %d max %d", s.CommittedEpoch(), s.MaxVersion())
	}
	s.SetMinFreeBytes(1)
	if err := s.Commit(ctx, 1, &b); err != nil {
		t.Fatalf("commit after lowering the minimum: %v", err)
	}
}

func TestBadgerInternalKeyRefused(t *testing.T) {
	s := openAt(t, t.TempDir())
	defer s.Close()
	var b storage.Batch
	b.Put([]byte("!badger!x"), []byte("v"))
	if err := s.Commit(context.Background(), 1, &b); !errors.Is(err, storage.ErrInvalidKey) {
		t.Fatalf("commit of a Badger-internal key: %v", err)
	}
}

// TestStageThenRestart: writes staged at an epoch that never committed are rolled back when the
// store opens again (as a crash before the Commit leaves them), also when they were many.
func TestStageThenRestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openAt(t, dir)
	var b storage.Batch
	b.Put([]byte("k0"), []byte("committed"))
	if err := s.Commit(ctx, 10, &b); err != nil {
		t.Fatal(err)
	}
	for part := 0; part < 4; part++ { // more than one Badger transaction in all
		var st storage.Batch
		for i := 0; i < 50000; i++ {
			st.Put([]byte(fmt.Sprintf("k%d", part*50000+i)), []byte("staged"))
		}
		if err := s.Stage(ctx, 20, &st); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openAt(t, dir)
	defer s.Close()
	if c := s.CommittedEpoch(); c <= 10 || s.MaxVersion() < 20 {
		t.Fatalf("committed %d, max version %d after the restart", c, s.MaxVersion())
	}
	it, err := s.Scan(ctx, nil, nil, s.CommittedEpoch())
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var got []string
	for it.Next() == nil {
		got = append(got, string(it.Key())+"="+string(it.Value()))
	}
	if len(got) != 1 || got[0] != "k0=committed" {
		t.Fatalf("after the restart: %d keys, first %q", len(got), got[:min(len(got), 3)])
	}
}

// TestStageReadsWaitForTheWrite: Stage returns while its write goes on; a read at the staged
// epoch right after it still sees every key, a read at the committed epoch none, and the
// Commit publishes them all.
func TestStageReadsWaitForTheWrite(t *testing.T) {
	ctx := context.Background()
	s := openAt(t, t.TempDir())
	defer s.Close()
	if err := s.Commit(ctx, 10, &storage.Batch{}); err != nil {
		t.Fatal(err)
	}
	const parts, per = 8, 20000
	for part := 0; part < parts; part++ {
		var st storage.Batch
		for i := 0; i < per; i++ {
			st.Put([]byte(fmt.Sprintf("k%07d", part*per+i)), []byte("staged"))
		}
		if err := s.Stage(ctx, 20, &st); err != nil {
			t.Fatal(err)
		}
		last := []byte(fmt.Sprintf("k%07d", part*per+per-1))
		if _, found, err := s.Get(ctx, last, 20, nil); err != nil || !found {
			t.Fatalf("part %d: get of its last key at the staged epoch: found %v, %v", part, found, err)
		}
		if _, found, err := s.Get(ctx, last, 10, nil); err != nil || found {
			t.Fatalf("part %d: get at the committed epoch: found %v, %v", part, found, err)
		}
	}
	if err := s.Commit(ctx, 20, &storage.Batch{}); err != nil {
		t.Fatal(err)
	}
	it, err := s.Scan(ctx, nil, nil, 20)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	n := 0
	for it.Next() == nil {
		n++
	}
	if n != parts*per {
		t.Fatalf("%d keys after the commit, want %d", n, parts*per)
	}
}

// TestBigBatchesDeleteAndReopen: batches from directMin entries up are written apart from the
// watermark (writeDirect); their deletes hide older versions in reads and change lists, a
// staged big batch that a later Commit overwrites keeps the Commit's values, and all of it
// holds after a reopen.
func TestBigBatchesDeleteAndReopen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openAt(t, dir)
	const n = 3000
	key := func(i int) []byte { return []byte(fmt.Sprintf("k%05d", i)) }
	var b storage.Batch
	for i := 0; i < n; i++ {
		b.Put(key(i), []byte("v1"))
	}
	if err := s.Commit(ctx, 10, &b); err != nil {
		t.Fatal(err)
	}
	// Epoch 20: stage puts of every key, then commit deletes of the even ones over them.
	var st storage.Batch
	for i := 0; i < n; i++ {
		st.Put(key(i), []byte("staged"))
	}
	if err := s.Stage(ctx, 20, &st); err != nil {
		t.Fatal(err)
	}
	var c storage.Batch
	for i := 0; i < n; i++ {
		if i%2 == 0 {
			c.Delete(key(i))
		} else {
			c.Put(key(i), []byte("v2"))
		}
	}
	if err := s.Commit(ctx, 20, &c); err != nil {
		t.Fatal(err)
	}
	check := func(s *badger.Store, when string) {
		t.Helper()
		for _, i := range []int{0, 1, 2, n - 2, n - 1} {
			v, ok, err := s.Get(ctx, key(i), 20, nil)
			if err != nil {
				t.Fatal(err)
			}
			if want := i%2 == 1; ok != want || (ok && string(v) != "v2") {
				t.Fatalf("%s: key %d at 20: %q %v", when, i, v, ok)
			}
			if v, ok, err := s.Get(ctx, key(i), 10, nil); err != nil || !ok || string(v) != "v1" {
				t.Fatalf("%s: key %d at 10: %q %v %v", when, i, v, ok, err)
			}
		}
		it, err := s.Scan(ctx, nil, nil, 20)
		if err != nil {
			t.Fatal(err)
		}
		rows := 0
		for it.Next() == nil {
			if string(it.Value()) != "v2" {
				t.Fatalf("%s: scan at 20: %s=%s", when, it.Key(), it.Value())
			}
			rows++
		}
		it.Close()
		if rows != n/2 {
			t.Fatalf("%s: scan at 20: %d rows, want %d", when, rows, n/2)
		}
		ch, err := s.ChangedKeys(ctx, nil, nil, 10, 20)
		if err != nil {
			t.Fatal(err)
		}
		changed, deleted := 0, 0
		for ch.Next() == nil {
			changed++
			if ch.Deleted() {
				deleted++
			}
		}
		ch.Close()
		if changed != n || deleted != n/2 {
			t.Fatalf("%s: changed keys in (10, 20]: %d (%d deleted), want %d (%d)", when, changed, deleted, n, n/2)
		}
	}
	check(s, "before the reopen")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openAt(t, dir)
	defer s.Close()
	check(s, "after the reopen")
}
