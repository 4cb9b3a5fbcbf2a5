package codec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/cockroachdb/apd/v3"

	"github.com/tributary/tributary/sql/types"
)

// Row encoding: uvarint column count | null bitmap (1 bit per column, set = NULL) | the non-NULL
// values in column order:
//
//	ints, bool, date, time, timestamps: zigzag varint
//	float32: 4 bytes, float64: 8 bytes (IEEE bits, little endian)
//	varchar, bytea, jsonb: uvarint length | bytes
//	numeric: header byte (form | negative<<2 | bigCoeff<<3) | zigzag varint exponent | coefficient
//	         as uvarint, or as uvarint length | big-endian bytes when it exceeds 64 bits
//	interval: zigzag varints months, days, micros
//
// Decoding a row with more columns than were stored gives NULL for the missing trailing columns, so
// a column added at the end of a table needs no rewrite.

// ErrCorrupt is returned by DecodeRow for malformed input.
var ErrCorrupt = errors.New("codec: corrupt row encoding")

// EncodeRow appends the encoding of row (types ts; len(row) == len(ts)) to buf.
func EncodeRow(buf []byte, ts []types.T, row []types.Datum) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(ts)))
	bitmapAt := len(buf)
	for range (len(ts) + 7) / 8 {
		buf = append(buf, 0)
	}
	for i := range ts {
		d := &row[i]
		if d.Null {
			buf[bitmapAt+i/8] |= 1 << (i % 8)
			continue
		}
		buf = appendValue(buf, ts[i], d)
	}
	return buf
}

func appendValue(buf []byte, t types.T, d *types.Datum) []byte {
	switch t.Physical() {
	case types.PhysI64:
		return binary.AppendVarint(buf, d.I)
	case types.PhysF64:
		if t.ID == types.Float32 {
			return binary.LittleEndian.AppendUint32(buf, math.Float32bits(float32(d.F)))
		}
		return binary.LittleEndian.AppendUint64(buf, math.Float64bits(d.F))
	case types.PhysStr:
		buf = binary.AppendUvarint(buf, uint64(len(d.S)))
		return append(buf, d.S...)
	case types.PhysDec:
		return appendDecimalValue(buf, &d.Dec)
	case types.PhysIv:
		buf = binary.AppendVarint(buf, int64(d.Iv.Months))
		buf = binary.AppendVarint(buf, int64(d.Iv.Days))
		return binary.AppendVarint(buf, d.Iv.Micros)
	}
	return buf
}

func appendDecimalValue(buf []byte, d *apd.Decimal) []byte {
	h := byte(d.Form) & 3
	if d.Negative {
		h |= 1 << 2
	}
	big := !d.Coeff.IsUint64()
	if big {
		h |= 1 << 3
	}
	buf = append(buf, h)
	buf = binary.AppendVarint(buf, int64(d.Exponent))
	if !big {
		return binary.AppendUvarint(buf, d.Coeff.Uint64())
	}
	b := d.Coeff.Bytes() // allocates; only for coefficients beyond 64 bits
	buf = binary.AppendUvarint(buf, uint64(len(b)))
	return append(buf, b...)
}

// DecodeRow decodes a row of types ts from data into dst (resized to len(ts)) and returns it.
// Strings are copied out of data.
func DecodeRow(ts []types.T, data []byte, dst []types.Datum) ([]types.Datum, error) {
	return DecodeRowMissing(ts, data, dst, nil)
}

// DecodeRowMissing is DecodeRow where a trailing column the encoding lacks (stored before the
// column was added) reads as missing[i] instead of NULL, when missing is long enough.
func DecodeRowMissing(ts []types.T, data []byte, dst []types.Datum, missing []types.Datum) ([]types.Datum, error) {
	if cap(dst) < len(ts) {
		dst = make([]types.Datum, len(ts))
	}
	dst = dst[:len(ts)]
	stored, bitmap, data, err := rowHeader(data, len(ts))
	if err != nil {
		return dst, err
	}
	for i := range ts {
		d := &dst[i]
		resetDatum(d)
		if i >= stored {
			if i < len(missing) {
				*d = missing[i].Copy()
			} else {
				d.Null = true
			}
			continue
		}
		if bitmap[i/8]&(1<<(i%8)) != 0 {
			d.Null = true
			continue
		}
		if data, err = decodeValue(ts[i], data, d); err != nil {
			return dst, fmt.Errorf("column %d (%s): %w", i, ts[i], err)
		}
	}
	return dst, nil
}

