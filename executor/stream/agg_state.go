package stream

import (
	"fmt"
	"math"

	"github.com/cockroachdb/apd/v3"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
)

// aggFn is the fixed, per-aggregate part of a streaming aggregation: how
// input rows update its accumulator, how the accumulator is stored in the
// "agg state" row (plan.AggStateTypes) and how its result is computed.
type aggFn struct {
	call     plan.AggCall
	kind     expr.AggKind
	in       types.T // first argument's type (zero for count(*))
	result   types.T
	input    plan.AggInput
	stateCol int // first state column in the "agg state" row
	nState   int
	table    int            // index of its extra table in aggRun.tables (-1: none)
	share    *distinctShare // the distinct table it shares (plan.StreamAgg.AggTables), if any
	count    int            // its count's place after the group and arguments in share's rows
	order    []plan.SortKey // AggInputOrdered: plan.AggOrder of the call
	// div and mul compute numeric and interval averages exactly as the batch
	// aggregate does (the "/" and "*" operators of sql/expr).
	div, mul expr.Expr
	divArgs  []types.Datum
	ectx     expr.Ctx
}

// sumClass is how sum and avg accumulate their input.
type sumClass uint8

const (
	sumInt sumClass = iota
	sumFloat
	sumNumeric
	sumInterval
)

func (f *aggFn) sumClass() sumClass {
	switch {
	case f.in.IsInteger():
		return sumInt
	case f.in.ID == types.Float32 || f.in.ID == types.Float64:
		return sumFloat
	case f.in.ID == types.Numeric:
		return sumNumeric
	}
	return sumInterval
}

// aggAcc is one group's accumulator for one aggregate. Which fields are used
// depends on the aggregate (see plan.AggStateTypes).
type aggAcc struct {
	n    int64 // count, non-NULL inputs of sum/avg, trues of bool_*
	m    int64 // falses of bool_*
	i    int64 // integer sum (the part that fits; dec holds the overflow)
	f    float64
	dec  apd.Decimal
	iv   types.IntervalValue
	nan  int64 // NaN, +Infinity and -Infinity inputs of float/numeric sums,
	pinf int64 // counted apart so that retracting them is exact
	ninf int64
	// res is the current result of min, max, string_agg, first_value and
	// last_value; stale means it
	// must be recomputed from the aggregate's input table.
	res   types.Datum
	stale bool
	sk    *expr.Sketch // approx_percentile
	// recent are values a DISTINCT aggregate over an input that only
	// inserts found in its table (recentValues).
	recent *recentValues
}

// recentValues are the last integer values a DISTINCT aggregate of a group
// over an input that only inserts found in its distinct table, stored or
// pending. Such a table never loses a value while the group lives, so a
// value among them is known without a read: Nexmark q16's hot bidder and hot
// auction of the moment come again and again, each a storage point read.
type recentValues struct {
	v    [8]int64
	n    int // how many of v are set
	next int // where add writes
}

func (r *recentValues) has(x int64) bool {
	for _, y := range r.v[:r.n] {
		if y == x {
			return true
		}
	}
	return false
}

func (r *recentValues) add(x int64) {
	r.v[r.next] = x
	r.next = (r.next + 1) % len(r.v)
	r.n = max(r.n, r.next)
	if r.next == 0 {
		r.n = len(r.v)
	}
}

// sumCtx adds numerics exactly.
var sumCtx = apd.Context{Precision: 1000, MaxExponent: apd.MaxExponent, MinExponent: apd.MinExponent,
	Traps: apd.InvalidOperation | apd.DivisionByZero, Rounding: apd.RoundHalfUp}

func newAggFn(c plan.AggCall, stateCol int, appendOnly bool) (*aggFn, error) {
	ts, err := plan.AggStateTypes(&c)
	if err != nil {
		return nil, err
	}
	f := &aggFn{call: c, kind: c.Agg.Kind, result: c.Agg.Result, input: plan.AggInputOf(&c, appendOnly),
		stateCol: stateCol, nState: len(ts), table: -1, order: plan.AggOrder(&c)}
	if len(c.Agg.Args) > 0 {
		f.in = c.Agg.Args[0]
	}
	if f.kind == expr.AggAvg {
		switch f.sumClass() {
		case sumInt, sumNumeric:
			f.div, err = expr.Call("/", []expr.Expr{expr.Column(0, types.TNumeric), expr.Column(1, types.TNumeric)})
		case sumInterval:
			f.mul, err = expr.Call("*", []expr.Expr{expr.Column(0, types.TInterval), expr.Column(1, types.TFloat64)})
		}
		if err != nil {
			return nil, fmt.Errorf("avg: %w", err)
		}
		f.divArgs = make([]types.Datum, 2)
	}
	return f, nil
}

