package keyfilter

import (
	"math/rand/v2"
	"testing"
)

// TestFilter: every hash added is found; hashes never added are found rarely, whatever the
// first part's size; the filter stays near 10 bits a key.
func TestFilter(t *testing.T) {
	const seed = 20261204
	t.Logf("seed %d", seed)
	for _, first := range []int{0, 1024} {
		rng := rand.New(rand.NewPCG(seed, uint64(first)))
		f := Filter{First: first}
		added := map[uint64]bool{}
		for range 300_000 {
			h := rng.Uint64()
			f.Add(h)
			added[h] = true
		}
		for h := range added {
			if !f.MayContain(h) {
				t.Fatalf("first %d: hash %x added but not found", first, h)
			}
		}
		fp := 0
		const n = 100_000
		for range n {
			if h := rng.Uint64(); !added[h] && f.MayContain(h) {
				fp++
			}
		}
		// About 1% per full part: 4 parts at 300k keys from 64k, 9 from 1k.
		limit := 0.06
		if first > 0 {
			limit = 0.12
		}
		if rate := float64(fp) / n; rate > limit {
			t.Errorf("first %d: false positives %.3f, want below %.2f", first, rate, limit)
		}
		if b := f.Bytes(); b > 300_000*4 {
			t.Errorf("first %d: a filter of 300k keys takes %d bytes", first, b)
		}
	}
	var empty Filter
	if empty.MayContain(1) || empty.Bytes() != 0 {
		t.Error("an empty filter contains a hash or takes bytes")
	}
}
