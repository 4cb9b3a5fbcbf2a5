package batch

import (
	"context"
	"io"
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
	for i := 0; i < c.Len(); i++ {
		perm = append(perm, int32(i))
	}
	slices.SortStableFunc(perm, func(a, b int32) int { return cmpKeys(c, keys, int(a), int(b)) })
	return perm
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
