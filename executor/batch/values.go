package batch

import (
	"context"
	"io"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
)

// valuesExec produces constant rows, evaluating each expression once.
type valuesExec struct {
	env  *Env
	node *plan.Values
	ts   []types.T
	out  *types.Chunk
	row  []types.Datum
	pos  int
}

func newValues(env *Env, n *plan.Values) *valuesExec {
	ts := plan.Types(n.Out)
	return &valuesExec{env: env, node: n, ts: ts, row: make([]types.Datum, len(ts))}
}

func (e *valuesExec) Schema() []types.T { return e.ts }

func (e *valuesExec) Next(ctx context.Context) (*types.Chunk, error) {
	if err := checkCtx(ctx); err != nil {
		return nil, err
	}
	rows := e.node.Rows
	if e.pos >= len(rows) {
		return nil, io.EOF
	}
	if e.out == nil {
		e.out = types.NewChunk(e.ts, min(len(rows), types.DefaultChunkSize))
	}
	e.out.Reset()
	for ; e.pos < len(rows) && e.out.Len() < types.DefaultChunkSize; e.pos++ {
		if err := evalRow(e.env.Ctx, rows[e.pos], nil, e.row); err != nil {
			return nil, err
		}
		for j, x := range rows[e.pos] {
			if err := conform(&e.row[j], x.Type(), e.ts[j]); err != nil {
				return nil, err
			}
		}
		e.out.AppendRow(e.row)
	}
	return e.out, nil
}

// evalRow evaluates exprs over one input row into out.
func evalRow(ctx *expr.Ctx, exprs []expr.Expr, in, out []types.Datum) error {
	for i, x := range exprs {
		d, err := x.EvalRow(ctx, in)
		if err != nil {
			return err
		}
		out[i] = d
	}
	return nil
}

func (e *valuesExec) Close() error { return nil }

// conform makes d, a value of type from, fit a column of type to: a string
// literal of undecided type is read as to's text form; other values must
// already have to's layout (the binder casts them).
func conform(d *types.Datum, from, to types.T) error {
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
	return types.Errorf(types.ErrInternal, "VALUES: a %s value in a %s column", from, to)
}

// conformVector appends src's rows to dst (typed as the column needs) when
// their layouts differ: NULLs stay NULL and strings of undecided type are
// read as dst's text form (see conform).
func conformVector(dst, src *types.Vector, n int) error {
	var d types.Datum
	for i := 0; i < n; i++ {
		src.GetInto(i, &d)
		if err := conform(&d, src.Type, dst.Type); err != nil {
			return err
		}
		dst.Append(&d)
	}
	return nil
}
