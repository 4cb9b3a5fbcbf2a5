package expr

import (
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/cockroachdb/apd/v3"
	"github.com/tributary/tributary/sql/types"
)

// castMode is the context a cast is requested in, weakest first.
type castMode uint8

const (
	castImplicit castMode = iota + 1 // operator/function argument coercion
	castAssign                       // INSERT/UPDATE assignment
	castExplicit                     // CAST(x AS t), x::t
)

// castFn converts one non-NULL value.
type castFn func(ctx *Ctx, d *types.Datum) (types.Datum, error)

// CastExpr converts its input to type To.
type CastExpr struct {
	Input    Expr
	To       types.T
	Explicit bool

	fn    castFn
	depth int
}

func (c *CastExpr) Type() types.T { return c.To }

func (c *CastExpr) String() string { return c.Input.String() + "::" + c.To.String() }

func (c *CastExpr) Eval(ctx *Ctx, in *types.Chunk, out *types.Vector) error {
	ctx = orNew(ctx)
	a, err := evalArg(ctx, c.Input, in)
	if err != nil {
		return err
	}
	defer a.release(ctx)
	n := in.Len()
	src := a.v
	// Widening within the int64 layout needs no conversion.
	if c.fn == nil {
		for i := 0; i < n; i++ {
			out.AppendFrom(src, a.idx(i))
		}
		return nil
	}
	var d types.Datum
	for i := 0; i < n; i++ {
		j := a.idx(i)
		if src.Nulls[j] {
			out.AppendNull()
			continue
		}
		src.GetInto(j, &d)
		r, err := c.fn(ctx, &d)
		if err != nil {
			return err
		}
		out.Append(&r)
	}
	return nil
}

func (c *CastExpr) EvalRow(ctx *Ctx, row []types.Datum) (types.Datum, error) {
	d, err := c.Input.EvalRow(ctx, row)
	if err != nil || d.Null || c.fn == nil {
		return d, err
	}
	return c.fn(orNew(ctx), &d)
}

// Cast returns e converted to type to, as an explicit CAST or ::. An
// impossible conversion is an ErrDatatypeMismatch error. A constant input is
// converted at once, so bad literals fail here.
func Cast(e Expr, to types.T) (Expr, error) { return castExpr(e, to, castExplicit) }

// ImplicitCast returns e converted to type to under assignment rules (INSERT,
// UPDATE, function arguments): numeric narrowing and anything-to-text are
// allowed, text-to-number is not; varchar(n) overflow is an error.
func ImplicitCast(e Expr, to types.T) (Expr, error) { return castExpr(e, to, castAssign) }

func castExpr(e Expr, to types.T, mode castMode) (Expr, error) {
	from := e.Type()
	if from == to {
		return e, nil
	}
	class := castClass(from.ID, to.ID)
	if from.ID == types.Array && to.ID == types.Array {
		class = castClass(from.Elem, to.Elem)
		if from.Elem == types.Struct && to.Elem == types.Struct {
			class = structCastClass(from.ElemType(), to.ElemType())
		}
	}
	if from.ID == types.Struct && to.ID == types.Struct {
		class = structCastClass(from, to)
	}
	if class == 0 || class > mode {
		if mode == castExplicit {
			return nil, types.Errorf(types.ErrCannotCoerce, "cannot cast type %s to %s", from.Base(), to)
		}
		return nil, types.Errorf(types.ErrDatatypeMismatch, "expression of type %s cannot be coerced to type %s", from.Base(), to)
	}
	fn := castFunc(from, to, mode == castExplicit)
	if k, ok := e.(*Const); ok {
		// Converted at once, without a CastExpr (an INSERT's every literal comes here).
		v := k.Value
		if !v.Null && fn != nil {
			var err error
			if v, err = fn(orNew(nil), &k.Value); err != nil {
				return nil, err
			}
		}
		return &Const{Value: v, Typ: to}, nil
	}
	d := argDepth([]Expr{e})
	if d > types.MaxExprDepth {
		return nil, types.StackDepthError(types.MaxExprDepth, "expressions")
	}
	return &CastExpr{Input: e, To: to, Explicit: mode == castExplicit, fn: fn, depth: d}, nil
}

