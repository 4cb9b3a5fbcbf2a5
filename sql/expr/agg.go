package expr

import (
	"bytes"
	"math"
	"strconv"
	"strings"

	"github.com/cockroachdb/apd/v3"
	"github.com/tributary/tributary/sql/types"
)

// AggKind names an aggregate function.
type AggKind uint8

// Aggregate kinds.
const (
	AggCountStar AggKind = iota
	AggCount
	AggSum
	AggAvg
	AggMin
	AggMax
	AggBoolAnd
	AggBoolOr
	AggStringAgg
	AggVarPop
	AggVarSamp
	AggStddevPop
	AggStddevSamp
	AggFirstValue
	AggLastValue
	AggArrayAgg // array_agg, and jsonb_agg and json_agg (Result jsonb)
	AggPercentileCont
	AggPercentileDisc
	AggMode
	AggJSONObjectAgg
	AggApproxPercentile // approx_percentile (agg_approx.go)
)

// Agg is a resolved aggregate call: its kind, argument and result types.
type Agg struct {
	Name     string
	Kind     AggKind
	Args     []types.T
	Result   types.T
	Distinct bool
	// Quantile and RelErr are approx_percentile's constant arguments (the
	// binder checks them; its call's only argument is x).
	Quantile float64 `json:",omitempty"`
	RelErr   float64 `json:",omitempty"`
}

// AggState accumulates one group. Add and Retract take one input row's
// arguments (Agg.Args); NULL handling is inside (count(x) skips NULLs).
// Values passed in may share memory with a vector: states copy what they keep.
type AggState interface {
	Add(args []types.Datum) error
	// Retract removes a row added earlier (streaming deletes); every kind here supports it.
	Retract(args []types.Datum) error
	Result() types.Datum
}

// LookupAgg resolves an aggregate by name and argument types. count(*) has no
// arguments. Unknown names or argument types give ErrUndefinedFunction.
func LookupAgg(name string, args []types.T, distinct bool) (*Agg, error) {
	lname := strings.ToLower(name)
	a := &Agg{Name: lname, Args: args, Distinct: distinct}
	fail := func() (*Agg, error) { return nil, noFunction(lname, args) }
	one := len(args) == 1
	var t types.T
	if len(args) > 0 {
		t = args[0]
		if t.ID == types.Unknown {
			t = tS
			a.Args = append([]types.T{tS}, args[1:]...)
		}
	}
	switch lname {
	case "count":
		if len(args) == 0 {
			a.Kind, a.Result = AggCountStar, tI8
			return a, nil
		}
		if !one {
			return fail()
		}
		a.Kind, a.Result = AggCount, tI8
	case "sum", "avg":
		if !one {
			return fail()
		}
		a.Kind = AggSum
		if lname == "avg" {
			a.Kind = AggAvg
		}
		switch t.ID {
		case types.Int16, types.Int32:
			a.Result = tI8
		case types.Int64, types.Numeric:
			a.Result = tN
		case types.Float32, types.Float64:
			a.Result = tF8
		case types.Interval:
			a.Result = tIv
		default:
			return fail()
		}
		if a.Kind == AggAvg && t.IsInteger() {
			a.Result = tN
		}
	case "min", "max":
		if !one || t.ID == types.Jsonb || t.ID == types.Uuid { // PostgreSQL 15 has no min/max(uuid)
			return fail()
		}
		a.Kind, a.Result = AggMin, t
		if lname == "max" {
			a.Kind = AggMax
		}
	case "bool_and", "every", "bool_or":
		if !one || (t.ID != types.Bool && t.ID != types.Unknown) {
			return fail()
		}
		a.Kind, a.Result = AggBoolAnd, tB
		if lname == "bool_or" {
			a.Kind = AggBoolOr
		}
	case "string_agg":
		if len(args) != 2 || (t.ID != types.Varchar) || (args[1].ID != types.Varchar && args[1].ID != types.Unknown) {
			return fail()
		}
		a.Kind, a.Result = AggStringAgg, tS
		a.Args = []types.T{tS, tS}
	case "array_agg":
		if !one {
			return fail()
		}
		if t.ID == types.Array {
			return nil, types.Errorf(types.ErrUnsupported, "array_agg over arrays (a multidimensional result) is not supported")
		}
		a.Kind, a.Result = AggArrayAgg, types.ArrayOf(t)
	case "jsonb_agg", "json_agg":
		if !one {
			return fail()
		}
		a.Kind, a.Result = AggArrayAgg, tJ
	case "jsonb_object_agg", "json_object_agg":
		if len(args) != 2 {
			return fail()
		}
		a.Kind, a.Result = AggJSONObjectAgg, tJ
		for i := range a.Args {
			if a.Args[i].ID == types.Unknown {
				a.Args[i] = tS
			}
		}
	case "first_value", "last_value":
		// RisingWave's ordered-set aggregates: the value of the first (last)
		// row in the call's ORDER BY order, NULLs included.
		if !one {
			return fail()
		}
		a.Kind, a.Result = AggFirstValue, t
		if lname == "last_value" {
			a.Kind = AggLastValue
		}
	case "percentile_cont", "percentile_disc":
		// percentile_cont(f) WITHIN GROUP (ORDER BY x): the binder makes the
		// arguments (x, f), with f double precision and, for percentile_cont,
		// x double precision or interval.
		if len(args) != 2 || args[1].ID != types.Float64 ||
			(lname == "percentile_cont" && t.ID != types.Float64 && t.ID != types.Interval) {
			return fail()
		}
		a.Kind, a.Result = AggPercentileCont, t
		if lname == "percentile_disc" {
			a.Kind = AggPercentileDisc
		}
	case "approx_percentile":
		// approx_percentile(q [, e]) WITHIN GROUP (ORDER BY x): the binder
		// sets Quantile and RelErr and passes x as double precision.
		if !one || t.ID != types.Float64 {
			return fail()
		}
		a.Kind, a.Result = AggApproxPercentile, tF8
	case "mode":
		if !one {
			return fail()
		}
		a.Kind, a.Result = AggMode, t
	case "var_pop", "var_samp", "variance", "stddev", "stddev_pop", "stddev_samp":
		if !one || !t.IsNumeric() {
			return fail()
		}
		a.Kind = map[string]AggKind{"var_pop": AggVarPop, "var_samp": AggVarSamp, "variance": AggVarSamp,
			"stddev": AggStddevSamp, "stddev_pop": AggStddevPop, "stddev_samp": AggStddevSamp}[lname]
		a.Result = tN
		if t.ID == types.Float32 || t.ID == types.Float64 {
			a.Result = tF8
		}
	default:
		return fail()
	}
	return a, nil
}

