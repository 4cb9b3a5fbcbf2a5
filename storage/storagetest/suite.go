package storagetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/tributary/tributary/storage"
)

// Opener returns a new, empty store. Run closes it when the subtest ends.
type Opener func(t *testing.T) storage.KV

// Run runs the conformance suite against stores made by open.
func Run(t *testing.T, open Opener) {
	tests := []struct {
		name string
		fn   func(t *testing.T, kv storage.KV)
	}{
		{"GetPutDelete", testGetPutDelete},
		{"EmptyValueVsMissing", testEmptyValue},
		{"SnapshotReads", testSnapshotReads},
		{"ScanBounds", testScanBounds},
		{"ReverseScan", testReverseScan},
		{"Seek", testSeek},
		{"EpochErrors", testEpochErrors},
		{"InvalidKeys", testInvalidKeys},
		{"BatchLastWriteWins", testBatchLastWriteWins},
		{"ChangedKeys", testChangedKeys},
		{"DiscardAndPin", testDiscardAndPin},
		{"BigBatch", testBigBatch},
		{"IteratorContract", testIteratorContract},
		{"ConcurrentReadersAndCommits", testConcurrent},
		{"RandomModel", testRandomModel},
		{"Closed", testClosed},
		{"Stage", testStage},
		{"StageAbandoned", testStageAbandoned},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			kv := open(t)
			t.Cleanup(func() {
				checkInvariants(t, kv)
				if err := kv.Close(); err != nil {
					t.Errorf("close: %v", err)
				}
			})
			tc.fn(t, kv)
		})
	}
}

// op is one write of a test batch; a nil value means delete.
type op struct {
	key   string
	value []byte
}

func put(k, v string) op { return op{k, []byte(v)} }
func del(k string) op    { return op{k, nil} }

func commit(t testing.TB, kv storage.KV, epoch uint64, ops ...op) {
	t.Helper()
	var b storage.Batch
	for _, o := range ops {
		if o.value == nil {
			b.Delete([]byte(o.key))
		} else {
			b.Put([]byte(o.key), o.value)
		}
	}
	if err := kv.Commit(context.Background(), epoch, &b); err != nil {
		t.Fatalf("commit epoch %d: %v", epoch, err)
	}
}

// get returns the value of key at epoch, or "<missing>".
func get(t testing.TB, kv storage.KV, key string, epoch uint64) string {
	t.Helper()
	v, ok, err := kv.Get(context.Background(), []byte(key), epoch, nil)
	if err != nil {
		t.Fatalf("get %q at %d: %v", key, epoch, err)
	}
	if !ok {
		return "<missing>"
	}
	return string(v)
}

// drain reads an iterator to its end and closes it, returning "k=v" pairs.
func drain(t testing.TB, it storage.Iterator) []string {
	t.Helper()
	var out []string
	for {
		err := it.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("next: %v", err)
		}
		out = append(out, string(it.Key())+"="+string(it.Value()))
	}
	if err := it.Close(); err != nil {
		t.Fatalf("close iterator: %v", err)
	}
	return out
}

func scan(t testing.TB, kv storage.KV, lower, upper string, epoch uint64, reverse bool) []string {
	t.Helper()
	var lo, up []byte
	if lower != "" {
		lo = []byte(lower)
	}
	if upper != "" {
		up = []byte(upper)
	}
	var it storage.Iterator
	var err error
	if reverse {
		it, err = kv.ReverseScan(context.Background(), lo, up, epoch)
	} else {
		it, err = kv.Scan(context.Background(), lo, up, epoch)
	}
	if err != nil {
		t.Fatalf("scan [%q, %q) at %d: %v", lower, upper, epoch, err)
	}
	return drain(t, it)
}

func expect(t testing.TB, what string, got, want []string) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s:\n got %q\nwant %q", what, got, want)
	}
}

