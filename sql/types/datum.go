package types

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"math"

	"github.com/cespare/xxhash/v2"
	"github.com/cockroachdb/apd/v3"
)

// IntervalValue is PostgreSQL's interval: months, days and microseconds kept apart.
type IntervalValue struct {
	Months int32
	Days   int32
	Micros int64
}

// Datum is one SQL value, unboxed. Its type is carried alongside (by the column
// or expression that holds it); which field is meaningful follows T.Physical:
// I for PhysI64, F for PhysF64, S for PhysStr, Dec for PhysDec, Iv for PhysIv.
type Datum struct {
	Null bool
	I    int64
	F    float64
	S    string
	Dec  apd.Decimal
	Iv   IntervalValue
}

// NullDatum is the SQL NULL.
var NullDatum = Datum{Null: true}

// Constructors for readability.
func DInt(v int64) Datum               { return Datum{I: v} }
func DFloat(v float64) Datum           { return Datum{F: v} }
func DString(s string) Datum           { return Datum{S: s} }
func DInterval(iv IntervalValue) Datum { return Datum{Iv: iv} }
func DBool(b bool) Datum {
	if b {
		return Datum{I: 1}
	}
	return Datum{}
}

// DDecimal copies d into a datum.
func DDecimal(d *apd.Decimal) Datum {
	var out Datum
	out.Dec.Set(d)
	return out
}

// Bool returns a boolean datum's value.
func (d *Datum) Bool() bool { return d.I != 0 }

// Copy returns a deep copy (the decimal's big coefficient is not shared).
func (d Datum) Copy() Datum {
	var out Datum
	out.Null, out.I, out.F, out.S, out.Iv = d.Null, d.I, d.F, d.S, d.Iv
	out.Dec.Set(&d.Dec)
	return out
}

// Compare orders two values of type t; NULL sorts after every value (as in
// PostgreSQL's default ASC order). NaN floats sort above all numbers.
func Compare(t T, a, b *Datum) int {
	if a.Null || b.Null {
		switch {
		case a.Null && b.Null:
			return 0
		case a.Null:
			return 1
		default:
			return -1
		}
	}
	return CompareNonNull(t, a, b)
}

// CompareNonNull orders two non-NULL values of type t.
func CompareNonNull(t T, a, b *Datum) int {
	switch t.Physical() {
	case PhysI64:
		return cmp.Compare(a.I, b.I)
	case PhysF64:
		return compareFloat(a.F, b.F)
	case PhysStr:
		if t.ID == Array {
			return compareArrays(t, a.S, b.S)
		}
		if t.ID == Struct {
			return compareStructs(t, a.S, b.S)
		}
		if t.ID == Varchar || t.ID == Unknown {
			return cmp.Compare(a.S, b.S)
		}
		return bytes.Compare([]byte(a.S), []byte(b.S))
	case PhysDec:
		return compareDecimal(&a.Dec, &b.Dec)
	case PhysIv:
		return cmp.Compare(IntervalKey(a.Iv), IntervalKey(b.Iv))
	}
	return 0
}

// CompareAt orders row i of a against row j of b, both non-NULL and of one
// physical layout, without building datums (for sort and join keys).
func CompareAt(a *Vector, i int, b *Vector, j int) int {
	switch a.Type.Physical() {
	case PhysI64:
		return cmp.Compare(a.I64[i], b.I64[j])
	case PhysF64:
		return compareFloat(a.F64[i], b.F64[j])
	case PhysStr:
		if a.Type.ID == Array {
			return compareArrays(a.Type, a.Str[i], b.Str[j])
		}
		if a.Type.ID == Struct {
			return compareStructs(a.Type, a.Str[i], b.Str[j])
		}
		if a.Type.ID == Bytea || a.Type.ID == Jsonb {
			return bytes.Compare([]byte(a.Str[i]), []byte(b.Str[j]))
		}
		return cmp.Compare(a.Str[i], b.Str[j])
	case PhysDec:
		return compareDecimal(&a.Dec[i], &b.Dec[j])
	case PhysIv:
		return cmp.Compare(IntervalKey(a.Iv[i]), IntervalKey(b.Iv[j]))
	}
	return 0
}

