package badger

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	bdg "github.com/dgraph-io/badger/v4"

	"github.com/tributary/tributary/e2e/testseed"
	"github.com/tributary/tributary/storage"
)

// dieForTest closes s as a killed process leaves it: the deferred batches never reach Badger
// (which then closes on its own; the commit log keeps their records).
func dieForTest(t *testing.T, s *Store) {
	t.Helper()
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	s.closeMu.closed = true
	if s.wal != nil {
		s.wal.close()
	}
	_ = s.redo.close()
	if err := s.db.Close(); err != nil {
		t.Fatal(err)
	}
}

func deferredCount(s *Store) int {
	s.deferMu.Lock()
	defer s.deferMu.Unlock()
	return len(s.deferMu.commits)
}

// TestDeferredCommits: small commits wait for Badger until a scan needs them (point reads find
// them in memory), a commit that cannot wait (an empty one) or the bound; every read sees every
// committed epoch; after a crash they come back from the commit log.
func TestDeferredCommits(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := openRedoStore(t, dir, false)
	if err != nil {
		t.Fatal(err)
	}
	put := func(e uint64, keys ...string) {
		t.Helper()
		var b storage.Batch
		for _, k := range keys {
			b.Put([]byte(k), fmt.Appendf(nil, "v%d", e))
		}
		if err := s.Commit(ctx, e, &b); err != nil {
			t.Fatalf("commit %d: %v", e, err)
		}
	}
	get := func(key string, epoch uint64) string {
		t.Helper()
		v, ok, err := s.Get(ctx, []byte(key), epoch, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return "-"
		}
		return string(v)
	}
	put(1, "a")
	put(2, "b")
	put(3, "a") // a's newer version
	if n := deferredCount(s); n != 3 {
		t.Fatalf("%d commits deferred, want 3", n)
	}
	// Point reads find them in memory, without writing them.
	if got := get("a", 3) + get("b", 3) + get("a", 2) + get("b", 1) + get("a", 1); got != "v3v2v1-v1" {
		t.Fatalf("a, b at 3, a at 2, b and a at 1: %s, want v3v2v1-v1", got)
	}
	var del storage.Batch
	del.Delete([]byte("b"))
	if err := s.Commit(ctx, 4, &del); err != nil {
		t.Fatal(err)
	}
	if got := get("b", 4) + get("b", 3) + get("z", 4); got != "-v2-" {
		t.Fatalf("b at 4 (deleted), at 3, z at 4: %s, want -v2-", got)
	}
	if n := deferredCount(s); n != 4 {
		t.Fatalf("after point reads: %d commits deferred, want 4", n)
	}
	// A scan writes them first.
	scan := func(epoch uint64) []string {
		t.Helper()
		it, err := s.Scan(ctx, []byte("a"), []byte("c"), epoch)
		if err != nil {
			t.Fatal(err)
		}
		defer it.Close()
		var seen []string
		for it.Next() == nil {
			seen = append(seen, string(it.Key())+"="+string(it.Value()))
		}
		return seen
	}
	if seen := scan(4); fmt.Sprint(seen) != "[a=v3]" {
		t.Fatalf("scan at 4: %v, want [a=v3]", seen)
	}
	if n := deferredCount(s); n != 0 {
		t.Fatalf("after a scan at 4: %d commits deferred, want 0", n)
	}
	// A lone read, or seven soon after one another (a new view's backfill makes three, the
	// first INSERT after it a fourth), pause nothing: the next commit waits again.
	e := uint64(5)
	for reads := 1; reads <= 7; reads++ {
		put(e, fmt.Sprintf("k%03d", e))
		if n := deferredCount(s); n != 1 {
			t.Fatalf("epoch %d, after %d reads wrote the deferred commits: %d deferred, want 1", e, reads, n)
		}
		if seen := scan(e); fmt.Sprint(seen) != "[a=v3]" {
			t.Fatalf("scan at %d: %v, want [a=v3]", e, seen)
		}
		e++
	}
	// An eighth within 2*maxDeferred commits: the next maxDeferred commits go straight in.
	for end := e + maxDeferred; e < end; e++ {
		put(e, fmt.Sprintf("k%03d", e))
		if n := deferredCount(s); n != 0 {
			t.Fatalf("epoch %d, after eight reads wrote the deferred commits: %d deferred, want 0", e, n)
		}
	}
	// Then they wait again, up to the bound; an empty commit (the barrier loop's idle epoch)
	// writes them.
	most := 0
	for end := e + 2*maxDeferred; e < end; e++ {
		put(e, fmt.Sprintf("k%03d", e))
		n := deferredCount(s)
		if n > maxDeferred {
			t.Fatalf("epoch %d: %d commits deferred, bound %d", e, n, maxDeferred)
		}
		most = max(most, n)
	}
	if most != maxDeferred {
		t.Fatalf("at most %d commits deferred at once, want the bound %d", most, maxDeferred)
	}
	if err := s.Commit(ctx, e, nil); err != nil {
		t.Fatal(err)
	}
	if n := deferredCount(s); n != 0 {
		t.Fatalf("after an empty commit: %d commits deferred, want 0", n)
	}
	committed, _, err := s.readMeta()
	if err != nil || committed != e {
		t.Fatalf("Badger's watermark %d (%v), want %d", committed, err, e)
	}
	// Deferred when the process dies: the commit log has them.
	put(e+1, "x")
	put(e+2, "y", "a")
	if n := deferredCount(s); n != 2 {
		t.Fatalf("%d commits deferred, want 2", n)
	}
	dieForTest(t, s)
	if s, err = openRedoStore(t, dir, false); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if c := s.CommittedEpoch(); c != e+2 {
		t.Fatalf("committed %d after the restart, want %d", c, e+2)
	}
	if got := get("x", e+2) + get("y", e+2) + get("a", e+2) + get("a", 3) + get("k010", e); got != fmt.Sprintf("v%dv%dv%dv3v10", e+1, e+2, e+2) {
		t.Fatalf("after the restart: %s", got)
	}
}

