package expr

import (
	"math"

	"github.com/cockroachdb/apd/v3"
	"github.com/tributary/tributary/sql/types"
)

func init() {
	f1 := func(f func(float64) float64) rowFn {
		return func(_ *Ctx, a []types.Datum) (types.Datum, error) { return types.DFloat(f(a[0].F)), nil }
	}
	for _, t := range []types.T{tI2, tI4, tI8} {
		lo, _ := intBounds(t.ID)
		id := t.ID
		def("abs", t, t).r(func(_ *Ctx, a []types.Datum) (types.Datum, error) {
			if a[0].I == lo {
				return types.NullDatum, intRangeErr(id)
			}
			if a[0].I < 0 {
				return types.DInt(-a[0].I), nil
			}
			return a[0], nil
		})
	}
	def("abs", tF4, tF4).r(f1(math.Abs))
	def("abs", tF8, tF8).r(f1(math.Abs))
	def("abs", tN, tN).r(func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		var out types.Datum
		out.Dec.Abs(&a[0].Dec)
		return out, nil
	})
	def("ceil ceiling", tF8, tF8).r(f1(math.Ceil))
	def("floor", tF8, tF8).r(f1(math.Floor))
	def("round", tF8, tF8).r(f1(math.RoundToEven))
	def("trunc", tF8, tF8).r(f1(math.Trunc))
	def("sign", tF8, tF8).r(f1(func(x float64) float64 {
		switch {
		case x > 0:
			return 1
		case x < 0:
			return -1
		}
		return 0
	}))
	def("ceil ceiling", tN, tN).r(decUnary(func(out, x *apd.Decimal) error { _, err := exactCtx.Ceil(out, x); return err }))
	def("floor", tN, tN).r(decUnary(func(out, x *apd.Decimal) error { _, err := exactCtx.Floor(out, x); return err }))
	def("round", tN, tN).r(decRound(apd.RoundHalfUp, false))
	def("round", tN, tN, tI4).r(decRound(apd.RoundHalfUp, true))
	def("trunc", tN, tN).r(decRound(apd.RoundDown, false))
	def("trunc", tN, tN, tI4).r(decRound(apd.RoundDown, true))
	def("sign", tN, tN).r(func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		var out types.Datum
		if a[0].Dec.Form == apd.NaN {
			out.Dec.Form = apd.NaN
		} else {
			out.Dec.SetInt64(int64(a[0].Dec.Sign()))
		}
		return out, nil
	})
	def("sqrt", tF8, tF8).r(func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		if a[0].F < 0 {
			return types.NullDatum, types.Errorf(types.ErrInvalidParameter, "cannot take square root of a negative number")
		}
		return types.DFloat(math.Sqrt(a[0].F)), nil
	})
	def("cbrt", tF8, tF8).r(f1(math.Cbrt))
	def("exp", tF8, tF8).r(func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		r := math.Exp(a[0].F)
		if math.IsInf(r, 0) && !math.IsInf(a[0].F, 0) {
			return types.NullDatum, errFloatOverflow
		}
		return types.DFloat(r), nil
	})
	def("ln", tF8, tF8).r(func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		if err := logArgCheck(a[0].F); err != nil {
			return types.NullDatum, err
		}
		return types.DFloat(math.Log(a[0].F)), nil
	})
	def("log log10", tF8, tF8).r(func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		if err := logArgCheck(a[0].F); err != nil {
			return types.NullDatum, err
		}
		return types.DFloat(math.Log10(a[0].F)), nil
	})
	def("power pow ^", tF8, tF8, tF8).r(func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		x, y := a[0].F, a[1].F
		if x == 0 && y < 0 {
			return types.NullDatum, types.Errorf(types.ErrInvalidParameter, "zero raised to a negative power is undefined")
		}
		if x < 0 && y != math.Trunc(y) {
			return types.NullDatum, types.Errorf(types.ErrInvalidParameter, "a negative number raised to a non-integer power yields a complex result")
		}
		r := math.Pow(x, y)
		if math.IsInf(r, 0) && !math.IsInf(x, 0) && !math.IsInf(y, 0) {
			return types.NullDatum, errFloatOverflow
		}
		return types.DFloat(r), nil
	})
	def("pi", tF8).r(func(_ *Ctx, _ []types.Datum) (types.Datum, error) { return types.DFloat(math.Pi), nil })
	def("degrees", tF8, tF8).r(f1(func(x float64) float64 { return x * 180 / math.Pi }))
	def("radians", tF8, tF8).r(f1(func(x float64) float64 { return x * math.Pi / 180 }))
	def("random", tF8).r(func(ctx *Ctx, _ []types.Datum) (types.Datum, error) { return types.DFloat(ctx.rand()), nil }).vol_(Volatile)

	def("sqrt", tN, tN).r(decUnary(decSqrt))
	def("exp", tN, tN).r(decUnary(decExp))
	def("ln", tN, tN).r(decUnary(func(out, x *apd.Decimal) error { return decLog(out, x, false) }))
	def("log log10", tN, tN).r(decUnary(func(out, x *apd.Decimal) error { return decLog(out, x, true) }))
	def("log", tN, tN, tN).r(decBin(decLogBase))
	def("power pow ^", tN, tN, tN).r(decBin(decPow))
	def("div", tN, tN, tN).r(decBin(func(out, x, y *apd.Decimal) error {
		if y.IsZero() {
			return errDivZero
		}
		_, err := exactCtx.QuoInteger(out, x, y)
		return decErr(err)
	}))
}

