package badger

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tributary/tributary/e2e/testseed"
	"github.com/tributary/tributary/storage"
)

// The damage tests build a real data directory with the store, damage a copy of it the way a disk,
// a careless operator or a crash would, and open the copy: Open must refuse with a *DamageError
// naming the file (never start empty, never misread, never panic), or with AcceptDamagedTail
// start with exactly the documented loss.

const (
	damageMemTable = 1 << 20
	damageRows     = 6000
	damageEpochs   = 12
)

func damageOpen(dir string, acceptTail bool) (*Store, error) {
	return Open(Options{Dir: dir, MemTableSize: damageMemTable, BlockCacheSize: 4 << 20, MinFreeBytes: 1,
		AcceptDamagedTail: acceptTail})
}

func damageKey(i int) []byte { return fmt.Appendf(nil, "row%07d", i) }

// writeDamageData commits damageEpochs epochs of damageRows rows each (about 2 MB per epoch,
// so memtables flush to table files).
func writeDamageData(s *Store) error {
	ctx := context.Background()
	val := []byte(strings.Repeat("v", 300))
	var b storage.Batch
	e := s.MaxVersion()
	for ep := range damageEpochs {
		b.Reset()
		for i := range damageRows {
			b.Put(damageKey(ep*damageRows+i), val)
		}
		e = storage.NextEpoch(e)
		if err := s.Commit(ctx, e, &b); err != nil {
			return err
		}
	}
	return nil
}

// countRows counts the keys at the committed epoch.
func countRows(t *testing.T, s *Store) int {
	t.Helper()
	it, err := s.Scan(context.Background(), nil, nil, s.CommittedEpoch())
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	n := 0
	for {
		err := it.Next()
		if err == io.EOF {
			return n
		}
		if err != nil {
			t.Fatalf("scan: %v", err)
		}
		n++
	}
}

var (
	cleanDirOnce sync.Once
	cleanDir     string
	cleanDirErr  error
)

// closedDataDir returns a data directory written and closed cleanly: table files and a MANIFEST.
func closedDataDir(t *testing.T) string {
	t.Helper()
	cleanDirOnce.Do(func() {
		cleanDir, cleanDirErr = os.MkdirTemp("", "tributary-damage-")
		if cleanDirErr != nil {
			return
		}
		s, err := damageOpen(cleanDir, false)
		if err != nil {
			cleanDirErr = err
			return
		}
		cleanDirErr = errors.Join(writeDamageData(s), s.Close())
	})
	if cleanDirErr != nil {
		t.Fatal(cleanDirErr)
	}
	return copyDir(t, cleanDir)
}

func TestMain(m *testing.M) {
	if dir := os.Getenv(damageChildEnv); dir != "" {
		runDamageChild(dir)
		return
	}
	code := m.Run()
	for _, dir := range []string{cleanDir, killedDir} {
		if dir != "" {
			os.RemoveAll(dir)
		}
	}
	os.Exit(code)
}

