package codec

import (
	"encoding/binary"
	"math"
	"math/bits"

	"github.com/cockroachdb/apd/v3"

	"github.com/tributary/tributary/sql/types"
)

// Key encoding. Every value starts with a marker byte: keyValue for a value, keyNull for NULL, so
// NULLs sort after every value, as types.Compare and PostgreSQL's ascending order have them. A
// descending column is the ascending encoding with every byte inverted, which reverses the order
// because each encoding is prefix-free; a descending column therefore puts NULLs first, as
// PostgreSQL's DESC does.
//
// Values that compare equal encode identically (1.0 and 1.00, -0 and +0, every NaN, '1 month' and
// '30 days'), so a key identifies a row the way SQL equality does. Keys are not decoded: rows keep
// their values in the row encoding.
const (
	keyValue byte = 0x01
	keyNull  byte = 0x02
)

// Numeric kinds, in order.
const (
	numNegInf byte = 0x01 + iota
	numNeg
	numZero
	numPos
	numPosInf
	numNaN
)

// EncodeKey appends the memcomparable encoding of d, a value of type t, to buf; desc selects the
// descending order.
func EncodeKey(buf []byte, t types.T, d *types.Datum, desc bool) []byte {
	start := len(buf)
	buf = encodeKeyAsc(buf, t, d)
	if desc {
		invert(buf[start:])
	}
	return buf
}

// AppendKey appends the key of the columns cols of row (types ts, indexed like row); desc, when not
// nil, gives each key column's direction.
func AppendKey(buf []byte, ts []types.T, row []types.Datum, cols []int, desc []bool) []byte {
	for i, c := range cols {
		buf = EncodeKey(buf, ts[c], &row[c], desc != nil && desc[i])
	}
	return buf
}

func invert(b []byte) {
	for i := range b {
		b[i] = ^b[i]
	}
}

func encodeKeyAsc(buf []byte, t types.T, d *types.Datum) []byte {
	if d.Null {
		return append(buf, keyNull)
	}
	buf = append(buf, keyValue)
	switch t.Physical() {
	case types.PhysI64:
		switch t.ID {
		case types.Bool:
			return append(buf, byte(d.I&1))
		case types.Int16:
			return binary.BigEndian.AppendUint16(buf, uint16(d.I)^(1<<15))
		case types.Int32:
			return binary.BigEndian.AppendUint32(buf, uint32(d.I)^(1<<31))
		default:
			return binary.BigEndian.AppendUint64(buf, uint64(d.I)^(1<<63))
		}
	case types.PhysF64:
		return binary.BigEndian.AppendUint64(buf, floatKey(d.F))
	case types.PhysStr:
		if t.ID == types.Array {
			return appendArrayKey(buf, t, d.S)
		}
		if t.ID == types.Struct {
			return appendStructKey(buf, t, d.S)
		}
		return appendEscaped(buf, d.S)
	case types.PhysDec:
		return appendDecimalKey(buf, &d.Dec)
	case types.PhysIv:
		hi, lo := intervalMicros(d.Iv)
		buf = binary.BigEndian.AppendUint64(buf, uint64(hi)^(1<<63))
		return binary.BigEndian.AppendUint64(buf, lo)
	}
	return buf
}

// appendArrayKey writes an array as its elements' keys (each with its
// value or NULL marker) and the terminator 0x00, which sorts a prefix first:
// the order and equality of types.Compare (1.0 and 1.00 elements encode alike).
func appendArrayKey(buf []byte, t types.T, s string) []byte {
	elem := t.ElemType()
	vals, err := types.DecodeArray(elem, s)
	if err != nil {
		return appendEscaped(buf, s)
	}
	for i := range vals {
		buf = encodeKeyAsc(buf, elem, &vals[i])
	}
	return append(buf, 0x00)
}

// appendStructKey writes a struct as its fields' keys in order (a NULL
// field last, as types.Compare orders them).
func appendStructKey(buf []byte, t types.T, s string) []byte {
	vals, err := types.DecodeStruct(t, s)
	if err != nil {
		return appendEscaped(buf, s)
	}
	fs := t.StructFields()
	for i := range vals {
		buf = encodeKeyAsc(buf, fs[i].Type, &vals[i])
	}
	return buf
}

