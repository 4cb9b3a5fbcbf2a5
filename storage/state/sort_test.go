package state

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// sortByVnode orders rows of several interleaved writers (runs), each in key order or not, as
// a comparison sort does.
func TestSortByVnodeMergesRuns(t *testing.T) {
	seed := uint64(rand.Int64())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	for round := range 200 {
		runs := 1 + rng.IntN(maxMergedRuns+2) // beyond maxMergedRuns too
		sorted := rng.IntN(4) > 0             // each run's rows in key order, mostly
		parts := make([][]freshRow, runs)
		used := map[string]bool{}
		for r := range runs {
			for range rng.IntN(300) {
				// Keys of one table in a few vnodes; the runs' ranges are disjoint (a
				// parallel copy's) every other round and overlap in the others.
				id := rng.IntN(5000)
				if round%2 == 0 {
					id += r * 5000
				}
				k := fmt.Sprintf("tabl%c%c%08d", 0, rng.IntN(4), id)
				if !used[k] {
					used[k] = true
					parts[r] = append(parts[r], freshRow{key: k, run: uint32(r)})
				}
			}
			if sorted {
				slices.SortFunc(parts[r], compareFresh)
			}
		}
		// The runs' rows interleaved at random, each run's in its order.
		var rows []freshRow
		for {
			var left []int
			for r := range parts {
				if len(parts[r]) > 0 {
					left = append(left, r)
				}
			}
			if len(left) == 0 {
				break
			}
			r := left[rng.IntN(len(left))]
			rows = append(rows, parts[r][0])
			parts[r] = parts[r][1:]
		}
		want := slices.Clone(rows)
		slices.SortFunc(want, compareFresh)
		got := sortByVnode(slices.Clone(rows), freshKey, freshRun, compareFresh)
		if !slices.EqualFunc(got, want, func(a, b freshRow) bool { return a.key == b.key && a.run == b.run }) {
			t.Fatalf("round %d (%d runs, sorted %v): sortByVnode differs from a sort", round, runs, sorted)
		}
	}
}
