package types

import (
	"encoding/binary"
	"encoding/json"
	"strconv"
	"strings"
	"sync"

	"github.com/cespare/xxhash/v2"
)

// Structs (RisingWave's STRUCT<a INT, b VARCHAR>, PostgreSQL's composite
// values) have named, typed fields. A struct type is T{ID: Struct, Fields:
// desc}, where desc is the JSON of its []StructField; being a string it keeps T
// comparable with ==, and StructFields decodes it once per distinct desc. An
// array of structs is T{ID: Array, Elem: Struct, Fields: desc}. A value lives
// in PhysStr: a uvarint field count, then each field as an array element is
// encoded (array.go: a NULL tag or the value in its field type's physical
// layout; a nested struct or array is its own encoding as a string). Compare,
// Hash and the storage key encoding work field by field.

// StructField is one field of a struct type.
type StructField struct {
	Name string
	Type T
}

// StructOf returns the struct type with the given fields.
func StructOf(fields []StructField) T {
	b, err := json.Marshal(fields)
	if err != nil { // a T always marshals
		return TUnknown
	}
	return T{ID: Struct, Fields: string(b)}
}

var structCache sync.Map // desc -> []StructField

// StructFields returns the fields of a struct type (or of an array of
// structs' element); nil for other types. The slice is shared: do not modify it.
func (t T) StructFields() []StructField {
	if t.Fields == "" {
		return nil
	}
	if v, ok := structCache.Load(t.Fields); ok {
		return v.([]StructField)
	}
	var fs []StructField
	if err := json.Unmarshal([]byte(t.Fields), &fs); err != nil {
		return nil
	}
	structCache.Store(t.Fields, fs)
	return fs
}

// IsStruct reports whether t is a struct type.
func (t T) IsStruct() bool { return t.ID == Struct }

// EncodeStruct encodes the field values vals of struct type t.
func EncodeStruct(t T, vals []Datum) string {
	fs := t.StructFields()
	buf := binary.AppendUvarint(nil, uint64(len(vals)))
	for i := range vals {
		var ft T
		if i < len(fs) {
			ft = fs[i].Type
		}
		buf = appendElem(buf, ft, &vals[i])
	}
	return string(buf)
}

var errBadStruct = Errorf(ErrInternal, "damaged struct value")

// DecodeStruct decodes a value of struct type t into its field values.
func DecodeStruct(t T, s string) ([]Datum, error) {
	fs := t.StructFields()
	r := arrayReader{s: s}
	n, ok := r.uvarint()
	if !ok || n != uint64(len(fs)) {
		return nil, errBadStruct
	}
	vals := make([]Datum, n)
	for i := range vals {
		if !r.elem(fs[i].Type, &vals[i]) {
			return nil, errBadStruct
		}
	}
	if r.pos != len(s) {
		return nil, errBadStruct
	}
	return vals, nil
}

// compareStructs orders two struct values field by field (a NULL field above
// every value), as PostgreSQL's btree record comparison does.
func compareStructs(t T, a, b string) int {
	if a == b {
		return 0
	}
	x, err1 := DecodeStruct(t, a)
	y, err2 := DecodeStruct(t, b)
	if err1 != nil || err2 != nil {
		return strings.Compare(a, b)
	}
	fs := t.StructFields()
	for i := range x {
		if c := Compare(fs[i].Type, &x[i], &y[i]); c != 0 {
			return c
		}
	}
	return 0
}

// hashStruct feeds a struct value into h consistently with compareStructs.
func hashStruct(h *xxhash.Digest, t T, s string) {
	vals, err := DecodeStruct(t, s)
	if err != nil {
		h.WriteString(s)
		return
	}
	fs := t.StructFields()
	for i := range vals {
		HashInto(h, fs[i].Type, &vals[i])
	}
}

// appendStructText appends PostgreSQL's text form of a composite value:
// (1,x,,"a b") with a NULL field empty and a field quoted when it is empty or
// holds a quote, backslash, parenthesis, comma or white space (quotes and
// backslashes inside doubled).
func appendStructText(buf []byte, t T, s string) []byte {
	vals, err := DecodeStruct(t, s)
	if err != nil {
		return append(buf, "(?)"...)
	}
	fs := t.StructFields()
	buf = append(buf, '(')
	var tmp []byte
	for i := range vals {
		if i > 0 {
			buf = append(buf, ',')
		}
		if vals[i].Null {
			continue
		}
		tmp = AppendText(tmp[:0], fs[i].Type, &vals[i])
		quote := len(tmp) == 0
		for _, c := range tmp {
			switch c {
			case '"', '\\', '(', ')', ',', ' ', '\t', '\n', '\r', '\v', '\f':
				quote = true
			}
		}
		if !quote {
			buf = append(buf, tmp...)
			continue
		}
		buf = append(buf, '"')
		for _, c := range tmp {
			if c == '"' || c == '\\' {
				buf = append(buf, c)
			}
			buf = append(buf, c)
		}
		buf = append(buf, '"')
	}
	return append(buf, ')')
}