// copyDir copies a data directory's files, keeping preallocated files sparse.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		in, err := os.Open(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		info, err := in.Stat()
		if err != nil {
			t.Fatal(err)
		}
		out, err := os.Create(filepath.Join(dst, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		n := dataExtentEnd(in, info.Size())
		if _, err := io.Copy(out, io.LimitReader(in, n)); err != nil {
			t.Fatal(err)
		}
		if err := errors.Join(out.Truncate(info.Size()), out.Close(), in.Close()); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func filesWithSuffix(t *testing.T, dir, suffix string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), suffix) {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	slices.Sort(out)
	return out
}

// wantDamage asserts err is a DamageError naming file.
func wantDamage(t *testing.T, err error, file string) {
	t.Helper()
	var de *DamageError
	if !errors.As(err, &de) || !errors.Is(err, storage.ErrDamaged) {
		t.Fatalf("open: %v, want a DamageError naming %s", err, file)
	}
	if de.File != file {
		t.Fatalf("damage reported in %s, want %s (%v)", de.File, file, err)
	}
	if strings.Contains(err.Error(), "\n") {
		t.Fatalf("error is not one line: %q", err)
	}
	t.Logf("refused: %v", err)
}

func TestDamageControl(t *testing.T) {
	dir := closedDataDir(t)
	if len(filesWithSuffix(t, dir, ".sst")) == 0 {
		t.Fatal("no table files written")
	}
	s, err := damageOpen(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n := countRows(t, s); n != damageRows*damageEpochs {
		t.Fatalf("%d rows, want %d", n, damageRows*damageEpochs)
	}
}

// Badger alone starts an empty database and deletes every table file.
func TestDamageMissingManifest(t *testing.T) {
	dir := closedDataDir(t)
	ssts := filesWithSuffix(t, dir, ".sst")
	if err := os.Remove(filepath.Join(dir, "MANIFEST")); err != nil {
		t.Fatal(err)
	}
	_, err := damageOpen(dir, true)
	wantDamage(t, err, filepath.Join(dir, "MANIFEST"))
	if got := filesWithSuffix(t, dir, ".sst"); !slices.Equal(got, ssts) {
		t.Fatalf("table files changed: %v, had %v", got, ssts)
	}
	if _, err := os.Stat(filepath.Join(dir, "MANIFEST")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a MANIFEST was created: %v", err)
	}
}

func TestDamageManifestBytes(t *testing.T) {
	dir := closedDataDir(t)
	path := filepath.Join(dir, "MANIFEST")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := len(data) / 2; i < len(data)/2+8 && i < len(data); i++ {
		data[i] ^= 0x5a
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = damageOpen(dir, true)
	wantDamage(t, err, path)
}

func TestDamageMissingTable(t *testing.T) {
	dir := closedDataDir(t)
	ssts := filesWithSuffix(t, dir, ".sst")
	if err := os.Remove(ssts[0]); err != nil {
		t.Fatal(err)
	}
	_, err := damageOpen(dir, true)
	wantDamage(t, err, ssts[0])
}

// Badger alone answers with wrong counts (or skips the table, logging it).
func TestDamageTableRandomBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(testseed.For(t), 14))
	for round := range 4 {
		dir := closedDataDir(t)
		ssts := filesWithSuffix(t, dir, ".sst")
		path := ssts[rng.IntN(len(ssts))]
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		off := rng.IntN(len(data) - 64)
		for i := range 64 {
			data[off+i] = byte(rng.Uint32())
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("round %d: 64 random bytes at offset %d of %d in %s", round, off, len(data), filepath.Base(path))
		_, err = damageOpen(dir, true)
		wantDamage(t, err, path)
	}
}

// Badger alone panics.
func TestDamageTableTruncated(t *testing.T) {
	for _, keep := range []float64{0, 0.5, 0.99} {
		dir := closedDataDir(t)
		path := filesWithSuffix(t, dir, ".sst")[0]
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(path, int64(float64(info.Size())*keep)); err != nil {
			t.Fatal(err)
		}
		_, err = damageOpen(dir, true)
		wantDamage(t, err, path)
	}
}

// The write-ahead cases need a store that was killed, not closed (Close flushes memtables to table
// files and removes their write-ahead files). A child process writes and reports, then is killed.

const damageChildEnv = "TRIBUTARY_DAMAGE_CHILD"

func runDamageChild(dir string) {
	s, err := damageOpen(dir, false)
	if err == nil {
		err = writeDamageData(s)
	}
	if err != nil {
		fmt.Printf("damagechild: error %v\n", err)
		os.Exit(2)
	}
	fmt.Printf("damagechild: committed %d\n", s.CommittedEpoch())
	_, _ = io.Copy(io.Discard, os.Stdin) // wait to be killed
	os.Exit(3)
}

var (
	killedDirOnce sync.Once
	killedDir     string
	killedDirErr  error
)

// killedDataDir returns a copy of a data directory whose writer was killed with SIGKILL after
// every commit had returned.
func killedDataDir(t *testing.T) string {
	t.Helper()
	killedDirOnce.Do(func() {
		killedDir, killedDirErr = os.MkdirTemp("", "tributary-damage-killed-")
		if killedDirErr == nil {
			killedDirErr = killAfterWrites(killedDir)
		}
	})
	if killedDirErr != nil {
		t.Fatal(killedDirErr)
	}
	return copyDir(t, killedDir)
}

func killAfterWrites(dir string) error {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), damageChildEnv+"="+dir)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	defer stdin.Close()
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "damagechild:") {
				lines <- sc.Text()
				return
			}
		}
		close(lines)
	}()
	var line string
	select {
	case line = <-lines:
	case <-time.After(2 * time.Minute):
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	if !strings.HasPrefix(line, "damagechild: committed") {
		return fmt.Errorf("child did not commit: %q", line)
	}
	return nil
}

