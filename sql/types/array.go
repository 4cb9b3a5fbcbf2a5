package types

import (
	"encoding/binary"
	"math"
	"strings"

	"github.com/cespare/xxhash/v2"
)

// Arrays are one-dimensional with lower bound 1. An array type is T{ID: Array,
// Elem: the element's family}, with Width and Scale the element's modifiers
// (varchar(10)[] keeps its 10). A value lives in PhysStr, encoded by
// EncodeArray: a uvarint element count, then per element a tag byte (0 NULL, 1
// value) and the value in its physical layout (I64 as a zigzag varint, F64 as 8
// bytes, Str as a uvarint length and the bytes, Dec as its text, Iv as three
// varints). The encoding is lossless (numeric scale, -0, interval fields kept),
// so equal arrays need not be equal bytes: Compare, Hash and the storage key
// encoding decode it and work element by element, as PostgreSQL does.

// ArrayOf returns the array type whose elements are of type elem.
func ArrayOf(elem T) T {
	return T{ID: Array, Elem: elem.ID, Width: elem.Width, Scale: elem.Scale, Fields: elem.Fields}
}

// ElemType returns an array type's element type.
func (t T) ElemType() T { return T{ID: t.Elem, Width: t.Width, Scale: t.Scale, Fields: t.Fields} }

// IsArray reports whether t is an array type.
func (t T) IsArray() bool { return t.ID == Array }

const (
	elemNull  byte = 0
	elemValue byte = 1
)

// EncodeArray encodes the elements vals (of type elem) as an array value.
func EncodeArray(elem T, vals []Datum) string {
	return string(AppendArray(nil, elem, vals))
}

// AppendArray appends the encoding of vals (of type elem) to buf.
func AppendArray(buf []byte, elem T, vals []Datum) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(vals)))
	for i := range vals {
		buf = appendElem(buf, elem, &vals[i])
	}
	return buf
}

func appendElem(buf []byte, elem T, d *Datum) []byte {
	if d.Null {
		return append(buf, elemNull)
	}
	buf = append(buf, elemValue)
	switch elem.Physical() {
	case PhysI64:
		return binary.AppendVarint(buf, d.I)
	case PhysF64:
		return binary.LittleEndian.AppendUint64(buf, math.Float64bits(d.F))
	case PhysStr:
		buf = binary.AppendUvarint(buf, uint64(len(d.S)))
		return append(buf, d.S...)
	case PhysDec:
		s := d.Dec.Text('G')
		buf = binary.AppendUvarint(buf, uint64(len(s)))
		return append(buf, s...)
	case PhysIv:
		buf = binary.AppendVarint(buf, int64(d.Iv.Months))
		buf = binary.AppendVarint(buf, int64(d.Iv.Days))
		return binary.AppendVarint(buf, d.Iv.Micros)
	}
	return buf
}

// errBadArray reports an array value whose encoding is damaged.
var errBadArray = Errorf(ErrInternal, "damaged array value")

// ArrayLen returns the number of elements of an encoded array.
func ArrayLen(s string) int {
	n, k := binary.Uvarint([]byte(s[:min(len(s), binary.MaxVarintLen64)]))
	if k <= 0 {
		return 0
	}
	return int(n)
}

// DecodeArray decodes an array value of element type elem.
func DecodeArray(elem T, s string) ([]Datum, error) {
	return AppendDecodedArray(nil, elem, s)
}

// AppendDecodedArray appends the elements of the array value s to dst.
func AppendDecodedArray(dst []Datum, elem T, s string) ([]Datum, error) {
	r := arrayReader{s: s}
	n, ok := r.uvarint()
	if !ok || n > uint64(len(s)) {
		return dst, errBadArray
	}
	for i := uint64(0); i < n; i++ {
		var d Datum
		if !r.elem(elem, &d) {
			return dst, errBadArray
		}
		dst = append(dst, d)
	}
	if r.pos != len(s) {
		return dst, errBadArray
	}
	return dst, nil
}

// ForEachElem calls fn with each element of the array value s (of element
// type elem) in order, until fn returns false, without building a slice.
// The datum passed is reused between calls.
func ForEachElem(elem T, s string, fn func(d *Datum) bool) error {
	r := arrayReader{s: s}
	n, ok := r.uvarint()
	if !ok || n > uint64(len(s)) {
		return errBadArray
	}
	var d Datum
	for i := uint64(0); i < n; i++ {
		d = Datum{}
		if !r.elem(elem, &d) {
			return errBadArray
		}
		if !fn(&d) {
			return nil
		}
	}
	return nil
}

type arrayReader struct {
	s   string
	pos int
}

func (r *arrayReader) uvarint() (uint64, bool) {
	var v uint64
	var shift uint
	for r.pos < len(r.s) && shift < 64 {
		b := r.s[r.pos]
		r.pos++
		v |= uint64(b&0x7f) << shift
		if b < 0x80 {
			return v, true
		}
		shift += 7
	}
	return 0, false
}