func testGetPutDelete(t *testing.T, kv storage.KV) {
	if e := kv.CommittedEpoch(); e != 0 {
		t.Fatalf("new store committed epoch %d, want 0", e)
	}
	commit(t, kv, 10, put("a", "1"), put("b", "2"))
	if e := kv.CommittedEpoch(); e != 10 {
		t.Fatalf("committed epoch %d, want 10", e)
	}
	if kv.MaxVersion() < 10 {
		t.Fatalf("max version %d below committed 10", kv.MaxVersion())
	}
	if g := get(t, kv, "a", 10); g != "1" {
		t.Fatalf("a = %q", g)
	}
	if g := get(t, kv, "c", 10); g != "<missing>" {
		t.Fatalf("c = %q", g)
	}
	commit(t, kv, 20, del("a"), put("b", "22"), del("never"))
	if g := get(t, kv, "a", 20); g != "<missing>" {
		t.Fatalf("deleted a = %q", g)
	}
	if g := get(t, kv, "never", 20); g != "<missing>" {
		t.Fatalf("never = %q", g)
	}
	commit(t, kv, 30, put("a", "3"))
	expect(t, "scan at 30", scan(t, kv, "", "", 30, false), []string{"a=3", "b=22"})
	// Get appends to dst.
	dst := []byte("prefix:")
	v, ok, err := kv.Get(context.Background(), []byte("b"), 30, dst)
	if err != nil || !ok || string(v) != "prefix:22" {
		t.Fatalf("get with dst = %q %v %v", v, ok, err)
	}
	v, ok, err = kv.Get(context.Background(), []byte("zz"), 30, dst)
	if err != nil || ok || string(v) != "prefix:" {
		t.Fatalf("get missing with dst = %q %v %v", v, ok, err)
	}
	// An empty or nil batch publishes the epoch.
	if err := kv.Commit(context.Background(), 40, nil); err != nil {
		t.Fatalf("commit nil batch: %v", err)
	}
	commit(t, kv, 50)
	if e := kv.CommittedEpoch(); e != 50 {
		t.Fatalf("committed epoch %d, want 50", e)
	}
	expect(t, "scan at 50", scan(t, kv, "", "", 50, false), []string{"a=3", "b=22"})
}

func testEmptyValue(t *testing.T, kv storage.KV) {
	commit(t, kv, 1, put("empty", ""), put("full", "x"))
	v, ok, err := kv.Get(context.Background(), []byte("empty"), 1, nil)
	if err != nil || !ok || len(v) != 0 {
		t.Fatalf("empty value: %q %v %v", v, ok, err)
	}
	expect(t, "scan", scan(t, kv, "", "", 1, false), []string{"empty=", "full=x"})
	commit(t, kv, 2, del("empty"))
	if _, ok, _ := kv.Get(context.Background(), []byte("empty"), 2, nil); ok {
		t.Fatal("deleted empty value still found")
	}
	if _, ok, _ := kv.Get(context.Background(), []byte("empty"), 1, nil); !ok {
		t.Fatal("empty value missing at its old epoch")
	}
}

func testSnapshotReads(t *testing.T, kv storage.KV) {
	for e := uint64(1); e <= 5; e++ {
		commit(t, kv, e*100, put("k", fmt.Sprint(e)), put(fmt.Sprintf("only%d", e), "x"))
	}
	commit(t, kv, 600, del("k"))
	for e := uint64(1); e <= 5; e++ {
		for _, at := range []uint64{e * 100, e*100 + 50} {
			if g := get(t, kv, "k", at); g != fmt.Sprint(e) {
				t.Fatalf("k at %d = %q, want %d", at, g, e)
			}
			var want []string
			want = append(want, fmt.Sprintf("k=%d", e))
			for i := uint64(1); i <= e; i++ {
				want = append(want, fmt.Sprintf("only%d=x", i))
			}
			expect(t, fmt.Sprintf("scan at %d", at), scan(t, kv, "", "", at, false), want)
		}
	}
	if g := get(t, kv, "k", 600); g != "<missing>" {
		t.Fatalf("k at 600 = %q", g)
	}
	if g := get(t, kv, "k", 50); g != "<missing>" {
		t.Fatalf("k before first write = %q", g)
	}
}

func testScanBounds(t *testing.T, kv storage.KV) {
	commit(t, kv, 1, put("a", "1"), put("ab", "2"), put("abc", "3"), put("b", "4"), put("b\x00", "5"),
		put("c", "6"), put("\xff\xfe", "7"))
	all := []string{"a=1", "ab=2", "abc=3", "b=4", "b\x00=5", "c=6", "\xff\xfe=7"}
	expect(t, "unbounded", scan(t, kv, "", "", 1, false), all)
	expect(t, "[ab, b)", scan(t, kv, "ab", "b", 1, false), all[1:3])
	expect(t, "[ab, b\\x00)", scan(t, kv, "ab", "b\x00", 1, false), all[1:4])
	expect(t, "[b, nil)", scan(t, kv, "b", "", 1, false), all[3:])
	expect(t, "[nil, abc)", scan(t, kv, "", "abc", 1, false), all[:2])
	expect(t, "[aa, ab)", scan(t, kv, "aa", "ab", 1, false), nil)
	expect(t, "[x, x)", scan(t, kv, "x", "x", 1, false), nil)
	expect(t, "[c, a) inverted", scan(t, kv, "c", "a", 1, false), nil)
	expect(t, "[zzz, nil)", scan(t, kv, "zzz", "", 1, false), all[6:])
}

