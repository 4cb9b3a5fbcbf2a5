package expr

import (
	"encoding/json"
	"strconv"

	"github.com/cockroachdb/apd/v3"
	"github.com/tributary/tributary/sql/types"
)

func init() {
	def("jsonb_get ->", tJ, tJ, tS).r(jsonGet(false, false))
	def("jsonb_get ->", tJ, tJ, tI4).r(jsonGet(true, false))
	def("jsonb_get_text ->>", tS, tJ, tS).r(jsonGet(false, true))
	def("jsonb_get_text ->>", tS, tJ, tI4).r(jsonGet(true, true))
	def("jsonb_typeof", tS, tJ).r(func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		v, err := types.ParseJSONValue(a[0].S)
		if err != nil {
			return types.NullDatum, err
		}
		return types.DString(jsonTypeof(v)), nil
	})
	def("jsonb_array_length", tI4, tJ).r(func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		v, err := types.ParseJSONValue(a[0].S)
		if err != nil {
			return types.NullDatum, err
		}
		arr, ok := v.([]any)
		if !ok {
			if _, obj := v.(map[string]any); obj {
				return types.NullDatum, types.Errorf(types.ErrInvalidParameter, "cannot get array length of a non-array")
			}
			return types.NullDatum, types.Errorf(types.ErrInvalidParameter, "cannot get array length of a scalar")
		}
		return types.DInt(int64(len(arr))), nil
	})
	def("jsonb_exists ?", tB, tJ, tS).r(func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		v, err := types.ParseJSONValue(a[0].S)
		if err != nil {
			return types.NullDatum, err
		}
		switch x := v.(type) {
		case map[string]any:
			_, ok := x[a[1].S]
			return types.DBool(ok), nil
		case []any:
			for _, e := range x {
				if s, ok := e.(string); ok && s == a[1].S {
					return types.DBool(true), nil
				}
			}
		case string:
			return types.DBool(x == a[1].S), nil
		}
		return types.DBool(false), nil
	})
}

// jsonbConcat is jsonb || jsonb: objects merge (right wins), otherwise arrays concatenate.
var jsonbConcat = &overload{params: []types.T{tJ, tJ}, ret: tJ, row: func(_ *Ctx, a []types.Datum) (types.Datum, error) {
	x, err := types.ParseJSONValue(a[0].S)
	if err != nil {
		return types.NullDatum, err
	}
	y, err := types.ParseJSONValue(a[1].S)
	if err != nil {
		return types.NullDatum, err
	}
	mx, okx := x.(map[string]any)
	my, oky := y.(map[string]any)
	if okx && oky {
		for k, v := range my {
			mx[k] = v
		}
		return types.DString(types.JSONText(mx)), nil
	}
	asArr := func(v any) []any {
		if arr, ok := v.([]any); ok {
			return arr
		}
		return []any{v}
	}
	return types.DString(types.JSONText(append(asArr(x), asArr(y)...))), nil
}}

func jsonTypeof(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	}
	return "object"
}

// jsonGet implements -> (asText false) and ->> over an object key or array index.
func jsonGet(byIndex, asText bool) rowFn {
	return func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		v, err := types.ParseJSONValue(a[0].S)
		if err != nil {
			return types.NullDatum, err
		}
		var r any
		found := false
		if byIndex {
			if arr, ok := v.([]any); ok {
				i := a[1].I
				if i < 0 {
					i += int64(len(arr))
				}
				if i >= 0 && i < int64(len(arr)) {
					r, found = arr[i], true
				}
			}
		} else if obj, ok := v.(map[string]any); ok {
			r, found = obj[a[1].S]
		}
		if !found {
			return types.NullDatum, nil
		}
		if asText {
			switch x := r.(type) {
			case nil:
				return types.NullDatum, nil
			case string:
				return types.DString(x), nil
			}
		}
		return types.DString(types.JSONText(r)), nil
	}
}

// jsonbCast converts a jsonb scalar to bool or a number type.
func jsonbCast(to types.T) castFn {
	return func(ctx *Ctx, d *types.Datum) (types.Datum, error) {
		v, err := types.ParseJSONValue(d.S)
		if err != nil {
			return types.NullDatum, err
		}
		wrong := func() (types.Datum, error) {
			return types.NullDatum, types.Errorf(types.ErrInvalidParameter, "cannot cast jsonb %s to type %s", jsonTypeof(v), to)
		}
		switch x := v.(type) {
		case bool:
			if to.ID != types.Bool {
				return wrong()
			}
			return types.DBool(x), nil
		case json.Number:
			if to.ID == types.Bool {
				return wrong()
			}
			var n types.Datum
			if _, _, err := n.Dec.SetString(string(x)); err != nil {
				return wrong()
			}
			if to.ID == types.Numeric {
				return n, types.FitNumeric(to, &n.Dec)
			}
			if to.IsInteger() || to.ID == types.Float32 || to.ID == types.Float64 {
				return numCast(tN, to)(ctx, &n)
			}
		}
		return wrong()
	}
}

var _ = strconv.Itoa
var _ apd.Decimal
