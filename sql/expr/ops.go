package expr

import (
	"cmp"
	"math"
	"slices"

	"github.com/cockroachdb/apd/v3"
	"github.com/tributary/tributary/sql/types"
)

var (
	tB   = types.TBool
	tI2  = types.TInt16
	tI4  = types.TInt32
	tI8  = types.TInt64
	tF4  = types.TFloat32
	tF8  = types.TFloat64
	tN   = types.TNumeric
	tS   = types.TVarchar
	tBy  = types.TBytea
	tD   = types.TDate
	tTm  = types.TTime
	tTS  = types.TTimestamp
	tTZ  = types.TTimestamptz
	tIv  = types.TInterval
	tJ   = types.TJsonb
	tUnk = types.TUnknown
)

var errDivZero = types.Errorf(types.ErrDivisionByZero, "division by zero")

func init() {
	for _, t := range []types.T{tI2, tI4, tI8} {
		for _, op := range []byte{'+', '-', '*', '/', '%'} {
			def(string(op), t, t, t).v(intArith(op, t.ID))
		}
		def("neg", t, t).v(intNeg(t.ID))
		def("bitnot", t, t).r(func(_ *Ctx, a []types.Datum) (types.Datum, error) { return types.DInt(^a[0].I), nil }) // ~x: stays in the type's range
		def("mod", t, t, t).v(intArith('%', t.ID))
		bits := map[types.ID]uint{types.Int16: 16, types.Int32: 32, types.Int64: 64}[t.ID]
		mask := uint64(bits - 1) // the shift count masked, as PostgreSQL's C shift on x86
		for op, f := range map[string]func(x, y int64) int64{
			"&":  func(x, y int64) int64 { return x & y },
			"|":  func(x, y int64) int64 { return x | y },
			"#":  func(x, y int64) int64 { return x ^ y },
			"<<": func(x, y int64) int64 { return x << (uint64(y) & mask) },
			">>": func(x, y int64) int64 { return x >> (uint64(y) & mask) },
		} {
			def(op, t, t, t).r(func(_ *Ctx, a []types.Datum) (types.Datum, error) {
				r := f(a[0].I, a[1].I)
				switch bits { // wrap to the type's width, as C does
				case 16:
					r = int64(int16(r))
				case 32:
					r = int64(int32(r))
				}
				return types.DInt(r), nil
			})
		}
		id := t.ID
		lo, hi := intBounds(id)
		def("gcd", t, t, t).r(func(_ *Ctx, a []types.Datum) (types.Datum, error) {
			g := gcd(a[0].I, a[1].I)
			if g < 0 || g > hi { // gcd(min, 0) and gcd(min, min) are -min
				return types.NullDatum, intRangeErr(id)
			}
			return types.DInt(g), nil
		})
		def("lcm", t, t, t).r(func(_ *Ctx, a []types.Datum) (types.Datum, error) {
			g := gcd(a[0].I, a[1].I)
			if g == 0 {
				return types.DInt(0), nil
			}
			if g < 0 {
				return types.NullDatum, intRangeErr(id)
			}
			x, y := a[0].I/g, a[1].I
			l := x * y
			if (x != 0 && l/x != y) || (x == -1 && y == math.MinInt64) || (y == -1 && x == math.MinInt64) || l <= lo || l > hi {
				return types.NullDatum, intRangeErr(id)
			}
			if l < 0 {
				l = -l
			}
			return types.DInt(l), nil
		})
	}
	for _, t := range []types.T{tF4, tF8} {
		for _, op := range []byte{'+', '-', '*', '/'} {
			def(string(op), t, t, t).v(floatArith(op, t.ID == types.Float32))
		}
		def("neg", t, t).r(func(_ *Ctx, a []types.Datum) (types.Datum, error) { return types.DFloat(-a[0].F), nil })
	}
	// PostgreSQL's float48 and float84 operators: real with double precision
	// (or with an integer or numeric, which resolve to them, float8 being
	// the preferred numeric type) computes in double precision.
	for _, op := range []byte{'+', '-', '*', '/'} {
		def(string(op), tF8, tF4, tF8).v(floatArith(op, false))
		def(string(op), tF8, tF8, tF4).v(floatArith(op, false))
	}
	def("+", tN, tN, tN).r(decBin(decAdd))
	def("-", tN, tN, tN).r(decBin(decSub))
	def("*", tN, tN, tN).r(decBin(decMul))
	def("/", tN, tN, tN).r(decBin(decDiv))
	def("% mod", tN, tN, tN).r(decBin(decMod))
	def("neg", tN, tN).r(func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		var out types.Datum
		out.Dec.Neg(&a[0].Dec)
		return out, nil
	})

	def("not", tB, tB).v(notVec)
	def("and", tB, tB, tB).variadic_().lazyBool(true)
	def("or", tB, tB, tB).variadic_().lazyBool(false)
	for _, name := range []string{"is_true", "is_false", "is_not_true", "is_not_false"} {
		def(name, tB, tB).v(boolTest(name)).nonStrict = true
	}

	for _, op := range []string{"=", "<>", "<", "<=", ">", ">=", "<=>"} {
		specials[op] = resolveCompare
	}
	specials["is_null"] = resolveIsNull
	specials["is_not_null"] = resolveIsNull
	specials["in"] = resolveIn
	specials["between"] = resolveBetween
	specials["coalesce"] = resolveCoalesce
	specials["nullif"] = resolveNullif
	specials["greatest"] = resolveGreatestLeast
	specials["least"] = resolveGreatestLeast
}

