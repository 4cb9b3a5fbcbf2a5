package types

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// ParseDate parses 'YYYY-MM-DD' (also with a trailing time, which is dropped,
// and 'infinity'/'epoch') into days since 1970-01-01.
func ParseDate(s string) (int64, error) {
	v := strings.ToLower(strings.TrimSpace(s))
	switch v {
	case "infinity", "+infinity":
		return InfinityTS, nil
	case "-infinity":
		return NegInfinityTS, nil
	case "epoch":
		return 0, nil
	}
	days, rest, ok := parseYMD(v)
	if !ok {
		if fieldsOutOfRange(v) {
			return 0, Errorf(ErrDatetimeOverflow, "date/time field value out of range: %q", s)
		}
		return 0, Errorf(ErrInvalidDatetime, "invalid input syntax for type date: %q", s)
	}
	rest = strings.TrimSpace(rest)
	if rest != "" {
		if _, err := ParseTimestamp(s, false); err != nil {
			return 0, Errorf(ErrInvalidDatetime, "invalid input syntax for type date: %q", s)
		}
	}
	return days, nil
}

// parseYMD reads YYYY-MM-DD at the start of v and returns days since epoch and the rest.
func parseYMD(v string) (int64, string, bool) {
	i := 0
	num := func(maxDigits int) (int, bool) {
		start := i
		for i < len(v) && i-start < maxDigits && v[i] >= '0' && v[i] <= '9' {
			i++
		}
		if i == start {
			return 0, false
		}
		n, err := strconv.Atoi(v[start:i])
		return n, err == nil
	}
	y, ok := num(7)
	if !ok || i >= len(v) || (v[i] != '-' && v[i] != '/') {
		return 0, "", false
	}
	i++
	m, ok := num(2)
	if !ok || i >= len(v) || (v[i] != '-' && v[i] != '/') {
		return 0, "", false
	}
	i++
	d, ok := num(2)
	if !ok || m < 1 || m > 12 || d < 1 || d > 31 {
		return 0, "", false
	}
	rest := v[i:]
	// "bc" ends the text ('0044-03-15 BC', '0044-03-15 12:00:00+00 BC'); what is between the
	// date and it keeps its leading separator, which a time after the date needs.
	if t := strings.TrimRight(rest, " "); strings.HasSuffix(t, " bc") || t == "bc" {
		y = 1 - y
		rest = strings.TrimSuffix(t, "bc")
	}
	tm := time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC)
	if tm.Day() != d {
		return 0, "", false // e.g. Feb 30
	}
	return floorDiv(tm.Unix(), 86400), rest, true
}

// ParseTime parses 'HH:MM[:SS[.ffffff]]' into microseconds since midnight.
func ParseTime(s string) (int64, error) {
	v := strings.TrimSpace(s)
	us, rest, ok := parseClock(v)
	if ok && strings.TrimSpace(rest) == "" && us > 24*3600e6 {
		return 0, Errorf(ErrDatetimeOverflow, "date/time field value out of range: %q", s)
	}
	if !ok || strings.TrimSpace(rest) != "" {
		if fieldsOutOfRange(v) {
			return 0, Errorf(ErrDatetimeOverflow, "date/time field value out of range: %q", s)
		}
		return 0, Errorf(ErrInvalidDatetime, "invalid input syntax for type time: %q", s)
	}
	return us, nil
}

// parseClock reads H[H]:MM[:SS[.f...]] and returns microseconds and the rest.
func parseClock(v string) (int64, string, bool) {
	i := 0
	num := func() (int64, bool) {
		start := i
		for i < len(v) && v[i] >= '0' && v[i] <= '9' {
			i++
		}
		if i == start || i-start > 9 {
			return 0, false
		}
		n, err := strconv.ParseInt(v[start:i], 10, 64)
		return n, err == nil
	}
	h, ok := num()
	if !ok || i >= len(v) || v[i] != ':' {
		return 0, "", false
	}
	i++
	m, ok := num()
	if !ok || m > 59 {
		return 0, "", false
	}
	var sec, frac int64
	if i < len(v) && v[i] == ':' {
		i++
		if sec, ok = num(); !ok || sec > 60 {
			return 0, "", false
		}
		if i < len(v) && v[i] == '.' {
			i++
			start := i
			for i < len(v) && v[i] >= '0' && v[i] <= '9' {
				i++
			}
			digits := v[start:i]
			if len(digits) > 6 {
				// round to microseconds
				round := digits[6] >= '5'
				digits = digits[:6]
				frac, _ = strconv.ParseInt(digits, 10, 64)
				if round {
					frac++
				}
			} else if digits != "" {
				frac, _ = strconv.ParseInt(digits+strings.Repeat("0", 6-len(digits)), 10, 64)
			}
		}
	}
	return ((h*60+m)*60+sec)*1e6 + frac, v[i:], true
}