// feedsAcc reports whether input rows update the accumulator directly
// (rather than through the aggregate's input table).
func (f *aggFn) feedsAcc() bool {
	return f.input == plan.AggInputNone
}

// apply adds (sign 1) or retracts (sign -1) argument d to acc, for the
// aggregates whose state is all in the accumulator (count, sum, avg,
// bool_*). d is the first argument (ignored by count(*)).
func (f *aggFn) apply(acc *aggAcc, d *types.Datum, sign int64) error {
	switch f.kind {
	case expr.AggCountStar:
		acc.n += sign
		return nil
	case expr.AggCount:
		if !d.Null {
			acc.n += sign
		}
		return nil
	case expr.AggBoolAnd, expr.AggBoolOr:
		if d.Null {
			return nil
		}
		if d.I != 0 {
			acc.n += sign
		} else {
			acc.m += sign
		}
		return nil
	case expr.AggSum, expr.AggAvg:
		if d.Null {
			return nil
		}
		acc.n += sign
		return f.applySum(acc, d, sign)
	case expr.AggApproxPercentile:
		if !d.Null {
			acc.sk.Update(d.F, sign)
		}
		return nil
	case expr.AggMin, expr.AggMax: // over an append-only input (AggInputOf)
		if d.Null {
			return nil
		}
		if sign < 0 {
			return fmt.Errorf("%s over an append-only input received a retraction", f.call.Agg.Name)
		}
		if acc.res.Null || f.better(d, &acc.res) {
			acc.res = d.Copy()
		}
		return nil
	}
	return fmt.Errorf("aggregate %s is kept in a table", f.call.Agg.Name)
}

// merge adds row i's partials of a local aggregation (starting at column
// col of c, plan.LocalAggPartials) to acc: counts add to n, and sums of
// integers go through applySum as one value (tmp is scratch).
func (f *aggFn) merge(acc *aggAcc, c *types.Chunk, col int, tmp *types.Datum, i int) error {
	acc.n += c.Cols[col].I64[i]
	if f.kind != expr.AggSum && f.kind != expr.AggAvg {
		return nil
	}
	*tmp = types.DInt(c.Cols[col+1].I64[i])
	return f.applySum(acc, tmp, 1)
}

func (f *aggFn) applySum(acc *aggAcc, d *types.Datum, sign int64) error {
	switch f.sumClass() {
	case sumInt:
		v := d.I
		if sign < 0 {
			if v == math.MinInt64 {
				return acc.spill(d.I, sign)
			}
			v = -v
		}
		r := acc.i + v
		if (v > 0 && r < acc.i) || (v < 0 && r > acc.i) {
			return acc.spill(d.I, sign)
		}
		acc.i = r
	case sumFloat:
		switch {
		case math.IsNaN(d.F):
			acc.nan += sign
		case math.IsInf(d.F, 1):
			acc.pinf += sign
		case math.IsInf(d.F, -1):
			acc.ninf += sign
		default:
			acc.f += float64(sign) * d.F
		}
	case sumNumeric:
		switch d.Dec.Form {
		case apd.NaN, apd.NaNSignaling:
			acc.nan += sign
		case apd.Infinite:
			if d.Dec.Negative {
				acc.ninf += sign
			} else {
				acc.pinf += sign
			}
		default:
			var err error
			if sign > 0 {
				_, err = sumCtx.Add(&acc.dec, &acc.dec, &d.Dec)
			} else {
				_, err = sumCtx.Sub(&acc.dec, &acc.dec, &d.Dec)
			}
			if err != nil {
				return types.Errorf(types.ErrNumericOutOfRange, "value overflows numeric format: %v", err)
			}
		}
	case sumInterval:
		m := int64(acc.iv.Months) + sign*int64(d.Iv.Months)
		dd := int64(acc.iv.Days) + sign*int64(d.Iv.Days)
		if m > math.MaxInt32 || m < math.MinInt32 || dd > math.MaxInt32 || dd < math.MinInt32 {
			return types.Errorf(types.ErrDatetimeOverflow, "interval out of range")
		}
		acc.iv = types.IntervalValue{Months: int32(m), Days: int32(dd), Micros: acc.iv.Micros + sign*d.Iv.Micros}
	}
	return nil
}