func testReverseScan(t *testing.T, kv storage.KV) {
	commit(t, kv, 1, put("a", "1"), put("ab", "2"), put("abc", "3"), put("b", "4"), put("c", "6"))
	commit(t, kv, 2, del("ab"), put("bb", "7"))
	expect(t, "reverse all at 2", scan(t, kv, "", "", 2, true), []string{"c=6", "bb=7", "b=4", "abc=3", "a=1"})
	expect(t, "reverse all at 1", scan(t, kv, "", "", 1, true), []string{"c=6", "b=4", "abc=3", "ab=2", "a=1"})
	expect(t, "reverse [ab, b)", scan(t, kv, "ab", "b", 1, true), []string{"abc=3", "ab=2"})
	expect(t, "reverse [ab, bb) at 2", scan(t, kv, "ab", "bb", 2, true), []string{"b=4", "abc=3"})
	expect(t, "reverse [nil, ab)", scan(t, kv, "", "ab", 1, true), []string{"a=1"})
	expect(t, "reverse [d, nil)", scan(t, kv, "d", "", 1, true), nil)
}

// testSeek: a forward scan's Seek moves to the first key at or after its argument (never before
// the scan's lower bound), backwards as well as forwards, past deletes, and after io.EOF; a
// reverse scan refuses it. A store whose iterators are no Seeker skips the test.
func testSeek(t *testing.T, kv storage.KV) {
	commit(t, kv, 1, put("a", "1"), put("b", "2"), put("c", "3"), put("d", "4"), put("f", "6"))
	commit(t, kv, 2, del("c"))
	it, err := kv.Scan(context.Background(), []byte("b"), []byte("f"), 2)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	sk, ok := it.(storage.Seeker)
	if !ok {
		t.Skip("the store's iterators are no storage.Seeker")
	}
	at := func(what string) string {
		t.Helper()
		err := it.Next()
		if err == io.EOF {
			return "EOF"
		}
		if err != nil {
			t.Fatalf("%s: next: %v", what, err)
		}
		return string(it.Key()) + "=" + string(it.Value())
	}
	seek := func(key, want string) {
		t.Helper()
		if err := sk.Seek([]byte(key)); err != nil {
			t.Fatalf("seek %q: %v", key, err)
		}
		if got := at("seek " + key); got != want {
			t.Fatalf("seek %q: at %q, want %q", key, got, want)
		}
	}
	seek("bb", "d=4") // c is deleted at 2
	if got := at("after d"); got != "EOF" {
		t.Fatalf("after d: %q, want EOF (f is the upper bound)", got)
	}
	seek("a", "b=2") // not before the lower bound, and back after EOF
	if got := at("after b"); got != "d=4" {
		t.Fatalf("after b: %q", got)
	}
	seek("c", "d=4")
	seek("e", "EOF")
	seek("b", "b=2")
	rev, err := kv.ReverseScan(context.Background(), nil, nil, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer rev.Close()
	if rs, ok := rev.(storage.Seeker); ok {
		if err := rs.Seek([]byte("b")); err == nil {
			t.Errorf("Seek on a reverse scan: no error")
		}
	}
}

func testEpochErrors(t *testing.T, kv storage.KV) {
	ctx := context.Background()
	commit(t, kv, 10, put("a", "1"))
	var b storage.Batch
	b.Put([]byte("a"), []byte("2"))
	for _, e := range []uint64{5, 10} {
		if err := kv.Commit(ctx, e, &b); !errors.Is(err, storage.ErrStaleEpoch) {
			t.Fatalf("commit at stale epoch %d: %v, want ErrStaleEpoch", e, err)
		}
	}
	if g := get(t, kv, "a", 10); g != "1" {
		t.Fatalf("stale commit changed a to %q", g)
	}
	if _, _, err := kv.Get(ctx, []byte("a"), 11, nil); !errors.Is(err, storage.ErrEpochNotCommitted) {
		t.Fatalf("get above committed: %v", err)
	}
	if _, err := kv.Scan(ctx, nil, nil, 11); !errors.Is(err, storage.ErrEpochNotCommitted) {
		t.Fatalf("scan above committed: %v", err)
	}
	if _, err := kv.ReverseScan(ctx, nil, nil, 11); !errors.Is(err, storage.ErrEpochNotCommitted) {
		t.Fatalf("reverse scan above committed: %v", err)
	}
	if _, err := kv.ChangedKeys(ctx, nil, nil, 0, 11); !errors.Is(err, storage.ErrEpochNotCommitted) {
		t.Fatalf("changed keys above committed: %v", err)
	}
	if err := kv.SetDiscardEpoch(11); !errors.Is(err, storage.ErrEpochNotCommitted) {
		t.Fatalf("discard above committed: %v", err)
	}
	commit(t, kv, 11, put("a", "3"))
	if g := get(t, kv, "a", 11); g != "3" {
		t.Fatalf("a = %q after a good commit", g)
	}
}

func testInvalidKeys(t *testing.T, kv storage.KV) {
	ctx := context.Background()
	bad := [][]byte{{}, append(bytes.Clone(storage.ReservedPrefix), 'x'), storage.ReservedPrefix,
		make([]byte, storage.MaxKeySize+1)}
	for _, k := range bad {
		var b storage.Batch
		b.Put([]byte("good"), []byte("1"))
		b.Put(k, []byte("v"))
		if err := kv.Commit(ctx, 5, &b); !errors.Is(err, storage.ErrInvalidKey) {
			t.Fatalf("commit key %.20x: %v, want ErrInvalidKey", k, err)
		}
	}
	if kv.CommittedEpoch() != 0 {
		t.Fatalf("rejected commits published epoch %d", kv.CommittedEpoch())
	}
	commit(t, kv, 5, put("good", "1"))
	if g := get(t, kv, "good", 5); g != "1" {
		t.Fatalf("good = %q", g)
	}
}

func testBatchLastWriteWins(t *testing.T, kv storage.KV) {
	commit(t, kv, 1, put("k", "1"), put("j", "x"), put("k", "2"), del("j"), put("i", "a"), del("i"), put("i", "b"))
	expect(t, "scan", scan(t, kv, "", "", 1, false), []string{"i=b", "k=2"})
}

func changed(t testing.TB, kv storage.KV, lower, upper string, since, until uint64) []string {
	t.Helper()
	var lo, up []byte
	if lower != "" {
		lo = []byte(lower)
	}
	if upper != "" {
		up = []byte(upper)
	}
	it, err := kv.ChangedKeys(context.Background(), lo, up, since, until)
	if err != nil {
		t.Fatalf("changed keys (%d, %d]: %v", since, until, err)
	}
	var out []string
	for {
		err := it.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("changed keys next: %v", err)
		}
		s := fmt.Sprintf("%s@%d", it.Key(), it.Epoch())
		if it.Deleted() {
			s += "-"
			if len(it.Value()) != 0 {
				t.Fatalf("changed key %s: a delete with value %q", it.Key(), it.Value())
			}
		} else if v, found, err := kv.Get(context.Background(), it.Key(), it.Epoch(), nil); err != nil || !found || string(v) != string(it.Value()) {
			t.Fatalf("changed key %s@%d: value %q, Get says %q (found %v, %v)", it.Key(), it.Epoch(), it.Value(), v, found, err)
		}
		out = append(out, s)
	}
	if err := it.Close(); err != nil {
		t.Fatalf("changed keys close: %v", err)
	}
	return out
}