func logArgCheck(x float64) error {
	switch {
	case x == 0:
		return types.Errorf(types.ErrInvalidParameter, "cannot take logarithm of zero")
	case x < 0:
		return types.Errorf(types.ErrInvalidParameter, "cannot take logarithm of a negative number")
	}
	return nil
}

func decUnary(f func(out, x *apd.Decimal) error) rowFn {
	return func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		var out types.Datum
		if a[0].Dec.Form == apd.NaN {
			out.Dec.Form = apd.NaN
			return out, nil
		}
		err := f(&out.Dec, &a[0].Dec)
		return out, err
	}
}

func decRound(mode apd.Rounder, withScale bool) rowFn {
	return func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		var out types.Datum
		if a[0].Dec.Form != apd.Finite {
			out.Dec.Set(&a[0].Dec)
			return out, nil
		}
		s := int64(0)
		if withScale {
			s = max(min(a[1].I, 1000), -1000)
		}
		c := roundCtx
		c.Rounding = mode
		if _, err := c.Quantize(&out.Dec, &a[0].Dec, int32(-s)); err != nil {
			return out, decErr(err)
		}
		if s < 0 { // PostgreSQL keeps no fractional digits and prints zeros
			_, _ = c.Quantize(&out.Dec, &out.Dec, 0)
		}
		return out, nil
	}
}

// decDWeight is the decimal exponent of x's leading digit.
func decDWeight(x *apd.Decimal) int64 { return int64(x.NumDigits()) - 1 + int64(x.Exponent) }

// finishScale rounds out (computed with guard digits) to rscale, clamped as PostgreSQL does.
func finishScale(out *apd.Decimal, rscale int64, x ...*apd.Decimal) error {
	for _, d := range x {
		rscale = max(rscale, dscale(d))
	}
	rscale = min(max(rscale, 0), 1000)
	_, err := roundCtx.Quantize(out, out, int32(-rscale))
	return decErr(err)
}

func workCtx(digits int64) *apd.Context {
	c := exactCtx
	c.Precision = uint32(min(max(digits, 20), 2000))
	return &c
}

