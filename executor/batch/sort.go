package batch

import (
	"cmp"
	"context"
	"io"
	"math"
	"slices"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/types"
)

// sortExec reads its whole input, orders it by the keys (stable, so equal rows
// keep input order) and yields it in chunks.
type sortExec struct {
	keys []plan.SortKey
	in   Executor
	all  *types.Chunk // every input row
	perm []int32      // output order: indexes into all
	pos  int
	done bool
	out  *types.Chunk
}

func newSort(n *plan.Sort, in Executor) *sortExec {
	return &sortExec{keys: n.Keys, in: in}
}

func (e *sortExec) Schema() []types.T { return e.in.Schema() }

func (e *sortExec) Next(ctx context.Context) (*types.Chunk, error) {
	if !e.done {
		e.done = true
		e.all = types.NewChunk(e.in.Schema(), types.DefaultChunkSize)
		if err := drain(ctx, e.in, e.all); err != nil {
			return nil, err
		}
		e.perm = sortedPerm(e.all, e.keys, e.perm)
		e.out = types.NewChunk(e.in.Schema(), types.DefaultChunkSize)
	}
	if err := checkCtx(ctx); err != nil {
		return nil, err
	}
	if e.pos >= len(e.perm) {
		return nil, io.EOF
	}
	e.out.Reset()
	end := min(len(e.perm), e.pos+types.DefaultChunkSize)
	for _, r := range e.perm[e.pos:end] {
		e.out.AppendFrom(e.all, int(r))
	}
	e.pos = end
	return e.out, nil
}

func (e *sortExec) Close() error {
	e.all, e.perm = nil, nil
	return e.in.Close()
}

// sortedPerm returns the row order of c by keys, stable.
func sortedPerm(c *types.Chunk, keys []plan.SortKey, perm []int32) []int32 {
	perm = perm[:0]
	n := c.Len()
	if len(keys) > 0 {
		if p := c.Cols[keys[0].Col].Type.Physical(); p == types.PhysI64 || p == types.PhysF64 {
			return sortedPermNumeric(c, keys, perm)
		}
	}
	for i := 0; i < n; i++ {
		perm = append(perm, int32(i))
	}
	// Ties break on input position: stable, with the faster unstable sort.
	slices.SortFunc(perm, func(a, b int32) int {
		if r := cmpKeys(c, keys, int(a), int(b)); r != 0 {
			return r
		}
		return cmp.Compare(a, b)
	})
	return perm
}

// normKey is a row's first sort key as an unsigned integer in the key's
// direction (rank places NULLs), with the row number.
type normKey struct {
	u    uint64
	rank uint8 // 0: NULL first, 1: value, 2: NULL last
	row  int32
}

// sortedPermNumeric sorts by a first key that is an integer or float column,
// compared as normalised integers, then by the remaining keys and input position.
func sortedPermNumeric(c *types.Chunk, keys []plan.SortKey, perm []int32) []int32 {
	k0, rest := keys[0], keys[1:]
	v := &c.Cols[k0.Col]
	n := c.Len()
	nk := make([]normKey, n)
	nullRank := uint8(2)
	if k0.NullsFirst {
		nullRank = 0
	}
	isFloat := v.Type.Physical() == types.PhysF64
	for i := 0; i < n; i++ {
		k := normKey{rank: 1, row: int32(i)}
		switch {
		case v.Nulls[i]:
			k.rank = nullRank
		case isFloat:
			k.u = floatOrder(v.F64[i])
		default:
			k.u = uint64(v.I64[i]) ^ 1<<63
		}
		if k0.Desc {
			k.u = ^k.u
		}
		nk[i] = k
	}
	slices.SortFunc(nk, func(a, b normKey) int {
		if a.rank != b.rank {
			return cmp.Compare(a.rank, b.rank)
		}
		if a.u != b.u {
			return cmp.Compare(a.u, b.u)
		}
		if len(rest) > 0 {
			if r := cmpKeys(c, rest, int(a.row), int(b.row)); r != 0 {
				return r
			}
		}
		return cmp.Compare(a.row, b.row)
	})
	for _, k := range nk {
		perm = append(perm, k.row)
	}
	return perm
}

// floatOrder maps a float to an unsigned integer in PostgreSQL's order: -0 =
// +0, NaN above +Inf and equal to itself.
func floatOrder(f float64) uint64 {
	if f == 0 {
		f = 0
	}
	if math.IsNaN(f) {
		return math.MaxUint64
	}
	b := math.Float64bits(f)
	if b>>63 == 1 {
		return ^b
	}
	return b | 1<<63
}

// cmpKeys orders rows a and b of c by keys, each with its direction and NULL placement.
func cmpKeys(c *types.Chunk, keys []plan.SortKey, a, b int) int {
	for _, k := range keys {
		v := &c.Cols[k.Col]
		an, bn := v.Nulls[a], v.Nulls[b]
		if an || bn {
			if an && bn {
				continue
			}
			if an == k.NullsFirst {
				return -1
			}
			return 1
		}
		r := cmpNonNull(v, a, v, b)
		if r != 0 {
			if k.Desc {
				return -r
			}
			return r
		}
	}
	return 0
}
