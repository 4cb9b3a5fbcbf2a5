package pgwire

import (
	"encoding/binary"
	"math"

	"github.com/cockroachdb/apd/v3"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/tributary/tributary/sql/types"
)

// Format codes.
const (
	formatText   int16 = 0
	formatBinary int16 = 1
)

// PostgreSQL's binary date/time values count from 2000-01-01.
const (
	pgEpochDays   = 10957                     // days from 1970-01-01 to 2000-01-01
	pgEpochMicros = pgEpochDays * 86400000000 // µs from 1970-01-01 to 2000-01-01
)

// Binary numeric sign words.
const (
	numericPos    = 0x0000
	numericNeg    = 0x4000
	numericNaN    = 0xC000
	numericPInf   = 0xD000
	numericNInf   = 0xF000
	numericMaxLen = 0x3FFF // largest dscale/ndigits PostgreSQL accepts
)

// rowDescription builds RowDescription for cols; formats may be nil (all text).
func rowDescription(cols []Column, formats []int16) *pgproto3.RowDescription {
	rd := &pgproto3.RowDescription{Fields: make([]pgproto3.FieldDescription, len(cols))}
	for i, c := range cols {
		f := formatText
		if formats != nil {
			f = formats[i]
		}
		rd.Fields[i] = pgproto3.FieldDescription{
			Name:                 []byte(c.Name),
			TableOID:             c.TableOID,
			TableAttributeNumber: uint16(c.ColumnAttr),
			DataTypeOID:          c.Type.OID(),
			DataTypeSize:         c.Type.Size(),
			TypeModifier:         c.Type.Typmod(),
			Format:               f,
		}
	}
	return rd
}

// rowEncoder appends DataRow messages. Its scratch space is reused, so encoding a
// row allocates nothing once the buffers have grown.
type rowEncoder struct {
	d      types.Datum
	digits []byte  // numeric coefficient digits
	groups []int16 // numeric base-10000 digits
}

// checkChunk verifies that ch's vectors can be encoded as cols.
func checkChunk(ch *types.Chunk, cols []Column) error {
	if len(ch.Cols) != len(cols) {
		return types.Errorf(types.ErrInternal, "result chunk has %d columns, RowDescription has %d", len(ch.Cols), len(cols))
	}
	for j := range cols {
		if ch.Cols[j].Type.Physical() != cols[j].Type.Physical() {
			return types.Errorf(types.ErrInternal, "result column %d is %s but described as %s", j+1, ch.Cols[j].Type, cols[j].Type)
		}
	}
	return nil
}

// appendDataRow appends row i of ch as a DataRow, column j encoded as cols[j].Type
// in formats[j] (nil = all text).
func (e *rowEncoder) appendDataRow(buf []byte, ch *types.Chunk, i int, cols []Column, formats []int16) ([]byte, error) {
	buf, start := beginMsg(buf, 'D')
	buf = binary.BigEndian.AppendUint16(buf, uint16(len(cols)))
	for j := range cols {
		v := &ch.Cols[j]
		if v.Nulls[i] {
			buf = append(buf, 0xff, 0xff, 0xff, 0xff)
			continue
		}
		lenAt := len(buf)
		buf = append(buf, 0, 0, 0, 0)
		var err error
		if formats != nil && formats[j] == formatBinary {
			buf, err = e.appendBinary(buf, cols[j].Type, v, i)
			if err != nil {
				return buf[:start-1], err
			}
		} else {
			buf = e.appendText(buf, cols[j].Type, v, i)
		}
		binary.BigEndian.PutUint32(buf[lenAt:], uint32(len(buf)-lenAt-4))
	}
	return finishMsg(buf, start), nil
}

func (e *rowEncoder) appendText(buf []byte, t types.T, v *types.Vector, i int) []byte {
	v.GetInto(i, &e.d)
	return types.AppendText(buf, t, &e.d)
}

