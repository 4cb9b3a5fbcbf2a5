package physical

import (
	"slices"
	"strconv"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
)

// filter splits the condition: a rank limit over a window (group top-N),
// equalities pushed into an inner join, temporal filters, and the rest.
func (p *planner) filter(n *plan.Filter) (plan.StreamNode, error) {
	conds := expr.Conjuncts(n.Cond)
	if dyn, rest := p.splitDynamic(conds); len(dyn) > 0 {
		// The other conjuncts first, then one dynamic filter per comparison
		// with a scalar subquery.
		var in plan.Node = n.Input
		if len(rest) > 0 {
			cond, err := expr.AndAll(rest)
			if err != nil {
				return nil, err
			}
			in = &plan.Filter{Input: n.Input, Cond: cond}
		}
		s, err := p.convert(in)
		if err != nil {
			return nil, err
		}
		for _, d := range dyn {
			if s, err = p.dynamicFilter(s, d); err != nil {
				return nil, err
			}
		}
		return s, nil
	}
	for i, c := range conds {
		if w, limit, ok := rankLimit(n.Input, c); ok {
			if old, seen := p.ranks[w]; !seen || limit < old {
				p.ranks[w] = limit
			}
			conds = slices.Delete(slices.Clone(conds), i, i+1)
			break
		}
	}
	if j, ok := n.Input.(*plan.Join); ok && j.Kind != plan.InnerJoin {
		if pushed, rest, err := pushIntoPreserved(j, conds); err != nil || pushed != nil {
			if err != nil || len(rest) == 0 {
				return p.convertOrErr(pushed, err)
			}
			cond, err := expr.AndAll(rest)
			if err != nil {
				return nil, err
			}
			return p.convert(&plan.Filter{Input: pushed, Cond: cond})
		}
	}
	if j, ok := n.Input.(*plan.Join); ok && j.Kind == plan.InnerJoin {
		if reordered, ok := reorderJoins(j, conds); ok {
			return p.convert(reordered)
		}
		pushed, rest, err := pushIntoJoin(j, conds)
		if err != nil {
			return nil, err
		}
		if pushed != nil {
			if len(rest) == 0 {
				return p.convert(pushed)
			}
			cond, err := expr.AndAll(rest)
			if err != nil {
				return nil, err
			}
			return p.convert(&plan.Filter{Input: pushed, Cond: cond})
		}
	}
	if input, moved, err := p.attachInits(n.Input, conds); err != nil {
		return nil, err
	} else if input != n.Input {
		// Scalar subqueries read otherwise than compared with the row: joined
		// in as one-row inputs, their columns dropped after the filter.
		cond, err := expr.AndAll(moved)
		if err != nil {
			return nil, err
		}
		fields := n.Input.Schema()
		exprs := make([]expr.Expr, len(fields))
		for i, f := range fields {
			exprs[i] = expr.Column(i, f.Type)
		}
		return p.convert(&plan.Project{Input: &plan.Filter{Input: input, Cond: cond}, Exprs: exprs, Out: slices.Clone(fields)})
	}
	var rest []expr.Expr
	var temporal []*plan.StreamTemporalFilter
	for _, c := range conds {
		tf, ok, err := temporalFilter(c)
		if err != nil {
			return nil, err
		}
		if ok {
			temporal = append(temporal, tf)
			continue
		}
		if err := checkExpr(c); err != nil {
			return nil, err
		}
		rest = append(rest, c)
	}
	in, err := p.convert(n.Input)
	if err != nil {
		return nil, err
	}
	if len(rest) > 0 {
		cond, err := expr.AndAll(rest)
		if err != nil {
			return nil, err
		}
		in = &plan.StreamFilter{Input: in, Cond: cond}
	}
	for _, tf := range temporal {
		tf.Input = in
		in = tf
	}
	return in, nil
}

func (p *planner) convertOrErr(n plan.Node, err error) (plan.StreamNode, error) {
	if err != nil {
		return nil, err
	}
	return p.convert(n)
}

// columnIndex returns the input column an expression reads when it is a bare
// column reference. The binder's window-function references are their own
// type; they print as "$n" like a column reference, and read column n.
func columnIndex(e expr.Expr) (int, bool) {
	if c, ok := e.(*expr.ColumnRef); ok {
		return c.Index, true
	}
	switch e.(type) {
	case *expr.Const, *expr.ParamRef, *expr.FuncExpr, *expr.CastExpr, *expr.CaseExpr:
		return 0, false
	}
	s := e.String()
	if len(s) < 2 || s[0] != '$' {
		return 0, false
	}
	i, err := strconv.Atoi(s[1:])
	return i, err == nil
}