// compareDecimal orders numerics as PostgreSQL does: NaN above every number
// (and +Infinity), equal to itself.
func compareDecimal(a, b *apd.Decimal) int {
	an, bn := a.Form == apd.NaN || a.Form == apd.NaNSignaling, b.Form == apd.NaN || b.Form == apd.NaNSignaling
	switch {
	case an && bn:
		return 0
	case an:
		return 1
	case bn:
		return -1
	}
	return a.Cmp(b)
}

func compareFloat(a, b float64) int {
	an, bn := math.IsNaN(a), math.IsNaN(b)
	switch {
	case an && bn:
		return 0
	case an:
		return 1
	case bn:
		return -1
	}
	return cmp.Compare(a, b)
}

// IntervalKey is the total order PostgreSQL uses for intervals: a month counts
// 30 days and a day 24 hours.
func IntervalKey(iv IntervalValue) float64 {
	const usPerDay = 24 * 3600 * 1e6
	return float64(iv.Months)*30*usPerDay + float64(iv.Days)*usPerDay + float64(iv.Micros)
}

// Equal reports SQL equality of two non-NULL values ignoring NULL semantics
// (NULL equals NULL here, as GROUP BY and DISTINCT need).
func Equal(t T, a, b *Datum) bool { return Compare(t, a, b) == 0 }

// Hash returns a hash of v consistent with Equal: values that compare equal hash
// equal (1.0 and 1.00 numerics, -0 and +0 floats). It is stable across processes
// and versions (xxhash64), so it may decide persisted placement (vnodes).
func Hash(t T, v *Datum) uint64 {
	if !v.Null && t.Physical() == PhysI64 {
		// The bytes HashInto writes, hashed at once (a digest's set-up and finish cost more
		// than the hash of 9 bytes).
		buf := hashI64(v.I)
		return xxhash.Sum64(buf[:])
	}
	var h xxhash.Digest
	h.Reset()
	HashInto(&h, t, v)
	return h.Sum64()
}

// hashI64 is what HashInto feeds a digest for a non-NULL integer: 1, then the value little endian.
func hashI64(v int64) [9]byte {
	buf := [9]byte{1}
	binary.LittleEndian.PutUint64(buf[1:], uint64(v))
	return buf
}

// HashInto feeds v into h (for multi-column keys).
func HashInto(h *xxhash.Digest, t T, v *Datum) {
	var buf [9]byte
	if v.Null {
		buf[0] = 0
		h.Write(buf[:1])
		return
	}
	buf[0] = 1
	switch t.Physical() {
	case PhysI64:
		buf = hashI64(v.I)
		h.Write(buf[:])
	case PhysF64:
		f := v.F
		if f == 0 {
			f = 0 // fold -0
		}
		if math.IsNaN(f) {
			f = math.NaN()
		}
		binary.LittleEndian.PutUint64(buf[1:], math.Float64bits(f))
		h.Write(buf[:])
	case PhysStr:
		h.Write(buf[:1])
		if t.ID == Array {
			hashArray(h, t, v.S)
			return
		}
		if t.ID == Struct {
			hashStruct(h, t, v.S)
			return
		}
		h.WriteString(v.S)
	case PhysDec:
		h.Write(buf[:1])
		if v.Dec.IsZero() {
			h.WriteString("0")
			return
		}
		var r apd.Decimal
		r.Reduce(&v.Dec)
		h.WriteString(r.Text('e'))
	case PhysIv:
		binary.LittleEndian.PutUint64(buf[1:], math.Float64bits(IntervalKey(v.Iv)))
		h.Write(buf[:])
	}
}