// NewState returns an empty accumulator for one group.
func (a *Agg) NewState() AggState {
	var s AggState
	switch a.Kind {
	case AggCountStar:
		s = &countState{star: true}
	case AggCount:
		s = &countState{}
	case AggSum, AggAvg:
		s = &sumState{in: a.Args[0], out: a.Result, avg: a.Kind == AggAvg}
	case AggMin, AggMax:
		s = &minMaxState{t: a.Args[0], max: a.Kind == AggMax}
	case AggBoolAnd, AggBoolOr:
		s = &boolState{and: a.Kind == AggBoolAnd}
	case AggStringAgg:
		s = &stringAggState{}
	case AggFirstValue, AggLastValue:
		s = &firstLastState{t: a.Args[0], last: a.Kind == AggLastValue}
	case AggArrayAgg:
		s = &arrayAggState{firstLastState: firstLastState{t: a.Args[0]}, agg: a}
	case AggPercentileCont, AggPercentileDisc, AggMode:
		s = &ordSetState{firstLastState: firstLastState{t: a.Args[0]}, kind: a.Kind}
	case AggJSONObjectAgg:
		s = &jsonObjectAggState{agg: a}
	case AggApproxPercentile:
		s = &approxState{sk: NewSketch(a.Quantile, a.RelErr)}
	default:
		s = &varState{in: a.Args[0], out: a.Result, kind: a.Kind}
	}
	if a.Distinct {
		return &distinctState{inner: s, ts: a.Args, seen: map[string]int64{}}
	}
	return s
}

func anyNull(args []types.Datum) bool {
	for i := range args {
		if args[i].Null {
			return true
		}
	}
	return false
}

type countState struct {
	star bool
	n    int64
}

func (s *countState) Add(args []types.Datum) error {
	if s.star || !anyNull(args) {
		s.n++
	}
	return nil
}

