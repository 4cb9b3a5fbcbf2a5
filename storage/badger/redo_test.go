package badger

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/tributary/tributary/storage"
)

func openRedoStore(t *testing.T, dir string, acceptTail bool) (*Store, error) {
	t.Helper()
	return Open(Options{Dir: dir, MemTableSize: 8 << 20, BlockCacheSize: 16 << 20, AcceptDamagedTail: acceptTail})
}

// commitN commits epochs from..to, each putting key e<epoch> = v<epoch> (value of size n, or
// of 1 KiB when n is bigger, with keys e<epoch>.<i> for the rest: n bytes in all, none of
// them in the value log).
func commitN(t *testing.T, s *Store, from, to uint64, n int) {
	t.Helper()
	for e := from; e <= to; e++ {
		var b storage.Batch
		for i := 1; n > 1<<10 && i <= n/(1<<10); i++ {
			b.Put(fmt.Appendf(nil, "e%03d.%04d", e, i), bytes.Repeat([]byte{'f'}, 1<<10))
		}
		b.Put(fmt.Appendf(nil, "e%03d", e), bytes.Repeat(fmt.Appendf(nil, "v%03d", e), n/4+1)[:min(n, 1<<10)])
		if err := s.Commit(context.Background(), e, &b); err != nil {
			t.Fatalf("commit %d: %v", e, err)
		}
	}
}

