package types

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/apd/v3"
)

// Infinite timestamps and dates use the extreme int64 values, as PostgreSQL does.
const (
	InfinityTS    = math.MaxInt64
	NegInfinityTS = math.MinInt64
)

// AppendText appends the PostgreSQL text form of d (of type t) to buf.
// NULL appends nothing: callers send NULL out of band.
func AppendText(buf []byte, t T, d *Datum) []byte {
	if d.Null {
		return buf
	}
	switch t.ID {
	case Bool:
		if d.I != 0 {
			return append(buf, 't')
		}
		return append(buf, 'f')
	case Int16, Int32, Int64:
		return strconv.AppendInt(buf, d.I, 10)
	case Float32:
		return appendFloat(buf, d.F, 32)
	case Float64:
		return appendFloat(buf, d.F, 64)
	case Numeric:
		return appendNumeric(buf, &d.Dec)
	case Varchar, Unknown, Jsonb:
		return append(buf, d.S...)
	case Bytea:
		const hex = "0123456789abcdef"
		buf = append(buf, '\\', 'x')
		for i := 0; i < len(d.S); i++ {
			buf = append(buf, hex[d.S[i]>>4], hex[d.S[i]&15])
		}
		return buf
	case Uuid:
		return AppendUUID(buf, d.S)
	case Array:
		return appendArrayText(buf, t, d.S)
	case Struct:
		return appendStructText(buf, t, d.S)
	case Date:
		return AppendDate(buf, d.I)
	case Time:
		return appendClock(buf, d.I)
	case Timestamp:
		return AppendTimestamp(buf, d.I, false)
	case Timestamptz:
		return AppendTimestamp(buf, d.I, true)
	case Interval:
		return AppendInterval(buf, d.Iv)
	}
	return buf
}

// FormatText returns the PostgreSQL text form of d ("NULL" never appears: a NULL gives "").
func FormatText(t T, d *Datum) string { return string(AppendText(nil, t, d)) }

func appendFloat(buf []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(buf, "NaN"...)
	case math.IsInf(f, 1):
		return append(buf, "Infinity"...)
	case math.IsInf(f, -1):
		return append(buf, "-Infinity"...)
	case f == 0:
		if math.Signbit(f) {
			return append(buf, "-0"...)
		}
		return append(buf, '0')
	}
	// PostgreSQL prints the shortest exact form, switching to exponent notation
	// when the decimal exponent is < -4 or >= 15 (float8) / >= 6 (float4).
	limit := 15
	if bits == 32 {
		limit = 6
	}
	exp := int(math.Floor(math.Log10(math.Abs(f))))
	var tmp [32]byte
	e := strconv.AppendFloat(tmp[:0], f, 'e', -1, bits)
	if i := strings.LastIndexByte(string(e), 'e'); i >= 0 {
		if v, err := strconv.Atoi(string(e[i+1:])); err == nil {
			exp = v
		}
	}
	if exp < -4 || exp >= limit {
		return append(buf, e...)
	}
	return strconv.AppendFloat(buf, f, 'f', -1, bits)
}

func appendNumeric(buf []byte, d *apd.Decimal) []byte {
	switch d.Form {
	case apd.NaN, apd.NaNSignaling:
		return append(buf, "NaN"...)
	case apd.Infinite:
		if d.Negative {
			return append(buf, "-Infinity"...)
		}
		return append(buf, "Infinity"...)
	}
	if d.Negative && d.IsZero() {
		var z apd.Decimal
		z.Set(d)
		z.Negative = false
		return z.Append(buf, 'f')
	}
	return d.Append(buf, 'f')
}

// AppendDate appends days-since-1970 as YYYY-MM-DD.
func AppendDate(buf []byte, days int64) []byte {
	switch days {
	case InfinityTS:
		return append(buf, "infinity"...)
	case NegInfinityTS:
		return append(buf, "-infinity"...)
	}
	tm := time.Unix(days*86400, 0).UTC()
	return appendYMD(buf, tm)
}

func appendYMD(buf []byte, tm time.Time) []byte {
	y, m, d := tm.Date()
	bc := y <= 0
	if bc {
		y = 1 - y
	}
	buf = appendPad(buf, int64(y), 4)
	buf = append(buf, '-')
	buf = appendPad(buf, int64(m), 2)
	buf = append(buf, '-')
	buf = appendPad(buf, int64(d), 2)
	if bc {
		buf = append(buf, " BC"...)
	}
	return buf
}