func decSqrt(out, x *apd.Decimal) error {
	if x.Negative && !x.IsZero() {
		return types.Errorf(types.ErrInvalidParameter, "cannot take square root of a negative number")
	}
	if x.Form == apd.Infinite {
		out.Set(x)
		return nil
	}
	var w int64
	if !x.IsZero() {
		w, _ = decWeight(x)
	}
	sweight := (w+1)*4/2 - 1
	rscale := 16 - sweight
	if _, err := workCtx(rscale+decDWeight(x)/2+10).Sqrt(out, x); err != nil {
		return decErr(err)
	}
	return finishScale(out, rscale, x)
}

func decExp(out, x *apd.Decimal) error {
	f, _ := decToFloat(x)
	val := max(min(f*0.434294481903252, 1000), -1000)
	rscale := 16 - int64(val)
	if _, err := workCtx(rscale+int64(math.Abs(val))+10).Exp(out, x); err != nil {
		return decErr(err)
	}
	return finishScale(out, rscale, x)
}

// lnDWeight estimates the decimal weight of ln(x) (PostgreSQL's estimate_ln_dweight).
func lnDWeight(x *apd.Decimal) int64 {
	f, _ := decToFloat(x)
	if f >= 0.9 && f <= 1.1 {
		var d apd.Decimal
		one := apd.New(1, 0)
		_, _ = exactCtx.Sub(&d, x, one)
		if d.IsZero() {
			return 0
		}
		return decDWeight(&d)
	}
	l := math.Log(f)
	if l == 0 {
		return 0
	}
	return int64(math.Log10(math.Abs(l)))
}

func decLog(out, x *apd.Decimal, base10 bool) error {
	if x.IsZero() {
		return types.Errorf(types.ErrInvalidParameter, "cannot take logarithm of zero")
	}
	if x.Negative {
		return types.Errorf(types.ErrInvalidParameter, "cannot take logarithm of a negative number")
	}
	rscale := 16 - lnDWeight(x)
	c := workCtx(rscale + 20)
	var err error
	if base10 {
		_, err = c.Log10(out, x)
	} else {
		_, err = c.Ln(out, x)
	}
	if err != nil {
		return decErr(err)
	}
	return finishScale(out, rscale, x)
}

func decLogBase(out, b, x *apd.Decimal) error {
	if b.IsZero() || x.IsZero() {
		return types.Errorf(types.ErrInvalidParameter, "cannot take logarithm of zero")
	}
	if b.Negative || x.Negative {
		return types.Errorf(types.ErrInvalidParameter, "cannot take logarithm of a negative number")
	}
	c := workCtx(60)
	var lb, lx apd.Decimal
	if _, err := c.Ln(&lb, b); err != nil {
		return decErr(err)
	}
	if _, err := c.Ln(&lx, x); err != nil {
		return decErr(err)
	}
	if lb.IsZero() {
		return errDivZero
	}
	if _, err := c.Quo(out, &lx, &lb); err != nil {
		return decErr(err)
	}
	rscale := int64(16)
	if !out.IsZero() {
		rscale = 16 - decDWeight(out)
	}
	return finishScale(out, rscale, b, x)
}

func decPow(out, x, y *apd.Decimal) error {
	if x.IsZero() && y.Negative {
		return types.Errorf(types.ErrInvalidParameter, "zero raised to a negative power is undefined")
	}
	var intPart, frac apd.Decimal
	y.Modf(&intPart, &frac)
	if x.Negative && !frac.IsZero() {
		return types.Errorf(types.ErrInvalidParameter, "a negative number raised to a non-integer power yields a complex result")
	}
	fx, _ := decToFloat(x)
	fy, _ := decToFloat(y)
	val := 0.0
	if fx != 0 {
		val = max(min(fy*math.Log10(math.Abs(fx)), 1000), -1000)
	}
	rscale := 16 - int64(val)
	if _, err := workCtx(rscale+int64(math.Abs(val))+20).Pow(out, x, y); err != nil {
		return decErr(err)
	}
	return finishScale(out, rscale, x, y)
}
