package batch

import (
	"context"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/types"
)

// initPlanExec runs a query's init plans (uncorrelated subqueries) on its
// first Next, storing each value in the parameters, then yields root's rows.
type initPlanExec struct {
	env   *Env
	root  Executor
	kinds []plan.InitPlanKind
	plans []Executor
	base  int
	done  bool
}

func withInitPlans(env *Env, root Executor, inits []plan.InitPlan, base int) (Executor, error) {
	if len(inits) == 0 {
		return root, nil
	}
	e := &initPlanExec{env: env, root: root, base: base}
	for _, ip := range inits {
		x, err := build(env, ip.Plan)
		if err != nil {
			closeAll(e.plans)
			root.Close()
			return nil, err
		}
		e.plans = append(e.plans, x)
		e.kinds = append(e.kinds, ip.Kind)
	}
	return e, nil
}

func (e *initPlanExec) Schema() []types.T { return e.root.Schema() }

func (e *initPlanExec) Next(ctx context.Context) (*types.Chunk, error) {
	if !e.done {
		e.done = true
		if err := e.run(ctx); err != nil {
			return nil, err
		}
	}
	return e.root.Next(ctx)
}

// run evaluates every init plan in order (a later one may use an earlier one's value).
func (e *initPlanExec) run(ctx context.Context) error {
	need := e.base + len(e.plans)
	if p := e.env.Ctx.Params; len(p) < need {
		grown := make([]types.Datum, need)
		copy(grown, p)
		e.env.Ctx.Params = grown
	}
	for i, x := range e.plans {
		if e.kinds[i] == plan.ListSubquery {
			list, err := runListPlan(ctx, x)
			e.plans[i] = nil
			if cerr := x.Close(); err == nil && cerr != nil {
				err = cerr
			}
			if err != nil {
				return err
			}
			for len(e.env.Ctx.Lists) <= i {
				e.env.Ctx.Lists = append(e.env.Ctx.Lists, nil)
			}
			e.env.Ctx.Lists[i] = list
			continue
		}
		v, err := runInitPlan(ctx, e.kinds[i], x)
		e.plans[i] = nil
		if cerr := x.Close(); err == nil && cerr != nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		e.env.Ctx.Params[e.base+i] = v
	}
	return nil
}

func runInitPlan(ctx context.Context, kind plan.InitPlanKind, x Executor) (types.Datum, error) {
	var (
		v     = types.NullDatum
		found bool
	)
	for {
		if err := checkCtx(ctx); err != nil {
			return v, err
		}
		c, err := x.Next(ctx)
		if isEOF(err) {
			break
		}
		if err != nil {
			return v, err
		}
		for i := 0; i < c.Len(); i++ {
			if !c.Visible(i) {
				continue
			}
			if kind == plan.ExistsSubquery {
				return types.DBool(true), nil
			}
			if found {
				return v, types.Errorf(types.ErrCardinality, "more than one row returned by a subquery used as an expression")
			}
			found = true
			if len(c.Cols) > 0 {
				v = c.Cols[0].Get(i).Copy()
			}
		}
	}
	if kind == plan.ExistsSubquery {
		return types.DBool(false), nil
	}
	return v, nil
}

func (e *initPlanExec) Close() error {
	err := closeAll(e.plans)
	e.plans = nil
	if rerr := e.root.Close(); err == nil {
		err = rerr
	}
	return err
}

// runListPlan collects the first column of every row of x.
func runListPlan(ctx context.Context, x Executor) ([]types.Datum, error) {
	var list []types.Datum
	for {
		if err := checkCtx(ctx); err != nil {
			return nil, err
		}
		c, err := x.Next(ctx)
		if isEOF(err) {
			return list, nil
		}
		if err != nil {
			return nil, err
		}
		for i := 0; i < c.Len(); i++ {
			if c.Visible(i) && len(c.Cols) > 0 {
				list = append(list, c.Cols[0].Get(i).Copy())
			}
		}
	}
}