// ---- integers ----

func intArith(op byte, id types.ID) vecFn {
	lo, hi := intBounds(id)
	wide := id == types.Int64
	return func(_ *Ctx, args []vecArg, n int, out *types.Vector) error {
		a, b := &args[0], &args[1]
		an, bn, ai, bi := a.v.Nulls, b.v.Nulls, a.v.I64, b.v.I64
		for i := 0; i < n; i++ {
			ia, ib := a.idx(i), b.idx(i)
			null := an[ia] || bn[ib]
			var r int64
			if !null {
				x, y := ai[ia], bi[ib]
				switch op {
				case '+':
					r = x + y
					if wide && ((x > 0 && y > 0 && r < 0) || (x < 0 && y < 0 && r >= 0)) {
						return intRangeErr(id)
					}
				case '-':
					r = x - y
					if wide && ((x >= 0 && y < 0 && r < 0) || (x < 0 && y > 0 && r >= 0)) {
						return intRangeErr(id)
					}
				case '*':
					r = x * y
					if wide && x != 0 && (r/x != y || (x == -1 && y == math.MinInt64) || (y == -1 && x == math.MinInt64)) {
						return intRangeErr(id)
					}
				case '/':
					if y == 0 {
						return errDivZero
					}
					if y == -1 {
						if x == lo {
							return intRangeErr(id)
						}
						r = -x
					} else {
						r = x / y
					}
				case '%':
					if y == 0 {
						return errDivZero
					}
					if y != -1 {
						r = x % y
					}
				}
				if !wide && (r < lo || r > hi) {
					return intRangeErr(id)
				}
			}
			out.Nulls = append(out.Nulls, null)
			out.I64 = append(out.I64, r)
		}
		return nil
	}
}

// NegInt negates an integer of type id (Int16, Int32 or Int64), with
// PostgreSQL's 22003 error for the type's minimum, whose negation does not
// fit; the binder folds "-constant" with it.
func NegInt(id types.ID, x int64) (int64, error) {
	if lo, _ := intBounds(id); x == lo {
		return 0, intRangeErr(id)
	}
	return -x, nil
}