func (r *arrayReader) varint() (int64, bool) {
	u, ok := r.uvarint()
	x := int64(u >> 1)
	if u&1 != 0 {
		x = ^x
	}
	return x, ok
}

func (r *arrayReader) bytes() (string, bool) {
	n, ok := r.uvarint()
	if !ok || n > uint64(len(r.s)-r.pos) {
		return "", false
	}
	s := r.s[r.pos : r.pos+int(n)]
	r.pos += int(n)
	return s, true
}

func (r *arrayReader) elem(elem T, d *Datum) bool {
	if r.pos >= len(r.s) {
		return false
	}
	tag := r.s[r.pos]
	r.pos++
	if tag == elemNull {
		d.Null = true
		return true
	}
	if tag != elemValue {
		return false
	}
	var ok bool
	switch elem.Physical() {
	case PhysI64:
		d.I, ok = r.varint()
	case PhysF64:
		if len(r.s)-r.pos < 8 {
			return false
		}
		d.F = math.Float64frombits(binary.LittleEndian.Uint64([]byte(r.s[r.pos : r.pos+8])))
		r.pos += 8
		ok = true
	case PhysStr:
		d.S, ok = r.bytes()
	case PhysDec:
		var s string
		if s, ok = r.bytes(); ok {
			_, _, err := d.Dec.SetString(s)
			ok = err == nil
		}
	case PhysIv:
		var m, dd, us int64
		var ok1, ok2 bool
		m, ok = r.varint()
		dd, ok1 = r.varint()
		us, ok2 = r.varint()
		ok = ok && ok1 && ok2
		d.Iv = IntervalValue{Months: int32(m), Days: int32(dd), Micros: us}
	}
	return ok
}

// compareArrays orders two array values as PostgreSQL's btree array_cmp
// does: element by element (a NULL element above every value), then the
// shorter array first.
func compareArrays(t T, a, b string) int {
	if a == b {
		return 0
	}
	elem := t.ElemType()
	ra, rb := arrayReader{s: a}, arrayReader{s: b}
	na, ok1 := ra.uvarint()
	nb, ok2 := rb.uvarint()
	if !ok1 || !ok2 {
		return strings.Compare(a, b)
	}
	for i := uint64(0); i < min(na, nb); i++ {
		var x, y Datum
		if !ra.elem(elem, &x) || !rb.elem(elem, &y) {
			return strings.Compare(a, b)
		}
		if c := Compare(elem, &x, &y); c != 0 {
			return c
		}
	}
	switch {
	case na < nb:
		return -1
	case na > nb:
		return 1
	}
	return 0
}

// hashArray feeds an array value into h consistently with compareArrays.
func hashArray(h *xxhash.Digest, t T, s string) {
	elem := t.ElemType()
	vals, err := DecodeArray(elem, s)
	if err != nil {
		h.WriteString(s)
		return
	}
	var buf [8]byte
	binary.LittleEndian.PutUint64(buf[:], uint64(len(vals)))
	h.Write(buf[:])
	for i := range vals {
		HashInto(h, elem, &vals[i])
	}
}

// appendArrayText appends PostgreSQL's text form of an array: {1,2,NULL},
// with an element quoted when it is empty, is NULL spelled as text, or holds
// a brace, quote, comma, backslash or white space.
func appendArrayText(buf []byte, t T, s string) []byte {
	elem := t.ElemType()
	vals, err := DecodeArray(elem, s)
	if err != nil {
		return append(buf, "{?}"...)
	}
	buf = append(buf, '{')
	var tmp []byte
	for i := range vals {
		if i > 0 {
			buf = append(buf, ',')
		}
		if vals[i].Null {
			buf = append(buf, "NULL"...)
			continue
		}
		tmp = AppendText(tmp[:0], elem, &vals[i])
		if !needsQuotes(tmp) {
			buf = append(buf, tmp...)
			continue
		}
		buf = append(buf, '"')
		for _, c := range tmp {
			if c == '"' || c == '\\' {
				buf = append(buf, '\\')
			}
			buf = append(buf, c)
		}
		buf = append(buf, '"')
	}
	return append(buf, '}')
}

func needsQuotes(s []byte) bool {
	if len(s) == 0 || (len(s) == 4 && strings.EqualFold(string(s), "null")) {
		return true
	}
	for _, c := range s {
		switch c {
		case '{', '}', ',', '"', '\\', ' ', '\t', '\n', '\r', '\v', '\f':
			return true
		}
	}
	return false
}

