package batch

import (
	"context"
	"io"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/types"
)

// setOpExec combines its inputs with SQL multiset semantics, NULLs equal.
// UNION ALL streams the inputs one after another; UNION streams the first
// occurrence of each row. INTERSECT and EXCEPT [ALL] fold left to right
// ((a op b) op c): they count each distinct row's occurrences per input,
// then yield every row as many times as its final count, in order of first
// appearance in the first input.
type setOpExec struct {
	kind    plan.SetOpKind
	all     bool
	ins     []Executor
	ts      []types.T
	cols    []int
	cur     int // input being read (UNION)
	seen    *keyTable
	counts  []int64 // per group of seen: rows to yield (INTERSECT, EXCEPT)
	built   bool
	group   int   // next group to yield
	rep     int64 // copies of group already yielded
	out     *types.Chunk
	scratch *types.Chunk
}

func newSetOp(n *plan.SetOp, ins []Executor) *setOpExec {
	ts := plan.Types(n.Out)
	return &setOpExec{kind: n.Kind, all: n.All, ins: ins, ts: ts, cols: seq(len(ts)), seen: newKeyTable(ts)}
}

func (e *setOpExec) Schema() []types.T { return e.ts }

func (e *setOpExec) Next(ctx context.Context) (*types.Chunk, error) {
	if e.kind == plan.Union {
		return e.nextUnion(ctx)
	}
	if !e.built {
		e.built = true
		if err := e.build(ctx); err != nil {
			return nil, err
		}
		e.out = types.NewChunk(e.ts, types.DefaultChunkSize)
	}
	if err := checkCtx(ctx); err != nil {
		return nil, err
	}
	e.out.Reset()
	for e.group < len(e.counts) && e.out.Len() < types.DefaultChunkSize {
		if e.rep >= e.counts[e.group] {
			e.group++
			e.rep = 0
			continue
		}
		e.out.AppendFrom(e.seen.keys, e.group)
		e.rep++
	}
	if e.out.Len() == 0 {
		return nil, io.EOF
	}
	return e.out, nil
}

func (e *setOpExec) nextUnion(ctx context.Context) (*types.Chunk, error) {
	for e.cur < len(e.ins) {
		if err := checkCtx(ctx); err != nil {
			return nil, err
		}
		c, err := e.ins[e.cur].Next(ctx)
		if isEOF(err) {
			e.cur++
			continue
		}
		if err != nil {
			return nil, err
		}
		if e.all {
			if c.NumVisible() > 0 {
				return c, nil
			}
			continue
		}
		c = visibleRows(c, &e.scratch)
		if out := dedup(c, e.cols, e.seen, &e.out); out != nil {
			return out, nil
		}
	}
	return nil, io.EOF
}

// build counts the rows of every input and folds the counts.
func (e *setOpExec) build(ctx context.Context) error {
	var other []int64 // per group: occurrences in the input being read
	for k, in := range e.ins {
		for g := range other {
			other[g] = 0
		}
		for {
			if err := checkCtx(ctx); err != nil {
				return err
			}
			c, err := in.Next(ctx)
			if isEOF(err) {
				break
			}
			if err != nil {
				return err
			}
			c = visibleRows(c, &e.scratch)
			e.seen.hash(c, e.cols)
			for i := 0; i < c.Len(); i++ {
				if k == 0 {
					g, inserted := e.seen.findOrInsert(c, e.cols, i)
					if inserted {
						e.counts = append(e.counts, 0)
					}
					e.counts[g]++
					continue
				}
				if g := e.seen.find(c, e.cols, i); g >= 0 {
					other[g]++
				}
			}
		}
		if k == 0 {
			if !e.all {
				for g := range e.counts {
					e.counts[g] = 1
				}
			}
			other = make([]int64, len(e.counts))
			continue
		}
		for g, n := range e.counts {
			e.counts[g] = e.fold(n, other[g])
		}
	}
	return nil
}

// fold combines a row's count so far (left) with its count in the next input.
func (e *setOpExec) fold(left, right int64) int64 {
	if e.kind == plan.Intersect {
		if !e.all {
			right = min(right, 1)
		}
		return min(left, right)
	}
	if !e.all {
		if right > 0 {
			return 0
		}
		return left
	}
	return max(left-right, 0)
}

func (e *setOpExec) Close() error { return closeAll(e.ins) }