func intNeg(id types.ID) vecFn {
	lo, _ := intBounds(id)
	return func(_ *Ctx, args []vecArg, n int, out *types.Vector) error {
		a := &args[0]
		for i := 0; i < n; i++ {
			j := a.idx(i)
			x := a.v.I64[j]
			if !a.v.Nulls[j] && x == lo {
				return intRangeErr(id)
			}
			out.Nulls = append(out.Nulls, a.v.Nulls[j])
			out.I64 = append(out.I64, -x)
		}
		return nil
	}
}

// ---- floats ----

var errFloatUnderflow = types.Errorf(types.ErrNumericOutOfRange, "value out of range: underflow")

func floatArith(op byte, f32 bool) vecFn {
	return func(_ *Ctx, args []vecArg, n int, out *types.Vector) error {
		a, b := &args[0], &args[1]
		for i := 0; i < n; i++ {
			ia, ib := a.idx(i), b.idx(i)
			null := a.v.Nulls[ia] || b.v.Nulls[ib]
			var r float64
			if !null {
				var err error
				if r, err = floatOp(op, a.v.F64[ia], b.v.F64[ib], f32); err != nil {
					return err
				}
			}
			out.Nulls = append(out.Nulls, null)
			out.F64 = append(out.F64, r)
		}
		return nil
	}
}

func floatOp(op byte, x, y float64, f32 bool) (float64, error) {
	var r float64
	switch op {
	case '+':
		r = x + y
	case '-':
		r = x - y
	case '*':
		r = x * y
	case '/':
		if y == 0 {
			return 0, errDivZero
		}
		r = x / y
	}
	if f32 {
		r = float64(float32(r))
	}
	if math.IsInf(r, 0) && !math.IsInf(x, 0) && !math.IsInf(y, 0) {
		return 0, errFloatOverflow
	}
	if r == 0 && (op == '*' || op == '/') && x != 0 && !math.IsInf(y, 0) && (op == '/' || y != 0) {
		return 0, errFloatUnderflow
	}
	return r, nil
}

// ---- numeric ----

func decBin(f func(out, x, y *apd.Decimal) error) rowFn {
	return func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		var out types.Datum
		err := f(&out.Dec, &a[0].Dec, &a[1].Dec)
		return out, err
	}
}

// exactCtx does exact NUMERIC arithmetic (within 1000 significant digits).
var exactCtx = apd.Context{Precision: 1000, MaxExponent: apd.MaxExponent, MinExponent: apd.MinExponent,
	Traps: apd.InvalidOperation | apd.DivisionByZero, Rounding: apd.RoundHalfUp}

func decErr(err error) error {
	if err == nil {
		return nil
	}
	return types.Errorf(types.ErrNumericOutOfRange, "value overflows numeric format: %v", err)
}

func decNaNOp(out, x, y *apd.Decimal) bool {
	if x.Form == apd.NaN || y.Form == apd.NaN {
		out.Form = apd.NaN
		return true
	}
	return false
}

func decAdd(out, x, y *apd.Decimal) error {
	if decNaNOp(out, x, y) {
		return nil
	}
	if x.Form == apd.Infinite && y.Form == apd.Infinite && x.Negative != y.Negative {
		out.Form = apd.NaN
		return nil
	}
	_, err := exactCtx.Add(out, x, y)
	return decErr(err)
}

func decSub(out, x, y *apd.Decimal) error {
	var ny apd.Decimal
	ny.Neg(y)
	return decAdd(out, x, &ny)
}

func decMul(out, x, y *apd.Decimal) error {
	if decNaNOp(out, x, y) {
		return nil
	}
	if (x.Form == apd.Infinite && y.IsZero()) || (y.Form == apd.Infinite && x.IsZero()) {
		out.Form = apd.NaN
		return nil
	}
	_, err := exactCtx.Mul(out, x, y)
	return decErr(err)
}

// decWeight returns PostgreSQL's base-10000 weight and first base-10000 digit of a finite non-zero x.
func decWeight(x *apd.Decimal) (weight int64, first int64) {
	coeff := x.Coeff.String()
	p := int64(len(coeff)) - 1 + int64(x.Exponent) // power of ten of the leading digit
	weight = p / 4
	if p < 0 && p%4 != 0 {
		weight--
	}
	cnt := p - 4*weight + 1
	for i := int64(0); i < cnt; i++ {
		first *= 10
		if i < int64(len(coeff)) {
			first += int64(coeff[i] - '0')
		}
	}
	return weight, first
}

