package batch

import (
	"hash/maphash"
	"math"

	"github.com/tributary/tributary/sql/types"
)

// Helpers comparing and hashing vector rows in place, without building datums.
// Both vectors of a comparison share one physical layout.

// cmpNonNull orders row i of a against row j of b, both non-NULL.
func cmpNonNull(a *types.Vector, i int, b *types.Vector, j int) int {
	return types.CompareAt(a, i, b, j)
}

// eqVal reports whether row i of a equals row j of b, NULL equal to NULL (as
// GROUP BY, DISTINCT and set operations need).
func eqVal(a *types.Vector, i int, b *types.Vector, j int) bool {
	an, bn := a.Nulls[i], b.Nulls[j]
	if an || bn {
		return an && bn
	}
	switch a.Type.Physical() {
	case types.PhysI64:
		return a.I64[i] == b.I64[j]
	case types.PhysStr:
		if a.Type.ID != types.Array {
			return a.Str[i] == b.Str[j]
		}
	}
	return cmpNonNull(a, i, b, j) == 0
}

// eqRow reports whether the cols of row i of a equal the key columns (0..n) of row j of keys.
func eqRow(a *types.Chunk, cols []int, i int, keys *types.Chunk, j int) bool {
	for k, c := range cols {
		if !eqVal(&a.Cols[c], i, &keys.Cols[k], j) {
			return false
		}
	}
	return true
}

// eqCols reports whether the acols of row i of a equal the bcols of row j of b.
func eqCols(a *types.Chunk, acols []int, i int, b *types.Chunk, bcols []int, j int) bool {
	for k, c := range acols {
		if !eqVal(&a.Cols[c], i, &b.Cols[bcols[k]], j) {
			return false
		}
	}
	return true
}

// hashSeed keys the in-memory hash tables; these hashes are never persisted.
var hashSeed = maphash.MakeSeed()

const nullHash = 0x9e3779b97f4a7c15

func mix(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// hashRows sets hs[r] to the hash of the cols of row r of c, for every row
// (visible or not), consistently with eqVal: equal values hash equal.
func hashRows(c *types.Chunk, cols []int, hs []uint64) []uint64 {
	n := c.Len()
	if cap(hs) < n {
		hs = make([]uint64, n)
	}
	hs = hs[:n]
	for r := range hs {
		hs[r] = 0
	}
	var d types.Datum
	for _, col := range cols {
		v := &c.Cols[col]
		switch v.Type.Physical() {
		case types.PhysI64:
			for r := 0; r < n; r++ {
				x := uint64(v.I64[r])
				if v.Nulls[r] {
					x = nullHash
				}
				hs[r] = mix(hs[r]*31 + x)
			}
		case types.PhysF64:
			for r := 0; r < n; r++ {
				f := v.F64[r]
				x := math.Float64bits(f)
				switch {
				case v.Nulls[r]:
					x = nullHash
				case f == 0:
					x = 0 // -0 = +0
				case math.IsNaN(f):
					x = 0x7ff8000000000001
				}
				hs[r] = mix(hs[r]*31 + x)
			}
		case types.PhysStr:
			if v.Type.ID == types.Array {
				hashCanonical(v, hs, &d)
				continue
			}
			for r := 0; r < n; r++ {
				x := uint64(nullHash)
				if !v.Nulls[r] {
					x = maphash.String(hashSeed, v.Str[r])
				}
				hs[r] = mix(hs[r]*31 + x)
			}
		default: // numeric (1.0 = 1.00) and interval: the type's own canonical hash
			hashCanonical(v, hs, &d)
		}
	}
	return hs
}

// hashCanonical mixes the type's own hash (types.Hash, consistent with
// types.Compare) of each row of v into hs.
func hashCanonical(v *types.Vector, hs []uint64, d *types.Datum) {
	for r := range hs {
		x := uint64(nullHash)
		if !v.Nulls[r] {
			v.GetInto(r, d)
			x = types.Hash(v.Type, d)
		}
		hs[r] = mix(hs[r]*31 + x)
	}
}

// anyNull reports whether any of the cols of row i is NULL.
func anyNull(c *types.Chunk, cols []int, i int) bool {
	for _, col := range cols {
		if v := &c.Cols[col]; v.Nulls[i] || v.Type.ID == types.Struct && types.HasNullField(v.Type, &types.Datum{S: v.Str[i]}) {
			return true // a struct with a NULL field equals nothing either
		}
	}
	return false
}

// keyTable maps distinct keys (some columns of input rows) to dense group
// numbers 0, 1, ... in order of first appearance. Keys are copied into a
// columnar store, so looking up a row costs a hash and a vector comparison.
type keyTable struct {
	keys  *types.Chunk     // row g = key of group g
	heads map[uint64]int32 // hash -> newest group with that hash
	next  []int32          // group -> previous group with the same hash, -1 at end
	hs    []uint64         // scratch: hashes of the current input chunk
}

func newKeyTable(ts []types.T) *keyTable {
	return &keyTable{keys: types.NewChunk(ts, types.DefaultChunkSize), heads: map[uint64]int32{}}
}

// Len returns the number of groups.
func (t *keyTable) Len() int { return t.keys.Len() }

// hash computes the hashes of c's rows for later find/insert calls on that chunk.
func (t *keyTable) hash(c *types.Chunk, cols []int) { t.hs = hashRows(c, cols, t.hs) }

// findOrInsert returns the group of row i of c (hashed by the last hash call),
// adding it when new.
func (t *keyTable) findOrInsert(c *types.Chunk, cols []int, i int) (group int, inserted bool) {
	h := t.hs[i]
	head, ok := t.heads[h]
	if ok {
		for g := head; g >= 0; g = t.next[g] {
			if eqRow(c, cols, i, t.keys, int(g)) {
				return int(g), false
			}
		}
	} else {
		head = -1
	}
	g := t.keys.Len()
	for k, col := range cols {
		t.keys.Cols[k].AppendFrom(&c.Cols[col], i)
	}
	t.keys.SetLen(g + 1)
	t.next = append(t.next, head)
	t.heads[h] = int32(g)
	return g, true
}

// find returns the group of row i of c (hashed by the last hash call), or -1.
func (t *keyTable) find(c *types.Chunk, cols []int, i int) int {
	head, ok := t.heads[t.hs[i]]
	if !ok {
		return -1
	}
	for g := head; g >= 0; g = t.next[g] {
		if eqRow(c, cols, i, t.keys, int(g)) {
			return int(g)
		}
	}
	return -1
}

// seq returns [0, 1, ..., n).
func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}
