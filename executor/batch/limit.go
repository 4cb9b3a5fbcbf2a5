package batch

import (
	"context"
	"io"
	"math"

	"github.com/cockroachdb/apd/v3"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
)

// limitExec skips Offset rows, then passes at most Count rows. Both are
// evaluated on the first Next (they may be parameters); once Count rows have
// passed it stops pulling its input.
type limitExec struct {
	env   *Env
	node  *plan.Limit
	in    Executor
	out   *types.Chunk
	start bool
	skip  int64 // rows still to skip
	left  int64 // rows still to pass; -1 = unlimited
	// WITH TIES (node.Ties): once left reaches 0, rows equal to last (the
	// last row passed) on the keys still pass; done is set at the first
	// that is not.
	last   []types.Datum
	hasRow bool
	done   bool
}

func newLimit(env *Env, n *plan.Limit, in Executor) *limitExec {
	return &limitExec{env: env, node: n, in: in}
}

func (e *limitExec) Schema() []types.T { return e.in.Schema() }

func (e *limitExec) init() error {
	e.left = -1
	if e.node.Count != nil {
		v, null, err := evalCount(e.env.Ctx, e.node.Count)
		if err != nil {
			return err
		}
		if !null {
			if v < 0 {
				return types.Errorf(types.ErrInvalidLimit, "LIMIT must not be negative")
			}
			e.left = v
		}
	}
	if e.node.Offset != nil {
		v, null, err := evalCount(e.env.Ctx, e.node.Offset)
		if err != nil {
			return err
		}
		if !null {
			if v < 0 {
				return types.Errorf(types.ErrInvalidOffset, "OFFSET must not be negative")
			}
			e.skip = v
		}
	}
	return nil
}

// evalCount evaluates a LIMIT or OFFSET expression to an integer.
func evalCount(ctx *expr.Ctx, x expr.Expr) (v int64, null bool, err error) {
	d, err := x.EvalRow(ctx, nil)
	if err != nil || d.Null {
		return 0, d.Null, err
	}
	switch t := x.Type(); t.Physical() {
	case types.PhysI64:
		return d.I, false, nil
	case types.PhysF64:
		f := math.RoundToEven(d.F)
		if math.IsNaN(f) || f >= math.MaxInt64 || f < math.MinInt64 {
			return 0, false, types.Errorf(types.ErrNumericOutOfRange, "bigint out of range")
		}
		return int64(f), false, nil
	case types.PhysDec:
		var r apd.Decimal
		if _, err := types.DecimalContext.RoundToIntegralValue(&r, &d.Dec); err != nil {
			return 0, false, types.Errorf(types.ErrNumericOutOfRange, "bigint out of range")
		}
		i, err := r.Int64()
		if err != nil {
			return 0, false, types.Errorf(types.ErrNumericOutOfRange, "bigint out of range")
		}
		return i, false, nil
	default:
		return 0, false, types.Errorf(types.ErrDatatypeMismatch, "argument of LIMIT must be type bigint, not type %s", t.SQLName())
	}
}

func (e *limitExec) Next(ctx context.Context) (*types.Chunk, error) {
	if !e.start {
		e.start = true
		if err := e.init(); err != nil {
			return nil, err
		}
	}
	if e.node.Ties != nil {
		return e.nextWithTies(ctx)
	}
	for {
		if e.left == 0 {
			return nil, io.EOF
		}
		if err := checkCtx(ctx); err != nil {
			return nil, err
		}
		c, err := e.in.Next(ctx)
		if err != nil {
			return nil, err
		}
		vis := int64(c.NumVisible())
		if vis == 0 {
			continue
		}
		if e.skip >= vis {
			e.skip -= vis
			continue
		}
		if e.skip == 0 && (e.left < 0 || e.left >= vis) {
			if e.left > 0 {
				e.left -= vis
			}
			return c, nil
		}
		// Part of the chunk: copy the rows in [skip, skip+left) among the visible ones.
		if e.out == nil {
			e.out = types.NewChunk(e.in.Schema(), types.DefaultChunkSize)
		}
		e.out.Reset()
		for i := 0; i < c.Len() && e.left != 0; i++ {
			if !c.Visible(i) {
				continue
			}
			if e.skip > 0 {
				e.skip--
				continue
			}
			e.out.AppendFrom(c, i)
			if e.left > 0 {
				e.left--
			}
		}
		return e.out, nil
	}
}

// nextWithTies is Next for FETCH ... WITH TIES: row by row, so that the rows
// after the Count-th can be compared with it.
func (e *limitExec) nextWithTies(ctx context.Context) (*types.Chunk, error) {
	if e.out == nil {
		e.out = types.NewChunk(e.in.Schema(), types.DefaultChunkSize)
	}
	for {
		if e.done || (e.left == 0 && !e.hasRow) {
			return nil, io.EOF
		}
		if err := checkCtx(ctx); err != nil {
			return nil, err
		}
		c, err := e.in.Next(ctx)
		if err != nil {
			return nil, err
		}
		e.out.Reset()
		for i := 0; i < c.Len() && !e.done; i++ {
			if !c.Visible(i) {
				continue
			}
			if e.skip > 0 {
				e.skip--
				continue
			}
			if e.left == 0 {
				if !e.tied(c, i) {
					e.done = true
					break
				}
				e.out.AppendFrom(c, i)
				continue
			}
			e.out.AppendFrom(c, i)
			if e.left > 0 {
				e.left--
			}
			if e.left == 0 {
				e.last = e.last[:0]
				for _, k := range e.node.Ties {
					var d types.Datum
					c.Cols[k.Col].GetInto(i, &d)
					e.last = append(e.last, d.Copy())
				}
				e.hasRow = true
			}
		}
		if e.out.Len() > 0 {
			return e.out, nil
		}
	}
}

// tied reports whether row i of c equals the last row passed on the ORDER BY
// keys (NULLs are peers, as in sorting).
func (e *limitExec) tied(c *types.Chunk, i int) bool {
	var d types.Datum
	for k, key := range e.node.Ties {
		c.Cols[key.Col].GetInto(i, &d)
		l := &e.last[k]
		if d.Null || l.Null {
			if d.Null != l.Null {
				return false
			}
			continue
		}
		if types.CompareNonNull(c.Cols[key.Col].Type, &d, l) != 0 {
			return false
		}
	}
	return true
}

func (e *limitExec) Close() error { return e.in.Close() }
