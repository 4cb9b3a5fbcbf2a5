package physical

import (
	"slices"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
)

// values emits constant rows once. A hidden row number keys them (rows may repeat).
func (p *planner) values(n *plan.Values, rows [][]expr.Expr, out []plan.Field) (plan.StreamNode, error) {
	for _, f := range n.Out {
		if f.Rel != 0 {
			return nil, unsupported("system tables are not supported in materialized views")
		}
	}
	w := len(out)
	sv := &plan.StreamValues{Out: append(slices.Clone(out), plan.Field{Name: "_row", Type: types.TInt64, Hidden: true}), Key: []int{w}}
	for j := range out {
		if out[j].Type.ID == types.Unknown { // a bare string literal: text, as a query's output would be
			sv.Out[j].Type = types.TVarchar
		}
	}
	for i, r := range rows {
		row := make([]expr.Expr, 0, w+1)
		for j, e := range r {
			if err := checkExpr(e); err != nil {
				return nil, err
			}
			if e.Type() != sv.Out[j].Type {
				c, err := expr.Cast(e, sv.Out[j].Type)
				if err != nil {
					return nil, err
				}
				if e, err = expr.Fold(c); err != nil {
					return nil, err
				}
			}
			row = append(row, e)
		}
		sv.Rows = append(sv.Rows, append(row, expr.Literal(types.DInt(int64(i)), types.TInt64)))
	}
	return sv, nil
}
