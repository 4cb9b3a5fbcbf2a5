package storage

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"sort"
	"testing"
)

func TestBatchNormalize(t *testing.T) {
	var b Batch
	b.Put([]byte("b"), []byte("1"))
	b.Delete([]byte("a"))
	b.Put([]byte("b"), []byte("2"))
	b.Put([]byte("a"), nil)
	b.Put([]byte("c"), []byte("3"))
	b.Delete([]byte("c"))
	b.Normalize()
	var got []string
	for i := 0; i < b.Len(); i++ {
		k, v, del := b.Entry(i)
		got = append(got, fmt.Sprintf("%s=%q/%v", k, v, del))
	}
	want := `[a=""/false b="2"/false c=""/true]`
	if fmt.Sprint(got) != want {
		t.Fatalf("normalised batch %v, want %v", got, want)
	}
	if b.Size() == 0 {
		t.Fatal("size 0")
	}
	b.Reset()
	if b.Len() != 0 || b.Size() != 0 {
		t.Fatalf("after reset len %d size %d", b.Len(), b.Size())
	}
}

// TestBatchNormalizeRuns: batches written as runs of ascending keys (merged) and in random order
// (sorted) normalise to the last write of each key, in key order.
func TestBatchNormalizeRuns(t *testing.T) {
	seed := int64(20261202)
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	for round := 0; round < 300; round++ {
		var b Batch
		last := map[string]string{}
		runs := 1 + rng.Intn(maxMergeRuns+8) // past maxMergeRuns the batch is sorted instead
		if round%10 == 0 {
			runs = 0 // random order
		}
		write := func(k string) {
			v := fmt.Sprint(rng.Intn(1000))
			if rng.Intn(5) == 0 {
				b.Delete([]byte(k))
				last[k] = "<del>"
				return
			}
			b.Put([]byte(k), []byte(v))
			last[k] = v
		}
		if runs == 0 {
			for i := rng.Intn(200); i > 0; i-- {
				write(fmt.Sprintf("k%03d", rng.Intn(100)))
			}
		}
		for r := 0; r < runs; r++ {
			seen := map[int]bool{}
			var keys []int
			for i := rng.Intn(20); i > 0; i-- {
				if k := rng.Intn(100); !seen[k] {
					seen[k] = true
					keys = append(keys, k)
				}
			}
			sort.Ints(keys)
			for _, k := range keys {
				write(fmt.Sprintf("k%03d", k))
			}
		}
		b.Normalize()
		var want []string
		for k := range last {
			want = append(want, k)
		}
		sort.Strings(want)
		if b.Len() != len(want) {
			t.Fatalf("round %d (%d runs): %d entries, want %d", round, runs, b.Len(), len(want))
		}
		for i, k := range want {
			key, v, del := b.Entry(i)
			got := string(v)
			if del {
				got = "<del>"
			}
			if string(key) != k || got != last[k] {
				t.Fatalf("round %d (%d runs): entry %d %s=%s, want %s=%s", round, runs, i, key, got, k, last[k])
			}
		}
	}
}

// TestBatchNormalizeOrdered: a batch written in key order stays as it is; one in order but for a
// repeated key keeps the last write of that key.
func TestBatchNormalizeOrdered(t *testing.T) {
	entries := func(b *Batch) string {
		var got []string
		for i := 0; i < b.Len(); i++ {
			k, v, del := b.Entry(i)
			got = append(got, fmt.Sprintf("%s=%q/%v", k, v, del))
		}
		return fmt.Sprint(got)
	}
	var b Batch
	b.Put([]byte("a"), []byte("1"))
	b.Delete([]byte("b"))
	b.Put([]byte("c"), []byte("3"))
	b.Normalize()
	if got, want := entries(&b), `[a="1"/false b=""/true c="3"/false]`; got != want {
		t.Fatalf("ordered batch %v, want %v", got, want)
	}
	b.Reset()
	b.Put([]byte("a"), []byte("1"))
	b.Put([]byte("b"), []byte("2"))
	b.Put([]byte("b"), []byte("3"))
	b.Put([]byte("c"), []byte("4"))
	b.Normalize()
	if got, want := entries(&b), `[a="1"/false b="3"/false c="4"/false]`; got != want {
		t.Fatalf("ordered batch with a repeated key %v, want %v", got, want)
	}
}

func TestCheckKey(t *testing.T) {
	for _, k := range [][]byte{nil, {0xff, 0xff, 0xff, 0xff}, {0xff, 0xff, 0xff, 0xff, 0}, make([]byte, MaxKeySize+1)} {
		if err := CheckKey(k); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("key %.8x: %v", k, err)
		}
	}
	for _, k := range [][]byte{{0}, {0xff, 0xff, 0xff, 0xfe, 0xff}, make([]byte, MaxKeySize)} {
		if err := CheckKey(k); err != nil {
			t.Errorf("key %.8x: %v", k, err)
		}
	}
}

