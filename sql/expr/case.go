package expr

import (
	"strings"

	"github.com/tributary/tributary/sql/types"
)

// CaseExpr is CASE [Operand] WHEN Whens[i] THEN Thens[i] ... [ELSE Else] END.
// With an Operand, Whens hold the values compared to it (already coerced to a
// common type); without one they are boolean conditions.
type CaseExpr struct {
	Operand Expr
	Whens   []Expr
	Thens   []Expr
	Else    Expr // nil means ELSE NULL
	Typ     types.T
	cmpType types.T
	depth   int
}

// Case builds a CASE expression; operand is nil for a searched CASE. The result
// type is CommonType of the THEN and ELSE branches.
func Case(operand Expr, whens []Expr, thens []Expr, els Expr) (Expr, error) {
	if len(whens) == 0 || len(whens) != len(thens) {
		return nil, types.Errorf(types.ErrSyntax, "CASE needs matching WHEN and THEN clauses")
	}
	c := &CaseExpr{}
	c.depth = max(argDepth(whens), argDepth(thens))
	if operand != nil {
		c.depth = max(c.depth, argDepth([]Expr{operand}))
	}
	if els != nil {
		c.depth = max(c.depth, argDepth([]Expr{els}))
	}
	if c.depth > types.MaxExprDepth {
		return nil, types.StackDepthError(types.MaxExprDepth, "expressions")
	}
	var err error
	if operand != nil {
		all := append([]Expr{operand}, whens...)
		if c.cmpType, err = commonArgType("=", all); err != nil {
			return nil, err
		}
		if all, err = coerceAll(all, c.cmpType); err != nil {
			return nil, err
		}
		c.Operand, c.Whens = all[0], all[1:]
	} else {
		c.Whens = make([]Expr, len(whens))
		for i, w := range whens {
			if w.Type().ID != types.Bool {
				if c.Whens[i], err = coerce(w, tB); err != nil {
					return nil, types.Errorf(types.ErrDatatypeMismatch, "argument of CASE/WHEN must be type boolean, not type %s", w.Type())
				}
				continue
			}
			c.Whens[i] = w
		}
	}
	branches := append([]Expr(nil), thens...)
	if els != nil {
		branches = append(branches, els)
	}
	if c.Typ, err = CommonType(exprTypes(branches)); err != nil {
		return nil, types.Errorf(types.ErrDatatypeMismatch, "CASE %s", err.Error())
	}
	if branches, err = coerceAll(branches, c.Typ); err != nil {
		return nil, err
	}
	c.Thens = branches[:len(thens)]
	if els != nil {
		c.Else = branches[len(thens)]
	}
	return c, nil
}

func (c *CaseExpr) Type() types.T { return c.Typ }

func (c *CaseExpr) String() string {
	var b strings.Builder
	b.WriteString("CASE")
	if c.Operand != nil {
		b.WriteString(" " + c.Operand.String())
	}
	for i := range c.Whens {
		b.WriteString(" WHEN " + c.Whens[i].String() + " THEN " + c.Thens[i].String())
	}
	if c.Else != nil {
		b.WriteString(" ELSE " + c.Else.String())
	}
	b.WriteString(" END")
	return b.String()
}

// matches reports whether WHEN i selects a row given its evaluated values.
func (c *CaseExpr) matches(op, w *types.Datum) bool {
	if c.Operand != nil {
		return !op.Null && !w.Null && types.CompareNonNull(c.cmpType, op, w) == 0
	}
	return !w.Null && w.I != 0
}

func (c *CaseExpr) EvalRow(ctx *Ctx, row []types.Datum) (types.Datum, error) {
	var op types.Datum
	var err error
	if c.Operand != nil {
		if op, err = c.Operand.EvalRow(ctx, row); err != nil {
			return types.NullDatum, err
		}
	}
	for i, w := range c.Whens {
		wd, err := w.EvalRow(ctx, row)
		if err != nil {
			return types.NullDatum, err
		}
		if c.matches(&op, &wd) {
			return c.Thens[i].EvalRow(ctx, row)
		}
	}
	if c.Else == nil {
		return types.NullDatum, nil
	}
	return c.Else.EvalRow(ctx, row)
}

// Eval evaluates every branch over the whole chunk and picks per row. If any
// branch fails (say 1/x where another branch guards x = 0), it falls back to
// row-by-row evaluation, which only evaluates the branch each row selects.
func (c *CaseExpr) Eval(ctx *Ctx, in *types.Chunk, out *types.Vector) error {
	ctx = orNew(ctx)
	n := in.Len()
	if n == 0 {
		return nil
	}
	var all []Expr
	if c.Operand != nil {
		all = append(all, c.Operand)
	}
	all = append(all, c.Whens...)
	all = append(all, c.Thens...)
	if c.Else != nil {
		all = append(all, c.Else)
	}
	vals := make([]vecArg, 0, len(all))
	defer func() {
		for i := range vals {
			vals[i].release(ctx)
		}
	}()
	for _, e := range all {
		a, err := evalArg(ctx, e, in)
		if err != nil {
			return evalRows(ctx, c, in, out)
		}
		vals = append(vals, a)
	}
	k := 0
	var opv *vecArg
	if c.Operand != nil {
		opv = &vals[0]
		k = 1
	}
	whens, thens := vals[k:k+len(c.Whens)], vals[k+len(c.Whens):k+2*len(c.Whens)]
	var op, w types.Datum
	for i := 0; i < n; i++ {
		if opv != nil {
			opv.v.GetInto(opv.idx(i), &op)
		}
		picked := false
		for j := range whens {
			whens[j].v.GetInto(whens[j].idx(i), &w)
			if c.matches(&op, &w) {
				out.AppendFrom(thens[j].v, thens[j].idx(i))
				picked = true
				break
			}
		}
		if !picked {
			if c.Else != nil {
				e := &vals[len(vals)-1]
				out.AppendFrom(e.v, e.idx(i))
			} else {
				out.AppendNull()
			}
		}
	}
	return nil
}
