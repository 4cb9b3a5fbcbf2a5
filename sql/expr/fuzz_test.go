package expr

import (
	"context"
	"errors"
	"sort"
	"testing"

	"github.com/tributary/tributary/sql/types"
)

// fuzzTypes are the argument types FuzzEval draws from.
var fuzzTypes = []types.T{types.TInt16, types.TInt32, types.TInt64, types.TFloat64, types.TNumeric, types.TBool,
	types.TVarchar, types.TBytea, types.TDate, types.TTimestamp, types.TTimestamptz, types.TInterval, types.TJsonb}

// FuzzEval calls a registered function (the fuzzer picks it, its arity, its
// argument types and values; text values are parsed as the type, NULL
// when they do not parse) over a one-row chunk: evaluation never panics,
// its errors are *types.Error, and the vectorised Eval agrees with EvalRow.
// Run with `go test -fuzz FuzzEval ./sql/expr`; .ci/run runs it briefly.
func FuzzEval(f *testing.F) {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	f.Add(uint16(0), uint8(2), uint8(2), uint8(2), int64(9223372036854775807), int64(1), "1")
	f.Add(uint16(5), uint8(1), uint8(6), uint8(6), int64(0), int64(-1), "x")
	f.Add(uint16(40), uint8(3), uint8(9), uint8(11), int64(-9223372036854775808), int64(0), "2024-01-01 00:00:00")
	f.Add(uint16(77), uint8(2), uint8(12), uint8(4), int64(7), int64(3), `{"a": [1, 2]}`)
	f.Fuzz(func(t *testing.T, fn uint16, arity, t1, t2 uint8, a, b int64, s string) {
		name := names[int(fn)%len(names)]
		n := int(arity % 4)
		args := make([]Expr, n)
		for i := range args {
			typ := fuzzTypes[int(t1)%len(fuzzTypes)]
			if i%2 == 1 {
				typ = fuzzTypes[int(t2)%len(fuzzTypes)]
			}
			args[i] = Literal(fuzzDatum(typ, a, b, s, i), typ)
		}
		e, err := Call(name, args)
		if err != nil {
			return
		}
		ctx := &Ctx{Now: 1700000000000000, Context: cancelled} // pg_sleep returns at once
		in := types.NewChunk(nil, 1)
		in.SetLen(1)
		out := types.NewVector(e.Type(), 1)
		verr := e.Eval(ctx, in, out)
		d, rerr := e.EvalRow(ctx, nil)
		for _, err := range []error{verr, rerr} {
			var te *types.Error
			if err != nil && !errors.As(err, &te) {
				t.Fatalf("%s%v: error is not *types.Error: %v", name, args, err)
			}
		}
		if (verr == nil) != (rerr == nil) {
			t.Fatalf("%s%v: Eval error %v, EvalRow error %v", name, args, verr, rerr)
		}
		if fe, ok := e.(*FuncExpr); ok && fe.Volatility == Volatile {
			return // random(): two evaluations differ
		}
		if verr == nil {
			got := out.Get(0)
			if got.Null != d.Null || (!got.Null && types.Compare(e.Type(), &got, &d) != 0) {
				t.Fatalf("%s%v: Eval gave %+v, EvalRow %+v", name, args, got, d)
			}
		}
	})
}

// fuzzDatum makes argument i of type t from the fuzzer's values.
func fuzzDatum(t types.T, a, b int64, s string, i int) types.Datum {
	v := a
	if i%2 == 1 {
		v = b
	}
	switch t.ID {
	case types.Int16:
		return types.DInt(int64(int16(v)))
	case types.Int32:
		return types.DInt(int64(int32(v)))
	case types.Int64:
		return types.DInt(v)
	case types.Float64:
		return types.DFloat(float64(v) / 7)
	case types.Bool:
		return types.DBool(v%2 == 0)
	}
	d, err := types.ParseText(t, s)
	if err != nil {
		return types.NullDatum
	}
	return d
}

// cancelled is a context already cancelled.
var cancelled = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()