// spill moves the integer sum and sign*v into the decimal part.
func (a *aggAcc) spill(v, sign int64) error {
	var x apd.Decimal
	x.SetInt64(a.i)
	if _, err := sumCtx.Add(&a.dec, &a.dec, &x); err != nil {
		return types.Errorf(types.ErrNumericOutOfRange, "value overflows numeric format: %v", err)
	}
	a.i = 0
	x.SetInt64(v)
	if sign < 0 {
		x.Neg(&x)
	}
	if _, err := sumCtx.Add(&a.dec, &a.dec, &x); err != nil {
		return types.Errorf(types.ErrNumericOutOfRange, "value overflows numeric format: %v", err)
	}
	return nil
}

// intSum stores the exact integer sum (i + dec) in out.
func (a *aggAcc) intSum(out *apd.Decimal) {
	out.SetInt64(a.i)
	if !a.dec.IsZero() {
		_, _ = sumCtx.Add(out, out, &a.dec)
	}
}

// special returns the float or numeric sum's value when NaN or infinite
// inputs decide it: 0 none, 1 NaN, 2 +Infinity, 3 -Infinity.
func (a *aggAcc) special() int {
	switch {
	case a.nan > 0 || (a.pinf > 0 && a.ninf > 0):
		return 1
	case a.pinf > 0:
		return 2
	case a.ninf > 0:
		return 3
	}
	return 0
}

// resultInto stores the aggregate's current result in out (a datum the
// caller owns; numerics are copied).
func (f *aggFn) resultInto(acc *aggAcc, out *types.Datum) error {
	*out = types.Datum{}
	switch f.kind {
	case expr.AggCountStar, expr.AggCount:
		out.I = acc.n
	case expr.AggBoolAnd, expr.AggBoolOr:
		switch {
		case acc.n+acc.m <= 0:
			out.Null = true
		case f.kind == expr.AggBoolAnd && acc.m == 0, f.kind == expr.AggBoolOr && acc.n > 0:
			out.I = 1
		}
	case expr.AggMin, expr.AggMax, expr.AggStringAgg, expr.AggFirstValue, expr.AggLastValue, expr.AggArrayAgg,
		expr.AggPercentileCont, expr.AggPercentileDisc, expr.AggMode:
		if acc.res.Null {
			out.Null = true
		} else {
			*out = acc.res
			out.Dec = apd.Decimal{}
			out.Dec.Set(&acc.res.Dec)
		}
	case expr.AggSum, expr.AggAvg:
		if acc.n <= 0 {
			out.Null = true
			return nil
		}
		return f.sumResult(acc, out)
	case expr.AggApproxPercentile:
		*out = acc.sk.Result()
	default:
		return fmt.Errorf("aggregate %s is not supported in streaming", f.call.Agg.Name)
	}
	return nil
}

func (f *aggFn) sumResult(acc *aggAcc, out *types.Datum) error {
	avg := f.kind == expr.AggAvg
	switch f.sumClass() {
	case sumInt:
		if !avg && f.result.ID == types.Int64 {
			if acc.dec.IsZero() {
				out.I = acc.i
				return nil
			}
			var x apd.Decimal
			acc.intSum(&x)
			v, err := x.Int64()
			if err != nil {
				return types.Errorf(types.ErrNumericOutOfRange, "bigint out of range")
			}
			out.I = v
			return nil
		}
		acc.intSum(&out.Dec)
	case sumFloat:
		switch acc.special() {
		case 1:
			out.F = math.NaN()
		case 2:
			out.F = math.Inf(1)
		case 3:
			out.F = math.Inf(-1)
		default:
			out.F = acc.f
			if avg {
				out.F /= float64(acc.n)
			}
		}
		return nil
	case sumNumeric:
		switch acc.special() {
		case 1:
			out.Dec.Form = apd.NaN
			return nil
		case 2, 3:
			out.Dec.Form, out.Dec.Negative = apd.Infinite, acc.special() == 3
			return nil
		}
		out.Dec.Set(&acc.dec)
	case sumInterval:
		if !avg {
			out.Iv = acc.iv
			return nil
		}
		f.divArgs[0] = types.DInterval(acc.iv)
		f.divArgs[1] = types.DFloat(1 / float64(acc.n))
		d, err := f.mul.EvalRow(&f.ectx, f.divArgs)
		if err != nil {
			// As the batch aggregate does: an average out of range is NULL.
			*out = types.NullDatum
			return nil
		}
		*out = d
		return nil
	}
	if avg {
		f.divArgs[0] = types.Datum{}
		f.divArgs[0].Dec.Set(&out.Dec)
		f.divArgs[1] = types.Datum{}
		f.divArgs[1].Dec.SetInt64(acc.n)
		d, err := f.div.EvalRow(&f.ectx, f.divArgs)
		if err != nil {
			return fmt.Errorf("avg: %w", err)
		}
		out.Dec.Set(&d.Dec)
	}
	return nil
}

