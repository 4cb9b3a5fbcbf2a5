package expr

import (
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // IANA zone names on machines without a zoneinfo database

	"github.com/tributary/tributary/sql/types"
)

// x AT TIME ZONE z, which the parser turns into timezone(z, x): a timestamp
// read as wall time in z gives a timestamptz, a timestamptz gives the wall
// time in z. z is a zone name (IANA names, UTC, or a POSIX-style offset such
// as '+02:00', which PostgreSQL reads as west of Greenwich) or an interval
// (east of Greenwich).

func init() {
	def("timezone", tTZ, tS, tTS).r(func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		z, err := lookupZone(a[0].S)
		if err != nil || isInfTS(a[1].I) {
			return tsOrErr(a[1].I, err)
		}
		return tsOrErr(z.toUTC(a[1].I))
	})
	def("timezone", tTS, tS, tTZ).r(func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		z, err := lookupZone(a[0].S)
		if err != nil || isInfTS(a[1].I) {
			return tsOrErr(a[1].I, err)
		}
		return tsOrErr(z.fromUTC(a[1].I))
	})
	def("timezone", tTZ, tIv, tTS).r(func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		off, err := intervalZone(a[0].Iv)
		if err != nil || isInfTS(a[1].I) {
			return tsOrErr(a[1].I, err)
		}
		return tsOrErr(a[1].I-off, checkTS(a[1].I-off))
	})
	def("timezone", tTS, tIv, tTZ).r(func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		off, err := intervalZone(a[0].Iv)
		if err != nil || isInfTS(a[1].I) {
			return tsOrErr(a[1].I, err)
		}
		return tsOrErr(a[1].I+off, checkTS(a[1].I+off))
	})
}

func isInfTS(us int64) bool { return us == types.InfinityTS || us == types.NegInfinityTS }

func checkTS(us int64) error {
	if us < minTS || us > maxTS {
		return errTSRange
	}
	return nil
}

func tsOrErr(us int64, err error) (types.Datum, error) {
	if err != nil {
		return types.NullDatum, err
	}
	return types.DInt(us), nil
}

// zone is a fixed offset (seconds east of UTC) or a location.
type zone struct {
	off int64
	loc *time.Location
}

// fromUTC returns the wall time in z of the instant us.
func (z zone) fromUTC(us int64) (int64, error) {
	off := z.off
	if z.loc != nil {
		_, o := time.UnixMicro(us).In(z.loc).Zone()
		off = int64(o)
	}
	r := us + off*1e6
	return r, checkTS(r)
}

// toUTC returns the instant at which the wall time us occurs in z.
func (z zone) toUTC(us int64) (int64, error) {
	off := z.off
	if z.loc != nil {
		w := time.UnixMicro(us).UTC()
		t := time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), w.Second(), w.Nanosecond(), z.loc)
		_, o := t.Zone()
		off = int64(o)
	}
	r := us - off*1e6
	return r, checkTS(r)
}

// lookupZone resolves a time zone name as AT TIME ZONE reads it.
func lookupZone(name string) (zone, error) {
	s := strings.TrimSpace(name)
	switch strings.ToLower(s) {
	case "utc", "gmt", "z", "zulu", "uct", "etc/utc", "etc/gmt", "universal", "greenwich":
		return zone{}, nil
	}
	if s != "" && (s[0] == '+' || s[0] == '-' || s[0] >= '0' && s[0] <= '9') {
		if off, ok := posixOffset(s); ok {
			return zone{off: off}, nil
		}
	} else if s != "" && !strings.ContainsAny(s, " \x00") && !strings.HasPrefix(s, "/") && !strings.Contains(s, "..") {
		if loc, err := time.LoadLocation(s); err == nil {
			return zone{loc: loc}, nil
		}
	}
	return zone{}, types.Errorf(types.ErrInvalidParameter, "time zone %q not recognized", name)
}

// posixOffset reads [+-]hh[:mm[:ss]] as a POSIX zone: positive is west of
// Greenwich, so the result (seconds east) has the opposite sign.
func posixOffset(s string) (int64, bool) {
	sign := int64(-1)
	switch s[0] {
	case '+':
		s = s[1:]
	case '-':
		sign, s = 1, s[1:]
	}
	parts := strings.Split(s, ":")
	if len(parts) > 3 {
		return 0, false
	}
	var secs int64
	mult := []int64{3600, 60, 1}
	for i, p := range parts {
		if p == "" || len(p) > 2 && i > 0 {
			return 0, false
		}
		n, err := strconv.ParseInt(p, 10, 64)
		if err != nil || n < 0 || (i > 0 && n > 59) {
			return 0, false
		}
		secs += n * mult[i]
	}
	if secs > 167*3600 { // tzcode's limit for a POSIX offset
		return 0, false
	}
	return sign * secs, true
}

// intervalZone returns an interval time zone's offset east of UTC in µs.
func intervalZone(iv types.IntervalValue) (int64, error) {
	if iv.Months != 0 || iv.Days != 0 {
		return 0, types.Errorf(types.ErrInvalidParameter, "interval time zone %q must not include months or days",
			types.FormatText(types.TInterval, &types.Datum{Iv: iv}))
	}
	return iv.Micros, nil
}