// present reports which of epochs from..to have their key in s at s's committed epoch.
func present(t *testing.T, s *Store, from, to uint64) []uint64 {
	t.Helper()
	var got []uint64
	for e := from; e <= to; e++ {
		_, ok, err := s.Get(context.Background(), fmt.Appendf(nil, "e%03d", e), s.CommittedEpoch(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			got = append(got, e)
		}
	}
	return got
}

// TestCommitLogReplays: commits Badger lost (an OS crash takes its unsynced files) come back
// from the commit log at the next Open.
func TestCommitLogReplays(t *testing.T) {
	dir := t.TempDir()
	s, err := openRedoStore(t, dir, false)
	if err != nil {
		t.Fatal(err)
	}
	commitN(t, s, 1, 3, 100)
	s.loseLogged = true
	commitN(t, s, 4, 6, 100)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = openRedoStore(t, dir, false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := present(t, s, 1, 6); len(got) != 6 || s.CommittedEpoch() < 6 {
		t.Fatalf("after replay: epochs %v present, committed %d; want 1..6", got, s.CommittedEpoch())
	}
	// The replayed commits are Badger's own now: the next start has nothing to replay.
	commitN(t, s, 7, 7, 100)
}

// corruptLastRecordByte flips a byte inside the commit log's record number i (0-based).
func corruptRecord(t *testing.T, dir string, i int) {
	t.Helper()
	path := filepath.Join(dir, redoName)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	off := redoHeaderSize
	for k := 0; k < i; k++ {
		n := int(uint32(data[off]) | uint32(data[off+1])<<8 | uint32(data[off+2])<<16 | uint32(data[off+3])<<24)
		off += redoRecHeader + n
	}
	data[off+redoRecHeader+20] ^= 0xff
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCommitLogTornTail: a damaged last record (a crash during its write; never
// acknowledged) ends the log; the records before it replay.
func TestCommitLogTornTail(t *testing.T) {
	dir := t.TempDir()
	s, err := openRedoStore(t, dir, false)
	if err != nil {
		t.Fatal(err)
	}
	commitN(t, s, 1, 2, 100)
	if err := s.Sync(); err != nil { // Badger holds 1..2 durably; the log restarts below
		t.Fatal(err)
	}
	s.loseLogged = true
	commitN(t, s, 3, 5, 100)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	corruptRecord(t, dir, 4) // records: 1, 2, 3, 4, 5 (the log was not reset by Sync)
	s, err = openRedoStore(t, dir, false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := present(t, s, 1, 5); len(got) != 4 || got[3] != 4 {
		t.Fatalf("after a torn last record: epochs %v present, want 1..4", got)
	}
}

// TestCommitLogDamage: a damaged record followed by readable ones is refused with the file
// named, unless the operator accepts losing the commits from the damage on.
func TestCommitLogDamage(t *testing.T) {
	dir := t.TempDir()
	s, err := openRedoStore(t, dir, false)
	if err != nil {
		t.Fatal(err)
	}
	commitN(t, s, 1, 2, 100)
	s.loseLogged = true
	commitN(t, s, 3, 6, 100)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	corruptRecord(t, dir, 3) // epoch 4's record; 5 and 6 follow
	_, err = openRedoStore(t, dir, false)
	var de *DamageError
	if !errors.As(err, &de) || filepath.Base(de.File) != redoName {
		t.Fatalf("open over a damaged commit log: %v, want a DamageError naming %s", err, redoName)
	}
	s, err = openRedoStore(t, dir, true)
	if err != nil {
		t.Fatalf("open with AcceptDamagedTail: %v", err)
	}
	defer s.Close()
	if got := present(t, s, 1, 6); len(got) != 3 {
		t.Fatalf("after accepting the damage: epochs %v present, want 1..3", got)
	}
}

// TestCommitLogWraps: a full log checkpoints (Badger synced) and starts over; commits before
// and after the wrap survive a loss of Badger's unsynced writes.
func TestCommitLogWraps(t *testing.T) {
	dir := t.TempDir()
	s, err := openRedoStore(t, dir, false)
	if err != nil {
		t.Fatal(err)
	}
	gen := s.redo.gen
	commitN(t, s, 1, 40, 512<<10) // 20 MiB: past redoMaxSize
	if s.redo.gen == gen {
		t.Fatalf("the log did not start over (generation %d)", gen)
	}
	s.loseLogged = true
	commitN(t, s, 41, 43, 100)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = openRedoStore(t, dir, false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := present(t, s, 1, 43); len(got) != 43 {
		t.Fatalf("after a wrap and a loss: %d of 43 epochs present", len(got))
	}
}

// TestCommitLogBatchSizes: a batch under parallelWriteEntries goes into Badger before the
// log's sync and a bigger one beside it; both are read back, and both replay from the log
// when Badger lost them.
func TestCommitLogBatchSizes(t *testing.T) {
	dir := t.TempDir()
	s, err := openRedoStore(t, dir, false)
	if err != nil {
		t.Fatal(err)
	}
	sizes := map[uint64]int{1: 1, 2: parallelWriteEntries + 10, 3: 1, 4: parallelWriteEntries + 10}
	commit := func(e uint64) {
		var b storage.Batch
		for i := range sizes[e] {
			b.Put(fmt.Appendf(nil, "k%03d-%05d", e, i), fmt.Appendf(nil, "v%d", i))
		}
		if err := s.Commit(context.Background(), e, &b); err != nil {
			t.Fatalf("commit %d: %v", e, err)
		}
	}
	check := func(when string) {
		t.Helper()
		for e := uint64(1); e <= 4; e++ {
			for i := range sizes[e] {
				v, ok, err := s.Get(context.Background(), fmt.Appendf(nil, "k%03d-%05d", e, i), s.CommittedEpoch(), nil)
				if err != nil || !ok || string(v) != fmt.Sprintf("v%d", i) {
					t.Fatalf("%s: epoch %d key %d: %q %v %v", when, e, i, v, ok, err)
				}
			}
		}
	}
	commit(1)
	commit(2)
	s.loseLogged = true // Badger loses epochs 3 and 4; the log holds them
	commit(3)
	commit(4)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = openRedoStore(t, dir, false); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	check("after replay")
}

// TestBigCommitSyncsBadger: a batch of redoBigBatch bytes or more is made durable by syncing
// Badger's write-ahead files, not written to the commit log a second time; the commits before
// it still replay from the log, and all of them read back after a restart.
func TestBigCommitSyncsBadger(t *testing.T) {
	dir := t.TempDir()
	s, err := openRedoStore(t, dir, false)
	if err != nil {
		t.Fatal(err)
	}
	commitN(t, s, 1, 1, 100)
	off, syncs := s.redo.off, s.wal.syncs
	var b storage.Batch
	for i := range redoBigBatch / (64 << 10) {
		b.Put(fmt.Appendf(nil, "big%04d", i), bytes.Repeat([]byte{byte(i)}, 64<<10))
	}
	if err := s.Commit(context.Background(), 2, &b); err != nil {
		t.Fatal(err)
	}
	if s.redo.off != off || s.wal.syncs == syncs {
		t.Fatalf("a %d-byte commit: log offset %d -> %d, Badger syncs %d -> %d; want the log unchanged and a sync", b.Size(), off, s.redo.off, syncs, s.wal.syncs)
	}
	s.loseLogged = true // Badger loses epoch 3; the log holds it
	commitN(t, s, 3, 3, 100)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = openRedoStore(t, dir, false); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := present(t, s, 1, 3); len(got) != 2 || got[0] != 1 || got[1] != 3 {
		t.Fatalf("after a restart: epochs %v present; want 1 and 3 (2 has other keys)", got)
	}
	for i := range redoBigBatch / (64 << 10) {
		v, ok, err := s.Get(context.Background(), fmt.Appendf(nil, "big%04d", i), s.CommittedEpoch(), nil)
		if err != nil || !ok || len(v) != 64<<10 || v[0] != byte(i) {
			t.Fatalf("big key %d after a restart: %d bytes, %v, %v", i, len(v), ok, err)
		}
	}
}