func testChangedKeys(t *testing.T, kv storage.KV) {
	commit(t, kv, 10, put("a", "1"), put("b", "1"), put("c", "1"))
	commit(t, kv, 20, put("b", "2"), del("c"))
	commit(t, kv, 30, put("b", "3"), put("d", "3"))
	commit(t, kv, 40)
	expect(t, "(0, 10]", changed(t, kv, "", "", 0, 10), []string{"a@10", "b@10", "c@10"})
	expect(t, "(10, 20]", changed(t, kv, "", "", 10, 20), []string{"b@20", "c@20-"})
	expect(t, "(10, 30]", changed(t, kv, "", "", 10, 30), []string{"b@30", "c@20-", "d@30"})
	expect(t, "(15, 25]", changed(t, kv, "", "", 15, 25), []string{"b@20", "c@20-"})
	expect(t, "(30, 40]", changed(t, kv, "", "", 30, 40), nil)
	expect(t, "(20, 20]", changed(t, kv, "", "", 20, 20), nil)
	expect(t, "(0, 40] in [b, d)", changed(t, kv, "b", "d", 0, 40), []string{"b@30", "c@20-"})
	if _, err := kv.ChangedKeys(context.Background(), nil, nil, 30, 20); err == nil {
		t.Fatal("changed keys with since > until succeeded")
	}
}

