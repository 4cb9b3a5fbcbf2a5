package connector

import (
	"math"
	"strconv"

	"github.com/tributary/tributary/sql/types"
)

// AppendJSONValue appends d, of type t, as a JSON value: booleans and
// numbers as such, NULL as null, an array as a JSON array of its elements
// (so encoded), a struct as an object keyed by its field names, everything else (and the floats JSON cannot
// spell: NaN, ±Infinity) as its PostgreSQL text in a string. scratch is a
// reusable buffer for that text; the grown one is returned with the result.
func AppendJSONValue(b, scratch []byte, t types.T, d *types.Datum) ([]byte, []byte) {
	if d.Null {
		return append(b, "null"...), scratch
	}
	switch t.ID {
	case types.Bool:
		return strconv.AppendBool(b, d.Bool()), scratch
	case types.Int16, types.Int32, types.Int64:
		return strconv.AppendInt(b, d.I, 10), scratch
	case types.Float32, types.Float64:
		if !math.IsNaN(d.F) && !math.IsInf(d.F, 0) {
			bits := 64
			if t.ID == types.Float32 {
				bits = 32
			}
			return strconv.AppendFloat(b, d.F, 'g', -1, bits), scratch
		}
	case types.Varchar, types.Jsonb, types.Unknown:
		return AppendJSONString(b, d.S), scratch
	case types.Array:
		elem := t.ElemType()
		vals, err := types.DecodeArray(elem, d.S)
		if err == nil {
			b = append(b, '[')
			for i := range vals {
				if i > 0 {
					b = append(b, ',')
				}
				b, scratch = AppendJSONValue(b, scratch, elem, &vals[i])
			}
			return append(b, ']'), scratch
		}
	case types.Struct:
		// An object keyed by the field names, in field order.
		vals, err := types.DecodeStruct(t, d.S)
		if err == nil {
			b = append(b, '{')
			for i, f := range t.StructFields() {
				if i > 0 {
					b = append(b, ',')
				}
				b = AppendJSONString(b, f.Name)
				b = append(b, ':')
				b, scratch = AppendJSONValue(b, scratch, f.Type, &vals[i])
			}
			return append(b, '}'), scratch
		}
	}
	scratch = types.AppendText(scratch[:0], t, d)
	return AppendJSONString(b, scratch), scratch
}

// AppendJSONString appends s as a JSON string, escaping quotes, backslashes
// and control characters (the rest of UTF-8 passes as is).
func AppendJSONString[S ~string | ~[]byte](b []byte, s S) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
