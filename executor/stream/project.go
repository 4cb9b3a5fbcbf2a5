package stream

import (
	"context"
	"fmt"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
)

// projectExec computes one output column per expression, vectorised over
// each chunk, keeping the rows' ops. An update pair whose output stream key
// differs between its halves becomes a Delete and an Insert.
type projectExec struct {
	in    Executor
	exprs []expr.Expr
	ts    []types.T
	key   []int
	// wmOut[c] is the output column that is input column c unchanged (-1: none), for watermarks.
	wmOut []int

	ectx    expr.Ctx
	lenient lenientEval
	tmp     types.Vector
}

// NewProject returns the executor of a StreamProject.
func NewProject(actx *ActorContext, n *plan.StreamProject, in Executor) (Executor, error) {
	if len(n.Exprs) != len(n.Out) {
		return nil, fmt.Errorf("project: %d expressions for %d output columns", len(n.Exprs), len(n.Out))
	}
	e := &projectExec{in: in, exprs: n.Exprs, ts: plan.Types(n.Out), key: n.Key, lenient: newLenientEval(actx)}
	for j, x := range n.Exprs {
		if xt := x.Type(); xt.Physical() != e.ts[j].Physical() && xt.ID != types.Unknown {
			return nil, fmt.Errorf("project: expression %s of type %s for a %s column", x, xt, e.ts[j])
		}
	}
	for _, k := range n.Key {
		if k < 0 || k >= len(e.ts) {
			return nil, fmt.Errorf("project: stream key column %d out of %d", k, len(e.ts))
		}
	}
	e.wmOut = make([]int, len(in.Schema()))
	for i := range e.wmOut {
		e.wmOut[i] = -1
	}
	for j, x := range n.Exprs {
		if ref, ok := x.(*expr.ColumnRef); ok && ref.Index < len(e.wmOut) && e.wmOut[ref.Index] < 0 {
			e.wmOut[ref.Index] = j
		}
	}
	return e, nil
}

func (e *projectExec) Schema() []types.T { return e.ts }

func (e *projectExec) Next(ctx context.Context) (Message, error) {
	for {
		m, err := e.in.Next(ctx)
		if err != nil {
			return m, err
		}
		switch {
		case m.Partial:
			return m, nil // folded below for the local aggregation above
		case m.Chunk != nil:
			c := compactChanges(m.Chunk) // never evaluate over rows that are not in the stream
			if c.Len() == 0 {
				continue
			}
			out, err := e.project(c)
			if err != nil {
				return Message{}, fmt.Errorf("project: %w", err)
			}
			return ChunkMsg(out), nil
		case m.Watermark != nil:
			if m.Watermark.Col < len(e.wmOut) && e.wmOut[m.Watermark.Col] >= 0 {
				return WatermarkMsg(&Watermark{Col: e.wmOut[m.Watermark.Col], Val: m.Watermark.Val}), nil
			}
		default:
			return m, nil
		}
	}
}

func (e *projectExec) project(c *types.Chunk) (*types.Chunk, error) {
	n := c.Len()
	out := &types.Chunk{Cols: make([]types.Vector, len(e.exprs))}
	for j, x := range e.exprs {
		// A bare column shares the input's vector: chunks are immutable once sent.
		if ref, ok := x.(*expr.ColumnRef); ok && c.Cols[ref.Index].Type.Physical() == e.ts[j].Physical() {
			out.Cols[j] = c.Cols[ref.Index]
			out.Cols[j].Type = e.ts[j]
			continue
		}
		if x.Type().Physical() != e.ts[j].Physical() {
			// An untyped literal (or NULL) where the column wants another layout.
			e.tmp.Init(x.Type(), n)
			if err := e.lenient.eval(&e.ectx, x, c, &e.tmp); err != nil {
				return nil, err
			}
			out.Cols[j].Init(e.ts[j], n)
			if err := conformVector(&out.Cols[j], &e.tmp, n); err != nil {
				return nil, err
			}
			continue
		}
		out.Cols[j].Init(e.ts[j], n)
		if err := e.lenient.eval(&e.ectx, x, c, &out.Cols[j]); err != nil {
			return nil, err
		}
	}
	out.SetLen(n)
	out.Ops = splitKeyChanges(c.Ops, out, e.key)
	return out, nil
}