// floatKey maps a float to a uint64 with the same order: -0 and +0 equal, every NaN equal and above
// +Inf.
func floatKey(f float64) uint64 {
	if f == 0 {
		f = 0
	}
	if math.IsNaN(f) {
		return math.MaxUint64
	}
	b := math.Float64bits(f)
	if b&(1<<63) != 0 {
		return ^b
	}
	return b | 1<<63
}

// appendEscaped writes s with 0x00 escaped as 0x00 0xFF and the terminator 0x00 0x01, so that a
// string sorts before its extensions.
func appendEscaped(buf []byte, s string) []byte {
	for {
		i := indexZero(s)
		if i < 0 {
			break
		}
		buf = append(buf, s[:i]...)
		buf = append(buf, 0x00, 0xff)
		s = s[i+1:]
	}
	buf = append(buf, s...)
	return append(buf, 0x00, 0x01)
}

func indexZero(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return i
		}
	}
	return -1
}

// appendDecimalKey writes a numeric as a kind byte, then for finite non-zero values the decimal
// exponent E of the form 0.d1d2d3... × 10^E (d1 != 0, trailing zeros dropped) and the digits in
// pairs, one byte (pair+1) per pair, ended by 0x00; negative values invert exponent and digits.
func appendDecimalKey(buf []byte, d *apd.Decimal) []byte {
	switch d.Form {
	case apd.NaN, apd.NaNSignaling:
		return append(buf, numNaN)
	case apd.Infinite:
		if d.Negative {
			return append(buf, numNegInf)
		}
		return append(buf, numPosInf)
	}
	if d.Coeff.Sign() == 0 {
		return append(buf, numZero)
	}
	neg := d.Negative
	if neg {
		buf = append(buf, numNeg)
	} else {
		buf = append(buf, numPos)
	}
	expAt := len(buf)
	buf = append(buf, 0, 0, 0, 0)
	digitsAt := len(buf)
	buf = d.Coeff.Append(buf, 10)
	digits := buf[digitsAt:]
	e := int64(len(digits)) + int64(d.Exponent)
	for len(digits) > 0 && digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
	}
	// Pack in place: pair i is written at i, read from 2i and 2i+1.
	n := 0
	for i := 0; i < len(digits); i += 2 {
		p := (digits[i] - '0') * 10
		if i+1 < len(digits) {
			p += digits[i+1] - '0'
		}
		digits[n] = p + 1
		n++
	}
	buf = append(buf[:digitsAt+n], 0x00)
	e = max(min(e, math.MaxInt32), math.MinInt32)
	binary.BigEndian.PutUint32(buf[expAt:], uint32(int32(e))^(1<<31))
	if neg {
		invert(buf[expAt:])
	}
	return buf
}

// Microseconds per interval unit, as PostgreSQL orders intervals (a month is 30 days).
const (
	microsPerDay   = 24 * 3600 * 1_000_000
	microsPerMonth = 30 * microsPerDay
)

// intervalMicros returns the interval's total microseconds as a signed 128-bit integer (hi, lo).
func intervalMicros(iv types.IntervalValue) (hi int64, lo uint64) {
	hi, lo = mul128(int64(iv.Months), microsPerMonth)
	h2, l2 := mul128(int64(iv.Days), microsPerDay)
	hi, lo = add128(hi, lo, h2, l2)
	return add128(hi, lo, iv.Micros>>63, uint64(iv.Micros))
}

// mul128 returns a*b (b > 0) as a signed 128-bit integer.
func mul128(a int64, b uint64) (hi int64, lo uint64) {
	neg := a < 0
	ua := uint64(a)
	if neg {
		ua = -ua
	}
	h, l := bits.Mul64(ua, b)
	if neg {
		// Two's complement negation of (h, l).
		l = ^l + 1
		h = ^h
		if l == 0 {
			h++
		}
	}
	return int64(h), l
}

func add128(ah int64, al uint64, bh int64, bl uint64) (int64, uint64) {
	lo, carry := bits.Add64(al, bl, 0)
	hi, _ := bits.Add64(uint64(ah), uint64(bh), carry)
	return int64(hi), lo
}