// ParseStructText reads PostgreSQL's text form of a composite value of type
// t ('(1,x)', '(1,"a b",)'); a malformed literal is ErrInvalidText.
func ParseStructText(t T, s string) (Datum, error) {
	fs := t.StructFields()
	bad := func(detail string) error {
		return &Error{Kind: ErrInvalidText, Msg: "malformed record literal: \"" + s + "\"", Detail: detail}
	}
	p := strings.TrimLeft(s, " \t\n\r\v\f")
	if !strings.HasPrefix(p, "(") {
		return Datum{}, bad("Missing left parenthesis.")
	}
	p = p[1:]
	vals := make([]Datum, 0, len(fs))
	var sb strings.Builder
	for i := range fs {
		sb.Reset()
		quoted, any := false, false
		for p != "" && p[0] != ',' && p[0] != ')' {
			c := p[0]
			p = p[1:]
			any = true
			switch {
			case c == '\\':
				if p == "" {
					return Datum{}, bad("Unexpected end of input.")
				}
				sb.WriteByte(p[0])
				p = p[1:]
			case c == '"':
				quoted = true
				for {
					if p == "" {
						return Datum{}, bad("Unexpected end of input.")
					}
					c = p[0]
					p = p[1:]
					if c == '"' && p != "" && p[0] == '"' {
						sb.WriteByte('"')
						p = p[1:]
						continue
					}
					if c == '"' {
						break
					}
					if c == '\\' && p != "" {
						c = p[0]
						p = p[1:]
					}
					sb.WriteByte(c)
				}
			default:
				sb.WriteByte(c)
			}
		}
		if p == "" {
			return Datum{}, bad("Unexpected end of input.")
		}
		if !any && !quoted {
			vals = append(vals, NullDatum)
		} else {
			d, err := ParseText(fs[i].Type, sb.String())
			if err != nil {
				return Datum{}, err
			}
			vals = append(vals, d)
		}
		if i < len(fs)-1 {
			if p[0] != ',' {
				return Datum{}, bad("Too few columns.")
			}
			p = p[1:]
		}
	}
	if p == "" || p[0] != ')' {
		return Datum{}, bad("Too many columns.")
	}
	if strings.TrimSpace(p[1:]) != "" {
		return Datum{}, bad("Junk after right parenthesis.")
	}
	return DString(EncodeStruct(t, vals)), nil
}

// structString spells a struct type as RisingWave does:
// struct<a integer, b character varying>.
func structString(t T, name func(T) string) string {
	var b strings.Builder
	b.WriteString("struct<")
	for i, f := range t.StructFields() {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(quoteFieldName(f.Name))
		b.WriteByte(' ')
		b.WriteString(name(f.Type))
	}
	b.WriteByte('>')
	return b.String()
}

func quoteFieldName(n string) string {
	plain := n != ""
	for i, c := range n {
		if !(c == '_' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			plain = false
		}
	}
	if plain {
		return n
	}
	return `"` + strings.ReplaceAll(n, `"`, `""`) + `"`
}

// parseStructType reads a struct type name, struct<name type, ...> (type
// possibly a struct or an array itself); unquoted names are lower-cased.
func parseStructType(s string) (T, error) {
	p := &typeTextParser{s: s}
	t, err := p.typ()
	if err != nil {
		return TUnknown, err
	}
	p.space()
	if p.i != len(p.s) {
		return TUnknown, Errorf(ErrSyntax, "syntax error in type %q", s)
	}
	return t, nil
}

type typeTextParser struct {
	s string
	i int
}

func (p *typeTextParser) space() {
	for p.i < len(p.s) && strings.IndexByte(" \t\n\r", p.s[p.i]) >= 0 {
		p.i++
	}
}

func (p *typeTextParser) bad() error {
	return Errorf(ErrSyntax, "syntax error in type %q", p.s)
}