func TestNextEpoch(t *testing.T) {
	e := NextEpoch(0)
	if e == 0 || EpochTime(e).IsZero() {
		t.Fatalf("first epoch %d", e)
	}
	prev := e
	for range 10000 {
		n := NextEpoch(prev)
		if n <= prev {
			t.Fatalf("NextEpoch(%d) = %d", prev, n)
		}
		prev = n
	}
	far := uint64(math.MaxUint64 - 10)
	if n := NextEpoch(far); n != far+1 {
		t.Fatalf("NextEpoch above the clock = %d, want %d", n, far+1)
	}
}

func TestDiscardTracker(t *testing.T) {
	var d DiscardTracker
	d.Init(5)
	if err := d.Set(20, 10); !errors.Is(err, ErrEpochNotCommitted) {
		t.Fatalf("set above committed: %v", err)
	}
	r1, err := d.Pin(6)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := d.Pin(8)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Set(10, 10); err != nil {
		t.Fatal(err)
	}
	if d.Effective() != 6 {
		t.Fatalf("effective %d, want 6", d.Effective())
	}
	r1()
	r1()
	if d.Effective() != 8 {
		t.Fatalf("effective %d, want 8", d.Effective())
	}
	if _, err := d.Pin(7); !errors.Is(err, ErrEpochDiscarded) {
		t.Fatalf("pin below: %v", err)
	}
	r2()
	if d.Effective() != 10 {
		t.Fatalf("effective %d, want 10", d.Effective())
	}
	if err := d.CheckRead(9, 10); !errors.Is(err, ErrEpochDiscarded) {
		t.Fatalf("read below: %v", err)
	}
	if err := d.CheckRead(11, 10); !errors.Is(err, ErrEpochNotCommitted) {
		t.Fatalf("read above: %v", err)
	}
	if err := d.CheckRead(10, 10); err != nil {
		t.Fatal(err)
	}
}

func TestCheckFreeSpace(t *testing.T) {
	dir := t.TempDir()
	if err := CheckFreeSpace(dir, 1); err != nil {
		t.Fatalf("1 byte minimum: %v", err)
	}
	if err := CheckFreeSpace(dir, math.MaxUint64); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("huge minimum: %v", err)
	}
	if _, err := FreeBytes(dir + "/missing"); err == nil {
		t.Fatal("free bytes of a missing dir succeeded")
	}
}

// TestSpaceGuard: the guard's cached answer never hides a minimum above the free space.
func TestSpaceGuard(t *testing.T) {
	dir := t.TempDir()
	free, err := FreeBytes(dir)
	if err != nil {
		t.Fatal(err)
	}
	var g SpaceGuard
	if err := g.Check(dir, 0, 1); err != nil {
		t.Fatalf("first check: %v", err)
	}
	if err := g.Check(dir, 0, 1); err != nil {
		t.Fatalf("cached check: %v", err)
	}
	if err := g.Check(dir, free+1<<30, 1); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("minimum above the free space right after a cached answer: %v", err)
	}
	if err := g.Check(dir, 0, free+1<<30); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("a write bigger than the free space: %v", err)
	}
}

// TestBatchCopyFrom: a copy holds the source's entries (after Normalize too) and owns its
// memory: the source's reuse does not change it.
func TestBatchCopyFrom(t *testing.T) {
	var src, dst Batch
	dst.Put([]byte("old"), []byte("x"))
	src.Put([]byte("b"), []byte("1"))
	src.Delete([]byte("a"))
	src.Put([]byte("b"), []byte("2"))
	src.Normalize()
	dst.CopyFrom(&src)
	src.Reset()
	src.Put([]byte("a"), []byte("garbage"))
	if dst.Len() != 2 {
		t.Fatalf("copy has %d entries, want 2", dst.Len())
	}
	if k, _, del := dst.Entry(0); string(k) != "a" || !del {
		t.Fatalf("entry 0: %q del=%v", k, del)
	}
	if k, v, del := dst.Entry(1); string(k) != "b" || string(v) != "2" || del {
		t.Fatalf("entry 1: %q=%q del=%v", k, v, del)
	}
}

// TestBatchAppend: Append adds another batch's writes after the batch's own, deletes
// included, copying them (the source's later writes do not show).
func TestBatchAppend(t *testing.T) {
	var src, dst Batch
	dst.Put([]byte("c"), []byte("0"))
	src.Put([]byte("b"), []byte("1"))
	src.Delete([]byte("a"))
	dst.Append(&src)
	src.Reset()
	src.Put([]byte("b"), []byte("garbage"))
	want := []struct {
		k, v string
		del  bool
	}{{"c", "0", false}, {"b", "1", false}, {"a", "", true}}
	if dst.Len() != len(want) {
		t.Fatalf("%d entries, want %d", dst.Len(), len(want))
	}
	for i, w := range want {
		if k, v, del := dst.Entry(i); string(k) != w.k || string(v) != w.v || del != w.del {
			t.Fatalf("entry %d: %q=%q del=%v, want %q=%q del=%v", i, k, v, del, w.k, w.v, w.del)
		}
	}
	if got := dst.Key(2); string(got) != "a" {
		t.Fatalf("Key(2) = %q", got)
	}
}
