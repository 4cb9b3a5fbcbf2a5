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