func (s *countState) Retract(args []types.Datum) error {
	if s.star || !anyNull(args) {
		s.n--
	}
	return nil
}

func (s *countState) Result() types.Datum { return types.DInt(s.n) }

// sumState sums ints in an int64 (spilling to a decimal on overflow), floats
// in a float64, numerics exactly and intervals field-wise.
type sumState struct {
	in, out types.T
	avg     bool
	n       int64
	i       int64
	dec     apd.Decimal
	f       float64
	iv      types.IntervalValue
	// nan counts NaN inputs so a retracted NaN stops poisoning a float sum.
	nan int64
}

func (s *sumState) update(d *types.Datum, sign int64) error {
	if d.Null {
		return nil
	}
	s.n += sign
	switch s.in.ID {
	case types.Int16, types.Int32, types.Int64:
		v := d.I * sign
		r := s.i + v
		if (v > 0 && r < s.i) || (v < 0 && r > s.i) || (sign < 0 && d.I == math.MinInt64) {
			var x apd.Decimal
			x.SetInt64(s.i)
			if _, err := exactCtx.Add(&s.dec, &s.dec, &x); err != nil {
				return decErr(err)
			}
			x.SetInt64(d.I)
			if sign < 0 {
				x.Neg(&x)
			}
			s.i = 0
			_, err := exactCtx.Add(&s.dec, &s.dec, &x)
			return decErr(err)
		}
		s.i = r
	case types.Float32, types.Float64:
		if math.IsNaN(d.F) {
			s.nan += sign
			return nil
		}
		s.f += float64(sign) * d.F
	case types.Numeric:
		if sign > 0 {
			return decAdd(&s.dec, &s.dec, &d.Dec)
		}
		return decSub(&s.dec, &s.dec, &d.Dec)
	case types.Interval:
		var err error
		s.iv, err = ivAdd(s.iv, d.Iv, sign)
		return err
	}
	return nil
}

func (s *sumState) Add(args []types.Datum) error     { return s.update(&args[0], 1) }
func (s *sumState) Retract(args []types.Datum) error { return s.update(&args[0], -1) }

func (s *sumState) Result() types.Datum {
	if s.n <= 0 {
		return types.NullDatum
	}
	var out types.Datum
	switch s.out.ID {
	case types.Int64:
		if s.dec.IsZero() {
			return types.DInt(s.i)
		}
		var x apd.Decimal
		x.SetInt64(s.i)
		_, _ = exactCtx.Add(&x, &x, &s.dec)
		v, err := x.Int64()
		if err != nil {
			v = s.i // out of bigint range: PostgreSQL errors; keep the low part
		}
		return types.DInt(v)
	case types.Float64:
		f := s.f
		if s.nan > 0 {
			f = math.NaN()
		}
		if s.avg {
			f /= float64(s.n)
		}
		return types.DFloat(f)
	case types.Interval:
		if s.avg {
			iv, err := ivMul(s.iv, 1/float64(s.n))
			if err != nil {
				return types.NullDatum
			}
			return types.DInterval(iv)
		}
		return types.DInterval(s.iv)
	}
	// numeric result
	out.Dec.Set(&s.dec)
	if s.in.IsInteger() {
		var x apd.Decimal
		x.SetInt64(s.i)
		_, _ = exactCtx.Add(&out.Dec, &out.Dec, &x)
	}
	if s.avg {
		var cnt, q apd.Decimal
		cnt.SetInt64(s.n)
		if err := decDiv(&q, &out.Dec, &cnt); err == nil {
			out.Dec.Set(&q)
		}
	}
	return out
}

// minMaxState keeps the extreme value and, for retraction, a multiset of all values.
type minMaxState struct {
	t      types.T
	max    bool
	best   types.Datum
	has    bool
	counts map[string]*mmEntry
}

type mmEntry struct {
	v types.Datum
	n int64
}

func (s *minMaxState) key(d *types.Datum) string {
	if s.t.Physical() == types.PhysI64 {
		return strconv.FormatInt(d.I, 36)
	}
	if s.t.Physical() == types.PhysStr {
		return d.S
	}
	return types.FormatText(s.t, d)
}

func (s *minMaxState) better(a, b *types.Datum) bool {
	c := types.CompareNonNull(s.t, a, b)
	if s.max {
		return c > 0
	}
	return c < 0
}