// castClass returns the weakest mode in which from → to is allowed (0: never).
func castClass(from, to types.ID) castMode {
	if from == to || from == types.Unknown {
		return castImplicit
	}
	if implicitCastable(from, to) {
		return castImplicit
	}
	if to == types.Varchar {
		return castAssign // every type has an output function
	}
	if from == types.Varchar {
		if to == types.Unknown {
			return 0
		}
		return castExplicit // input function
	}
	if numRank(from) > 0 && numRank(to) > 0 {
		return castAssign
	}
	switch from {
	case types.Timestamp, types.Timestamptz:
		if to == types.Date || to == types.Time || to == types.Timestamp {
			return castAssign
		}
	case types.Interval:
		if to == types.Time {
			return castAssign
		}
	case types.Bool:
		if to == types.Int32 {
			return castExplicit
		}
	case types.Int32:
		if to == types.Bool {
			return castExplicit
		}
	case types.Jsonb:
		if to == types.Bool || numRank(to) > 0 {
			return castExplicit
		}
	}
	return 0
}

// castFunc builds the conversion for an allowed pair (nil: the stored value is unchanged).
func castFunc(from, to types.T, explicit bool) castFn {
	if from.ID == types.Unknown && to.ID == types.Varchar {
		fit := varcharFit(to, explicit)
		if fit == nil {
			return nil
		}
		return func(ctx *Ctx, d *types.Datum) (types.Datum, error) { return fit(ctx, d) }
	}
	if from.ID == types.Unknown {
		return func(_ *Ctx, d *types.Datum) (types.Datum, error) { return types.ParseText(to, d.S) }
	}
	if from.ID == types.Array && to.ID == types.Array {
		return arrayCast(from, to, explicit)
	}
	if from.ID == types.Struct && to.ID == types.Struct {
		return structCast(from, to, explicit)
	}
	if from.ID == to.ID {
		switch to.ID {
		case types.Varchar:
			if to.Width == 0 || (from.Width > 0 && from.Width <= to.Width) {
				return nil
			}
			return varcharFit(to, explicit)
		case types.Numeric:
			return func(_ *Ctx, d *types.Datum) (types.Datum, error) {
				var out types.Datum
				out.Dec.Set(&d.Dec)
				return out, types.FitNumeric(to, &out.Dec)
			}
		}
		return nil
	}
	if to.ID == types.Varchar {
		fit := varcharFit(to, explicit)
		return func(ctx *Ctx, d *types.Datum) (types.Datum, error) {
			out := types.DString(types.FormatText(from, d))
			if from.ID == types.Bool { // boolean's text cast spells it out, unlike its output form
				out.S = map[bool]string{true: "true", false: "false"}[d.I != 0]
			}
			if fit != nil {
				return fit(ctx, &out)
			}
			return out, nil
		}
	}
	if from.ID == types.Varchar {
		return func(_ *Ctx, d *types.Datum) (types.Datum, error) { return types.ParseText(to, d.S) }
	}
	if numRank(from.ID) > 0 && numRank(to.ID) > 0 {
		return numCast(from, to)
	}
	switch {
	case from.ID == types.Date && (to.ID == types.Timestamp || to.ID == types.Timestamptz):
		return func(_ *Ctx, d *types.Datum) (types.Datum, error) { return types.DInt(dateToTS(d.I)), nil }
	case (from.ID == types.Timestamp || from.ID == types.Timestamptz) && to.ID == types.Date:
		return func(_ *Ctx, d *types.Datum) (types.Datum, error) { return types.DInt(tsToDate(d.I)), nil }
	case (from.ID == types.Timestamp || from.ID == types.Timestamptz) && to.ID == types.Time:
		return func(_ *Ctx, d *types.Datum) (types.Datum, error) {
			if isInf(d.I) {
				return types.NullDatum, types.Errorf(types.ErrDatetimeOverflow, "timestamp out of range")
			}
			return types.DInt(d.I - floorDiv(d.I, usPerDay)*usPerDay), nil
		}
	case from.ID == types.Timestamp || from.ID == types.Timestamptz: // to the other one
		return nil
	case from.ID == types.Time && to.ID == types.Interval:
		return func(_ *Ctx, d *types.Datum) (types.Datum, error) {
			return types.DInterval(types.IntervalValue{Micros: d.I}), nil
		}
	case from.ID == types.Interval && to.ID == types.Time:
		return func(_ *Ctx, d *types.Datum) (types.Datum, error) {
			us := d.Iv.Micros % usPerDay
			if us < 0 {
				us += usPerDay
			}
			return types.DInt(us), nil
		}
	case from.ID == types.Bool && to.ID == types.Int32, from.ID == types.Int32 && to.ID == types.Bool:
		return func(_ *Ctx, d *types.Datum) (types.Datum, error) { return types.DBool(d.I != 0), nil }
	case from.ID == types.Jsonb:
		return jsonbCast(to)
	}
	return func(_ *Ctx, d *types.Datum) (types.Datum, error) {
		return types.NullDatum, types.Errorf(types.ErrDatatypeMismatch, "cannot cast type %s to %s", from, to)
	}
}