// dscale is the display scale of x (digits after the point).
func dscale(x *apd.Decimal) int64 {
	if x.Form != apd.Finite || x.Exponent >= 0 {
		return 0
	}
	return -int64(x.Exponent)
}

// divScale is PostgreSQL's select_div_scale.
func divScale(x, y *apd.Decimal) int64 {
	var w1, f1, w2, f2 int64
	if !x.IsZero() && x.Form == apd.Finite {
		w1, f1 = decWeight(x)
	}
	if !y.IsZero() && y.Form == apd.Finite {
		w2, f2 = decWeight(y)
	}
	qw := w1 - w2
	if f1 <= f2 {
		qw--
	}
	s := 16 - qw*4
	s = max(s, dscale(x), dscale(y), 0)
	return min(s, 1000)
}

// decQuoScale sets out = x / y rounded half away from zero to scale digits.
func decQuoScale(out, x, y *apd.Decimal, scale int64) error {
	// Truncate with guard digits, then round: exact, unlike rounding twice.
	intDigits := int64(x.NumDigits()) + int64(x.Exponent) - int64(y.NumDigits()) - int64(y.Exponent) + 2
	prec := max(intDigits, 1) + scale + 3
	c := exactCtx
	c.Precision = uint32(min(max(prec, 1), 5000))
	c.Rounding = apd.RoundDown
	if _, err := c.Quo(out, x, y); err != nil {
		return decErr(err)
	}
	_, err := roundCtx.Quantize(out, out, int32(-scale))
	return decErr(err)
}

func decDiv(out, x, y *apd.Decimal) error {
	if decNaNOp(out, x, y) {
		return nil
	}
	if y.IsZero() {
		return errDivZero
	}
	if x.Form == apd.Infinite || y.Form == apd.Infinite {
		if x.Form == apd.Infinite && y.Form == apd.Infinite {
			out.Form = apd.NaN
			return nil
		}
		if y.Form == apd.Infinite {
			out.SetInt64(0)
			return nil
		}
		out.Set(x)
		out.Negative = x.Negative != y.Negative
		return nil
	}
	return decQuoScale(out, x, y, divScale(x, y))
}

func decMod(out, x, y *apd.Decimal) error {
	if decNaNOp(out, x, y) {
		return nil
	}
	if y.IsZero() {
		return errDivZero
	}
	if x.Form == apd.Infinite {
		out.Form = apd.NaN
		return nil
	}
	if y.Form == apd.Infinite {
		out.Set(x)
		return nil
	}
	_, err := exactCtx.Rem(out, x, y)
	return decErr(err)
}

// ---- booleans ----

func notVec(_ *Ctx, args []vecArg, n int, out *types.Vector) error {
	a := &args[0]
	for i := 0; i < n; i++ {
		j := a.idx(i)
		out.Nulls = append(out.Nulls, a.v.Nulls[j])
		out.I64 = append(out.I64, 1-a.v.I64[j]&1)
	}
	return nil
}

// lazyBool makes o a three-valued AND (isAnd) or OR over its arguments.
func (o *overload) lazyBool(isAnd bool) *overload {
	// dominant is the value that decides the result alone (false for AND).
	var dominant int64
	if !isAnd {
		dominant = 1
	}
	o.nonStrict = true
	o.vec = func(_ *Ctx, args []vecArg, n int, out *types.Vector) error {
		for i := 0; i < n; i++ {
			res, null := 1-dominant, false
			for k := range args {
				a := &args[k]
				j := a.idx(i)
				if a.v.Nulls[j] {
					null = true
				} else if a.v.I64[j] == dominant {
					res, null = dominant, false
					break
				}
			}
			out.Nulls = append(out.Nulls, null)
			out.I64 = append(out.I64, res)
		}
		return nil
	}
	o.lazy = func(ctx *Ctx, args []Expr, row []types.Datum) (types.Datum, error) {
		null := false
		for _, a := range args {
			d, err := a.EvalRow(ctx, row)
			if err != nil {
				return types.NullDatum, err
			}
			if d.Null {
				null = true
			} else if d.I == dominant {
				return types.DInt(dominant), nil
			}
		}
		if null {
			return types.NullDatum, nil
		}
		return types.DInt(1 - dominant), nil
	}
	return o
}

