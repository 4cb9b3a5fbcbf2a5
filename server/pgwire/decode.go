package pgwire

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/cockroachdb/apd/v3"
	"github.com/tributary/tributary/sql/types"
)

const codeCharacterNotInRepertoire = "22021"

// checkText refuses text PostgreSQL would not accept from a UTF8 client:
// invalid UTF-8 and NUL bytes, with PostgreSQL's 22021 message naming the
// offending bytes (as many as the first byte announces).
func checkText[S string | []byte](s S) error {
	for i := 0; i < len(s); {
		c := s[i]
		if c != 0 && c < utf8.RuneSelf {
			i++
			continue
		}
		var size int
		if c != 0 {
			var r rune
			r, size = utf8.DecodeRuneInString(string(s[i:min(i+utf8.UTFMax, len(s))]))
			if r != utf8.RuneError || size > 1 {
				i += size
				continue
			}
		}
		n := 1
		switch {
		case c&0xe0 == 0xc0:
			n = 2
		case c&0xf0 == 0xe0:
			n = 3
		case c&0xf8 == 0xf0:
			n = 4
		}
		var b strings.Builder
		for j := i; j < min(i+n, len(s)); j++ {
			if j > i {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "0x%02x", s[j])
		}
		return wireErrorf(codeCharacterNotInRepertoire, "invalid byte sequence for encoding \"UTF8\": %s", b.String())
	}
	return nil
}