// ParseTimestamp parses 'YYYY-MM-DD[( |T)HH:MM[:SS[.f]]][zone]' into µs since
// 1970-01-01 UTC. For timestamptz a zone (Z, +HH, +HH:MM, +HHMM, UTC, an IANA name
// such as Europe/Paris, at its offset on that date) shifts the
// value; without one the session zone (UTC) is assumed. For timestamp a zone is ignored.
func ParseTimestamp(s string, tz bool) (int64, error) {
	v := strings.ToLower(strings.TrimSpace(s))
	switch v {
	case "infinity", "+infinity":
		return InfinityTS, nil
	case "-infinity":
		return NegInfinityTS, nil
	case "epoch":
		return 0, nil
	}
	bad := func() (int64, error) {
		name := "timestamp without time zone"
		if tz {
			name = "timestamp with time zone"
		}
		return 0, Errorf(ErrInvalidDatetime, "invalid input syntax for type %s: %q", name, s)
	}
	days, rest, ok := parseYMD(v)
	if !ok {
		if fieldsOutOfRange(v) {
			return 0, Errorf(ErrDatetimeOverflow, "date/time field value out of range: %q", s)
		}
		return bad()
	}
	us := days * 86400e6
	if len(rest) > 0 && (rest[0] == ' ' || rest[0] == 't') {
		r := strings.TrimLeft(rest[1:], " ")
		if r != "" && r[0] >= '0' && r[0] <= '9' {
			clock, r2, ok := parseClock(r)
			if !ok {
				return bad()
			}
			us += clock
			rest = r2
		} else {
			rest = rest[1:]
		}
	}
	rest = strings.TrimSpace(rest)
	if rest != "" {
		// The zone as written (IANA names are case-sensitive files): the same
		// bytes at the end of the input, lowercasing kept the length.
		written := strings.TrimSpace(s)
		if len(written) >= len(rest) {
			written = written[len(written)-len(rest):]
		}
		off, ok := parseZone(rest, written, us)
		if !ok {
			return bad()
		}
		if tz {
			us -= off * 1e6
		}
	}
	return us, nil
}

// parseZone parses a zone suffix into seconds east of UTC.
// z is the zone lowercased, written as in the input; wall is the local time it
// qualifies (µs since 1970 as if UTC): a named zone's offset is the one in
// force at that wall time (daylight saving included), not today's.
func parseZone(z, written string, wall int64) (int64, bool) {
	switch z {
	case "z", "utc", "gmt", "+00", "-00", "zulu":
		return 0, true
	}
	if z[0] != '+' && z[0] != '-' {
		loc, err := time.LoadLocation(written)
		if err != nil {
			if loc, err = time.LoadLocation(z); err != nil {
				return 0, false
			}
		}
		w := time.UnixMicro(wall).UTC()
		_, off := time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), w.Second(), w.Nanosecond(), loc).Zone()
		return int64(off), true
	}
	sign := int64(1)
	if z[0] == '-' {
		sign = -1
	}
	digits := strings.ReplaceAll(z[1:], ":", "")
	var h, m, sec int64
	var err error
	switch len(digits) {
	case 1, 2:
		h, err = strconv.ParseInt(digits, 10, 64)
	case 4:
		h, err = strconv.ParseInt(digits[:2], 10, 64)
		if err == nil {
			m, err = strconv.ParseInt(digits[2:], 10, 64)
		}
	case 6:
		h, err = strconv.ParseInt(digits[:2], 10, 64)
		if err == nil {
			m, err = strconv.ParseInt(digits[2:4], 10, 64)
		}
		if err == nil {
			sec, err = strconv.ParseInt(digits[4:], 10, 64)
		}
	default:
		return 0, false
	}
	if err != nil || h > 15 || m > 59 {
		return 0, false
	}
	return sign * (h*3600 + m*60 + sec), true
}

