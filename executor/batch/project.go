package batch

import (
	"context"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
)

// projectExec computes one output column per expression over each input chunk.
type projectExec struct {
	env     *Env
	node    *plan.Project
	in      Executor
	ts      []types.T
	out     *types.Chunk
	scratch *types.Chunk
	tmp     types.Vector
}

func newProject(env *Env, n *plan.Project, in Executor) *projectExec {
	return &projectExec{env: env, node: n, in: in, ts: plan.Types(n.Out)}
}

func (e *projectExec) Schema() []types.T { return e.ts }

func (e *projectExec) Next(ctx context.Context) (*types.Chunk, error) {
	for {
		if err := checkCtx(ctx); err != nil {
			return nil, err
		}
		c, err := e.in.Next(ctx)
		if err != nil {
			return nil, err
		}
		c = visibleRows(c, &e.scratch)
		if c.Len() == 0 {
			continue
		}
		if e.out == nil {
			e.out = &types.Chunk{Cols: make([]types.Vector, len(e.node.Exprs))}
		}
		for j, x := range e.node.Exprs {
			// A bare column is shared, not copied: out's vector then aliases the
			// input's, valid as long as the input chunk (until our next Next).
			// Column j is always either shared or evaluated, never both.
			if ref, ok := x.(*expr.ColumnRef); ok && c.Cols[ref.Index].Type.Physical() == ref.Typ.Physical() {
				e.out.Cols[j] = c.Cols[ref.Index]
				continue
			}
			if t := e.ts[j]; x.Type().Physical() != t.Physical() {
				// An untyped literal (or NULL) where the column wants another layout.
				if err := evalInto(e.env, x, c, &e.tmp); err != nil {
					return nil, err
				}
				e.out.Cols[j].Init(t, c.Len())
				if err := conformVector(&e.out.Cols[j], &e.tmp, c.Len()); err != nil {
					return nil, err
				}
				continue
			}
			if err := evalInto(e.env, x, c, &e.out.Cols[j]); err != nil {
				return nil, err
			}
		}
		e.out.SetLen(c.Len())
		return e.out, nil
	}
}

func (e *projectExec) Close() error { return e.in.Close() }

// evalInto evaluates x over every row of in into out, (re)typing out as x's type.
func evalInto(env *Env, x expr.Expr, in *types.Chunk, out *types.Vector) error {
	if t := x.Type(); out.Nulls == nil || out.Type != t {
		out.Init(t, max(in.Len(), types.DefaultChunkSize))
	} else {
		out.Reset()
	}
	return x.Eval(env.Ctx, in, out)
}

// applyGenerated replaces each generated column i of c (gen[i] non-nil)
// with gen[i] evaluated over c's row (which reads no generated column).
func applyGenerated(env *Env, gen []expr.Expr, c *types.Chunk) error {
	for i, g := range gen {
		if g == nil {
			continue
		}
		var v types.Vector
		if err := evalInto(env, g, c, &v); err != nil {
			return err
		}
		v.Type = c.Cols[i].Type
		c.Cols[i] = v
	}
	return nil
}