// arrayCast converts an array element by element (nil when no element
// changes).
func arrayCast(from, to types.T, explicit bool) castFn {
	fe, te := from.ElemType(), to.ElemType()
	fn := castFunc(fe, te, explicit)
	if fn == nil {
		return nil
	}
	return func(ctx *Ctx, d *types.Datum) (types.Datum, error) {
		vals, err := types.DecodeArray(fe, d.S)
		if err != nil {
			return types.NullDatum, err
		}
		for i := range vals {
			if vals[i].Null {
				continue
			}
			if vals[i], err = fn(ctx, &vals[i]); err != nil {
				return types.NullDatum, err
			}
		}
		return types.DString(types.EncodeArray(te, vals)), nil
	}
}

// varcharFit applies a varchar(n) limit: explicit casts truncate, assignment
// errors unless only trailing spaces are lost.
func varcharFit(to types.T, explicit bool) castFn {
	if to.Width == 0 {
		return nil
	}
	w := int(to.Width)
	return func(_ *Ctx, d *types.Datum) (types.Datum, error) {
		s := d.S
		if len(s) <= w || utf8.RuneCountInString(s) <= w {
			return *d, nil
		}
		cut := runePrefix(s, w)
		if !explicit {
			for i := len(cut); i < len(s); i++ {
				if s[i] != ' ' {
					return types.NullDatum, types.Errorf(types.ErrStringTruncation, "value too long for type character varying(%d)", w)
				}
			}
		}
		return types.DString(cut), nil
	}
}

