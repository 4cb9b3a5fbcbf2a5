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

// maxSeriesRows bounds the rows a generate_series of constants becomes in a
// materialized view.
const maxSeriesRows = 10000

// series plans generate_series (and range) of constants as the rows it
// generates, computed now (at most maxSeriesRows); any other is refused.
func (p *planner) series(n *plan.Series) (plan.StreamNode, error) {
	refuse := func() (plan.StreamNode, error) {
		return nil, unsupported("generate_series in a materialized view must have constant arguments and at most %d rows", maxSeriesRows)
	}
	if !expr.IsConst(n.Start) || !expr.IsConst(n.Stop) || !expr.IsConst(n.Step) {
		return refuse()
	}
	start, err := n.Start.EvalRow(nil, nil)
	if err != nil {
		return nil, err
	}
	stop, err := n.Stop.EvalRow(nil, nil)
	if err != nil {
		return nil, err
	}
	step, err := n.Step.EvalRow(nil, nil)
	if err != nil {
		return nil, err
	}
	t := n.Out[0].Type
	var rows [][]expr.Expr
	if !start.Null && !stop.Null && !step.Null {
		cur := start
		for {
			var past bool
			if n.Add != nil { // timestamps: compare, then add the interval
				c := types.Compare(t, &cur, &stop)
				neg := step.Iv.Months < 0 || step.Iv.Days < 0 || step.Iv.Micros < 0
				past = c > 0 && !neg || c < 0 && neg
			} else {
				if step.I == 0 {
					return nil, types.Errorf(types.ErrInvalidParameter, "step size cannot equal zero")
				}
				past = step.I > 0 && cur.I > stop.I || step.I < 0 && cur.I < stop.I
			}
			if past {
				break
			}
			if len(rows) == maxSeriesRows {
				return refuse()
			}
			rows = append(rows, []expr.Expr{expr.Literal(cur, t)})
			if n.Add != nil {
				if cur, err = n.Add.EvalRow(nil, []types.Datum{cur, step}); err != nil {
					return nil, err
				}
			} else {
				cur = types.DInt(cur.I + step.I)
			}
		}
	}
	return p.values(&plan.Values{Rows: rows, Out: n.Out}, rows, n.Out)
}
