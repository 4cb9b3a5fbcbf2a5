package physical

import (
	"slices"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
)

// project computes exprs over in, appending hidden copies of in's stream-key
// columns the projection drops, so the output has a stream key. Projections
// over projections are merged when that costs no recomputation, and an
// identity projection disappears.
func (p *planner) project(in plan.StreamNode, exprs []expr.Expr, out []plan.Field) plan.StreamNode {
	if ip, ok := in.(*plan.StreamProject); ok {
		if merged, ok := composeProject(ip, exprs); ok {
			return p.project(ip.Input, merged, out)
		}
	}
	inFields := in.Schema()
	exprs, out = slices.Clone(exprs), slices.Clone(out)
	key := make([]int, 0, len(in.StreamKey()))
	for _, k := range in.StreamKey() {
		pos := -1
		for j, e := range exprs {
			if c, ok := e.(*expr.ColumnRef); ok && c.Index == k {
				pos = j
				break
			}
		}
		if pos < 0 {
			f := inFields[k]
			f.Hidden = true
			exprs = append(exprs, expr.Column(k, f.Type))
			out = append(out, f)
			pos = len(exprs) - 1
		}
		key = append(key, pos)
	}
	if isIdentity(exprs, inFields) {
		return in
	}
	return &plan.StreamProject{Input: in, Exprs: exprs, Out: out, Key: key}
}

// composeProject rewrites exprs (over ip's output) over ip's input, when
// either side is only column references.
func composeProject(ip *plan.StreamProject, exprs []expr.Expr) ([]expr.Expr, bool) {
	out := make([]expr.Expr, len(exprs))
	if allColumns(exprs) {
		for i, e := range exprs {
			out[i] = ip.Exprs[e.(*expr.ColumnRef).Index]
		}
		return out, true
	}
	if !allColumns(ip.Exprs) {
		return nil, false
	}
	for i, e := range exprs {
		r, ok := plan.RewriteCols(e, func(c *expr.ColumnRef) expr.Expr { return ip.Exprs[c.Index] })
		if !ok {
			return nil, false
		}
		out[i] = r
	}
	return out, true
}

func allColumns(es []expr.Expr) bool {
	for _, e := range es {
		if _, ok := e.(*expr.ColumnRef); !ok {
			return false
		}
	}
	return true
}

func isIdentity(exprs []expr.Expr, in []plan.Field) bool {
	if len(exprs) != len(in) {
		return false
	}
	for i, e := range exprs {
		c, ok := e.(*expr.ColumnRef)
		if !ok || c.Index != i || c.Typ != in[i].Type {
			return false
		}
	}
	return true
}

// reorder permutes n's columns (order lists every column once).
func (p *planner) reorder(n plan.StreamNode, order []int) plan.StreamNode {
	fields := n.Schema()
	exprs := make([]expr.Expr, len(order))
	out := make([]plan.Field, len(order))
	for i, c := range order {
		exprs[i] = expr.Column(c, fields[c].Type)
		out[i] = fields[c]
	}
	return p.project(n, exprs, out)
}

// span appends lo, lo+1, ..., hi-1 to s.
func span(s []int, lo, hi int) []int {
	for i := lo; i < hi; i++ {
		s = append(s, i)
	}
	return s
}

func hidden(fs []plan.Field) []plan.Field {
	out := slices.Clone(fs)
	for i := range out {
		out[i].Hidden = true
	}
	return out
}