// decodeParamInto decodes a Bind parameter into *d as decodeParam does,
// integers in binary and text without a length limit without building a
// Datum to copy (a 1000-row INSERT binds thousands of them).
func decodeParamInto(d *types.Datum, t types.T, format int16, raw []byte, idx int) error {
	if raw != nil {
		switch {
		case format == formatBinary && t.ID == types.Int64 && len(raw) == 8:
			*d = types.Datum{I: int64(binary.BigEndian.Uint64(raw))}
			return nil
		case format == formatBinary && t.ID == types.Int32 && len(raw) == 4:
			*d = types.Datum{I: int64(int32(binary.BigEndian.Uint32(raw)))}
			return nil
		case format == formatText && (t.ID == types.Varchar && t.Width == 0 || t.ID == types.Unknown):
			if err := checkText(raw); err != nil {
				return err
			}
			*d = types.Datum{S: string(raw)}
			return nil
		}
	}
	v, err := decodeParam(t, format, raw, idx)
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// decodeParam decodes bind parameter idx (0-based), sent in format, as a value of
// type t. A nil raw value is NULL. Parameters of unknown type are taken as text.
func decodeParam(t types.T, format int16, raw []byte, idx int) (types.Datum, error) {
	if raw == nil {
		return types.NullDatum, nil
	}
	if t.ID == types.Unknown {
		t = types.TVarchar
	}
	switch format {
	case formatText:
		if err := checkText(raw); err != nil {
			return types.Datum{}, err
		}
		return types.ParseText(t, string(raw))
	case formatBinary:
		return decodeBinary(t, raw, idx)
	}
	return types.Datum{}, wireErrorf(codeProtocolViolation, "unsupported format code: %d", format)
}

func decodeBinary(t types.T, raw []byte, idx int) (types.Datum, error) {
	var d types.Datum
	want := func(n int) error {
		if len(raw) != n {
			return errBadBinary(idx)
		}
		return nil
	}
	switch t.ID {
	case types.Bool:
		if err := want(1); err != nil {
			return d, err
		}
		d = types.DBool(raw[0] != 0)
	case types.Int16:
		if err := want(2); err != nil {
			return d, err
		}
		d.I = int64(int16(binary.BigEndian.Uint16(raw)))
	case types.Int32:
		if err := want(4); err != nil {
			return d, err
		}
		d.I = int64(int32(binary.BigEndian.Uint32(raw)))
	case types.Int64:
		if err := want(8); err != nil {
			return d, err
		}
		d.I = int64(binary.BigEndian.Uint64(raw))
	case types.Float32:
		if err := want(4); err != nil {
			return d, err
		}
		d.F = float64(math.Float32frombits(binary.BigEndian.Uint32(raw)))
	case types.Float64:
		if err := want(8); err != nil {
			return d, err
		}
		d.F = math.Float64frombits(binary.BigEndian.Uint64(raw))
	case types.Numeric:
		if err := decodeNumeric(raw, &d.Dec, idx); err != nil {
			return d, err
		}
		if err := types.FitNumeric(t, &d.Dec); err != nil {
			return d, err
		}
	case types.Varchar:
		if err := checkText(raw); err != nil {
			return d, err
		}
		return types.ParseText(t, string(raw)) // applies varchar(n)
	case types.Bytea:
		d.S = string(raw)
	case types.Uuid:
		if err := want(16); err != nil {
			return d, err
		}
		d.S = string(raw)
	case types.Jsonb:
		if len(raw) < 1 || raw[0] != 1 {
			return d, errBadBinary(idx)
		}
		if err := checkText(raw[1:]); err != nil {
			return d, err
		}
		return types.ParseText(t, string(raw[1:]))
	case types.Date:
		if err := want(4); err != nil {
			return d, err
		}
		d.I = dateFromPG(int32(binary.BigEndian.Uint32(raw)))
	case types.Time:
		if err := want(8); err != nil {
			return d, err
		}
		d.I = int64(binary.BigEndian.Uint64(raw))
		if d.I < 0 || d.I > 86400000000 {
			return d, types.Errorf(types.ErrDatetimeOverflow, "time out of range")
		}
	case types.Timestamp, types.Timestamptz:
		if err := want(8); err != nil {
			return d, err
		}
		d.I = timestampFromPG(int64(binary.BigEndian.Uint64(raw)))
	case types.Interval:
		if err := want(16); err != nil {
			return d, err
		}
		d.Iv = types.IntervalValue{
			Micros: int64(binary.BigEndian.Uint64(raw)),
			Days:   int32(binary.BigEndian.Uint32(raw[8:])),
			Months: int32(binary.BigEndian.Uint32(raw[12:])),
		}
	case types.Array:
		return decodeArray(t, raw, idx)
	default:
		return d, types.Errorf(types.ErrUnsupported, "no binary input for type %s", t)
	}
	return d, nil
}

// decodeArray reads PostgreSQL's binary array (see appendArray): one
// dimension with any lower bound, or none for an empty array; a second
// dimension is refused (0A000).
func decodeArray(t types.T, raw []byte, idx int) (types.Datum, error) {
	if len(raw) < 12 {
		return types.Datum{}, errBadBinary(idx)
	}
	ndim := int32(binary.BigEndian.Uint32(raw))
	raw = raw[12:] // the flags and element oid are not needed
	elem := t.ElemType()
	var vals []types.Datum
	switch {
	case ndim == 0:
	case ndim == 1:
		if len(raw) < 8 {
			return types.Datum{}, errBadBinary(idx)
		}
		n := int(int32(binary.BigEndian.Uint32(raw)))
		raw = raw[8:]
		if n < 0 || n > len(raw)/4 {
			return types.Datum{}, errBadBinary(idx)
		}
		vals = make([]types.Datum, 0, n)
		for k := 0; k < n; k++ {
			if len(raw) < 4 {
				return types.Datum{}, errBadBinary(idx)
			}
			l := int32(binary.BigEndian.Uint32(raw))
			raw = raw[4:]
			if l < 0 {
				vals = append(vals, types.NullDatum)
				continue
			}
			if int(l) > len(raw) {
				return types.Datum{}, errBadBinary(idx)
			}
			d, err := decodeBinary(elem, raw[:l], idx)
			if err != nil {
				return types.Datum{}, err
			}
			vals = append(vals, d)
			raw = raw[l:]
		}
	case ndim > 1:
		return types.Datum{}, types.Errorf(types.ErrUnsupported, "multidimensional arrays are not supported")
	default:
		return types.Datum{}, errBadBinary(idx)
	}
	if len(raw) != 0 {
		return types.Datum{}, errBadBinary(idx)
	}
	return types.DString(types.EncodeArray(elem, vals)), nil
}

// decodeNumeric reads PostgreSQL's binary numeric into out, keeping its display
// scale (1.50 stays 1.50).
func decodeNumeric(raw []byte, out *apd.Decimal, idx int) error {
	if len(raw) < 8 {
		return errBadBinary(idx)
	}
	ndigits := int(binary.BigEndian.Uint16(raw))
	weight := int(int16(binary.BigEndian.Uint16(raw[2:])))
	sign := binary.BigEndian.Uint16(raw[4:])
	dscale := int(binary.BigEndian.Uint16(raw[6:]))
	if len(raw) != 8+2*ndigits || dscale > numericMaxLen {
		return errBadBinary(idx)
	}
	switch sign {
	case numericNaN:
		out.Form = apd.NaN
		return nil
	case numericPInf, numericNInf:
		out.Form = apd.Infinite
		out.Negative = sign == numericNInf
		return nil
	case numericPos, numericNeg:
	default:
		return errBadBinary(idx)
	}
	// Coefficient = the digits in base 10000, exponent = 4*(weight-ndigits+1).
	text := make([]byte, 0, 4*ndigits+8)
	for i := 0; i < ndigits; i++ {
		g := binary.BigEndian.Uint16(raw[8+2*i:])
		if g > 9999 {
			return errBadBinary(idx)
		}
		text = append(text, byte('0'+g/1000), byte('0'+g/100%10), byte('0'+g/10%10), byte('0'+g%10))
	}
	if ndigits == 0 {
		text = append(text, '0')
		weight = ndigits - 1
	}
	exp := 4 * (weight - ndigits + 1)
	text = append(text, 'E')
	text = strconv.AppendInt(text, int64(exp), 10)
	if _, _, err := out.SetString(string(text)); err != nil {
		return errBadBinary(idx)
	}
	out.Negative = sign == numericNeg && !out.IsZero()
	// Rescale to the display scale: drop the trailing zeros below it, or add zeros up to it.
	if _, err := types.DecimalContext.Quantize(out, out, -int32(dscale)); err != nil {
		return types.Errorf(types.ErrNumericOutOfRange, "numeric value in bind parameter %d out of range", idx+1)
	}
	return nil
}