// runePrefix returns the first n characters of s.
func runePrefix(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

func intBounds(id types.ID) (int64, int64) {
	switch id {
	case types.Int16:
		return math.MinInt16, math.MaxInt16
	case types.Int32:
		return math.MinInt32, math.MaxInt32
	}
	return math.MinInt64, math.MaxInt64
}

func intRangeErr(id types.ID) error {
	switch id {
	case types.Int16:
		return types.Errorf(types.ErrNumericOutOfRange, "smallint out of range")
	case types.Int32:
		return types.Errorf(types.ErrNumericOutOfRange, "integer out of range")
	}
	return types.Errorf(types.ErrNumericOutOfRange, "bigint out of range")
}

var errFloatOverflow = types.Errorf(types.ErrNumericOutOfRange, "value out of range: overflow")

func numCast(from, to types.T) castFn {
	fi, ti := from.IsInteger(), to.IsInteger()
	switch {
	case fi && ti:
		if numRank(from.ID) < numRank(to.ID) {
			return nil
		}
		lo, hi := intBounds(to.ID)
		return func(_ *Ctx, d *types.Datum) (types.Datum, error) {
			if d.I < lo || d.I > hi {
				return types.NullDatum, intRangeErr(to.ID)
			}
			return *d, nil
		}
	case fi && to.ID == types.Numeric:
		return func(_ *Ctx, d *types.Datum) (types.Datum, error) {
			var out types.Datum
			out.Dec.SetInt64(d.I)
			return out, types.FitNumeric(to, &out.Dec)
		}
	case fi: // to float
		f32 := to.ID == types.Float32
		return func(_ *Ctx, d *types.Datum) (types.Datum, error) {
			f := float64(d.I)
			if f32 {
				f = float64(float32(f))
			}
			return types.DFloat(f), nil
		}
	case from.ID == types.Numeric && ti:
		lo, hi := intBounds(to.ID)
		return func(_ *Ctx, d *types.Datum) (types.Datum, error) {
			if d.Dec.Form == apd.NaN {
				return types.NullDatum, types.Errorf(types.ErrUnsupported, "cannot convert NaN to %s", to)
			}
			if d.Dec.Form == apd.Infinite {
				return types.NullDatum, types.Errorf(types.ErrUnsupported, "cannot convert infinity to %s", to)
			}
			var r apd.Decimal
			if _, err := roundCtx.Quantize(&r, &d.Dec, 0); err != nil {
				return types.NullDatum, intRangeErr(to.ID)
			}
			v, err := r.Int64()
			if err != nil || v < lo || v > hi {
				return types.NullDatum, intRangeErr(to.ID)
			}
			return types.DInt(v), nil
		}
	case from.ID == types.Numeric: // to float
		f32 := to.ID == types.Float32
		return func(_ *Ctx, d *types.Datum) (types.Datum, error) {
			f, err := decToFloat(&d.Dec)
			if err != nil {
				return types.NullDatum, err
			}
			if f32 {
				if !math.IsInf(f, 0) && math.Abs(f) > math.MaxFloat32 {
					return types.NullDatum, errFloatOverflow
				}
				f = float64(float32(f))
			}
			return types.DFloat(f), nil
		}
	case ti: // float to int
		lo, hi := intBounds(to.ID)
		return func(_ *Ctx, d *types.Datum) (types.Datum, error) {
			f := math.RoundToEven(d.F)
			if math.IsNaN(f) || f < float64(lo) || f >= -float64(lo) || (to.ID != types.Int64 && f > float64(hi)) {
				return types.NullDatum, intRangeErr(to.ID)
			}
			return types.DInt(int64(f)), nil
		}
	case to.ID == types.Numeric: // float to numeric
		digits := 15
		if from.ID == types.Float32 {
			digits = 6
		}
		return func(_ *Ctx, d *types.Datum) (types.Datum, error) {
			var out types.Datum
			switch {
			case math.IsNaN(d.F):
				out.Dec.Form = apd.NaN
			case math.IsInf(d.F, 0):
				out.Dec.Form = apd.Infinite
				out.Dec.Negative = d.F < 0
			default:
				if _, _, err := out.Dec.SetString(strconv.FormatFloat(d.F, 'g', digits, 64)); err != nil {
					return types.NullDatum, types.Errorf(types.ErrInternal, "float to numeric: %v", err)
				}
				if out.Dec.Exponent > 0 { // print 1e+20 as an integer
					roundCtx.Quantize(&out.Dec, &out.Dec, 0)
				}
			}
			return out, types.FitNumeric(to, &out.Dec)
		}
	case to.ID == types.Float32: // float8 to float4
		return func(_ *Ctx, d *types.Datum) (types.Datum, error) {
			if !math.IsInf(d.F, 0) && !math.IsNaN(d.F) && math.Abs(d.F) > math.MaxFloat32 {
				return types.NullDatum, errFloatOverflow
			}
			return types.DFloat(float64(float32(d.F))), nil
		}
	}
	return nil // float4 to float8
}

func decToFloat(d *apd.Decimal) (float64, error) {
	switch d.Form {
	case apd.NaN, apd.NaNSignaling:
		return math.NaN(), nil
	case apd.Infinite:
		if d.Negative {
			return math.Inf(-1), nil
		}
		return math.Inf(1), nil
	}
	f, err := strconv.ParseFloat(d.Text('e'), 64)
	if err != nil && !math.IsInf(f, 0) {
		return 0, types.Errorf(types.ErrNumericOutOfRange, "value out of range: overflow")
	}
	if math.IsInf(f, 0) {
		return 0, errFloatOverflow
	}
	return f, nil
}

// roundCtx rounds half away from zero, as PostgreSQL's numeric does.
var roundCtx = apd.Context{Precision: 1000, MaxExponent: apd.MaxExponent, MinExponent: apd.MinExponent,
	Traps: apd.InvalidOperation, Rounding: apd.RoundHalfUp}

const usPerDay = 86400 * 1000000

func isInf(v int64) bool { return v == types.InfinityTS || v == types.NegInfinityTS }

func dateToTS(days int64) int64 {
	if isInf(days) {
		return days
	}
	return days * usPerDay
}

func tsToDate(us int64) int64 {
	if isInf(us) {
		return us
	}
	return floorDiv(us, usPerDay)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// CanCoerce reports whether a value of type from converts to type to
// implicitly (as a function argument does).
func CanCoerce(from, to types.T) bool {
	if from == to {
		return true
	}
	if from.ID == types.Array && to.ID == types.Array {
		return castClass(from.Elem, to.Elem) == castImplicit
	}
	return castClass(from.ID, to.ID) == castImplicit
}
