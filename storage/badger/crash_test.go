package badger_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tributary/tributary/e2e/testseed"
	"github.com/tributary/tributary/storage"
	"github.com/tributary/tributary/storage/badger"
)

// The crash test re-executes the test binary as a child that commits big epochs in a loop and SIGKILLs
// it at random moments, then checks the store reads exactly one whole epoch.

const (
	crashChildEnv  = "TRIBUTARY_CRASH_CHILD"
	crashKeys      = 60_000 // per epoch; crashNoSyncKeys with NoSync
	crashNoSyncEnv = "TRIBUTARY_CRASH_NOSYNC"
	// crashNoSyncKeys makes an epoch a batch Badger takes after Commit returns (NoSync):
	// from parallelWriteEntries entries and under redoBigBatch bytes.
	crashNoSyncKeys = 2_000
	crashMemTable   = 4 << 20 // small memtable: each epoch spans many Badger transactions
	crashLinePrefx  = "crashchild:"
)

// crashMode is how a crash test's store runs: synced (the default) or NoSync.
type crashMode struct{ noSync bool }

func (m crashMode) keys() int {
	if m.noSync {
		return crashNoSyncKeys
	}
	return crashKeys
}

func (m crashMode) test() string {
	if m.noSync {
		return "TestCrashRecoveryNoSync"
	}
	return "TestCrashRecovery"
}

func crashOpen(dir string, m crashMode) (*badger.Store, error) {
	return badger.Open(badger.Options{Dir: dir, MemTableSize: crashMemTable, BlockCacheSize: 8 << 20, MinFreeBytes: 1, NoSync: m.noSync})
}

func crashKey(i int) []byte { return fmt.Appendf(nil, "k%06d", i) }

// crashDeletesOdd reports whether epoch e deletes the odd keys instead of writing them.
func crashDeletesOdd(e uint64) bool { return (e^(e>>16))%3 == 0 }

// runCrashChild commits epochs until killed (or a minute passes), reporting each on stdout.
func runCrashChild(dir string, m crashMode) {
	s, err := crashOpen(dir, m)
	if err != nil {
		fmt.Printf("%s error %v\n", crashLinePrefx, err)
		os.Exit(2)
	}
	ctx := context.Background()
	fmt.Printf("%s opened %d\n", crashLinePrefx, s.CommittedEpoch())
	var b storage.Batch
	var val [8]byte
	deadline := time.Now().Add(time.Minute)
	prev := s.MaxVersion()
	for time.Now().Before(deadline) {
		e := storage.NextEpoch(prev)
		prev = e
		b.Reset()
		binary.BigEndian.PutUint64(val[:], e)
		for i := range m.keys() {
			if i%2 == 1 && crashDeletesOdd(e) {
				b.Delete(crashKey(i))
			} else {
				b.Put(crashKey(i), val[:])
			}
		}
		fmt.Printf("%s begin %d\n", crashLinePrefx, e)
		if err := s.Commit(ctx, e, &b); err != nil {
			fmt.Printf("%s error %v\n", crashLinePrefx, err)
			os.Exit(2)
		}
		fmt.Printf("%s committed %d\n", crashLinePrefx, e)
	}
	_ = s.Close()
	os.Exit(0)
}

type crashEvent struct {
	kind  string // opened, begin, committed, error
	epoch uint64
	text  string
}

func parseCrashLine(line string) (crashEvent, bool) {
	rest, ok := strings.CutPrefix(line, crashLinePrefx+" ")
	if !ok {
		return crashEvent{}, false
	}
	kind, arg, _ := strings.Cut(rest, " ")
	ev := crashEvent{kind: kind, text: arg}
	if kind != "error" {
		e, err := strconv.ParseUint(arg, 10, 64)
		if err != nil {
			return crashEvent{}, false
		}
		ev.epoch = e
	}
	return ev, true
}

func TestCrashRecovery(t *testing.T) { testCrashRecovery(t, crashMode{}) }

// TestCrashRecoveryNoSync: with NoSync, an epoch Commit acknowledged before Badger took it
// (its commit log record written, not synced) survives the kill too.
func TestCrashRecoveryNoSync(t *testing.T) { testCrashRecovery(t, crashMode{noSync: true}) }

func testCrashRecovery(t *testing.T, m crashMode) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		runCrashChild(dir, crashMode{noSync: os.Getenv(crashNoSyncEnv) != ""})
		return
	}
	if testing.Short() {
		t.Skip("crash test re-executes the binary; skipped in -short")
	}
	seed := testseed.For(t)
	rng := rand.New(rand.NewPCG(seed, 1))
	dir := t.TempDir()
	deadline := time.Now().Add(3 * time.Minute)

	const kills = 12
	var lastReported uint64 // highest epoch a child reported committed
	midCommitKills := 0
	for round := 0; round < kills; round++ {
		if time.Now().After(deadline) {
			t.Fatalf("seed %d: deadline passed after %d kills", seed, round)
		}
		// Half the kills land a random delay after a commit began (so mid-commit), the others
		// at a random time after start (possibly during Open's roll-back).
		afterBegin := rng.IntN(2) == 0
		delay := time.Duration(5+rng.IntN(250)) * time.Millisecond
		skipBegins := rng.IntN(3)
		// A loaded machine can make every commit slower than the kill delays: the last round
		// then kills only after the child reported a commit, so one always counts.
		waitCommit := round == kills-1 && lastReported == 0
		last, sawBegin, mid := runAndKill(t, dir, m, afterBegin, waitCommit, skipBegins, delay, deadline)
		lastReported = max(lastReported, last)
		if mid {
			midCommitKills++
		}
		t.Logf("round %d: killed after %v (after begin: %v, mid-commit: %v), last reported %d, begun %d",
			round, delay, afterBegin, mid, last, sawBegin)
		// Usually verify now; sometimes let the next child recover instead, so a kill can also hit
		// the roll-back at Open.
		if round == kills-1 || rng.IntN(4) != 0 {
			verifyCrashState(t, seed, dir, m, lastReported)
		}
	}
	if midCommitKills < 3 {
		t.Logf("seed %d: only %d kills landed inside a commit", seed, midCommitKills)
	}
	if lastReported == 0 {
		t.Fatalf("seed %d: no child ever committed an epoch", seed)
	}
}