func testDiscardAndPin(t *testing.T, kv storage.KV) {
	ctx := context.Background()
	for e := uint64(1); e <= 5; e++ {
		commit(t, kv, e*10, put("k", fmt.Sprint(e)), put(fmt.Sprint("k", e), "x"))
	}
	commit(t, kv, 60, del("k1"))
	release, err := kv.Pin(20)
	if err != nil {
		t.Fatalf("pin 20: %v", err)
	}
	if err := kv.SetDiscardEpoch(40); err != nil {
		t.Fatalf("set discard: %v", err)
	}
	if d := kv.DiscardEpoch(); d != 20 {
		t.Fatalf("discard epoch with pin at 20 = %d", d)
	}
	commit(t, kv, 70, put("k", "7")) // lets a store apply the discard epoch
	if g := get(t, kv, "k", 20); g != "2" {
		t.Fatalf("pinned read at 20 = %q", g)
	}
	expect(t, "pinned changes (20, 40]", changed(t, kv, "", "", 20, 40), []string{"k@40", "k3@30", "k4@40"})
	if _, _, err := kv.Get(ctx, []byte("k"), 10, nil); !errors.Is(err, storage.ErrEpochDiscarded) {
		t.Fatalf("read below pin: %v", err)
	}
	if _, err := kv.Pin(10); !errors.Is(err, storage.ErrEpochDiscarded) {
		t.Fatalf("pin below discard epoch: %v", err)
	}
	release()
	release() // idempotent
	if d := kv.DiscardEpoch(); d != 40 {
		t.Fatalf("discard epoch after release = %d", d)
	}
	if err := kv.SetDiscardEpoch(30); err != nil { // lower: ignored
		t.Fatalf("set lower discard: %v", err)
	}
	if d := kv.DiscardEpoch(); d != 40 {
		t.Fatalf("discard epoch moved back to %d", d)
	}
	commit(t, kv, 80, put("other", "8"))
	for _, at := range []uint64{40, 50, 60, 70, 80} {
		want := map[uint64]string{40: "4", 50: "5", 60: "5", 70: "7", 80: "7"}[at]
		if g := get(t, kv, "k", at); g != want {
			t.Fatalf("k at %d after discard = %q, want %q", at, g, want)
		}
	}
	if g := get(t, kv, "k1", 50); g != "x" {
		t.Fatalf("k1 at 50 = %q", g)
	}
	if g := get(t, kv, "k1", 60); g != "<missing>" {
		t.Fatalf("k1 at 60 = %q", g)
	}
	if _, _, err := kv.Get(ctx, []byte("k"), 30, nil); !errors.Is(err, storage.ErrEpochDiscarded) {
		t.Fatalf("read below discard: %v", err)
	}
	if _, err := kv.ChangedKeys(ctx, nil, nil, 30, 80); !errors.Is(err, storage.ErrEpochDiscarded) {
		t.Fatalf("changed keys below discard: %v", err)
	}
	expect(t, "scan at 40", scan(t, kv, "", "", 40, false), []string{"k=4", "k1=x", "k2=x", "k3=x", "k4=x"})
}