// ParseArrayText reads PostgreSQL's text form of a one-dimensional array of
// type t ('{1,2,NULL}', '{"a b","c\"d"}', '{}'). A malformed literal is
// ErrInvalidText; a multi-dimensional one or one with explicit bounds is
// ErrUnsupported.
func ParseArrayText(t T, s string) (Datum, error) {
	elem := t.ElemType()
	bad := func(detail string) error {
		return &Error{Kind: ErrInvalidText, Msg: "malformed array literal: \"" + s + "\"", Detail: detail}
	}
	p := strings.TrimLeft(s, " \t\n\r\v\f")
	if strings.HasPrefix(p, "[") {
		return Datum{}, Errorf(ErrUnsupported, "array bounds in literals are not supported: %q", s)
	}
	if !strings.HasPrefix(p, "{") {
		return Datum{}, bad("Array value must start with \"{\" or dimension information.")
	}
	p = p[1:]
	var vals []Datum
	expectElem := true
	var sb strings.Builder
	for {
		p = strings.TrimLeft(p, " \t\n\r\v\f")
		if p == "" {
			return Datum{}, bad("Unexpected end of input.")
		}
		if p[0] == '}' {
			if len(vals) > 0 && expectElem {
				return Datum{}, bad("Unexpected \"}\" character.")
			}
			p = strings.TrimLeft(p[1:], " \t\n\r\v\f")
			if p != "" {
				return Datum{}, bad("Junk after closing right brace.")
			}
			break
		}
		if !expectElem {
			if p[0] != ',' {
				return Datum{}, bad("Expected \",\" or \"}\" character.")
			}
			p = p[1:]
			expectElem = true
			continue
		}
		if p[0] == '{' {
			return Datum{}, Errorf(ErrUnsupported, "multidimensional arrays are not supported")
		}
		sb.Reset()
		quoted := false
		if p[0] == '"' {
			quoted = true
			p = p[1:]
			for {
				if p == "" {
					return Datum{}, bad("Unexpected end of input.")
				}
				c := p[0]
				p = p[1:]
				if c == '"' {
					break
				}
				if c == '\\' {
					if p == "" {
						return Datum{}, bad("Unexpected end of input.")
					}
					c = p[0]
					p = p[1:]
				}
				sb.WriteByte(c)
			}
		} else {
			// Unquoted: up to a comma or brace; inner white space is kept,
			// trailing white space dropped; backslash escapes one character.
			trail := 0
			for p != "" && p[0] != ',' && p[0] != '}' {
				c := p[0]
				p = p[1:]
				switch {
				case c == '\\':
					if p == "" {
						return Datum{}, bad("Unexpected end of input.")
					}
					sb.WriteByte(p[0])
					p = p[1:]
					trail = sb.Len()
					continue
				case c == '{' || c == '"':
					return Datum{}, bad("Unexpected \"" + string(c) + "\" character.")
				}
				sb.WriteByte(c)
				if !strings.ContainsRune(" \t\n\r\v\f", rune(c)) {
					trail = sb.Len()
				}
			}
			v := sb.String()[:trail]
			sb.Reset()
			sb.WriteString(v)
		}
		v := sb.String()
		if !quoted && strings.EqualFold(v, "null") {
			vals = append(vals, NullDatum)
		} else {
			if !quoted && v == "" {
				return Datum{}, bad("Unexpected \",\" character.")
			}
			d, err := ParseText(elem, v)
			if err != nil {
				return Datum{}, err
			}
			vals = append(vals, d)
		}
		expectElem = false
	}
	return DString(EncodeArray(elem, vals)), nil
}

// ArrayOID returns the oid of the array type whose elements have oid elem (0
// when there is none).
func ArrayOID(elem uint32) uint32 {
	for _, p := range arrayOIDs {
		if p[0] == elem {
			return p[1]
		}
	}
	return 0
}

// ElemOID returns the element oid of array type oid arr (0 when arr is not one).
func ElemOID(arr uint32) uint32 {
	for _, p := range arrayOIDs {
		if p[1] == arr {
			return p[0]
		}
	}
	return 0
}

// arrayOIDs pairs PostgreSQL's element and array type oids (pg_type.typarray).
var arrayOIDs = [][2]uint32{
	{OIDBool, 1000}, {OIDBytea, 1001}, {OIDName, 1003}, {OIDInt2, 1005}, {OIDInt4, 1007},
	{OIDText, 1009}, {OIDBpchar, 1014}, {OIDVarchar, 1015}, {OIDInt8, 1016}, {OIDFloat4, 1021},
	{OIDFloat8, 1022}, {OIDOid, 1028}, {OIDTimestamp, 1115}, {OIDDate, 1182}, {OIDTime, 1183},
	{OIDTimestamptz, 1185}, {OIDInterval, 1187}, {OIDNumeric, 1231}, {OIDJSON, 199},
	{OIDUuid, 2951}, {OIDJsonb, 3807}, {OIDRegclass, 2210}, {OIDRecord, OIDRecordArray},
}
