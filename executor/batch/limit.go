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
				return types.Errorf(types.ErrInvalidParameter, "LIMIT must not be negative")
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
				return types.Errorf(types.ErrInvalidParameter, "OFFSET must not be negative")
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

func (e *limitExec) Close() error { return e.in.Close() }