func testBigBatch(t *testing.T, kv storage.KV) {
	const n = 150_000
	key := func(i int) []byte { return fmt.Appendf(nil, "big/%08d", i) }
	var b storage.Batch
	for i := range n {
		b.Put(key(i), fmt.Appendf(nil, "v1-%d", i))
	}
	ctx := context.Background()
	if err := kv.Commit(ctx, 100, &b); err != nil {
		t.Fatalf("commit big batch: %v", err)
	}
	b.Reset()
	for i := 0; i < n; i += 2 {
		b.Delete(key(i))
	}
	if err := kv.Commit(ctx, 200, &b); err != nil {
		t.Fatalf("commit big delete batch: %v", err)
	}
	for _, c := range []struct {
		epoch uint64
		step  int
	}{{100, 1}, {200, 2}} {
		it, err := kv.Scan(ctx, nil, nil, c.epoch)
		if err != nil {
			t.Fatal(err)
		}
		i := c.step - 1
		for {
			err := it.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(it.Key(), key(i)) || string(it.Value()) != fmt.Sprintf("v1-%d", i) {
				t.Fatalf("at %d: entry %q=%q, want key %q", c.epoch, it.Key(), it.Value(), key(i))
			}
			i += c.step
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		if i != n+c.step-1 {
			t.Fatalf("scan at %d ended at %d", c.epoch, i)
		}
	}
}

func testIteratorContract(t *testing.T, kv storage.KV) {
	ctx := context.Background()
	commit(t, kv, 1, put("a", "1"), put("b", "2"))
	it, err := kv.Scan(ctx, nil, nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := it.Next(); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		if err := it.Next(); err != io.EOF {
			t.Fatalf("next after end: %v, want io.EOF", err)
		}
	}
	if err := it.Close(); err != nil {
		t.Fatalf("close after EOF: %v", err)
	}
	if err := it.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	// Closing early is fine, and Next after Close fails.
	it, err = kv.Scan(ctx, nil, nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := it.Next(); err != nil {
		t.Fatal(err)
	}
	if err := it.Close(); err != nil {
		t.Fatalf("early close: %v", err)
	}
	if err := it.Next(); err == nil || err == io.EOF {
		t.Fatalf("next after close: %v", err)
	}
	// A commit after the iterator was made does not change what it reads.
	it, err = kv.Scan(ctx, nil, nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := it.Next(); err != nil || string(it.Key()) != "a" {
		t.Fatalf("first: %v", err)
	}
	commit(t, kv, 2, put("aa", "new"), del("b"), put("c", "3"))
	got := []string{string(it.Key()) + "=" + string(it.Value())}
	got = append(got, drain(t, it)...)
	expect(t, "scan at 1 across a commit", got, []string{"a=1", "b=2"})
}

func testConcurrent(t *testing.T, kv storage.KV) {
	// One writer commits epochs where every key holds the epoch; readers check that each scan at a
	// committed epoch sees one value throughout.
	const keys = 200
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	writeEpoch := func(e uint64) error {
		var b storage.Batch
		for i := range keys {
			b.Put(fmt.Appendf(nil, "c%04d", i), fmt.Appendf(nil, "%d", e))
		}
		return kv.Commit(ctx, e, &b)
	}
	if err := writeEpoch(1); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errc := make(chan error, 3)
	done := make(chan struct{})
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				e := kv.CommittedEpoch()
				it, err := kv.Scan(ctx, nil, nil, e)
				if err != nil {
					errc <- err
					return
				}
				n := 0
				for ; ; n++ {
					err := it.Next()
					if err == io.EOF {
						break
					}
					if err != nil {
						errc <- err
						return
					}
					if string(it.Value()) != fmt.Sprint(e) {
						errc <- fmt.Errorf("scan at %d saw %s=%s", e, it.Key(), it.Value())
						return
					}
				}
				if err := it.Close(); err != nil {
					errc <- err
					return
				}
				if n != keys {
					errc <- fmt.Errorf("scan at %d saw %d keys", e, n)
					return
				}
			}
		}()
	}
	for e := uint64(2); e <= 50 && ctx.Err() == nil; e++ {
		if err := writeEpoch(e); err != nil {
			errc <- err
			break
		}
	}
	close(done)
	wg.Wait()
	select {
	case err := <-errc:
		t.Fatal(err)
	default:
	}
}

// model is the reference semantics: every key's versions.
type model map[string][]modelVersion

type modelVersion struct {
	epoch uint64
	value []byte // nil = deleted
}

func (m model) at(key string, epoch uint64) ([]byte, bool) {
	vs := m[key]
	for i := len(vs) - 1; i >= 0; i-- {
		if vs[i].epoch <= epoch {
			return vs[i].value, vs[i].value != nil
		}
	}
	return nil, false
}

