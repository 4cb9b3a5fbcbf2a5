package expr

import (
	"strconv"

	"github.com/tributary/tributary/sql/types"
)

// Quantified is "left op ANY (list)" or "left op ALL (list)" over a list of
// values an uncorrelated subquery produced before the statement's rows are
// read (Ctx.Lists[Slot]). x IN (subquery) is "= ANY". SQL semantics: ANY is
// true if some comparison is true, else NULL if some is NULL, else false
// (false for an empty list); ALL is false if some comparison is false, else
// NULL if some is NULL, else true.
type Quantified struct {
	Left Expr
	Op   string
	All  bool
	Slot int
	Elem types.T
	cmp  Expr // Op over (left, element) as columns 0 and 1
}

// NewQuantified resolves op between left and the list's element type.
func NewQuantified(left Expr, op string, all bool, slot int, elem types.T) (Expr, error) {
	if argDepth([]Expr{left}) > types.MaxExprDepth {
		return nil, types.StackDepthError(types.MaxExprDepth, "expressions")
	}
	cmp, err := Call(op, []Expr{Column(0, left.Type()), Column(1, elem)})
	if err != nil {
		return nil, err
	}
	if cmp.Type().ID != types.Bool {
		return nil, types.Errorf(types.ErrDatatypeMismatch, "op ANY/ALL (array) requires operator to yield boolean")
	}
	return &Quantified{Left: left, Op: op, All: all, Slot: slot, Elem: elem, cmp: cmp}, nil
}

func (q *Quantified) Type() types.T { return types.TBool }

func (q *Quantified) String() string {
	quant := "ANY"
	if q.All {
		quant = "ALL"
	}
	return "(" + q.Left.String() + " " + q.Op + " " + quant + "(list" + strconv.Itoa(q.Slot) + "))"
}

func (q *Quantified) EvalRow(ctx *Ctx, row []types.Datum) (types.Datum, error) {
	left, err := q.Left.EvalRow(ctx, row)
	if err != nil {
		return types.NullDatum, err
	}
	return q.compare(ctx, &left)
}

func (q *Quantified) compare(ctx *Ctx, left *types.Datum) (types.Datum, error) {
	var list []types.Datum
	if ctx != nil && q.Slot < len(ctx.Lists) {
		list = ctx.Lists[q.Slot]
	}
	sawNull := false
	pair := [2]types.Datum{*left}
	for i := range list {
		pair[1] = list[i]
		r, err := q.cmp.EvalRow(ctx, pair[:])
		if err != nil {
			return types.NullDatum, err
		}
		switch {
		case r.Null:
			sawNull = true
		case r.I != 0 && !q.All:
			return types.DBool(true), nil
		case r.I == 0 && q.All:
			return types.DBool(false), nil
		}
	}
	if sawNull {
		return types.NullDatum, nil
	}
	return types.DBool(q.All), nil
}

func (q *Quantified) Eval(ctx *Ctx, in *types.Chunk, out *types.Vector) error {
	ctx = orNew(ctx)
	lv := ctx.getVec(q.Left.Type())
	defer ctx.putVec(lv)
	if err := q.Left.Eval(ctx, in, lv); err != nil {
		return err
	}
	var d types.Datum
	for i := 0; i < in.Len(); i++ {
		lv.GetInto(i, &d)
		r, err := q.compare(ctx, &d)
		if err != nil {
			return err
		}
		out.Append(&r)
	}
	return nil
}
