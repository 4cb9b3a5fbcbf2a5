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
	// direct says every row's expressions are constants and parameters of
	// their columns' layouts (directRows); set at the first Next, with checked.
	direct, checked bool
	ptrs            []*types.Datum // directRows' values of one column
}

func newValues(env *Env, n *plan.Values) *valuesExec {
	ts := plan.Types(n.Out)
	return &valuesExec{env: env, node: n, ts: ts, row: make([]types.Datum, len(ts))}
}

func (e *valuesExec) Schema() []types.T { return e.ts }

// done reports whether Next has yielded the last rows (inputDone).
func (e *valuesExec) done() bool { return e.pos >= e.node.NumRows() }

func (e *valuesExec) Next(ctx context.Context) (*types.Chunk, error) {
	if err := checkCtx(ctx); err != nil {
		return nil, err
	}
	rows := e.node.Rows
	total := e.node.NumRows()
	if e.pos >= total {
		return nil, io.EOF
	}
	if e.out == nil {
		e.out = types.NewChunk(e.ts, min(total, types.DefaultChunkSize))
	}
	e.out.Reset()
	if e.pos < len(rows) {
		if !e.checked {
			e.checked = true
			e.direct = directRows(rows, e.ts, e.env.Ctx.Params)
		}
		if e.direct {
			n := min(len(rows)-e.pos, types.DefaultChunkSize)
			e.appendDirect(rows[e.pos : e.pos+n])
			e.pos += n
		}
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
	}
	if e.pos >= len(rows) && e.out.Len() < types.DefaultChunkSize && e.pos < total {
		// The literal rows after them, already values (plan.Values.Lit), in the same chunk:
		// an INSERT's first row alone in a chunk would cost its table a key check of its own.
		n := min(total-e.pos, types.DefaultChunkSize-e.out.Len())
		from := e.pos - len(rows)
		e.out.AppendRange(e.node.Lit, from, from+n)
		e.pos += n
	}
	return e.out, nil
}

// directRows reports whether every expression of rows is a constant or a
// parameter (of params) whose value needs no conform into its column of
// type ts[j]: an INSERT's literal or $n rows, which appendDirect copies
// column by column without evaluating.
func directRows(rows [][]expr.Expr, ts []types.T, params []types.Datum) bool {
	fits := func(t types.T, j int) bool { return t.ID != types.Unknown && t.Physical() == ts[j].Physical() }
	for _, row := range rows {
		if len(row) != len(ts) {
			return false
		}
		for j, x := range row {
			switch x := x.(type) {
			case *expr.Const:
				if !x.Value.Null && !fits(x.Typ, j) {
					return false
				}
			case *expr.ParamRef:
				if x.Index >= len(params) || !fits(x.Typ, j) {
					return false
				}
			default:
				return false
			}
		}
	}
	return true
}

// appendDirect appends rows (directRows holds) to e.out, a column at a time:
// as evalRow and conform would, without copying each value twice.
func (e *valuesExec) appendDirect(rows [][]expr.Expr) {
	params := e.env.Ctx.Params
	for j := range e.ts {
		ptrs := e.ptrs[:0]
		for _, row := range rows {
			switch x := row[j].(type) {
			case *expr.Const:
				ptrs = append(ptrs, &x.Value)
			case *expr.ParamRef:
				ptrs = append(ptrs, &params[x.Index])
			}
		}
		e.ptrs = ptrs
		v := &e.out.Cols[j]
		switch v.Type.Physical() {
		case types.PhysI64:
			for _, d := range ptrs {
				v.Nulls = append(v.Nulls, d.Null)
				v.I64 = append(v.I64, d.I)
			}
		case types.PhysStr:
			for _, d := range ptrs {
				v.Nulls = append(v.Nulls, d.Null)
				v.Str = append(v.Str, d.S)
			}
		default:
			for _, d := range ptrs {
				v.Append(d)
			}
		}
	}
	for range rows {
		e.out.RowAppended()
	}
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