func boolTest(name string) vecFn {
	// result for (NULL, false, true)
	var tbl [3]int64
	switch name {
	case "is_true":
		tbl = [3]int64{0, 0, 1}
	case "is_false":
		tbl = [3]int64{0, 1, 0}
	case "is_not_true":
		tbl = [3]int64{1, 1, 0}
	case "is_not_false":
		tbl = [3]int64{1, 0, 1}
	}
	return func(_ *Ctx, args []vecArg, n int, out *types.Vector) error {
		a := &args[0]
		for i := 0; i < n; i++ {
			j := a.idx(i)
			k := 1 + a.v.I64[j]&1
			if a.v.Nulls[j] {
				k = 0
			}
			out.Nulls = append(out.Nulls, false)
			out.I64 = append(out.I64, tbl[k])
		}
		return nil
	}
}

// ---- comparisons ----

// cmpTable gives an operator's result for Compare's -1, 0, 1.
func cmpTable(op string) [3]bool {
	switch op {
	case "=", "<=>":
		return [3]bool{false, true, false}
	case "<>":
		return [3]bool{true, false, true}
	case "<":
		return [3]bool{true, false, false}
	case "<=":
		return [3]bool{true, true, false}
	case ">":
		return [3]bool{false, false, true}
	}
	return [3]bool{false, true, true} // >=
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func resolveCompare(name string, args []Expr) (Expr, error) {
	if len(args) != 2 {
		return nil, noFunction(name, exprTypes(args))
	}
	t, err := commonArgType(name, args)
	if err != nil {
		return nil, err
	}
	cargs, err := coerceAll(args, t)
	if err != nil {
		return nil, err
	}
	tbl := cmpTable(name)
	f := &FuncExpr{Name: name, Args: cargs, depth: argDepth(cargs), Ret: tB, strict: name != "<=>"}
	f.vec = compareVec(t, tbl, name == "<=>")
	f.row = func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		if a[0].Null || a[1].Null {
			if name == "<=>" {
				return types.DBool(a[0].Null && a[1].Null), nil
			}
			return types.NullDatum, nil
		}
		return types.DBool(tbl[types.CompareNonNull(t, &a[0], &a[1])+1]), nil
	}
	if t.ID == types.Struct && name != "<=>" {
		// PostgreSQL's row comparison: a NULL field decides unknown.
		eq := name == "=" || name == "<>"
		f.vec = nil
		f.row = func(_ *Ctx, a []types.Datum) (types.Datum, error) {
			if a[0].Null || a[1].Null {
				return types.NullDatum, nil
			}
			c, null := types.CompareRows(t, a[0].S, a[1].S, eq)
			if null && c == 0 {
				return types.NullDatum, nil
			}
			return types.DBool(tbl[c+1]), nil
		}
	}
	return f, nil
}

// commonArgType is CommonType for operator arguments, with the operator's error.
func commonArgType(name string, args []Expr) (types.T, error) {
	ts := exprTypes(args)
	t, err := CommonType(ts)
	if err != nil {
		return t, noFunction(name, ts)
	}
	return t.Base(), nil
}

