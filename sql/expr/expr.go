package expr

import (
	"context"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/tributary/tributary/sql/types"
)

// Expr is a typed scalar expression. Exprs are immutable once built and may be
// shared between goroutines; per-evaluation scratch lives in the Ctx.
type Expr interface {
	Type() types.T
	// Eval evaluates over every row of in (visibility ignored) and appends
	// in.Len() values to out, which the caller reset and typed as Type().
	// Per-row work does not allocate for fixed-width types.
	Eval(ctx *Ctx, in *types.Chunk, out *types.Vector) error
	// EvalRow evaluates for one row (constants, defaults, small paths).
	EvalRow(ctx *Ctx, row []types.Datum) (types.Datum, error)
	// String is SQL-ish text for EXPLAIN, e.g. "($0 + 1)", "upper($1)".
	String() string
}

// Ctx carries per-statement values and scratch space for evaluation. A Ctx is
// not safe for concurrent use: each executor goroutine owns one. The zero
// value (and a nil *Ctx) is usable.
type Ctx struct {
	Params []types.Datum // $1.. values, 0-based
	// Lists holds the values of uncorrelated subqueries compared with ANY/ALL/IN,
	// by slot (filled by the executor before rows are read).
	Lists [][]types.Datum
	Now   int64  // statement timestamp, µs since 1970-01-01 UTC
	User  string // current_user ("root" when empty)
	// SessionUser is session_user (User when empty): SET ROLE changes User only.
	SessionUser string
	Database    string     // current_database() ("dev" when empty)
	BackendPID  int32      // pg_backend_pid()
	Rand        *rand.Rand // random(); a process-wide source when nil
	// Backends reaches other sessions for pg_cancel_backend and
	// pg_terminate_backend (nil: none); Context is the statement's, which
	// pg_sleep waits on (nil: never cancelled).
	Backends Backends
	Context  context.Context
	// Sequences serves nextval and currval (nil: no sequence exists).
	Sequences Sequences
	// Comments serves obj_description and col_description (nil: none).
	Comments Comments

	free  []*types.Vector
	dfree [][]types.Datum
}

// Backends signals other sessions: cancel the statement running on
// session pid, or end the session (terminate); false when there is none,
// an error when the caller may not.
type Backends interface {
	Signal(pid int32, terminate bool) (bool, error)
}

// Comments answers obj_description and col_description from COMMENT ON's
// texts: the comment of relation oid, or of its column attnum (1-based);
// ok false when there is none.
type Comments interface {
	RelationComment(oid int64) (text string, ok bool)
	ColumnComment(oid, attnum int64) (text string, ok bool)
}

// Sequences hands out the values of the sequences named in nextval,
// currval and setval (the implicit t_col_seq of serial and identity columns).
type Sequences interface {
	NextVal(ctx context.Context, name string) (int64, error)
	CurrVal(name string) (int64, error)
	// SetVal is setval(name, v, called): nextval then returns v's
	// successor (called) or v.
	SetVal(ctx context.Context, name string, v int64, called bool) (int64, error)
	// SerialSequence is pg_get_serial_sequence(table, column): the
	// qualified name of the column's sequence, ok false when it has none.
	SerialSequence(table, column string) (name string, ok bool, err error)
}

// getVec returns an empty scratch vector of type t.
func (c *Ctx) getVec(t types.T) *types.Vector {
	var v *types.Vector
	if n := len(c.free); n > 0 {
		v = c.free[n-1]
		c.free = c.free[:n-1]
	} else {
		v = new(types.Vector)
	}
	v.Type = t
	v.Reset()
	return v
}

func (c *Ctx) putVec(v *types.Vector) { c.free = append(c.free, v) }

// getDatums returns a scratch datum slice of length n.
func (c *Ctx) getDatums(n int) []types.Datum {
	if k := len(c.dfree); k > 0 {
		d := c.dfree[k-1]
		c.dfree = c.dfree[:k-1]
		if cap(d) >= n {
			return d[:n]
		}
	}
	return make([]types.Datum, n, max(n, 4))
}

func (c *Ctx) putDatums(d []types.Datum) {
	clear(d)
	c.dfree = append(c.dfree, d)
}

func (c *Ctx) rand() float64 {
	if c.Rand != nil {
		return c.Rand.Float64()
	}
	return rand.Float64()
}

// orNew returns c, or a fresh Ctx when c is nil.
func orNew(c *Ctx) *Ctx {
	if c == nil {
		return &Ctx{}
	}
	return c
}

// ColumnRef reads input column Index.
type ColumnRef struct {
	Index int
	Typ   types.T
}