func appendPad(buf []byte, v int64, width int) []byte {
	var tmp [20]byte
	s := strconv.AppendInt(tmp[:0], v, 10)
	for i := len(s); i < width; i++ {
		buf = append(buf, '0')
	}
	return append(buf, s...)
}

// appendClock appends microseconds as HH:MM:SS[.ffffff] (hours may exceed 24).
func appendClock(buf []byte, us int64) []byte {
	if us < 0 {
		buf = append(buf, '-')
		us = -us
	}
	secs := us / 1e6
	frac := us % 1e6
	buf = appendPad(buf, secs/3600, 2)
	buf = append(buf, ':')
	buf = appendPad(buf, secs/60%60, 2)
	buf = append(buf, ':')
	buf = appendPad(buf, secs%60, 2)
	if frac != 0 {
		var tmp [8]byte
		f := appendPad(tmp[:0], frac, 6)
		for len(f) > 0 && f[len(f)-1] == '0' {
			f = f[:len(f)-1]
		}
		buf = append(buf, '.')
		buf = append(buf, f...)
	}
	return buf
}

// AppendTimestamp appends µs-since-epoch as YYYY-MM-DD HH:MM:SS[.ffffff], with
// "+00" for timestamptz (the session time zone is UTC).
func AppendTimestamp(buf []byte, us int64, tz bool) []byte {
	switch us {
	case InfinityTS:
		return append(buf, "infinity"...)
	case NegInfinityTS:
		return append(buf, "-infinity"...)
	}
	secs := floorDiv(us, 1e6)
	tm := time.Unix(secs, 0).UTC()
	bc := tm.Year() <= 0
	buf = appendYMD(buf, tm)
	if bc {
		buf = buf[:len(buf)-3]
	}
	buf = append(buf, ' ')
	day := floorDiv(us, 86400e6) * 86400e6
	buf = appendClock(buf, us-day)
	if tz {
		buf = append(buf, "+00"...)
	}
	if bc {
		buf = append(buf, " BC"...)
	}
	return buf
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// AppendInterval appends PostgreSQL's default ("postgres" style) interval text.
func AppendInterval(buf []byte, iv IntervalValue) []byte {
	start := len(buf)
	unit := func(v int64, name string) {
		if v == 0 {
			return
		}
		if len(buf) > start {
			buf = append(buf, ' ')
		}
		buf = strconv.AppendInt(buf, v, 10)
		buf = append(buf, ' ')
		buf = append(buf, name...)
		if v != 1 {
			buf = append(buf, 's')
		}
	}
	unit(int64(iv.Months/12), "year")
	unit(int64(iv.Months%12), "mon")
	unit(int64(iv.Days), "day")
	if iv.Micros != 0 || len(buf) == start {
		if len(buf) > start {
			buf = append(buf, ' ')
		}
		hasNeg := iv.Months < 0 || iv.Days < 0
		if iv.Micros >= 0 && hasNeg {
			buf = append(buf, '+')
		}
		buf = appendClock(buf, iv.Micros)
	}
	return buf
}

// ParseText parses PostgreSQL's text form of a value of type t. Errors are
// *Error of kind ErrInvalidText, ErrNumericOutOfRange, ErrInvalidDatetime, ...
func ParseText(t T, s string) (Datum, error) {
	var d Datum
	var err error
	switch t.ID {
	case Bool:
		var b bool
		b, err = parseBool(s)
		d = DBool(b)
	case Int16:
		d.I, err = parseInt(s, 16, t)
	case Int32:
		d.I, err = parseInt(s, 32, t)
	case Int64:
		d.I, err = parseInt(s, 64, t)
	case Float32, Float64:
		d.F, err = parseFloat(s, t)
	case Numeric:
		err = parseNumeric(s, &d.Dec)
		if err == nil {
			err = FitNumeric(t, &d.Dec)
		}
	case Varchar, Unknown:
		d.S = s
		if t.Width > 0 && int32(len([]rune(s))) > t.Width {
			trimmed := strings.TrimRight(s, " ")
			if int32(len([]rune(trimmed))) > t.Width {
				return d, Errorf(ErrStringTruncation, "value too long for type character varying(%d)", t.Width)
			}
			d.S = string([]rune(s)[:t.Width])
		}
	case Bytea:
		d.S, err = parseBytea(s)
	case Date:
		d.I, err = ParseDate(s)
	case Time:
		d.I, err = ParseTime(s)
	case Timestamp, Timestamptz:
		d.I, err = ParseTimestamp(s, t.ID == Timestamptz)
	case Interval:
		d.Iv, err = ParseInterval(s)
	case Jsonb:
		d.S, err = NormalizeJSON(s)
	case Uuid:
		d.S, err = ParseUUID(s)
	case Array:
		return ParseArrayText(t, s)
	case Struct:
		return ParseStructText(t, s)
	default:
		err = Errorf(ErrUnsupported, "cannot parse a value of type %s", t)
	}
	return d, err
}

func invalidText(t T, s string) error {
	return Errorf(ErrInvalidText, "invalid input syntax for type %s: %q", t, s)
}

func parseBool(s string) (bool, error) {
	v := strings.ToLower(strings.TrimSpace(s))
	if v == "" {
		return false, invalidText(TBool, s)
	}
	switch {
	case v == "1", strings.HasPrefix("true", v), strings.HasPrefix("yes", v), v == "on":
		return true, nil
	case v == "0", strings.HasPrefix("false", v), strings.HasPrefix("no", v), v == "off", v == "of":
		return false, nil
	}
	return false, invalidText(TBool, s)
}

func parseInt(s string, bits int, t T) (int64, error) {
	v := strings.TrimSpace(s)
	n, err := strconv.ParseInt(v, 10, bits)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return 0, Errorf(ErrNumericOutOfRange, "value %q is out of range for type %s", s, t)
		}
		return 0, invalidText(t, s)
	}
	return n, nil
}

