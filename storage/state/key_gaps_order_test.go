package state

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/tributary/tributary/e2e/testseed"
	"github.com/tributary/tributary/storage/memkv"
)

// TestKeyGapsSortedApart: a vnode's key gaps stay sorted and apart (each
// one's hi at most the next one's lo) through adds that overlap others, the
// table's writes narrowing them and evictions; and no key a gap holds was
// written after the gap was found, none outside the ranges its seeks found.
func TestKeyGapsSortedApart(t *testing.T) {
	seed := testseed.For(t)
	rng := rand.New(rand.NewPCG(seed, 17))
	tbl, _ := writerTable(t, memkv.New())
	const v = 3
	key := func(n int) string { return fmt.Sprintf("\x00\x00\x00\x29\x00\x03%06d", n) }
	type found struct{ lo, hi int }
	var seen []found          // every range added
	written := map[int]bool{} // keys written since
	for round := range 3000 {
		if rng.IntN(3) == 0 {
			lo := rng.IntN(1000)
			hi := lo + 1 + rng.IntN(60)
			tbl.addKeyGap(v, key(lo), key(hi), 1)
			seen = append(seen, found{lo, hi})
			for k := lo; k < hi; k++ {
				delete(written, k) // the seek found none stored: the model forgets it
			}
		} else {
			k := rng.IntN(1100)
			tbl.narrowGaps(v, key(k))
			written[k] = true
		}
		var gs []rowGap
		if tbl.keyGaps != nil {
			gs = tbl.keyGaps[v]
		}
		if len(gs) > maxKeyGaps {
			t.Fatalf("seed %d round %d: %d gaps", seed, round, len(gs))
		}
		for i := range gs {
			if gs[i].hi == "" || gs[i].empty() || i > 0 && gs[i-1].hi > gs[i].lo {
				t.Fatalf("seed %d round %d: gaps not sorted and apart: %+v", seed, round, gs)
			}
		}
		for k := range 1100 {
			if !tbl.inKeyGap(v, key(k), 1) {
				continue
			}
			if written[k] {
				t.Fatalf("seed %d round %d: key %d written after its gap was found is in a gap", seed, round, k)
			}
			in := false
			for _, f := range seen {
				in = in || f.lo <= k && k < f.hi
			}
			if !in {
				t.Fatalf("seed %d round %d: key %d in a gap no seek found", seed, round, k)
			}
		}
	}
}