func (s *minMaxState) Add(args []types.Datum) error {
	d := &args[0]
	if d.Null {
		return nil
	}
	if s.counts == nil {
		s.counts = map[string]*mmEntry{}
	}
	k := s.key(d)
	if e := s.counts[k]; e != nil {
		e.n++
	} else {
		s.counts[k] = &mmEntry{v: d.Copy(), n: 1}
	}
	if !s.has || s.better(d, &s.best) {
		s.best, s.has = d.Copy(), true
	}
	return nil
}

func (s *minMaxState) Retract(args []types.Datum) error {
	d := &args[0]
	if d.Null {
		return nil
	}
	k := s.key(d)
	e := s.counts[k]
	if e == nil {
		return types.Errorf(types.ErrInternal, "retracting a value never added to min/max")
	}
	if e.n--; e.n > 0 {
		return nil
	}
	delete(s.counts, k)
	if types.CompareNonNull(s.t, d, &s.best) == 0 {
		s.has = false
		for _, e := range s.counts {
			if !s.has || s.better(&e.v, &s.best) {
				s.best, s.has = e.v, true
			}
		}
	}
	return nil
}

func (s *minMaxState) Result() types.Datum {
	if !s.has {
		return types.NullDatum
	}
	return s.best
}

type boolState struct {
	and         bool
	trues, fals int64
}

func (s *boolState) update(d *types.Datum, sign int64) {
	if d.Null {
		return
	}
	if d.I != 0 {
		s.trues += sign
	} else {
		s.fals += sign
	}
}

func (s *boolState) Add(args []types.Datum) error     { s.update(&args[0], 1); return nil }
func (s *boolState) Retract(args []types.Datum) error { s.update(&args[0], -1); return nil }

func (s *boolState) Result() types.Datum {
	if s.trues+s.fals <= 0 {
		return types.NullDatum
	}
	if s.and {
		return types.DBool(s.fals == 0)
	}
	return types.DBool(s.trues > 0)
}

// stringAggState keeps (value, separator) pairs in arrival order.
type stringAggState struct {
	vals, seps []string
}

func (s *stringAggState) Add(args []types.Datum) error {
	if args[0].Null {
		return nil
	}
	sep := ""
	if !args[1].Null {
		sep = args[1].S
	}
	s.vals = append(s.vals, args[0].S)
	s.seps = append(s.seps, sep)
	return nil
}

func (s *stringAggState) Retract(args []types.Datum) error {
	if args[0].Null {
		return nil
	}
	for i, v := range s.vals {
		if v == args[0].S {
			s.vals = append(s.vals[:i], s.vals[i+1:]...)
			s.seps = append(s.seps[:i], s.seps[i+1:]...)
			return nil
		}
	}
	return types.Errorf(types.ErrInternal, "retracting a value never added to string_agg")
}

func (s *stringAggState) Result() types.Datum {
	if len(s.vals) == 0 {
		return types.NullDatum
	}
	var b strings.Builder
	for i, v := range s.vals {
		if i > 0 {
			b.WriteString(s.seps[i])
		}
		b.WriteString(v)
	}
	return types.DString(b.String())
}

// firstLastState keeps its inputs in arrival order (NULLs included) so that a
// retraction can reveal the next first or last value.
type firstLastState struct {
	t    types.T
	last bool
	vals []types.Datum
}

func (s *firstLastState) Add(args []types.Datum) error {
	s.vals = append(s.vals, args[0].Copy())
	return nil
}

func (s *firstLastState) Retract(args []types.Datum) error {
	for i := range s.vals {
		if s.vals[i].Null == args[0].Null && (s.vals[i].Null || types.CompareNonNull(s.t, &s.vals[i], &args[0]) == 0) {
			s.vals = append(s.vals[:i], s.vals[i+1:]...)
			return nil
		}
	}
	return types.Errorf(types.ErrInternal, "retracting a value never added to first_value/last_value")
}

func (s *firstLastState) Result() types.Datum {
	switch {
	case len(s.vals) == 0:
		return types.NullDatum
	case s.last:
		return s.vals[len(s.vals)-1]
	}
	return s.vals[0]
}

// arrayAggState keeps its inputs in arrival order, NULLs included, and
// returns them as an array (NULL when there are none).
type arrayAggState struct {
	firstLastState
	agg *Agg
}