func compareVec(t types.T, tbl [3]bool, notDistinct bool) vecFn {
	var ti [3]int64
	for i := range tbl {
		ti[i] = b2i(tbl[i])
	}
	return func(_ *Ctx, args []vecArg, n int, out *types.Vector) error {
		a, b := &args[0], &args[1]
		an, bn := a.v.Nulls, b.v.Nulls
		start := len(out.I64)
		out.I64 = slices.Grow(out.I64, n)
		out.Nulls = slices.Grow(out.Nulls, n)
		switch t.Physical() {
		case types.PhysI64:
			ai, bi := a.v.I64, b.v.I64
			for i := 0; i < n; i++ {
				out.I64 = append(out.I64, ti[cmp.Compare(ai[a.idx(i)], bi[b.idx(i)])+1])
			}
		case types.PhysStr:
			if t.ID == types.Array || t.ID == types.Struct {
				compareRows(t, ti, a, b, n, out)
				break
			}
			as, bs := a.v.Str, b.v.Str
			for i := 0; i < n; i++ {
				out.I64 = append(out.I64, ti[cmp.Compare(as[a.idx(i)], bs[b.idx(i)])+1])
			}
		default:
			compareRows(t, ti, a, b, n, out)
		}
		for i := 0; i < n; i++ {
			na, nb := an[a.idx(i)], bn[b.idx(i)]
			if notDistinct {
				if na || nb {
					out.I64[start+i] = b2i(na && nb)
				}
				out.Nulls = append(out.Nulls, false)
			} else {
				out.Nulls = append(out.Nulls, na || nb)
			}
		}
		return nil
	}
}

func resolveIsNull(name string, args []Expr) (Expr, error) {
	if len(args) != 1 {
		return nil, noFunction(name, exprTypes(args))
	}
	want := name == "is_null"
	return &FuncExpr{Name: name, Args: args, depth: argDepth(args), Ret: tB,
		vec: func(_ *Ctx, args []vecArg, n int, out *types.Vector) error {
			a := &args[0]
			for i := 0; i < n; i++ {
				out.Nulls = append(out.Nulls, false)
				out.I64 = append(out.I64, b2i(a.v.Nulls[a.idx(i)] == want))
			}
			return nil
		},
		row: func(_ *Ctx, a []types.Datum) (types.Datum, error) { return types.DBool(a[0].Null == want), nil },
	}, nil
}

func resolveIn(name string, args []Expr) (Expr, error) {
	if len(args) < 2 {
		return nil, noFunction(name, exprTypes(args))
	}
	t, err := commonArgType("=", args)
	if err != nil {
		return nil, err
	}
	cargs, err := coerceAll(args, t)
	if err != nil {
		return nil, err
	}
	return &FuncExpr{Name: name, Args: cargs, depth: argDepth(cargs), Ret: tB, row: func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		if a[0].Null {
			return types.NullDatum, nil
		}
		null := false
		for k := 1; k < len(a); k++ {
			switch {
			case a[k].Null:
				null = true
			case t.ID == types.Struct:
				// Row equality: a NULL field makes it unknown.
				if c, unknown := types.CompareRows(t, a[0].S, a[k].S, true); c == 0 && unknown {
					null = true
				} else if c == 0 {
					return types.DBool(true), nil
				}
			case types.CompareNonNull(t, &a[0], &a[k]) == 0:
				return types.DBool(true), nil
			}
		}
		if null {
			return types.NullDatum, nil
		}
		return types.DBool(false), nil
	}}, nil
}

func resolveBetween(name string, args []Expr) (Expr, error) {
	if len(args) != 3 {
		return nil, noFunction(name, exprTypes(args))
	}
	t, err := commonArgType(">=", args)
	if err != nil {
		return nil, err
	}
	cargs, err := coerceAll(args, t)
	if err != nil {
		return nil, err
	}
	return &FuncExpr{Name: name, Args: cargs, depth: argDepth(cargs), Ret: tB, row: func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		// x >= lo AND x <= hi, three-valued.
		lo, hi := tri(t, &a[0], &a[1]), tri(t, &a[2], &a[0])
		switch {
		case lo == 0 || hi == 0:
			return types.DBool(false), nil
		case lo < 0 || hi < 0:
			return types.NullDatum, nil
		}
		return types.DBool(true), nil
	}}, nil
}