// TestDeferredCommitsConcurrentReads: readers at the committed epoch, beside a writer of small
// commits, always see every committed epoch's key.
func TestDeferredCommitsConcurrentReads(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := openRedoStore(t, t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	seed := testseed.For(t)
	const epochs = 400
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for e := uint64(1); e <= epochs; e++ {
			var b storage.Batch
			b.Put(fmt.Appendf(nil, "k%04d", e), []byte("v"))
			if e%50 == 0 {
				b = storage.Batch{} // an empty epoch now and then
			}
			if err := s.Commit(ctx, e, &b); err != nil {
				errs <- err
				return
			}
		}
	}()
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(r)))
			for s.CommittedEpoch() < epochs {
				if ctx.Err() != nil {
					errs <- ctx.Err()
					return
				}
				c := s.CommittedEpoch()
				if c == 0 {
					continue
				}
				e := 1 + rng.Uint64N(c)
				_, ok, err := s.Get(ctx, fmt.Appendf(nil, "k%04d", e), c, nil)
				if err != nil {
					errs <- err
					return
				}
				if !ok && e%50 != 0 {
					errs <- fmt.Errorf("epoch %d's key missing at committed epoch %d", e, c)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// openNoSync opens a NoSync store in dir.
func openNoSync(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(Options{Dir: dir, NoSync: true, MinFreeBytes: 1})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// countKeys counts the keys that start with prefix (one byte) at epoch.
func countKeys(t *testing.T, s *Store, prefix string, epoch uint64) int {
	t.Helper()
	it, err := s.Scan(context.Background(), []byte(prefix), []byte{prefix[0] + 1}, epoch)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	n := 0
	for it.Next() == nil {
		n++
	}
	return n
}

// TestNoSyncWindow: with NoSync, commits wait in a window that Badger takes on a goroutine of
// its own once full, less the versions no read can see (superseded at or below the discard
// epoch). Every read right after a commit sees it (a point read answered from the window, one
// that reaches a sealed window's epochs waits for its write and pauses the windows); after the
// windows are in, every epoch from the discard epoch up still reads whole, a rewritten key
// holds far fewer versions than epochs written, and a kill loses no committed window.
func TestNoSyncWindow(t *testing.T) {
	dir := t.TempDir()
	s := openNoSync(t, dir)
	defer func() { _ = s.Close() }()
	ctx := context.Background()
	const groups, rows, lag = 50, 20, 4
	group := func(g int) []byte { return fmt.Appendf(nil, "g%03d", g) }
	commit := func(e uint64) {
		t.Helper()
		var b storage.Batch
		for g := range groups {
			b.Put(group(g), fmt.Appendf(nil, "v%d", e))
		}
		for i := range rows {
			b.Put(fmt.Appendf(nil, "r%05d-%02d", e, i), nil)
		}
		if err := s.Commit(ctx, e, &b); err != nil {
			t.Fatal(err)
		}
		if e > lag {
			if err := s.SetDiscardEpoch(e - lag); err != nil {
				t.Fatal(err)
			}
		}
	}
	get := func(key []byte, e uint64) string {
		t.Helper()
		v, ok, err := s.Get(ctx, key, e, nil)
		if err != nil || !ok {
			t.Fatalf("get %s at %d: %v %v", key, e, ok, err)
		}
		return string(v)
	}
	blocked, release := make(chan struct{}, 1), make(chan struct{})
	releaseOnce := sync.OnceFunc(func() { close(release) })
	defer releaseOnce() // before Close, which waits for the window's write
	s.beforeApply = func() {
		blocked <- struct{}{}
		<-release
	}
	e := uint64(0)
	for range maxWindowCommits {
		e++
		commit(e)
		if e < maxWindowCommits {
			if got := get(group(7), e); got != fmt.Sprintf("v%d", e) {
				t.Fatalf("epoch %d: %s right after the commit", e, got)
			}
		}
	}
	<-blocked // the full window is being written, and waits
	s.beforeApply = nil
	if deferredCount(s) != 0 || s.windowOp.Load() == nil {
		t.Fatal("the full window was not sealed")
	}
	read := make(chan string, 1)
	go func() {
		v, _, err := s.Get(ctx, group(3), e, nil)
		if err != nil {
			v = []byte(err.Error())
		}
		read <- string(v)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for paused := 0; paused == 0; {
		s.deferMu.Lock()
		paused = s.deferMu.pause
		s.deferMu.Unlock()
		if time.Now().After(deadline) {
			t.Fatal("the read never waited for the sealed window")
		}
		time.Sleep(time.Millisecond)
	}
	releaseOnce()
	if got := <-read; got != fmt.Sprintf("v%d", e) {
		t.Fatalf("read at %d after the window's write: %s", e, got)
	}
	for range maxDeferred + maxWindowCommits/2 {
		e++
		commit(e)
	}
	if deferredCount(s) == 0 {
		t.Fatal("commits after the pause do not wait in a window")
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	// Every epoch from the discard epoch up reads whole.
	for at := s.DiscardEpoch(); at <= e; at++ {
		if got := get(group(int(at)%groups), at); got != fmt.Sprintf("v%d", at) {
			t.Fatalf("after the windows: %s at %d = %s", group(int(at)%groups), at, got)
		}
		if n := countKeys(t, s, "r", at); n != int(at)*rows {
			t.Fatalf("scan at %d: %d rows, want %d", at, n, int(at)*rows)
		}
	}
	txn := s.db.NewTransactionAt(math.MaxUint64, false)
	it := txn.NewIterator(bdg.IteratorOptions{AllVersions: true, Prefix: group(7)})
	versions := 0
	for it.Rewind(); it.Valid(); it.Next() {
		versions++
	}
	it.Close()
	txn.Discard()
	if versions > int(e)/4 {
		t.Fatalf("%s holds %d versions for %d epochs written: superseded versions reached Badger", group(7), versions, e)
	}
	// A kill with a window open: the commit log brings it back.
	for range 10 {
		e++
		commit(e)
	}
	if deferredCount(s) == 0 {
		t.Fatal("no window open before the kill")
	}
	dieForTest(t, s)
	s = openNoSync(t, dir)
	if c := s.CommittedEpoch(); c != e {
		t.Fatalf("committed epoch %d after the kill, want %d", c, e)
	}
	if got := get(group(11), e); got != fmt.Sprintf("v%d", e) {
		t.Fatalf("after the kill: %s", got)
	}
	if n := countKeys(t, s, "r", e); n != int(e)*rows {
		t.Fatalf("after the kill: %d rows, want %d", n, int(e)*rows)
	}
}

// TestMerger: the commit window's merge (loadMerged's tournament tree) yields every entry of
// any number of sorted batches once, in key order, a key's newer commit first; keys of all
// lengths (shorter than the 8 bytes compared at once included) and empty batches.
func TestMerger(t *testing.T) {
	seed := testseed.For(t)
	rng := rand.New(rand.NewPCG(seed, 5))
	for round := 0; round < 200; round++ {
		k := 1 + rng.IntN(40)
		commits := make([]deferredCommit, k)
		total := 0
		for i := range commits {
			b := new(storage.Batch)
			for range rng.IntN(30) {
				key := make([]byte, rng.IntN(12))
				for j := range key {
					key[j] = byte(rng.IntN(3)) // few values: many ties and shared prefixes
				}
				b.Put(key, []byte{byte(i)})
			}
			b.Normalize()
			total += b.Len()
			commits[i] = deferredCommit{epoch: uint64(i + 1), batch: b}
		}
		m := newMerger(commits, nil)
		n := 0
		var prevKey []byte
		prevCommit := -1
		for c := m.top(); c != nil; c = m.pop() {
			key, value, _ := c.batch.Entry(c.pos)
			if int(value[0]) != c.commit {
				t.Fatalf("seed %d round %d: entry of commit %d from commit %d's batch", seed, round, value[0], c.commit)
			}
			if n > 0 {
				if cmp := bytes.Compare(prevKey, key); cmp > 0 || (cmp == 0 && prevCommit <= c.commit) {
					t.Fatalf("seed %d round %d: %x (commit %d) after %x (commit %d)", seed, round, key, c.commit, prevKey, prevCommit)
				}
			}
			prevKey, prevCommit = key, c.commit
			n++
		}
		if n != total {
			t.Fatalf("seed %d round %d: %d entries merged, %d written", seed, round, n, total)
		}
	}
}

// TestNoSyncPausedCommitsLogged: with NoSync, a lone read that had to write a window pauses
// nothing, nor do a few more soon after, the pauseReads-th pauses the windows; the commits
// written straight into Badger while they pause go through the commit log too, so that a
// damaged Badger file accepted with --accept-damaged-tail loses none of them: the log holds
// every commit since it started, small and big, windowed and paused.
func TestNoSyncPausedCommitsLogged(t *testing.T) {
	dir := t.TempDir()
	s := openNoSync(t, dir)
	ctx := context.Background()
	commit := func(epoch uint64, n int) {
		t.Helper()
		b := new(storage.Batch)
		for i := range n {
			b.Put([]byte(fmt.Sprintf("k%04d-%06d", epoch, i)), []byte("v"))
		}
		if err := s.Commit(ctx, epoch, b); err != nil {
			t.Fatal(err)
		}
	}
	commit(1, 10) // waits in the window
	if n := countKeys(t, s, "k", 1); n != 10 {
		t.Fatalf("%d keys at epoch 1, want 10", n) // the scan writes the window
	}
	e := uint64(2)
	for ; e <= pauseReads; e++ {
		commit(e, 10) // waits in the window: a lone read, or a few, pause nothing
		if deferredCount(s) != 1 {
			t.Fatalf("%d reads paused the windows", e-1)
		}
		if n := countKeys(t, s, "k", e); n != 10*int(e) {
			t.Fatalf("%d keys at epoch %d, want %d", n, e, 10*e) // the pauseReads-th read: the windows pause
		}
	}
	for end := e + 5; e < end; e++ {
		commit(e, []int{10, 300}[e%2]) // paused: small ones and ones past parallelWriteEntries
		if deferredCount(s) != 0 {
			t.Fatalf("epoch %d waits in a window during the pause", e)
		}
	}
	dieForTest(t, s)
	r, recs, err := openRedo(dir, true, true, true, func(string, ...any) {})
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	var epochs []uint64
	for _, rec := range recs {
		epochs = append(epochs, rec.epoch)
	}
	var want []uint64
	for w := uint64(1); w < e; w++ {
		want = append(want, w)
	}
	if !slices.Equal(epochs, want) {
		t.Fatalf("the commit log holds epochs %v, want %v", epochs, want)
	}
}

// BenchmarkMergeWindow merges a window shaped like an INSERT loop into a table with a GROUP
// BY view: each commit writes 256 new blocks and rewrites the view's 1,000 rows; the newest 16
// commits are above the discard epoch. It reports the entries handed over per window.
func BenchmarkMergeWindow(b *testing.B) {
	const commits, blocks, groups, lag = 230, 256, 1000, 16
	window := make([]deferredCommit, commits)
	for i := range window {
		batch := new(storage.Batch)
		key := make([]byte, 0, 16)
		for v := range blocks {
			key = append(key[:0], 0, 0, 0, 1, byte(v>>8), byte(v), 0xFF)
			key = binary.BigEndian.AppendUint64(key, uint64(i*1000+v))
			batch.Put(key, make([]byte, 160))
		}
		for g := range groups {
			v := g * 2654435761 % 256
			key = append(key[:0], 0, 0, 0, 2, byte(v>>8), byte(v))
			key = binary.BigEndian.AppendUint32(key, uint32(g))
			batch.Put(key, make([]byte, 12))
		}
		batch.Normalize()
		window[i] = deferredCommit{epoch: uint64(i + 1), batch: batch}
	}
	discard := uint64(commits - lag)
	n := 0
	b.ResetTimer()
	for range b.N {
		n = 0
		if err := mergeWindow(window, discard, func(*mergeCursor, uint64) error { n++; return nil }); err != nil {
			b.Fatal(err)
		}
	}
	if want := commits*blocks + groups*(lag+1); n != want {
		b.Fatalf("%d entries handed over, want %d", n, want)
	}
	b.ReportMetric(float64(n), "entries")
}

// TestMergeWindowDiscard: the window's merge hands over, for each key, every version above the
// discard epoch and the newest one at or below it, in key order, newer first; the versions
// the next commit supersedes (supersededByNext) are among those left out, never one handed
// over. Random windows with few distinct keys (most rewritten by the next commit), deletes,
// and discard epochs anywhere in them.
func TestMergeWindowDiscard(t *testing.T) {
	seed := testseed.For(t)
	rng := rand.New(rand.NewPCG(seed, 6))
	type version struct {
		key    string
		commit int
		del    bool
	}
	skipped := 0
	for round := 0; round < 300; round++ {
		k := 1 + rng.IntN(30)
		commits := make([]deferredCommit, k)
		byKey := map[string][]version{} // newest first
		for i := range commits {
			b := new(storage.Batch)
			for range rng.IntN(20) {
				key := []byte{byte(rng.IntN(4)), byte(rng.IntN(6))}
				if rng.IntN(4) == 0 {
					b.Delete(key)
				} else {
					b.Put(key, []byte{byte(i)})
				}
			}
			b.Normalize()
			for j := 0; j < b.Len(); j++ {
				key, _, del := b.Entry(j)
				byKey[string(key)] = append([]version{{string(key), i, del}}, byKey[string(key)]...)
			}
			commits[i] = deferredCommit{epoch: uint64(2*i + 1), batch: b}
		}
		discard := uint64(rng.IntN(2*k + 2))
		var want []version
		keys := slices.Sorted(maps.Keys(byKey))
		for _, key := range keys {
			for _, v := range byKey[key] {
				want = append(want, v)
				if commits[v.commit].epoch <= discard {
					break
				}
			}
		}
		var got []version
		err := mergeWindow(commits, discard, func(c *mergeCursor, epoch uint64) error {
			key, value, del := c.batch.Entry(c.pos)
			if epoch != commits[c.commit].epoch || (!del && int(value[0]) != c.commit) {
				t.Fatalf("seed %d round %d: entry of commit %d at epoch %d", seed, round, c.commit, epoch)
			}
			got = append(got, version{string(key), c.commit, del})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("seed %d round %d (discard %d): handed over\n%v\nwant\n%v", seed, round, discard, got, want)
		}
		for _, set := range supersededByNext(commits, discard) {
			for _, w := range set {
				skipped += bits.OnesCount64(w)
			}
		}
	}
	if skipped == 0 {
		t.Fatalf("seed %d: no version was left out before the merge", seed)
	}
}

// TestNoSyncLogHalves: with NoSync, a full commit log starts its next generation in its other
// half without writing the commits still waiting in the window into Badger first; a kill right
// after a switch loses none of them (the previous generation's records replay), nor after
// switches back into a half whose records are in Badger by then; the file stays within its two
// halves.
func TestNoSyncLogHalves(t *testing.T) {
	dir := t.TempDir()
	s := openNoSync(t, dir)
	ctx := context.Background()
	const keys, valueSize = 300, 2 << 10 // 600 KiB a commit
	value := make([]byte, valueSize)
	commits := 0
	commitUntilSwitch := func() {
		t.Helper()
		for gen := s.redo.gen; s.redo.gen == gen; {
			if commits > 1000 {
				t.Fatal("the commit log never started over")
			}
			commits++
			var b storage.Batch
			for i := range keys {
				b.Put(fmt.Appendf(nil, "k%04d-%03d", commits, i), value)
			}
			if err := s.Commit(ctx, uint64(commits), &b); err != nil {
				t.Fatal(err)
			}
		}
	}
	reopen := func(step string) {
		t.Helper()
		dieForTest(t, s)
		s = openNoSync(t, dir)
		if n := countKeys(t, s, "k", s.CommittedEpoch()); n != commits*keys {
			t.Fatalf("%s: %d keys after the kill, want %d", step, n, commits*keys)
		}
		if s.CommittedEpoch() != uint64(commits) {
			t.Fatalf("%s: committed epoch %d after the kill, want %d", step, s.CommittedEpoch(), commits)
		}
	}
	commitUntilSwitch()
	// 28 commits fill a window, 55 records a half: commits 29-55 wait in the filling window.
	inBadger, _, err := s.readMeta()
	if err != nil {
		t.Fatal(err)
	}
	if deferredCount(s) == 0 || inBadger >= uint64(commits-1) {
		t.Fatalf("the switch to the log's other half wrote the waiting commits into Badger: %d commits, %d in Badger, %d waiting",
			commits, inBadger, deferredCount(s))
	}
	if s.redo.start != redoHeaderSize+redoNoSyncHalf || s.redo.prevStart != redoHeaderSize {
		t.Fatalf("after a switch: records from %d, the previous generation's from %d", s.redo.start, s.redo.prevStart)
	}
	reopen("right after a switch")
	for range 3 {
		commitUntilSwitch()
	}
	reopen("after three more switches")
	if max := int64(redoHeaderSize + redoNoSyncMaxSize + redoGrowStep); s.redo.size > max {
		t.Fatalf("the commit log grew to %d bytes, past its two halves (%d)", s.redo.size, max)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestCommitLogHeaderV1: a header written before the log had halves (generation and
// checksum only) starts its generation's records after the header, with no previous one.
func TestCommitLogHeaderV1(t *testing.T) {
	hdr := make([]byte, redoHeaderSize)
	copy(hdr, redoMagicV1[:])
	binary.LittleEndian.PutUint64(hdr[8:16], 7)
	binary.LittleEndian.PutUint32(hdr[16:20], crc32.Checksum(hdr[:16], castagnoli))
	h, ok := parseRedoHeader(hdr)
	if !ok || h != (redoHeader{gen: 7, start: redoHeaderSize}) {
		t.Fatalf("v1 header: %+v, %v", h, ok)
	}
	hdr[9] ^= 1
	if _, ok := parseRedoHeader(hdr); ok {
		t.Fatal("a damaged v1 header parsed")
	}
}

// TestNoSyncLogHalvesOverwrite: a switch back into the half of the generation before the
// previous one writes that generation's commits into Badger first when they still wait in the
// window (a log that fills faster than windows are written): a kill after the switch then
// loses none of them.
func TestNoSyncLogHalvesOverwrite(t *testing.T) {
	dir := t.TempDir()
	s := openNoSync(t, dir)
	ctx := context.Background()
	commit := func(e uint64) {
		t.Helper()
		var b storage.Batch
		b.Put(fmt.Appendf(nil, "k%03d", e), []byte("v"))
		if err := s.Commit(ctx, e, &b); err != nil {
			t.Fatal(err)
		}
	}
	checkpoint := func() {
		t.Helper()
		s.commitMu.Lock()
		defer s.commitMu.Unlock()
		if err := s.checkpointLocked(); err != nil {
			t.Fatal(err)
		}
	}
	for e := uint64(1); e <= 3; e++ {
		commit(e) // generation 1, in the first half
	}
	checkpoint()
	commit(4) // generation 2, in the other half
	commit(5)
	if deferredCount(s) != 5 {
		t.Fatalf("%d commits wait in the window, want 5", deferredCount(s))
	}
	checkpoint() // generation 3 overwrites generation 1's records
	commit(6)
	dieForTest(t, s)
	s = openNoSync(t, dir)
	defer func() { _ = s.Close() }()
	if n := countKeys(t, s, "k", 6); n != 6 {
		t.Fatalf("%d keys after the kill, want 6", n)
	}
}

// TestCommitLogHeaderChecked: a header whose previous generation would be generation 0, or
// whose records would start inside the header, is damage.
func TestCommitLogHeaderChecked(t *testing.T) {
	for _, h := range []redoHeader{
		{gen: 1, start: redoHeaderSize, prevStart: redoHeaderSize + redoNoSyncHalf},
		{gen: 3, start: 16, prevStart: redoHeaderSize},
		{gen: 3, start: redoHeaderSize, prevStart: 16},
		{gen: 0, start: redoHeaderSize},
	} {
		dir := t.TempDir()
		r, _, err := openRedo(dir, false, true, true, func(string, ...any) {})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.writeHeader(h); err != nil {
			t.Fatal(err)
		}
		_ = r.close()
		var de *DamageError
		if r, _, err := openRedo(dir, true, true, true, func(string, ...any) {}); !errors.As(err, &de) {
			if err == nil {
				_ = r.close()
			}
			t.Errorf("header %+v: open gave %v, want damage", h, err)
		}
	}
}