// Column returns an expression reading input column index of type t.
func Column(index int, t types.T) Expr { return &ColumnRef{Index: index, Typ: t} }

func (c *ColumnRef) Type() types.T  { return c.Typ }
func (c *ColumnRef) String() string { return "$" + strconv.Itoa(c.Index) }

func (c *ColumnRef) Eval(ctx *Ctx, in *types.Chunk, out *types.Vector) error {
	src := &in.Cols[c.Index]
	n := in.Len()
	switch out.Type.Physical() {
	case types.PhysI64:
		out.I64 = append(out.I64, src.I64[:n]...)
	case types.PhysF64:
		out.F64 = append(out.F64, src.F64[:n]...)
	case types.PhysStr:
		out.Str = append(out.Str, src.Str[:n]...)
	case types.PhysIv:
		out.Iv = append(out.Iv, src.Iv[:n]...)
	case types.PhysDec:
		for i := 0; i < n; i++ {
			out.AppendFrom(src, i)
		}
		return nil
	}
	out.Nulls = append(out.Nulls, src.Nulls[:n]...)
	return nil
}

func (c *ColumnRef) EvalRow(ctx *Ctx, row []types.Datum) (types.Datum, error) {
	if c.Index >= len(row) {
		return types.NullDatum, types.Errorf(types.ErrInternal, "column $%d out of range for a row of %d", c.Index, len(row))
	}
	return row[c.Index], nil
}

// Const is a literal value.
type Const struct {
	Value types.Datum
	Typ   types.T
}

// Literal returns a constant of type t. A string literal of undecided type has
// type types.TUnknown; Call and Cast give it the type its context needs.
func Literal(d types.Datum, t types.T) Expr { return &Const{Value: d, Typ: t} }

func (c *Const) Type() types.T { return c.Typ }

func (c *Const) Eval(ctx *Ctx, in *types.Chunk, out *types.Vector) error {
	n := in.Len()
	for i := 0; i < n; i++ {
		out.Append(&c.Value)
	}
	return nil
}

func (c *Const) EvalRow(ctx *Ctx, row []types.Datum) (types.Datum, error) { return c.Value, nil }

func (c *Const) String() string { return literalString(c.Typ, &c.Value) }

