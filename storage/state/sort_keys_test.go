package state

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tributary/tributary/e2e/testseed"
	"github.com/tributary/tributary/sql/types"
)

// TestSortKeys: sortKeys orders row keys of one table as a comparison sort does (keys of every
// vnode, repeated keys, one vnode only), and keys of two tables too (its fallback).
func TestSortKeys(t *testing.T) {
	seed := testseed.For(t)
	rng := rand.New(rand.NewPCG(seed, 11))
	tbl, _ := writerTable(t, nil)
	other, err := New(nil, Schema{TableID: 42, Types: []types.T{types.TInt64, types.TInt64, types.TVarchar}, PK: []int{0, 1}, DistKey: []int{0}})
	if err != nil {
		t.Fatal(err)
	}
	for round := range 200 {
		n := 1 + rng.IntN(300)
		keys := make([][]byte, n)
		for i := range keys {
			a := rng.Int64N(1 + int64(rng.IntN(2000)))
			row := []types.Datum{types.DInt(a), types.DInt(rng.Int64N(50)), types.DString("")}
			if round%10 == 9 && rng.IntN(4) == 0 {
				keys[i] = other.RowKey(nil, row)
			} else {
				keys[i] = tbl.RowKey(nil, row)
			}
		}
		order := rng.Perm(n)
		want := slices.Clone(order)
		slices.SortFunc(want, func(a, b int) int { return bytes.Compare(keys[a], keys[b]) })
		sortKeys(order, keys)
		for i := range order {
			if !bytes.Equal(keys[order[i]], keys[want[i]]) {
				t.Fatalf("seed %d round %d: position %d holds %x, want %x", seed, round, i, keys[order[i]], keys[want[i]])
			}
		}
	}
}
