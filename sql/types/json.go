package types

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/cockroachdb/apd/v3"
)

// NormalizeJSON parses JSON text and returns jsonb's canonical text form:
// object keys ordered by (length, bytes) with the last duplicate winning,
// ", " and ": " separators, numbers as NUMERIC prints them.
func NormalizeJSON(s string) (string, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", Errorf(ErrInvalidText, "invalid input syntax for type json")
	}
	if dec.More() {
		return "", Errorf(ErrInvalidText, "invalid input syntax for type json")
	}
	var buf bytes.Buffer
	if err := writeJSON(&buf, v); err != nil {
		return "", err
	}
	return buf.String(), nil
}

// ParseJSONValue decodes canonical jsonb text into Go values (json.Number for numbers).
func ParseJSONValue(s string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, Errorf(ErrInvalidText, "invalid input syntax for type json")
	}
	return v, nil
}

// JSONText returns the canonical jsonb text of a decoded value.
func JSONText(v any) string {
	var buf bytes.Buffer
	_ = writeJSON(&buf, v)
	return buf.String()
}

func writeJSON(buf *bytes.Buffer, v any) error {
	switch x := v.(type) {
	case nil:
		buf.WriteString("null")
	case bool:
		if x {
			buf.WriteString("true")
		} else {
			buf.WriteString("false")
		}
	case json.Number:
		var d apd.Decimal
		if _, _, err := d.SetString(string(x)); err != nil {
			return Errorf(ErrInvalidText, "invalid input syntax for type json")
		}
		buf.WriteString(d.Text('f'))
	case float64:
		var d apd.Decimal
		if _, err := d.SetFloat64(x); err != nil {
			return Errorf(ErrInvalidText, "invalid number in json")
		}
		buf.WriteString(d.Text('f'))
	case string:
		WriteJSONString(buf, x)
	case []any:
		buf.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				buf.WriteString(", ")
			}
			if err := writeJSON(buf, e); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			if len(keys[i]) != len(keys[j]) {
				return len(keys[i]) < len(keys[j])
			}
			return keys[i] < keys[j]
		})
		buf.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				buf.WriteString(", ")
			}
			WriteJSONString(buf, k)
			buf.WriteString(": ")
			if err := writeJSON(buf, x[k]); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	default:
		return Errorf(ErrInvalidText, "invalid json value")
	}
	return nil
}

// WriteJSONString writes s as a JSON string literal the way PostgreSQL does
// (only quotes, backslashes and control characters are escaped).
func WriteJSONString(buf *bytes.Buffer, s string) {
	const hex = "0123456789abcdef"
	buf.WriteByte('"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch c {
			case '"':
				buf.WriteString(`\"`)
			case '\\':
				buf.WriteString(`\\`)
			case '\n':
				buf.WriteString(`\n`)
			case '\r':
				buf.WriteString(`\r`)
			case '\t':
				buf.WriteString(`\t`)
			case '\b':
				buf.WriteString(`\b`)
			case '\f':
				buf.WriteString(`\f`)
			default:
				if c < 0x20 {
					buf.WriteString(`\u00`)
					buf.WriteByte(hex[c>>4])
					buf.WriteByte(hex[c&15])
				} else {
					buf.WriteByte(c)
				}
			}
			i++
			continue
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		buf.WriteString(s[i : i+size])
		i += size
	}
	buf.WriteByte('"')
}