func (s *arrayAggState) Result() types.Datum {
	return s.agg.ArrayAggResult(s.vals)
}

// ArrayAggResult is the result of an AggArrayAgg aggregate over vals, in
// order: an array for array_agg, a JSON array for jsonb_agg and json_agg;
// NULL for no rows.
func (a *Agg) ArrayAggResult(vals []types.Datum) types.Datum {
	if len(vals) == 0 {
		return types.NullDatum
	}
	if a.Result.ID != types.Jsonb {
		return arrayDatum(a.Args[0], vals)
	}
	t := a.Args[0]
	out := make([]any, len(vals))
	for i := range vals {
		v, err := ToJSONValue(t, &vals[i])
		if err != nil {
			v = types.FormatText(t, &vals[i]) // stored values always convert
		}
		out[i] = v
	}
	if a.Name == "json_agg" {
		var b bytes.Buffer
		b.WriteByte('[')
		for i := range vals {
			if i > 0 {
				b.WriteString(", ")
			}
			writeJSONText(&b, t, &vals[i], out[i])
		}
		b.WriteByte(']')
		return types.DString(b.String())
	}
	return types.DString(types.JSONText(out))
}

// jsonObjectAggState is jsonb_object_agg(k, v) (batch only): the pairs in
// input order, the last duplicate key winning.
type jsonObjectAggState struct {
	agg   *Agg
	pairs [][2]types.Datum
}

func (s *jsonObjectAggState) Add(args []types.Datum) error {
	if args[0].Null {
		return types.Errorf(types.ErrInvalidParameter, "field name must not be null")
	}
	s.pairs = append(s.pairs, [2]types.Datum{args[0].Copy(), args[1].Copy()})
	return nil
}

func (s *jsonObjectAggState) Retract(args []types.Datum) error {
	return types.Errorf(types.ErrUnsupported, "%s is not supported in materialized views", s.agg.Name)
}

func (s *jsonObjectAggState) Result() types.Datum {
	if len(s.pairs) == 0 {
		return types.NullDatum
	}
	obj := map[string]any{}
	var b bytes.Buffer
	b.WriteString("{ ")
	for i, p := range s.pairs {
		k, _ := ToJSONValue(s.agg.Args[0], &p[0])
		key, ok := k.(string)
		if !ok {
			key = types.JSONText(k)
		}
		v, err := ToJSONValue(s.agg.Args[1], &p[1])
		if err != nil {
			v = types.FormatText(s.agg.Args[1], &p[1])
		}
		obj[key] = v
		if i > 0 {
			b.WriteString(", ")
		}
		types.WriteJSONString(&b, key)
		b.WriteString(" : ")
		writeJSONText(&b, s.agg.Args[1], &p[1], v)
	}
	if s.agg.Name == "json_object_agg" {
		b.WriteString(" }")
		return types.DString(b.String())
	}
	return types.DString(types.JSONText(obj))
}

// varState computes variance and standard deviation from n, Σx and Σx²,
// exactly (decimal) for integer and numeric input, in float64 for floats.
type varState struct {
	in, out      types.T
	kind         AggKind
	n            int64
	sum, sumsq   apd.Decimal
	fsum, fsumsq float64
}

func (s *varState) update(d *types.Datum, sign int64) error {
	if d.Null {
		return nil
	}
	s.n += sign
	if s.out.ID == types.Float64 {
		s.fsum += float64(sign) * d.F
		s.fsumsq += float64(sign) * d.F * d.F
		return nil
	}
	var x, sq apd.Decimal
	if s.in.IsInteger() {
		x.SetInt64(d.I)
	} else {
		x.Set(&d.Dec)
	}
	if _, err := exactCtx.Mul(&sq, &x, &x); err != nil {
		return decErr(err)
	}
	if sign < 0 {
		x.Neg(&x)
		sq.Neg(&sq)
	}
	if _, err := exactCtx.Add(&s.sum, &s.sum, &x); err != nil {
		return decErr(err)
	}
	_, err := exactCtx.Add(&s.sumsq, &s.sumsq, &sq)
	return decErr(err)
}

func (s *varState) Add(args []types.Datum) error     { return s.update(&args[0], 1) }
func (s *varState) Retract(args []types.Datum) error { return s.update(&args[0], -1) }