// ParseInterval parses PostgreSQL interval input: '1 year 2 mons 3 days
// 04:05:06', '1 hour', '-2 days', '1.5 hours', '@ 1 day ago', '01:00:00' and ISO
// 8601 'P1Y2M3DT4H5M6S'.
func ParseInterval(s string) (IntervalValue, error) {
	v := strings.ToLower(strings.TrimSpace(s))
	bad := func() (IntervalValue, error) {
		return IntervalValue{}, Errorf(ErrInvalidDatetime, "invalid input syntax for type interval: %q", s)
	}
	if v == "" {
		return bad()
	}
	if v[0] == 'p' {
		if iv, ok := parseISOInterval(v[1:]); ok {
			return iv, nil
		}
		return bad()
	}
	v = strings.TrimPrefix(v, "@")
	ago := false
	if strings.HasSuffix(v, " ago") {
		ago = true
		v = strings.TrimSuffix(v, " ago")
	}
	var iv IntervalValue
	var months, days, micros float64
	fields := strings.Fields(v)
	any := false
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		if strings.Contains(f, ":") {
			neg := false
			g := f
			if g[0] == '-' || g[0] == '+' {
				neg = g[0] == '-'
				g = g[1:]
			}
			us, rest, ok := parseClock(g)
			if !ok || rest != "" {
				return bad()
			}
			if neg {
				us = -us
			}
			micros += float64(us)
			any = true
			continue
		}
		num, unitStr := f, ""
		// "1hour" or "1 hour"
		j := 0
		for j < len(f) && (f[j] == '-' || f[j] == '+' || f[j] == '.' || (f[j] >= '0' && f[j] <= '9')) {
			j++
		}
		if j < len(f) {
			num, unitStr = f[:j], f[j:]
		} else if i+1 < len(fields) && !strings.Contains(fields[i+1], ":") {
			if _, err := strconv.ParseFloat(fields[i+1], 64); err != nil {
				unitStr = fields[i+1]
				i++
			}
		}
		n, err := strconv.ParseFloat(num, 64)
		if err != nil {
			return bad()
		}
		if unitStr == "" {
			micros += n * 1e6 // bare number = seconds
			any = true
			continue
		}
		switch strings.TrimSuffix(unitStr, ",") {
		case "millennium", "millennia", "millenniums":
			months += n * 12000
		case "century", "centuries":
			months += n * 1200
		case "decade", "decades":
			months += n * 120
		case "year", "years", "y", "yr", "yrs":
			months += n * 12
		case "month", "months", "mon", "mons":
			months += n
		case "week", "weeks", "w":
			days += n * 7
		case "day", "days", "d":
			days += n
		case "hour", "hours", "h", "hr", "hrs":
			micros += n * 3600e6
		case "minute", "minutes", "m", "min", "mins":
			micros += n * 60e6
		case "second", "seconds", "s", "sec", "secs":
			micros += n * 1e6
		case "millisecond", "milliseconds", "ms", "msec", "msecs":
			micros += n * 1e3
		case "microsecond", "microseconds", "us", "usec", "usecs":
			micros += n
		default:
			return bad()
		}
		any = true
	}
	if !any {
		return bad()
	}
	// Cascade fractions down as PostgreSQL does: fractional months → days (30), days → µs.
	wholeMonths := math.Trunc(months)
	days += (months - wholeMonths) * 30
	wholeDays := math.Trunc(days)
	micros += (days - wholeDays) * 86400e6
	if math.Abs(wholeMonths) > math.MaxInt32 || math.Abs(wholeDays) > math.MaxInt32 || math.Abs(micros) > 9.2e18 {
		return IntervalValue{}, Errorf(ErrDatetimeOverflow, "interval out of range")
	}
	iv.Months = int32(wholeMonths)
	iv.Days = int32(wholeDays)
	iv.Micros = int64(math.Round(micros))
	if ago {
		iv.Months, iv.Days, iv.Micros = -iv.Months, -iv.Days, -iv.Micros
	}
	return iv, nil
}

func parseISOInterval(v string) (IntervalValue, bool) {
	var iv IntervalValue
	inTime := false
	num := ""
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == 't':
			inTime = true
		case (c >= '0' && c <= '9') || c == '.' || c == '-':
			num += string(c)
		default:
			n, err := strconv.ParseFloat(num, 64)
			if err != nil {
				return iv, false
			}
			num = ""
			switch {
			case c == 'y' && !inTime:
				iv.Months += int32(n * 12)
			case c == 'm' && !inTime:
				iv.Months += int32(n)
			case c == 'w' && !inTime:
				iv.Days += int32(n * 7)
			case c == 'd' && !inTime:
				iv.Days += int32(n)
			case c == 'h' && inTime:
				iv.Micros += int64(n * 3600e6)
			case c == 'm' && inTime:
				iv.Micros += int64(n * 60e6)
			case c == 's' && inTime:
				iv.Micros += int64(math.Round(n * 1e6))
			default:
				return iv, false
			}
		}
	}
	return iv, num == ""
}

// fieldsOutOfRange reports whether v is shaped like a date or time but has a
// field out of range (month 13, Feb 30, hour 25): PostgreSQL's 22008 rather
// than a syntax error.
func fieldsOutOfRange(v string) bool {
	nums := strings.FieldsFunc(v, func(r rune) bool { return r == '-' || r == '/' || r == ':' || r == ' ' || r == 't' || r == '.' })
	if len(nums) < 2 {
		return false
	}
	vals := make([]int, 0, len(nums))
	for _, n := range nums {
		x, err := strconv.Atoi(n)
		if err != nil {
			return false
		}
		vals = append(vals, x)
	}
	if strings.Contains(v, "-") || strings.Contains(v, "/") { // a date: y-m-d
		if len(vals) < 3 {
			return false
		}
		return vals[1] < 1 || vals[1] > 12 || vals[2] < 1 || vals[2] > 31 ||
			time.Date(vals[0], time.Month(vals[1]), vals[2], 0, 0, 0, 0, time.UTC).Day() != vals[2]
	}
	return vals[0] > 24 || vals[1] > 59 || (len(vals) > 2 && vals[2] > 60) // h:m[:s]
}