// runAndKill starts a child on dir and SIGKILLs it after delay (measured from its skipBegins+1-th
// "begin" when afterBegin). It returns the last epoch the child reported committed, the last epoch it
// began, and whether the kill landed between a begin and its commit report.
// With waitCommit the delay starts at the child's first "committed" report instead.
func runAndKill(t *testing.T, dir string, m crashMode, afterBegin, waitCommit bool, skipBegins int, delay time.Duration, deadline time.Time) (last, begun uint64, mid bool) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+m.test()+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
	if m.noSync {
		cmd.Env = append(cmd.Env, crashNoSyncEnv+"=1")
	}
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start child: %v", err)
	}
	events := make(chan crashEvent, 64)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if ev, ok := parseCrashLine(sc.Text()); ok {
				events <- ev
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	kill := func() { _ = cmd.Process.Signal(syscall.SIGKILL) }
	var timer <-chan time.Time
	if !afterBegin && !waitCommit {
		timer = time.After(delay)
	}
	guard := time.NewTimer(time.Until(deadline))
	defer guard.Stop()
	begins := 0
	inCommit := false
	handle := func(ev crashEvent) {
		switch ev.kind {
		case "error":
			kill()
			_ = cmd.Wait()
			t.Fatalf("child failed: %s", ev.text)
		case "begin":
			begun, inCommit = ev.epoch, true
			if afterBegin && !waitCommit && timer == nil {
				if begins == skipBegins {
					timer = time.After(delay)
				}
				begins++
			}
		case "committed":
			last, inCommit = ev.epoch, false
			if waitCommit && timer == nil {
				timer = time.After(delay)
			}
		}
	}
wait:
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				_ = cmd.Wait()
				t.Fatal("child exited before it was killed")
			}
			handle(ev)
		case <-timer:
			kill()
			break wait
		case <-guard.C:
			kill()
			_ = cmd.Wait()
			t.Fatal("deadline passed waiting for the child")
		}
	}
	// Lines the child wrote before it died are still in the pipe.
	for ev := range events {
		handle(ev)
	}
	_ = cmd.Wait()
	return last, begun, inCommit
}

// verifyCrashState opens dir and checks the latest committed state is exactly one epoch's pattern,
// of an epoch at or above lastReported, and that lastReported itself still reads whole.
func verifyCrashState(t *testing.T, seed uint64, dir string, m crashMode, lastReported uint64) {
	t.Helper()
	s, err := crashOpen(dir, m)
	if err != nil {
		t.Fatalf("seed %d: reopen after kill: %v", seed, err)
	}
	defer s.Close()
	c := s.CommittedEpoch()
	if c < lastReported {
		t.Fatalf("seed %d: committed epoch %d below last reported %d", seed, c, lastReported)
	}
	w := checkWholeEpoch(t, seed, s, m, c)
	if w < lastReported {
		t.Fatalf("seed %d: state is epoch %d, below the last reported %d", seed, w, lastReported)
	}
	if lastReported > 0 {
		if got := checkWholeEpoch(t, seed, s, m, lastReported); got != lastReported {
			t.Fatalf("seed %d: read at reported epoch %d shows epoch %d", seed, lastReported, got)
		}
	}
	if s.MaxVersion() < c {
		t.Fatalf("seed %d: max version %d below committed %d", seed, s.MaxVersion(), c)
	}
}

// checkWholeEpoch scans at epoch `at` and returns the epoch W whose pattern the store holds, failing
// unless every key matches W's pattern (0 for an empty store).
func checkWholeEpoch(t *testing.T, seed uint64, s *badger.Store, m crashMode, at uint64) uint64 {
	t.Helper()
	it, err := s.Scan(context.Background(), nil, nil, at)
	if err != nil {
		t.Fatalf("seed %d: scan at %d: %v", seed, at, err)
	}
	defer it.Close()
	var w uint64
	i := 0
	for ; ; i++ {
		err := it.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("seed %d: scan at %d: %v", seed, at, err)
		}
		v := binary.BigEndian.Uint64(it.Value())
		if i == 0 {
			w = v
		}
		want := i
		if crashDeletesOdd(w) {
			want = 2 * i
		}
		if string(it.Key()) != string(crashKey(want)) || v != w {
			t.Fatalf("seed %d: at %d entry %d is %s=%d, want %s=%d (a mix of epochs)", seed, at, i, it.Key(), v, crashKey(want), w)
		}
	}
	if i == 0 {
		return 0
	}
	n := m.keys()
	if crashDeletesOdd(w) {
		n = m.keys() / 2
	}
	if i != n {
		t.Fatalf("seed %d: at %d saw %d keys of epoch %d, want %d", seed, at, i, w, n)
	}
	return w
}