// lastMemFile returns the newest memtable write-ahead file and the scan of it.
func lastMemFile(t *testing.T, dir string) (string, logScan) {
	t.Helper()
	mems := filesWithSuffix(t, dir, ".mem")
	if len(mems) == 0 {
		t.Fatal("no .mem file after the kill")
	}
	path := mems[len(mems)-1]
	r, err := scanLogFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !r.clean() || r.validEnd <= logHeaderSize+1000 {
		t.Fatalf("%s before damage: %+v", path, r)
	}
	return path, r
}

func TestDamageWALControl(t *testing.T) {
	dir := killedDataDir(t)
	lastMemFile(t, dir)
	s, err := damageOpen(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n := countRows(t, s); n != damageRows*damageEpochs {
		t.Fatalf("%d rows after kill -9, want %d", n, damageRows*damageEpochs)
	}
}

// Badger alone drops every write after the damaged bytes, acknowledged or not, silently.
func TestDamageWALRandomBytes(t *testing.T) {
	dir := killedDataDir(t)
	path, r := lastMemFile(t, dir)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	garbage := make([]byte, 64)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range garbage {
		garbage[i] = byte(rng.Uint32())
	}
	off := logHeaderSize + (r.validEnd-logHeaderSize)/2
	if _, err := f.WriteAt(garbage, off); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = damageOpen(dir, false)
	wantDamage(t, err, path)
	acceptDamagedWAL(t, dir)
}

// acceptDamagedWAL opens dir, whose last write-ahead file is damaged, with AcceptDamagedTail:
// the commits the dropped bytes held come back from the commit log; without the commit log
// (a copy of dir without it) the store starts with the whole epochs before the damage.
func acceptDamagedWAL(t *testing.T, dir string) {
	t.Helper()
	bare := copyDir(t, dir)
	if err := os.Remove(filepath.Join(bare, redoName)); err != nil {
		t.Fatal(err)
	}
	s, err := damageOpen(dir, true)
	if err != nil {
		t.Fatalf("open with AcceptDamagedTail: %v", err)
	}
	if n := countRows(t, s); n != damageRows*damageEpochs {
		t.Errorf("%d rows after accepting the loss with the commit log, want all %d", n, damageRows*damageEpochs)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = damageOpen(bare, true)
	if err != nil {
		t.Fatalf("open without the commit log, with AcceptDamagedTail: %v", err)
	}
	defer s.Close()
	n := countRows(t, s)
	if n >= damageRows*damageEpochs || n%damageRows != 0 {
		t.Fatalf("%d rows after accepting the loss without the commit log: want whole epochs, fewer than %d", n, damageRows*damageEpochs)
	}
	t.Logf("accepted without the commit log: %d of %d rows kept", n, damageRows*damageEpochs)
}

// A crash leaves the write in progress half done at the end of the file: it was never
// acknowledged, and Open drops it without asking.
func TestDamageWALIncompleteLastWrite(t *testing.T) {
	dir := killedDataDir(t)
	path, r := lastMemFile(t, dir)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Find the last complete transaction, and write its first half again after it as if a
	// new transaction (of the same version) had been cut short.
	start := int64(logHeaderSize)
	for off := int64(logHeaderSize); off < r.validEnd; {
		n, meta, _, _, ok := logEntry(data, off)
		if !ok {
			t.Fatalf("entry at %d unreadable", off)
		}
		off += n
		if meta&bitFinTxn != 0 && off < r.validEnd {
			start = off
		}
	}
	half := data[start : start+(r.validEnd-start)/2]
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(half, r.validEnd); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := damageOpen(dir, false)
	if err != nil {
		t.Fatalf("open after an incomplete last write: %v", err)
	}
	defer s.Close()
	if n := countRows(t, s); n != damageRows*damageEpochs {
		t.Fatalf("%d rows, want %d", n, damageRows*damageEpochs)
	}
}

// Values from the value threshold up live in the value log; Badger alone truncates the newest one
// at damaged bytes, and the table entries pointing past them then fail on read.
func TestDamageValueLog(t *testing.T) {
	dir := t.TempDir()
	s, err := damageOpen(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	big := make([]byte, s.valueThreshold+100)
	for i := range big {
		big[i] = byte(i)
	}
	var b storage.Batch
	e := s.MaxVersion()
	for i := range 12 {
		b.Reset()
		b.Put(damageKey(i), big)
		e = storage.NextEpoch(e)
		if err := s.Commit(context.Background(), e, &b); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	vlogs := filesWithSuffix(t, dir, ".vlog")
	path := vlogs[len(vlogs)-1]
	r, err := scanLogFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !r.clean() || r.validEnd < int64(10*len(big)) {
		t.Fatalf("%s before damage: %+v", path, r)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(bytes.Repeat([]byte{0xa5}, 64), r.validEnd/2); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = damageOpen(dir, false)
	wantDamage(t, err, path)
}

// A table file the MANIFEST does not name is what an interrupted compaction leaves; Badger removes
// it at open. Open says so, naming it.
func TestUnlistedTableLogged(t *testing.T) {
	dir := closedDataDir(t)
	ssts := filesWithSuffix(t, dir, ".sst")
	data, err := os.ReadFile(ssts[0])
	if err != nil {
		t.Fatal(err)
	}
	extra := filepath.Join(dir, "999999.sst")
	if err := os.WriteFile(extra, data, 0o644); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	s, err := Open(Options{Dir: dir, MemTableSize: damageMemTable, MinFreeBytes: 1,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !strings.Contains(logs.String(), "does not name") || !strings.Contains(logs.String(), extra) {
		t.Fatalf("no warning naming %s:\n%s", extra, logs.String())
	}
	if n := countRows(t, s); n != damageRows*damageEpochs {
		t.Fatalf("%d rows, want %d", n, damageRows*damageEpochs)
	}
}

// damageAt overwrites the bytes of path at off with b.
func damageAt(t *testing.T, path string, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// Bytes that read as an overflowing length make Badger fail to open even where it would drop a
// damaged tail; with AcceptDamagedTail the store truncates the file itself, keeping what it drops.
func TestDamageWALOverflowAccepted(t *testing.T) {
	dir := killedDataDir(t)
	path, r := lastMemFile(t, dir)
	off := logHeaderSize + (r.validEnd-logHeaderSize)/2
	damageAt(t, path, off, bytes.Repeat([]byte{0xff}, 64))
	_, err := damageOpen(dir, false)
	wantDamage(t, err, path)
	acceptDamagedWAL(t, dir)
	kept, err := filepath.Glob(path + ".dropped-at-*")
	if err != nil || len(kept) != 1 {
		t.Fatalf("dropped bytes not kept beside %s: %v %v", path, kept, err)
	}
	info, err := os.Stat(kept[0])
	if err != nil || info.Size() < 64 {
		t.Fatalf("kept tail %s: %v %v", kept[0], info, err)
	}
}

func TestDamageWALHeader(t *testing.T) {
	dir := killedDataDir(t)
	path, _ := lastMemFile(t, dir)
	damageAt(t, path, 3, []byte{0x42})
	_, err := damageOpen(dir, true)
	wantDamage(t, err, path)
}
