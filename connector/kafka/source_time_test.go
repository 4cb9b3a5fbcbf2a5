package kafka

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/tributary/tributary/sql/types"
)

// TestParseTimestamp: the fast path agrees with types.ParseText wherever it
// answers, and leaves every other form to it.
func TestParseTimestamp(t *testing.T) {
	check := func(s string, wantFast bool) {
		t.Helper()
		got, ok := parseTimestamp([]byte(s))
		if ok != wantFast {
			t.Errorf("parseTimestamp(%q) ok = %t, want %t", s, ok, wantFast)
		}
		if !ok {
			return
		}
		for _, typ := range []types.T{types.TTimestamp, types.TTimestamptz} {
			d, err := types.ParseText(typ, s)
			if err != nil || d.I != got {
				t.Errorf("parseTimestamp(%q) = %d; ParseText(%s) = %d, %v", s, got, typ.SQLName(), d.I, err)
			}
		}
	}
	for _, s := range []string{"2015-07-15 00:00:00", "2015-07-15T23:59:59", "2015-07-15 00:00:12.345", "2024-02-29 12:00:00.5",
		"2000-02-29 00:00:00.123456", "1970-01-01 00:00:00", "1969-12-31 23:59:59.999999", "0001-01-01 00:00:00", "9999-12-31 23:59:59.999999",
		"1900-03-01 01:02:03.04", "2100-02-28 00:00:00"} {
		check(s, true)
	}
	// Left to the general parser (valid or not there).
	for _, s := range []string{"2015-07-15", "2015-07-15 00:00", "2015-07-15 00:00:00Z", "2015-07-15 00:00:00+02", "2015-07-15 00:00:00.", "2015-07-15 00:00:00.1234567",
		"2015-02-29 00:00:00", "2015-04-31 00:00:00", "2015-07-15 24:00:00", "2015-07-15 23:59:60", "2015-07-15 23:60:00", "0000-01-01 00:00:00",
		"2015-13-01 00:00:00", "2015-00-01 00:00:00", "2015-07-00 00:00:00", "2015/07/15 00:00:00", " 2015-07-15 00:00:00", "2015-07-15 00:00:00 ",
		"2015-07-15x00:00:00", "2015-07-15 0a:00:00", "2015-07-15 00:00:00.12a", "12015-07-15 00:00:00", "2015-7-15 00:00:00", "2015-07-15 00:00:00 BC"} {
		check(s, false)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		y, mo, d := 1+r.IntN(9999), 1+r.IntN(12), 1+r.IntN(28)
		s := fmt.Sprintf("%04d-%02d-%02d %02d:%02d:%02d", y, mo, d, r.IntN(24), r.IntN(60), r.IntN(60))
		if n := r.IntN(7); n > 0 {
			s += "." + fmt.Sprintf("%06d", r.IntN(1000000))[:n]
		}
		check(s, true)
	}
}