// splitKeyChanges returns ops for out (whose rows are ops' rows): an update
// pair whose key columns differ becomes Delete + Insert, and a lone update
// half becomes a Delete or an Insert. ops is copied only when something changes.
func splitKeyChanges(ops []types.Op, out *types.Chunk, key []int) []types.Op {
	if ops == nil {
		return nil
	}
	res := ops
	set := func(i int, op types.Op) {
		if &res[0] == &ops[0] {
			res = append([]types.Op(nil), ops...)
		}
		res[i] = op
	}
	for i := 0; i < len(ops); i++ {
		switch ops[i] {
		case types.OpUpdateDelete:
			if i+1 < len(ops) && ops[i+1] == types.OpUpdateInsert {
				if !rowsEqualAt(out, key, i, i+1) {
					set(i, types.OpDelete)
					set(i+1, types.OpInsert)
				}
				i++
				continue
			}
			set(i, types.OpDelete)
		case types.OpUpdateInsert:
			set(i, types.OpInsert)
		}
	}
	return res
}

// rowsEqualAt reports whether rows i and j of c agree on cols (NULL equal to NULL).
func rowsEqualAt(c *types.Chunk, cols []int, i, j int) bool {
	for _, k := range cols {
		if !vecEqualAt(&c.Cols[k], i, &c.Cols[k], j) {
			return false
		}
	}
	return true
}

// vecEqualAt reports whether row i of a equals row j of b (same layout),
// NULL equal to NULL, as keys compare.
func vecEqualAt(a *types.Vector, i int, b *types.Vector, j int) bool {
	if a.Nulls[i] || b.Nulls[j] {
		return a.Nulls[i] && b.Nulls[j]
	}
	return types.CompareAt(a, i, b, j) == 0
}

// conformVector appends src's n rows to dst when their layouts differ: NULLs
// stay NULL and strings of undecided type are read as dst's text form.
func conformVector(dst, src *types.Vector, n int) error {
	var d types.Datum
	for i := 0; i < n; i++ {
		src.GetInto(i, &d)
		if err := conformDatum(&d, src.Type, dst.Type); err != nil {
			return err
		}
		dst.Append(&d)
	}
	return nil
}

// conformDatum makes d, a value of type from, fit a column of type to.
func conformDatum(d *types.Datum, from, to types.T) error {
	if d.Null || from.Physical() == to.Physical() && from.ID != types.Unknown {
		return nil
	}
	if from.ID == types.Unknown {
		if to.ID == types.Unknown || to.ID == types.Varchar {
			return nil
		}
		v, err := types.ParseText(to, d.S)
		if err != nil {
			return err
		}
		*d = v
		return nil
	}
	return types.Errorf(types.ErrInternal, "a %s value in a %s column", from, to)
}

// nextChange finds the next change of c at or after row i, skipping
// invisible rows: a single row r (pair < 0) with op Insert or Delete (a lone
// update half counts as one of those), or an update pair (r, pair) with op
// UpdateDelete. At the end it returns r = c.Len().
func nextChange(c *types.Chunk, i int) (r, pair int, op types.Op) {
	n := c.Len()
	for i < n && !c.Visible(i) {
		i++
	}
	if i >= n {
		return n, -1, types.OpInsert
	}
	switch op := c.Op(i); op {
	case types.OpUpdateDelete:
		if i+1 < n && c.Visible(i+1) && c.Op(i+1) == types.OpUpdateInsert {
			return i, i + 1, types.OpUpdateDelete
		}
		return i, -1, types.OpDelete
	case types.OpUpdateInsert:
		return i, -1, types.OpInsert
	default:
		return i, -1, op
	}
}

// compactChanges returns the visible rows of c as a chunk without a
// visibility mask (c itself when all are visible). An update half whose
// partner is invisible becomes a Delete or an Insert.
func compactChanges(c *types.Chunk) *types.Chunk {
	if c.Vis == nil {
		return c
	}
	n := c.Len()
	out := types.NewChunk(c.Types(), c.NumVisible())
	for i := 0; i < n; {
		r, p, op := nextChange(c, i)
		if r >= n {
			break
		}
		if p < 0 {
			appendRowAs(out, c, r, op)
			i = r + 1
			continue
		}
		out.AppendFrom(c, r)
		out.AppendFrom(c, p)
		i = p + 1
	}
	return out
}

// appendRowAs copies row i of src to the end of out with op.
func appendRowAs(out, src *types.Chunk, i int, op types.Op) {
	out.AppendFrom(src, i)
	if op == src.Op(i) {
		return
	}
	if out.Ops == nil {
		out.Ops = make([]types.Op, out.Len(), out.Len()+types.DefaultChunkSize)
	}
	out.Ops[out.Len()-1] = op
}