// appendBinary appends the PostgreSQL binary form of row i of v as type t.
func (e *rowEncoder) appendBinary(buf []byte, t types.T, v *types.Vector, i int) ([]byte, error) {
	switch t.ID {
	case types.Bool:
		if v.I64[i] != 0 {
			return append(buf, 1), nil
		}
		return append(buf, 0), nil
	case types.Int16:
		return binary.BigEndian.AppendUint16(buf, uint16(v.I64[i])), nil
	case types.Int32:
		return binary.BigEndian.AppendUint32(buf, uint32(v.I64[i])), nil
	case types.Int64:
		return binary.BigEndian.AppendUint64(buf, uint64(v.I64[i])), nil
	case types.Float32:
		return binary.BigEndian.AppendUint32(buf, math.Float32bits(float32(v.F64[i]))), nil
	case types.Float64:
		return binary.BigEndian.AppendUint64(buf, math.Float64bits(v.F64[i])), nil
	case types.Numeric:
		return e.appendNumeric(buf, &v.Dec[i])
	case types.Varchar, types.Bytea, types.Uuid, types.Unknown:
		return append(buf, v.Str[i]...), nil
	case types.Jsonb:
		buf = append(buf, 1)
		return append(buf, v.Str[i]...), nil
	case types.Date:
		return binary.BigEndian.AppendUint32(buf, uint32(dateToPG(v.I64[i]))), nil
	case types.Time:
		return binary.BigEndian.AppendUint64(buf, uint64(v.I64[i])), nil
	case types.Timestamp, types.Timestamptz:
		return binary.BigEndian.AppendUint64(buf, uint64(timestampToPG(v.I64[i]))), nil
	case types.Interval:
		iv := v.Iv[i]
		buf = binary.BigEndian.AppendUint64(buf, uint64(iv.Micros))
		buf = binary.BigEndian.AppendUint32(buf, uint32(iv.Days))
		return binary.BigEndian.AppendUint32(buf, uint32(iv.Months)), nil
	case types.Array:
		return e.appendArray(buf, t, v.Str[i])
	case types.Struct:
		return e.appendRecord(buf, t, v.Str[i])
	}
	return buf, types.Errorf(types.ErrUnsupported, "no binary output for type %s", t)
}

// appendArray appends PostgreSQL's binary array: dimensions (0 when
// empty, else 1), a has-NULLs flag, the element oid, the length and lower
// bound (1) of the dimension, then each element as a length (-1: NULL) and
// its binary form.
func (e *rowEncoder) appendArray(buf []byte, t types.T, s string) ([]byte, error) {
	elem := t.ElemType()
	vals, err := types.DecodeArray(elem, s)
	if err != nil {
		return buf, err
	}
	hasNull := uint32(0)
	for i := range vals {
		if vals[i].Null {
			hasNull = 1
		}
	}
	ndim := uint32(1)
	if len(vals) == 0 {
		ndim = 0
	}
	buf = binary.BigEndian.AppendUint32(buf, ndim)
	buf = binary.BigEndian.AppendUint32(buf, hasNull)
	buf = binary.BigEndian.AppendUint32(buf, elem.OID())
	if ndim == 1 {
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(vals)))
		buf = binary.BigEndian.AppendUint32(buf, 1)
	}
	one := types.NewVector(elem, 1)
	for i := range vals {
		if vals[i].Null {
			buf = append(buf, 0xff, 0xff, 0xff, 0xff)
			continue
		}
		one.Reset()
		one.Append(&vals[i])
		lenAt := len(buf)
		buf = append(buf, 0, 0, 0, 0)
		if buf, err = e.appendBinary(buf, elem, one, 0); err != nil {
			return buf, err
		}
		binary.BigEndian.PutUint32(buf[lenAt:], uint32(len(buf)-lenAt-4))
	}
	return buf, nil
}

// appendRecord appends PostgreSQL's binary record: the field count, then
// per field its type oid and its length-prefixed binary value (-1: NULL).
func (e *rowEncoder) appendRecord(buf []byte, t types.T, s string) ([]byte, error) {
	vals, err := types.DecodeStruct(t, s)
	if err != nil {
		return buf, err
	}
	fs := t.StructFields()
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(vals)))
	for i := range vals {
		ft := fs[i].Type
		buf = binary.BigEndian.AppendUint32(buf, ft.OID())
		if vals[i].Null {
			buf = append(buf, 0xff, 0xff, 0xff, 0xff)
			continue
		}
		one := types.NewVector(ft, 1)
		one.Append(&vals[i])
		lenAt := len(buf)
		buf = append(buf, 0, 0, 0, 0)
		if buf, err = e.appendBinary(buf, ft, one, 0); err != nil {
			return buf, err
		}
		binary.BigEndian.PutUint32(buf[lenAt:], uint32(len(buf)-lenAt-4))
	}
	return buf, nil
}