func (m model) scan(lower, upper string, epoch uint64) []string {
	var keys []string
	for k := range m {
		if k < lower || (upper != "" && k >= upper) {
			continue
		}
		if _, ok := m.at(k, epoch); ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var out []string
	for _, k := range keys {
		v, _ := m.at(k, epoch)
		out = append(out, k+"="+string(v))
	}
	return out
}

func testRandomModel(t *testing.T, kv storage.KV) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	m := model{}
	key := func() string { return fmt.Sprintf("%c%d", 'a'+rng.IntN(4), rng.IntN(30)) }
	var epochs []uint64
	epoch := uint64(0)
	for round := 0; round < 60; round++ {
		epoch += 1 + uint64(rng.IntN(3))
		var ops []op
		for range rng.IntN(40) {
			k := key()
			if rng.IntN(4) == 0 {
				ops = append(ops, del(k))
			} else {
				v := make([]byte, rng.IntN(4))
				for i := range v {
					v[i] = byte(rng.IntN(256))
				}
				ops = append(ops, op{k, v})
			}
		}
		commit(t, kv, epoch, ops...)
		final := map[string][]byte{}
		for _, o := range ops {
			final[o.key] = o.value
		}
		for k, v := range final {
			m[k] = append(m[k], modelVersion{epoch, v})
		}
		epochs = append(epochs, epoch)
		// Check a few reads at random committed epochs.
		for range 5 {
			at := epochs[rng.IntN(len(epochs))]
			k := key()
			want, wok := m.at(k, at)
			got, gok, err := kv.Get(context.Background(), []byte(k), at, nil)
			if err != nil || gok != wok || !bytes.Equal(got, want) {
				t.Fatalf("seed %d: get %q at %d = %q %v %v, want %q %v", seed, k, at, got, gok, err, want, wok)
			}
			lo, up := key(), key()
			if rng.IntN(5) == 0 {
				lo = ""
			}
			if rng.IntN(5) == 0 {
				up = ""
			}
			w := m.scan(lo, up, at)
			expect(t, fmt.Sprintf("seed %d: scan [%q, %q) at %d", seed, lo, up, at), scan(t, kv, lo, up, at, false), w)
			for i, j := 0, len(w)-1; i < j; i, j = i+1, j-1 {
				w[i], w[j] = w[j], w[i]
			}
			expect(t, fmt.Sprintf("seed %d: reverse scan [%q, %q) at %d", seed, lo, up, at), scan(t, kv, lo, up, at, true), w)
		}
	}
}