func parseFloat(s string, t T) (float64, error) {
	v := strings.TrimSpace(s)
	switch strings.ToLower(v) {
	case "nan":
		return math.NaN(), nil
	case "infinity", "+infinity", "inf", "+inf":
		return math.Inf(1), nil
	case "-infinity", "-inf":
		return math.Inf(-1), nil
	}
	bits := 64
	if t.ID == Float32 {
		bits = 32
	}
	f, err := strconv.ParseFloat(v, bits)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return 0, Errorf(ErrNumericOutOfRange, "%q is out of range for type %s", s, t)
		}
		return 0, invalidText(t, s)
	}
	return f, nil
}

// DecimalContext is the context for NUMERIC arithmetic (PostgreSQL allows up to
// 131072 digits before the point; we cap precision for sanity).
var DecimalContext = apd.Context{Precision: 1000, MaxExponent: 131072, MinExponent: -16383, Traps: apd.DefaultTraps}

func parseNumeric(s string, out *apd.Decimal) error {
	v := strings.TrimSpace(s)
	if strings.EqualFold(v, "nan") {
		out.Form = apd.NaN
		return nil
	}
	if _, _, err := out.SetString(v); err != nil || out.Form == apd.NaNSignaling {
		return invalidText(TNumeric, s)
	}
	return nil
}

// FitNumeric rounds d to t's scale and checks its precision, as a numeric(p,s)
// column does on assignment.
func FitNumeric(t T, d *apd.Decimal) error {
	if t.Width == 0 || d.Form != apd.Finite {
		return nil
	}
	if _, err := DecimalContext.Quantize(d, d, -t.Scale); err != nil {
		return Errorf(ErrNumericOutOfRange, "numeric field overflow")
	}
	digits := d.NumDigits()
	if d.IsZero() {
		digits = 1
	}
	intDigits := digits + int64(d.Exponent)
	if intDigits > int64(t.Width-t.Scale) && !d.IsZero() {
		return &Error{Kind: ErrNumericOutOfRange, Msg: "numeric field overflow",
			Detail: "A field with precision " + strconv.Itoa(int(t.Width)) + ", scale " + strconv.Itoa(int(t.Scale)) +
				" must round to an absolute value less than 10^" + strconv.Itoa(int(t.Width-t.Scale)) + "."}
	}
	return nil
}

func parseBytea(s string) (string, error) {
	if strings.HasPrefix(s, `\x`) {
		h := s[2:]
		if len(h)%2 != 0 {
			return "", Errorf(ErrInvalidParameter, "invalid hexadecimal data: odd number of digits")
		}
		out := make([]byte, len(h)/2)
		for i := range out {
			hi, ok1 := unhex(h[2*i])
			lo, ok2 := unhex(h[2*i+1])
			if !ok1 || !ok2 {
				return "", Errorf(ErrInvalidParameter, "invalid hexadecimal digit: %q", h[2*i:2*i+2])
			}
			out[i] = hi<<4 | lo
		}
		return string(out), nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		if i+1 < len(s) && s[i+1] == '\\' {
			b.WriteByte('\\')
			i++
			continue
		}
		if i+3 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) && isOctal(s[i+3]) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		return "", Errorf(ErrInvalidText, "invalid input syntax for type bytea")
	}
	return b.String(), nil
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