// dateToPG converts days since 1970 to PostgreSQL's days since 2000 (infinities kept).
func dateToPG(days int64) int32 {
	switch {
	case days == types.InfinityTS:
		return math.MaxInt32
	case days == types.NegInfinityTS:
		return math.MinInt32
	}
	d := days - pgEpochDays
	if d >= math.MaxInt32 {
		return math.MaxInt32
	}
	if d <= math.MinInt32 {
		return math.MinInt32
	}
	return int32(d)
}

func dateFromPG(d int32) int64 {
	switch d {
	case math.MaxInt32:
		return types.InfinityTS
	case math.MinInt32:
		return types.NegInfinityTS
	}
	return int64(d) + pgEpochDays
}

func timestampToPG(us int64) int64 {
	if us == types.InfinityTS || us == types.NegInfinityTS {
		return us
	}
	return us - pgEpochMicros
}

func timestampFromPG(us int64) int64 {
	if us == math.MaxInt64 || us == math.MinInt64 {
		return us
	}
	return us + pgEpochMicros
}

// appendNumeric appends PostgreSQL's binary numeric: ndigits, weight, sign, dscale,
// then base-10000 digits, most significant first, without leading or trailing zero
// digits. The value is coefficient × 10^exponent; a decimal digit at position p
// (p = 0 for units, -1 for tenths) belongs to base-10000 digit floor(p/4).
func (e *rowEncoder) appendNumeric(buf []byte, d *apd.Decimal) ([]byte, error) {
	switch d.Form {
	case apd.NaN, apd.NaNSignaling:
		return appendNumericHeader(buf, 0, 0, numericNaN, 0), nil
	case apd.Infinite:
		if d.Negative {
			return appendNumericHeader(buf, 0, 0, numericNInf, 0), nil
		}
		return appendNumericHeader(buf, 0, 0, numericPInf, 0), nil
	}
	exp := int64(d.Exponent)
	dscale := int64(0)
	if exp < 0 {
		dscale = -exp
	}
	if dscale > numericMaxLen {
		return buf, types.Errorf(types.ErrNumericOutOfRange, "value overflows numeric format")
	}
	sign := uint16(numericPos)
	if d.Negative {
		sign = numericNeg
	}
	e.digits = d.Coeff.Append(e.digits[:0], 10)
	n := int64(len(e.digits))
	if n == 1 && e.digits[0] == '0' {
		return appendNumericHeader(buf, 0, 0, numericPos, uint16(dscale)), nil
	}
	hi := floorDiv4(exp + n - 1) // weight of the most significant group
	lo := floorDiv4(exp)         // weight of the least significant group
	if hi > math.MaxInt16 || lo < math.MinInt16 {
		return buf, types.Errorf(types.ErrNumericOutOfRange, "value overflows numeric format")
	}
	ng := int(hi - lo + 1)
	e.groups = e.groups[:0]
	for g := 0; g < ng; g++ {
		e.groups = append(e.groups, 0)
	}
	for k := int64(0); k < n; k++ {
		p := exp + n - 1 - k // decimal position of digit k
		g := floorDiv4(p)
		mul := int16(1)
		for r := p - 4*g; r > 0; r-- {
			mul *= 10
		}
		e.groups[hi-g] += int16(e.digits[k]-'0') * mul
	}
	groups := e.groups
	weight := hi
	for len(groups) > 0 && groups[0] == 0 {
		groups = groups[1:]
		weight--
	}
	for len(groups) > 0 && groups[len(groups)-1] == 0 {
		groups = groups[:len(groups)-1]
	}
	if len(groups) > numericMaxLen {
		return buf, types.Errorf(types.ErrNumericOutOfRange, "value overflows numeric format")
	}
	buf = appendNumericHeader(buf, uint16(len(groups)), int16(weight), sign, uint16(dscale))
	for _, g := range groups {
		buf = binary.BigEndian.AppendUint16(buf, uint16(g))
	}
	return buf, nil
}

func appendNumericHeader(buf []byte, ndigits uint16, weight int16, sign, dscale uint16) []byte {
	buf = binary.BigEndian.AppendUint16(buf, ndigits)
	buf = binary.BigEndian.AppendUint16(buf, uint16(weight))
	buf = binary.BigEndian.AppendUint16(buf, sign)
	return binary.BigEndian.AppendUint16(buf, dscale)
}

func floorDiv4(p int64) int64 {
	if p >= 0 {
		return p / 4
	}
	return -((-p + 3) / 4)
}

// errBadBinary is the error for a malformed binary parameter.
func errBadBinary(idx int) error {
	return wireErrorf(codeInvalidBinaryFormat, "incorrect binary data format in bind parameter %d", idx+1)
}