func literalString(t types.T, d *types.Datum) string {
	if d.Null {
		return "NULL"
	}
	s := types.FormatText(t, d)
	switch t.ID {
	case types.Int16, types.Int32, types.Int64, types.Numeric:
		if !strings.ContainsAny(s, "NI") { // NaN, Infinity need quoting
			if t.ID == types.Int16 {
				return s + "::smallint"
			}
			return s
		}
	case types.Bool:
		if d.I != 0 {
			return "true"
		}
		return "false"
	case types.Unknown:
		return quote(s)
	case types.Varchar:
		if t.Width == 0 {
			return quote(s)
		}
	}
	return quote(s) + "::" + t.String()
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// ParamRef reads a statement parameter ($1 is index 0).
type ParamRef struct {
	Index int
	Typ   types.T
}

// Param returns an expression reading parameter index (0-based) of type t.
func Param(index int, t types.T) Expr { return &ParamRef{Index: index, Typ: t} }

func (p *ParamRef) Type() types.T  { return p.Typ }
func (p *ParamRef) String() string { return "$p" + strconv.Itoa(p.Index+1) }

func (p *ParamRef) value(ctx *Ctx) (types.Datum, error) {
	if ctx == nil || p.Index >= len(ctx.Params) {
		return types.NullDatum, types.Errorf(types.ErrUndefinedParameter, "there is no parameter $%d", p.Index+1)
	}
	return ctx.Params[p.Index], nil
}

func (p *ParamRef) Eval(ctx *Ctx, in *types.Chunk, out *types.Vector) error {
	d, err := p.value(ctx)
	if err != nil {
		return err
	}
	for i, n := 0, in.Len(); i < n; i++ {
		out.Append(&d)
	}
	return nil
}

func (p *ParamRef) EvalRow(ctx *Ctx, row []types.Datum) (types.Datum, error) { return p.value(ctx) }

// Walk calls fn on e and, while fn returns true, on its children (pre-order).
func Walk(e Expr, fn func(Expr) bool) {
	if e == nil || !fn(e) {
		return
	}
	for _, c := range children(e) {
		Walk(c, fn)
	}
}

func children(e Expr) []Expr {
	switch x := e.(type) {
	case *CastExpr:
		return []Expr{x.Input}
	case *FuncExpr:
		return x.Args
	case *CaseExpr:
		var cs []Expr
		if x.Operand != nil {
			cs = append(cs, x.Operand)
		}
		for i := range x.Whens {
			cs = append(cs, x.Whens[i], x.Thens[i])
		}
		if x.Else != nil {
			cs = append(cs, x.Else)
		}
		return cs
	}
	return nil
}

// Depth returns the number of levels of e's tree (1 for a leaf). The
// constructors (Call, Cast, Case) refuse trees deeper than types.MaxExprDepth,
// so Eval, EvalRow, String and Walk recurse at most that deep.
func Depth(e Expr) int {
	switch x := e.(type) {
	case *FuncExpr:
		if x.depth > 0 {
			return x.depth
		}
	case *CastExpr:
		if x.depth > 0 {
			return x.depth
		}
	case *CaseExpr:
		if x.depth > 0 {
			return x.depth
		}
	case *Quantified:
		return argDepth([]Expr{x.Left})
	}
	return argDepth(children(e))
}

// argDepth is the depth of a node over args: one more than the deepest.
func argDepth(args []Expr) int {
	d := 0
	for _, a := range args {
		d = max(d, Depth(a))
	}
	return d + 1
}

// IsConst reports whether e depends on no column, parameter, statement value
// or volatile function, so it can be evaluated once at plan time.
func IsConst(e Expr) bool {
	ok := true
	Walk(e, func(x Expr) bool {
		switch y := x.(type) {
		case *Const, *CastExpr, *CaseExpr:
		case *FuncExpr:
			if y.Volatility != Immutable {
				ok = false
			}
		default: // columns, parameters, and expression kinds defined elsewhere
			ok = false
		}
		return ok
	})
	return ok
}

// Fold replaces constant subtrees with their values. Errors raised while
// folding (e.g. 1/0) are returned, as PostgreSQL raises them at plan time.
func Fold(e Expr) (Expr, error) {
	switch e.(type) {
	case *Const, *ColumnRef, *ParamRef:
		return e, nil
	}
	if IsConst(e) {
		d, err := e.EvalRow(nil, nil)
		if err != nil {
			return nil, err
		}
		return &Const{Value: d.Copy(), Typ: e.Type()}, nil
	}
	switch x := e.(type) {
	case *CastExpr:
		in, err := Fold(x.Input)
		if err != nil {
			return nil, err
		}
		c := *x
		c.Input = in
		return &c, nil
	case *FuncExpr:
		args, err := foldAll(x.Args)
		if err != nil {
			return nil, err
		}
		f := *x
		f.Args = args
		return &f, nil
	case *CaseExpr:
		c := *x
		var err error
		if c.Operand != nil {
			if c.Operand, err = Fold(c.Operand); err != nil {
				return nil, err
			}
		}
		if c.Whens, err = foldAll(c.Whens); err != nil {
			return nil, err
		}
		if c.Thens, err = foldAll(c.Thens); err != nil {
			return nil, err
		}
		if c.Else != nil {
			if c.Else, err = Fold(c.Else); err != nil {
				return nil, err
			}
		}
		return &c, nil
	}
	return e, nil
}

func foldAll(es []Expr) ([]Expr, error) {
	out := make([]Expr, len(es))
	for i, a := range es {
		f, err := Fold(a)
		if err != nil {
			return nil, err
		}
		out[i] = f
	}
	return out, nil
}

// evalArg evaluates e over in into a vector: the input column itself for a
// ColumnRef (no copy), a one-row vector for a Const (konst), or scratch from
// ctx. release returns scratch to ctx.
type vecArg struct {
	v       *types.Vector
	konst   bool
	scratch bool
}

func (a *vecArg) idx(i int) int {
	if a.konst {
		return 0
	}
	return i
}

func evalArg(ctx *Ctx, e Expr, in *types.Chunk) (vecArg, error) {
	switch x := e.(type) {
	case *ColumnRef:
		if x.Index < len(in.Cols) && in.Cols[x.Index].Type.Physical() == x.Typ.Physical() {
			return vecArg{v: &in.Cols[x.Index]}, nil
		}
	case *Const:
		v := ctx.getVec(x.Typ)
		v.Append(&x.Value)
		return vecArg{v: v, konst: true, scratch: true}, nil
	case *ParamRef:
		d, err := x.value(ctx)
		if err != nil {
			return vecArg{}, err
		}
		v := ctx.getVec(x.Typ)
		v.Append(&d)
		return vecArg{v: v, konst: true, scratch: true}, nil
	}
	v := ctx.getVec(e.Type())
	if err := e.Eval(ctx, in, v); err != nil {
		ctx.putVec(v)
		return vecArg{}, err
	}
	return vecArg{v: v, scratch: true}, nil
}

func (a *vecArg) release(ctx *Ctx) {
	if a.scratch {
		ctx.putVec(a.v)
		a.scratch = false
	}
}
