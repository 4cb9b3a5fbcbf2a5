package expr

import (
	"math"

	"github.com/tributary/tributary/sql/types"
)

// RisingWave's array reductions: array_sum, array_min and array_max (NULL
// elements ignored; NULL for an empty array or one of NULLs), and
// array_join, RisingWave's name for array_to_string.

func init() {
	specials["array_sum"] = resolveArrayReduce
	specials["array_min"] = resolveArrayReduce
	specials["array_max"] = resolveArrayReduce
	specials["array_join"] = resolveArrayToString
}

func resolveArrayReduce(name string, args []Expr) (Expr, error) {
	if len(args) != 1 || args[0].Type().ID != types.Array {
		return nil, noFunction(name, exprTypes(args))
	}
	at := args[0].Type()
	elem := at.ElemType()
	ret := elem
	if name == "array_sum" {
		switch {
		case elem.IsInteger():
			ret = types.T{ID: types.Int64}
		case elem.ID == types.Float32 || elem.ID == types.Float64:
			ret = types.TFloat64
		default:
			return nil, noFunction(name, exprTypes(args))
		}
	}
	return arrayCall(name, args, ret, true, func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		vals, err := decode(at, &a[0])
		if err != nil {
			return types.NullDatum, err
		}
		out := types.NullDatum
		for i := range vals {
			v := &vals[i]
			if v.Null {
				continue
			}
			switch {
			case out.Null:
				out = *v
			case name == "array_min":
				if types.CompareNonNull(elem, v, &out) < 0 {
					out = *v
				}
			case name == "array_max":
				if types.CompareNonNull(elem, v, &out) > 0 {
					out = *v
				}
			case ret.ID == types.Int64:
				s := out.I + v.I
				if (s > out.I) != (v.I > 0) {
					return types.NullDatum, types.Errorf(types.ErrNumericOutOfRange, "bigint out of range")
				}
				out.I = s
			default:
				out.F += v.F
			}
		}
		if !out.Null && name == "array_sum" && ret.ID == types.Float64 && math.IsInf(out.F, 0) {
			return types.NullDatum, types.Errorf(types.ErrNumericOutOfRange, "value out of range: overflow")
		}
		return out, nil
	}), nil
}