// AppendDecodedRow decodes a row as DecodeRowMissing does and appends it to c
// (of columns ts) as an insert: integer-like columns go straight into their
// vectors, the others through tmp (scratch of at least len(ts) datums). On
// an error c is left with columns of unequal lengths and must be dropped.
func AppendDecodedRow(c *types.Chunk, ts []types.T, data []byte, tmp []types.Datum, missing []types.Datum) error {
	stored, bitmap, data, err := rowHeader(data, len(ts))
	if err != nil {
		return err
	}
	for i, t := range ts {
		v := &c.Cols[i]
		switch {
		case i >= stored:
			if i < len(missing) {
				v.Append(&missing[i])
			} else {
				v.AppendNull()
			}
		case bitmap[i/8]&(1<<(i%8)) != 0:
			v.AppendNull()
		case t.Physical() == types.PhysI64:
			x, k := binary.Varint(data)
			if k <= 0 {
				return fmt.Errorf("column %d (%s): %w", i, t, ErrCorrupt)
			}
			data = data[k:]
			v.Nulls = append(v.Nulls, false)
			v.I64 = append(v.I64, x)
		default:
			d := &tmp[i]
			resetDatum(d)
			if data, err = decodeValue(t, data, d); err != nil {
				return fmt.Errorf("column %d (%s): %w", i, t, err)
			}
			v.Append(d)
		}
	}
	c.RowAppended()
	return nil
}

// rowHeader reads an encoded row's column count and null bitmap: how many of
// width columns it stores, the bitmap, and the values after them.
func rowHeader(data []byte, width int) (stored int, bitmap, values []byte, err error) {
	n, k := binary.Uvarint(data)
	if k <= 0 {
		return 0, nil, nil, fmt.Errorf("%w: column count", ErrCorrupt)
	}
	data = data[k:]
	nb := (int(min(n, math.MaxInt32)) + 7) / 8
	if len(data) < nb {
		return 0, nil, nil, fmt.Errorf("%w: null bitmap of %d columns", ErrCorrupt, n)
	}
	return int(min(n, uint64(width))), data[:nb], data[nb:], nil
}

func resetDatum(d *types.Datum) {
	d.Null, d.I, d.F, d.S, d.Iv = false, 0, 0, "", types.IntervalValue{}
	d.Dec.Form, d.Dec.Negative, d.Dec.Exponent = apd.Finite, false, 0
	d.Dec.Coeff.SetUint64(0)
}

func decodeValue(t types.T, data []byte, d *types.Datum) ([]byte, error) {
	switch t.Physical() {
	case types.PhysI64:
		v, k := binary.Varint(data)
		if k <= 0 {
			return data, ErrCorrupt
		}
		d.I = v
		return data[k:], nil
	case types.PhysF64:
		if t.ID == types.Float32 {
			if len(data) < 4 {
				return data, ErrCorrupt
			}
			d.F = float64(math.Float32frombits(binary.LittleEndian.Uint32(data)))
			return data[4:], nil
		}
		if len(data) < 8 {
			return data, ErrCorrupt
		}
		d.F = math.Float64frombits(binary.LittleEndian.Uint64(data))
		return data[8:], nil
	case types.PhysStr:
		l, k := binary.Uvarint(data)
		if k <= 0 || uint64(len(data)-k) < l {
			return data, ErrCorrupt
		}
		d.S = string(data[k : k+int(l)])
		return data[k+int(l):], nil
	case types.PhysDec:
		return decodeDecimalValue(data, &d.Dec)
	case types.PhysIv:
		var vals [3]int64
		for j := range vals {
			v, k := binary.Varint(data)
			if k <= 0 {
				return data, ErrCorrupt
			}
			vals[j], data = v, data[k:]
		}
		if vals[0] != int64(int32(vals[0])) || vals[1] != int64(int32(vals[1])) {
			return data, ErrCorrupt
		}
		d.Iv = types.IntervalValue{Months: int32(vals[0]), Days: int32(vals[1]), Micros: vals[2]}
		return data, nil
	}
	return data, nil
}

func decodeDecimalValue(data []byte, d *apd.Decimal) ([]byte, error) {
	if len(data) < 1 {
		return data, ErrCorrupt
	}
	h := data[0]
	data = data[1:]
	d.Form = apd.Form(h & 3)
	d.Negative = h&(1<<2) != 0
	e, k := binary.Varint(data)
	if k <= 0 || e != int64(int32(e)) {
		return data, ErrCorrupt
	}
	d.Exponent = int32(e)
	data = data[k:]
	if h&(1<<3) == 0 {
		c, k := binary.Uvarint(data)
		if k <= 0 {
			return data, ErrCorrupt
		}
		d.Coeff.SetUint64(c)
		return data[k:], nil
	}
	l, k := binary.Uvarint(data)
	if k <= 0 || uint64(len(data)-k) < l {
		return data, ErrCorrupt
	}
	d.Coeff.SetBytes(data[k : k+int(l)])
	return data[k+int(l):], nil
}