// typ reads one type: struct<...> or a plain name up to ',' or '>' at this
// level, then any [] suffix.
func (p *typeTextParser) typ() (T, error) {
	p.space()
	var t T
	if rest := strings.ToLower(p.s[p.i:]); strings.HasPrefix(rest, "struct") && strings.HasPrefix(strings.TrimLeft(rest[6:], " \t\n\r"), "<") {
		p.i += 6
		p.space()
		p.i++ // <
		var fs []StructField
		for {
			p.space()
			if p.i < len(p.s) && p.s[p.i] == '>' && len(fs) == 0 {
				break
			}
			name, err := p.name()
			if err != nil {
				return t, err
			}
			ft, err := p.typ()
			if err != nil {
				return t, err
			}
			fs = append(fs, StructField{Name: name, Type: ft})
			p.space()
			if p.i < len(p.s) && p.s[p.i] == ',' {
				p.i++
				continue
			}
			break
		}
		if p.i >= len(p.s) || p.s[p.i] != '>' {
			return t, p.bad()
		}
		p.i++
		t = StructOf(fs)
	} else {
		start, depth := p.i, 0
		for p.i < len(p.s) {
			c := p.s[p.i]
			if c == '(' {
				depth++
			} else if c == ')' {
				depth--
			} else if depth == 0 && (c == ',' || c == '>' || c == '[') {
				break
			}
			p.i++
		}
		word := strings.TrimSpace(p.s[start:p.i])
		var args []int
		if k := strings.IndexByte(word, '('); k >= 0 && strings.HasSuffix(word, ")") {
			for _, a := range strings.Split(word[k+1:len(word)-1], ",") {
				v, err := strconv.Atoi(strings.TrimSpace(a))
				if err != nil {
					return t, p.bad()
				}
				args = append(args, v)
			}
			word = strings.TrimSpace(word[:k])
		}
		var err error
		if t, err = FromName(word, args); err != nil {
			return t, err
		}
	}
	p.space()
	if strings.HasPrefix(p.s[p.i:], "[]") {
		p.i += 2
		if t.ID == Array {
			return t, Errorf(ErrUnsupported, "multidimensional arrays are not supported")
		}
		t = ArrayOf(t)
	}
	return t, nil
}

func (p *typeTextParser) name() (string, error) {
	p.space()
	if p.i < len(p.s) && p.s[p.i] == '"' {
		j := p.i + 1
		var b strings.Builder
		for j < len(p.s) {
			if p.s[j] == '"' {
				if j+1 < len(p.s) && p.s[j+1] == '"' {
					b.WriteByte('"')
					j += 2
					continue
				}
				p.i = j + 1
				return b.String(), nil
			}
			b.WriteByte(p.s[j])
			j++
		}
		return "", p.bad()
	}
	start := p.i
	for p.i < len(p.s) {
		c := p.s[p.i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80) {
			break
		}
		p.i++
	}
	if p.i == start {
		return "", p.bad()
	}
	return strings.ToLower(p.s[start:p.i]), nil
}

// OIDRecord is PostgreSQL's anonymous record type, the oid clients see for
// a struct; OIDRecordArray is record[].
const (
	OIDRecord      = 2249
	OIDRecordArray = 2287
)

// HasNullField reports whether d (of type t) is NULL or a struct with a NULL
// field at any depth: a key PostgreSQL's row equality never finds equal.
func HasNullField(t T, d *Datum) bool {
	if d.Null {
		return true
	}
	if t.ID != Struct {
		return false
	}
	vals, err := DecodeStruct(t, d.S)
	if err != nil {
		return false
	}
	for i, f := range t.StructFields() {
		if HasNullField(f.Type, &vals[i]) {
			return true
		}
	}
	return false
}

// CompareRows compares two non-NULL struct values as PostgreSQL's row
// comparison does: field by field up to the first pair not equal, whose
// order is the result; null reports that this pair holds a NULL (the
// comparison is unknown). For equality (eq), a later unequal non-NULL pair
// still makes the rows unequal: unknown only when no pair differs.
func CompareRows(t T, a, b string, eq bool) (c int, null bool) {
	x, err1 := DecodeStruct(t, a)
	y, err2 := DecodeStruct(t, b)
	if err1 != nil || err2 != nil {
		return strings.Compare(a, b), false
	}
	sawNull := false
	for i, f := range t.StructFields() {
		var c int
		var n bool
		switch {
		case x[i].Null || y[i].Null:
			n = true
		case f.Type.ID == Struct:
			c, n = CompareRows(f.Type, x[i].S, y[i].S, eq)
		default:
			c = CompareNonNull(f.Type, &x[i], &y[i])
		}
		if n && !eq {
			return 0, true
		}
		if n {
			sawNull = true
			continue
		}
		if c != 0 {
			return c, false
		}
	}
	return 0, sawNull
}
