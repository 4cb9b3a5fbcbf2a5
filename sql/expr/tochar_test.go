package expr

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// TestToCharCompiled checks to_char's compiled templates against the
// template walk they replaced (toCharReference), over seeded random
// templates of patterns, FM prefixes, quoted text and other characters.
func TestToCharCompiled(t *testing.T) {
	const seed = 77
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	pieces := append([]string{"FM", "fm", "\"x YYYY\"", "\"", "-", " ", ":", ".", "T", "Y", "H", "A", "x"}, fmtTokens...)
	for i := range 3000 {
		var f strings.Builder
		for range rng.IntN(8) {
			f.WriteString(pieces[rng.IntN(len(pieces))])
		}
		us := rng.Int64N(4_000_000_000_000_000) - 1_000_000_000_000_000
		if got, want := toChar(us, f.String()), toCharReference(us, f.String()); got != want {
			t.Fatalf("case %d: to_char(%d, %s) = %q, want %q", i, us, strconv.Quote(f.String()), got, want)
		}
	}
	if got := toChar(0, "YYYYFM"); got != "1970" {
		t.Errorf("trailing FM: %q", got)
	}
}

func toCharReference(us int64, f string) string {
	if isInf(us) {
		return ""
	}
	tm := civil(us)
	var b []byte
	num := func(v int64, width int, fm bool) {
		if fm {
			b = strconv.AppendInt(b, v, 10)
			return
		}
		s := strconv.FormatInt(v, 10)
		for i := len(s); i < width; i++ {
			b = append(b, '0')
		}
		b = append(b, s...)
	}
	for len(f) > 0 {
		if f[0] == '"' {
			end := strings.IndexByte(f[1:], '"')
			if end < 0 {
				b = append(b, f[1:]...)
				break
			}
			b = append(b, f[1:1+end]...)
			f = f[end+2:]
			continue
		}
		fm := false
		if strings.HasPrefix(f, "FM") || strings.HasPrefix(f, "fm") {
			fm = true
			f = f[2:]
		}
		tok := nextToken(f)
		if tok == "" && f == "" {
			break // (the server's code indexed past the end here)
		}
		if tok == "" {
			b = append(b, f[0])
			f = f[1:]
			continue
		}
		f = f[len(tok):]
		switch tok {
		case "YYYY":
			num(int64(tm.Year()), 4, fm)
		case "YY":
			num(int64(tm.Year()%100), 2, fm)
		case "MM":
			num(int64(tm.Month()), 2, fm)
		case "DD":
			num(int64(tm.Day()), 2, fm)
		case "DDD":
			num(int64(tm.YearDay()), 3, fm)
		case "D":
			num(int64(tm.Weekday())+1, 1, fm)
		case "Q":
			num(int64((tm.Month()-1)/3+1), 1, fm)
		case "HH24":
			num(int64(tm.Hour()), 2, fm)
		case "HH", "HH12":
			h := tm.Hour() % 12
			if h == 0 {
				h = 12
			}
			num(int64(h), 2, fm)
		case "MI":
			num(int64(tm.Minute()), 2, fm)
		case "SS":
			num(int64(tm.Second()), 2, fm)
		case "MS":
			num(int64(tm.Nanosecond()/1e6), 3, fm)
		case "US":
			num(int64(tm.Nanosecond()/1e3), 6, fm)
		case "AM", "PM", "am", "pm":
			s := "AM"
			if tm.Hour() >= 12 {
				s = "PM"
			}
			b = append(b, caseAs(s, tok)...)
		case "A.M.", "P.M.":
			s := "A.M."
			if tm.Hour() >= 12 {
				s = "P.M."
			}
			b = append(b, s...)
		case "MONTH", "Month", "month":
			s := caseAs(monthNames[tm.Month()-1], tok)
			if !fm {
				s += strings.Repeat(" ", 9-len(s))
			}
			b = append(b, s...)
		case "MON", "Mon", "mon":
			b = append(b, caseAs(monthNames[tm.Month()-1][:3], tok)...)
		case "DAY", "Day", "day":
			s := caseAs(dayNames[tm.Weekday()], tok)
			if !fm {
				s += strings.Repeat(" ", 9-len(s))
			}
			b = append(b, s...)
		case "DY", "Dy", "dy":
			b = append(b, caseAs(dayNames[tm.Weekday()][:3], tok)...)
		case "TZ", "tz":
			b = append(b, caseAs("UTC", tok)...)
		}
	}
	return string(b)
}