func testClosed(t *testing.T, kv storage.KV) {
	ctx := context.Background()
	commit(t, kv, 1, put("a", "1"))
	it, err := kv.Scan(ctx, nil, nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := kv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := it.Next(); !errors.Is(err, storage.ErrClosed) {
		t.Fatalf("iterator next after store close: %v", err)
	}
	_ = it.Close()
	if _, _, err := kv.Get(ctx, []byte("a"), 1, nil); !errors.Is(err, storage.ErrClosed) {
		t.Fatalf("get after close: %v", err)
	}
	if _, err := kv.Scan(ctx, nil, nil, 1); !errors.Is(err, storage.ErrClosed) {
		t.Fatalf("scan after close: %v", err)
	}
	if err := kv.Commit(ctx, 2, nil); !errors.Is(err, storage.ErrClosed) {
		t.Fatalf("commit after close: %v", err)
	}
	if err := kv.Sync(); !errors.Is(err, storage.ErrClosed) {
		t.Fatalf("sync after close: %v", err)
	}
	if err := kv.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
}

// checkInvariants runs after every subtest: at the committed epoch a forward scan is strictly
// ascending, holds only writable keys, and equals the reverse scan reversed.
func checkInvariants(t *testing.T, kv storage.KV) {
	ctx := context.Background()
	e := kv.CommittedEpoch()
	it, err := kv.Scan(ctx, nil, nil, e)
	if errors.Is(err, storage.ErrClosed) {
		return
	}
	if err != nil {
		t.Errorf("invariants: scan at %d: %v", e, err)
		return
	}
	var fwd [][]byte
	for it.Next() == nil {
		k := bytes.Clone(it.Key())
		if err := storage.CheckKey(k); err != nil {
			t.Errorf("invariants: scan returned key %x: %v", k, err)
		}
		if n := len(fwd); n > 0 && bytes.Compare(fwd[n-1], k) >= 0 {
			t.Errorf("invariants: scan not ascending: %x then %x", fwd[n-1], k)
		}
		fwd = append(fwd, k)
	}
	if err := it.Close(); err != nil {
		t.Errorf("invariants: close: %v", err)
	}
	rit, err := kv.ReverseScan(ctx, nil, nil, e)
	if err != nil {
		t.Errorf("invariants: reverse scan at %d: %v", e, err)
		return
	}
	i := len(fwd) - 1
	for rit.Next() == nil {
		if i < 0 || !bytes.Equal(rit.Key(), fwd[i]) {
			t.Errorf("invariants: reverse scan differs from the forward scan at %x", rit.Key())
			break
		}
		i--
	}
	if err := rit.Close(); err != nil {
		t.Errorf("invariants: close reverse: %v", err)
	}
	if i != -1 {
		t.Errorf("invariants: reverse scan ended %d keys early", i+1)
	}
}

func stage(t testing.TB, kv storage.KV, epoch uint64, ops ...op) {
	t.Helper()
	var b storage.Batch
	for _, o := range ops {
		if o.value == nil {
			b.Delete([]byte(o.key))
		} else {
			b.Put([]byte(o.key), o.value)
		}
	}
	if err := kv.Stage(context.Background(), epoch, &b); err != nil {
		t.Fatalf("stage epoch %d: %v", epoch, err)
	}
}

// testStage: staged writes are invisible at committed epochs, readable at their own epoch, and
// published by its Commit, whose batch wins over them, as a later Stage wins over an earlier one.
func testStage(t *testing.T, kv storage.KV) {
	commit(t, kv, 10, put("a", "a10"), put("b", "b10"), put("c", "c10"))
	stage(t, kv, 20, put("a", "a20"), del("b"), put("d", "d20"), put("e", "e20"))
	stage(t, kv, 20, put("d", "d20'"), del("e"))
	if kv.MaxVersion() < 20 {
		t.Fatalf("MaxVersion %d below the staged epoch 20", kv.MaxVersion())
	}
	expect(t, "scan at the committed epoch", scan(t, kv, "", "", 10, false), []string{"a=a10", "b=b10", "c=c10"})
	expect(t, "scan at the staged epoch", scan(t, kv, "", "", 20, false), []string{"a=a20", "c=c10", "d=d20'"})
	if got := get(t, kv, "d", 20); got != "d20'" {
		t.Fatalf("get d at the staged epoch: %s", got)
	}
	// An epoch committed meanwhile below the staged one leaves it staged.
	commit(t, kv, 15, put("c", "c15"))
	expect(t, "scan at 15", scan(t, kv, "", "", 15, false), []string{"a=a10", "b=b10", "c=c15"})
	if _, _, err := kv.Get(context.Background(), []byte("a"), 19, nil); !errors.Is(err, storage.ErrEpochNotCommitted) {
		t.Fatalf("read at 19 (neither committed nor staged): %v", err)
	}
	commit(t, kv, 20, put("a", "a20'"), put("f", "f20"))
	expect(t, "scan after the commit", scan(t, kv, "", "", 20, false), []string{"a=a20'", "c=c15", "d=d20'", "f=f20"})
	expect(t, "scan at 15 after the commit", scan(t, kv, "", "", 15, false), []string{"a=a10", "b=b10", "c=c15"})
	if err := kv.Stage(context.Background(), 20, &storage.Batch{}); !errors.Is(err, storage.ErrStaleEpoch) {
		t.Fatalf("stage at a committed epoch: %v", err)
	}
	// Pipelined: epoch 40 is staged while 30, staged too, has yet to commit; both commit in order.
	stage(t, kv, 30, put("g", "g30"), put("a", "a30"))
	stage(t, kv, 40, put("h", "h40"))
	expect(t, "staged 40 reads staged 30", scan(t, kv, "", "", 40, false), []string{"a=a30", "c=c15", "d=d20'", "f=f20", "g=g30", "h=h40"})
	commit(t, kv, 30)
	commit(t, kv, 40, put("a", "a40"))
	expect(t, "after both commits", scan(t, kv, "", "", 40, false), []string{"a=a40", "c=c15", "d=d20'", "f=f20", "g=g30", "h=h40"})
	expect(t, "at 30", scan(t, kv, "", "", 30, false), []string{"a=a30", "c=c15", "d=d20'", "f=f20", "g=g30"})
}

// testStageAbandoned: an epoch staged and never committed is dropped by the Commit of a later
// epoch: its keys read as of the committed epoch again.
func testStageAbandoned(t *testing.T, kv storage.KV) {
	commit(t, kv, 10, put("a", "a10"), put("b", "b10"))
	stage(t, kv, 20, put("a", "a20"), del("b"), put("c", "c20"))
	commit(t, kv, 30, put("d", "d30"))
	expect(t, "after a later commit", scan(t, kv, "", "", 30, false), []string{"a=a10", "b=b10", "d=d30"})
	if _, _, err := kv.Get(context.Background(), []byte("a"), 20, nil); err != nil {
		t.Fatalf("read at the dropped epoch 20, below the committed 30: %v", err)
	}
	// A Stage does not drop an earlier staged epoch (it may be committing still); its Commit does.
	stage(t, kv, 40, put("a", "a40"), put("e", "e40"))
	stage(t, kv, 50, put("b", "b50"), put("e", "e50"))
	expect(t, "staged 50 over staged 40", scan(t, kv, "", "", 50, false), []string{"a=a40", "b=b50", "d=d30", "e=e50"})
	commit(t, kv, 50, put("c", "c50"))
	expect(t, "after committing 50", scan(t, kv, "", "", 50, false), []string{"a=a10", "b=b50", "c=c50", "d=d30", "e=e50"})
	expect(t, "at 30", scan(t, kv, "", "", 30, false), []string{"a=a10", "b=b10", "d=d30"})
}