// tri returns 1 when x >= y, 0 when not, -1 when unknown (a NULL).
func tri(t types.T, x, y *types.Datum) int {
	if x.Null || y.Null {
		return -1
	}
	if types.CompareNonNull(t, x, y) >= 0 {
		return 1
	}
	return 0
}

func resolveCoalesce(name string, args []Expr) (Expr, error) {
	if len(args) == 0 {
		return nil, types.Errorf(types.ErrSyntax, "coalesce needs at least one argument")
	}
	t, err := CommonType(exprTypes(args))
	if err != nil {
		return nil, types.Errorf(types.ErrDatatypeMismatch, "COALESCE %s", err.Error())
	}
	cargs, err := coerceAll(args, t)
	if err != nil {
		return nil, err
	}
	return &FuncExpr{Name: name, Args: cargs, depth: argDepth(cargs), Ret: t,
		vec: func(_ *Ctx, args []vecArg, n int, out *types.Vector) error {
			for i := 0; i < n; i++ {
				done := false
				for k := range args {
					j := args[k].idx(i)
					if !args[k].v.Nulls[j] {
						out.AppendFrom(args[k].v, j)
						done = true
						break
					}
				}
				if !done {
					out.AppendNull()
				}
			}
			return nil
		},
		lazy: func(ctx *Ctx, args []Expr, row []types.Datum) (types.Datum, error) {
			for _, a := range args {
				d, err := a.EvalRow(ctx, row)
				if err != nil || !d.Null {
					return d, err
				}
			}
			return types.NullDatum, nil
		}}, nil
}

func resolveNullif(name string, args []Expr) (Expr, error) {
	if len(args) != 2 {
		return nil, noFunction(name, exprTypes(args))
	}
	t, err := commonArgType("=", args)
	if err != nil {
		return nil, err
	}
	cargs, err := coerceAll(args, t)
	if err != nil {
		return nil, err
	}
	return &FuncExpr{Name: name, Args: cargs, depth: argDepth(cargs), Ret: t, row: func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		if !a[0].Null && !a[1].Null && types.CompareNonNull(t, &a[0], &a[1]) == 0 {
			return types.NullDatum, nil
		}
		return a[0], nil
	}}, nil
}

func resolveGreatestLeast(name string, args []Expr) (Expr, error) {
	if len(args) == 0 {
		return nil, noFunction(name, nil)
	}
	t, err := CommonType(exprTypes(args))
	if err != nil {
		return nil, types.Errorf(types.ErrDatatypeMismatch, "%s %s", name, err.Error())
	}
	cargs, err := coerceAll(args, t)
	if err != nil {
		return nil, err
	}
	sign := 1
	if name == "least" {
		sign = -1
	}
	return &FuncExpr{Name: name, Args: cargs, depth: argDepth(cargs), Ret: t, row: func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		best := -1
		for k := range a {
			if a[k].Null {
				continue
			}
			if best < 0 || sign*types.CompareNonNull(t, &a[k], &a[best]) > 0 {
				best = k
			}
		}
		if best < 0 {
			return types.NullDatum, nil
		}
		return a[best], nil
	}}, nil
}

// gcd is the non-negative greatest common divisor (gcd(0, 0) = 0).
func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	if a < 0 {
		return -a
	}
	return a
}

// compareRows appends tbl's verdict on each row pair of a and b through
// types.CompareNonNull (NULL rows get a placeholder the caller overwrites).
func compareRows(t types.T, ti [3]int64, a, b *vecArg, n int, out *types.Vector) {
	var x, y types.Datum
	for i := 0; i < n; i++ {
		a.v.GetInto(a.idx(i), &x)
		b.v.GetInto(b.idx(i), &y)
		c := 0
		if !x.Null && !y.Null {
			c = types.CompareNonNull(t, &x, &y)
		}
		out.I64 = append(out.I64, ti[c+1])
	}
}