func (s *varState) Result() types.Datum {
	samp := s.kind == AggVarSamp || s.kind == AggStddevSamp
	sqrt := s.kind == AggStddevPop || s.kind == AggStddevSamp
	if s.n <= 0 || (samp && s.n == 1) {
		return types.NullDatum
	}
	den := s.n * s.n
	if samp {
		den = s.n * (s.n - 1)
	}
	if s.out.ID == types.Float64 {
		num := float64(s.n)*s.fsumsq - s.fsum*s.fsum
		if num < 0 {
			num = 0
		}
		v := num / float64(den)
		if sqrt {
			v = math.Sqrt(v)
		}
		return types.DFloat(v)
	}
	var num, nd, sq, dd, out types.Datum
	nd.Dec.SetInt64(s.n)
	_, _ = exactCtx.Mul(&num.Dec, &nd.Dec, &s.sumsq)
	_, _ = exactCtx.Mul(&sq.Dec, &s.sum, &s.sum)
	_, _ = exactCtx.Sub(&num.Dec, &num.Dec, &sq.Dec)
	dd.Dec.SetInt64(den)
	// PostgreSQL divides at select_div_scale and takes the root at the same scale.
	rs := divScale(&num.Dec, &dd.Dec)
	if err := decQuoScale(&out.Dec, &num.Dec, &dd.Dec, rs); err != nil {
		return types.NullDatum
	}
	if sqrt {
		if out.Dec.Negative {
			out.Dec.SetInt64(0)
		}
		var r apd.Decimal
		if _, err := workCtx(rs+decDWeight(&out.Dec)+10).Sqrt(&r, &out.Dec); err != nil {
			return types.NullDatum
		}
		if _, err := roundCtx.Quantize(&out.Dec, &r, int32(-rs)); err != nil {
			return types.NullDatum
		}
	}
	return out
}

// distinctState feeds its inner state only the first copy of each argument tuple.
type distinctState struct {
	inner AggState
	ts    []types.T
	seen  map[string]int64
	buf   []byte
}

func (s *distinctState) key(args []types.Datum) string {
	s.buf = s.buf[:0]
	for i := range args {
		if args[i].Null {
			s.buf = append(s.buf, 0)
			continue
		}
		s.buf = append(s.buf, 1)
		t := tS
		if i < len(s.ts) {
			t = s.ts[i]
		}
		s.buf = appendDistinctKey(s.buf, t, &args[i])
		s.buf = append(s.buf, 0xff)
	}
	return string(s.buf)
}

// appendDistinctKey appends a form of d that equal values share: numerics
// reduced (1.0 = 1.00), arrays element by element.
func appendDistinctKey(buf []byte, t types.T, d *types.Datum) []byte {
	switch t.ID {
	case types.Numeric:
		var r apd.Decimal
		r.Reduce(&d.Dec)
		return append(buf, r.Text('e')...)
	case types.Array:
		elem := t.ElemType()
		_ = types.ForEachElem(elem, d.S, func(e *types.Datum) bool {
			if e.Null {
				buf = append(buf, 0)
				return true
			}
			buf = append(buf, 1)
			buf = appendDistinctKey(buf, elem, e)
			buf = append(buf, 0xfe)
			return true
		})
		return buf
	case types.Struct:
		vals, err := types.DecodeStruct(t, d.S)
		if err != nil {
			return append(buf, d.S...)
		}
		for i, f := range t.StructFields() {
			if vals[i].Null {
				buf = append(buf, 0)
				continue
			}
			buf = append(buf, 1)
			buf = appendDistinctKey(buf, f.Type, &vals[i])
			buf = append(buf, 0xfe)
		}
		return buf
	}
	return types.AppendText(buf, t, d)
}

func (s *distinctState) Add(args []types.Datum) error {
	k := s.key(args)
	s.seen[k]++
	if s.seen[k] == 1 {
		return s.inner.Add(args)
	}
	return nil
}

func (s *distinctState) Retract(args []types.Datum) error {
	k := s.key(args)
	n := s.seen[k]
	if n <= 0 {
		return types.Errorf(types.ErrInternal, "retracting a value never added to a DISTINCT aggregate")
	}
	if n == 1 {
		delete(s.seen, k)
		return s.inner.Retract(args)
	}
	s.seen[k] = n - 1
	return nil
}

func (s *distinctState) Result() types.Datum { return s.inner.Result() }