// store writes acc's state columns into row[f.stateCol:].
func (f *aggFn) store(acc *aggAcc, row []types.Datum) {
	s := row[f.stateCol : f.stateCol+f.nState]
	for i := range s {
		s[i] = types.Datum{}
	}
	switch f.kind {
	case expr.AggCountStar, expr.AggCount:
		s[0].I = acc.n
	case expr.AggBoolAnd, expr.AggBoolOr:
		s[0].I, s[1].I = acc.n, acc.m
	case expr.AggMin, expr.AggMax, expr.AggStringAgg, expr.AggFirstValue, expr.AggLastValue, expr.AggArrayAgg,
		expr.AggPercentileCont, expr.AggPercentileDisc, expr.AggMode:
		if acc.res.Null {
			s[0].Null = true
		} else {
			s[0] = acc.res
			s[0].Dec = apd.Decimal{}
			s[0].Dec.Set(&acc.res.Dec)
		}
	case expr.AggSum, expr.AggAvg:
		s[0].I = acc.n
		switch f.sumClass() {
		case sumInt:
			acc.intSum(&s[1].Dec)
		case sumFloat:
			s[1].F = acc.f
			s[2].I, s[3].I, s[4].I = acc.nan, acc.pinf, acc.ninf
		case sumNumeric:
			s[1].Dec.Set(&acc.dec)
			s[2].I, s[3].I, s[4].I = acc.nan, acc.pinf, acc.ninf
		case sumInterval:
			s[1].Iv = acc.iv
		}
	case expr.AggApproxPercentile:
		s[0].S = expr.EncodeSketch(acc.sk)
	}
}

// load reads acc from the state columns of row (the inverse of store).
func (f *aggFn) load(acc *aggAcc, row []types.Datum) error {
	*acc = aggAcc{}
	s := row[f.stateCol : f.stateCol+f.nState]
	switch f.kind {
	case expr.AggCountStar, expr.AggCount:
		acc.n = s[0].I
	case expr.AggBoolAnd, expr.AggBoolOr:
		acc.n, acc.m = s[0].I, s[1].I
	case expr.AggMin, expr.AggMax, expr.AggStringAgg, expr.AggFirstValue, expr.AggLastValue, expr.AggArrayAgg,
		expr.AggPercentileCont, expr.AggPercentileDisc, expr.AggMode:
		if s[0].Null {
			acc.res.Null = true
		} else {
			acc.res = s[0].Copy()
		}
	case expr.AggSum, expr.AggAvg:
		acc.n = s[0].I
		switch f.sumClass() {
		case sumInt:
			if v, err := s[1].Dec.Int64(); err == nil {
				acc.i = v
			} else {
				acc.dec.Set(&s[1].Dec)
			}
		case sumFloat:
			acc.f = s[1].F
			acc.nan, acc.pinf, acc.ninf = s[2].I, s[3].I, s[4].I
		case sumNumeric:
			acc.dec.Set(&s[1].Dec)
			acc.nan, acc.pinf, acc.ninf = s[2].I, s[3].I, s[4].I
		case sumInterval:
			acc.iv = s[1].Iv
		}
	case expr.AggApproxPercentile:
		sk, err := expr.DecodeSketch(s[0].S, f.call.Agg.Quantile, f.call.Agg.RelErr)
		if err != nil {
			return err
		}
		acc.sk = sk
	}
	return nil
}

// initAcc makes acc the accumulator of an empty group.
func (f *aggFn) initAcc(acc *aggAcc) {
	*acc = aggAcc{}
	acc.res.Null = true
	if f.kind == expr.AggApproxPercentile {
		acc.sk = expr.NewSketch(f.call.Agg.Quantile, f.call.Agg.RelErr)
	}
}

// sameDatum reports whether a and b are the same value, down to a numeric's
// scale (so "1.0" -> "1.00" is a change).
func sameDatum(t types.T, a, b *types.Datum) bool {
	if a.Null || b.Null {
		return a.Null == b.Null
	}
	if types.CompareNonNull(t, a, b) != 0 {
		return false
	}
	switch t.Physical() {
	case types.PhysDec:
		return a.Dec.Exponent == b.Dec.Exponent && a.Dec.Form == b.Dec.Form
	case types.PhysStr:
		return a.S == b.S
	case types.PhysIv:
		return a.Iv == b.Iv
	case types.PhysF64:
		return math.Signbit(a.F) == math.Signbit(b.F)
	}
	return true
}
