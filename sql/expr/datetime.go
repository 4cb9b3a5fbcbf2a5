package expr

import (
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/apd/v3"
	"github.com/tributary/tributary/sql/types"
)

// Timestamps beyond PostgreSQL's range (4714 BC .. 294276 AD) are errors.
const (
	minTS = -210866803200000000 // 4714-11-24 00:00:00 BC
	maxTS = math.MaxInt64 - 1   // the int64 range ends before PostgreSQL's 294276 AD
)

var errTSRange = types.Errorf(types.ErrDatetimeOverflow, "timestamp out of range")

func init() {
	ts := func(f func(_ *Ctx, a []types.Datum) (int64, error)) rowFn {
		return func(ctx *Ctx, a []types.Datum) (types.Datum, error) {
			v, err := f(ctx, a)
			return types.DInt(v), err
		}
	}
	iv := func(f func(a []types.Datum) (types.IntervalValue, error)) rowFn {
		return func(_ *Ctx, a []types.Datum) (types.Datum, error) {
			v, err := f(a)
			return types.DInterval(v), err
		}
	}
	// date ± integer, date - date
	def("+", tD, tD, tI4).r(ts(func(_ *Ctx, a []types.Datum) (int64, error) { return dateAdd(a[0].I, a[1].I) }))
	def("+", tD, tI4, tD).r(ts(func(_ *Ctx, a []types.Datum) (int64, error) { return dateAdd(a[1].I, a[0].I) }))
	def("-", tD, tD, tI4).r(ts(func(_ *Ctx, a []types.Datum) (int64, error) { return dateAdd(a[0].I, -a[1].I) }))
	def("-", tI4, tD, tD).r(ts(func(_ *Ctx, a []types.Datum) (int64, error) {
		if isInf(a[0].I) || isInf(a[1].I) {
			return 0, types.Errorf(types.ErrDatetimeOverflow, "cannot subtract infinite dates")
		}
		return a[0].I - a[1].I, nil
	}))
	// date ± interval → timestamp; date + time → timestamp
	def("+", tTS, tD, tIv).r(ts(func(_ *Ctx, a []types.Datum) (int64, error) { return tsAddInterval(dateToTS(a[0].I), a[1].Iv, 1) }))
	def("+", tTS, tIv, tD).r(ts(func(_ *Ctx, a []types.Datum) (int64, error) { return tsAddInterval(dateToTS(a[1].I), a[0].Iv, 1) }))
	def("-", tTS, tD, tIv).r(ts(func(_ *Ctx, a []types.Datum) (int64, error) { return tsAddInterval(dateToTS(a[0].I), a[1].Iv, -1) }))
	def("+", tTS, tD, tTm).r(ts(func(_ *Ctx, a []types.Datum) (int64, error) { return dateToTS(a[0].I) + a[1].I, nil }))
	def("+", tTS, tTm, tD).r(ts(func(_ *Ctx, a []types.Datum) (int64, error) { return dateToTS(a[1].I) + a[0].I, nil }))
	for _, t := range []types.T{tTS, tTZ} {
		def("+", t, t, tIv).r(ts(func(_ *Ctx, a []types.Datum) (int64, error) { return tsAddInterval(a[0].I, a[1].Iv, 1) }))
		def("+", t, tIv, t).r(ts(func(_ *Ctx, a []types.Datum) (int64, error) { return tsAddInterval(a[1].I, a[0].Iv, 1) }))
		def("-", t, t, tIv).r(ts(func(_ *Ctx, a []types.Datum) (int64, error) { return tsAddInterval(a[0].I, a[1].Iv, -1) }))
		def("-", tIv, t, t).r(iv(func(a []types.Datum) (types.IntervalValue, error) {
			if isInf(a[0].I) || isInf(a[1].I) {
				return types.IntervalValue{}, types.Errorf(types.ErrDatetimeOverflow, "cannot subtract infinite timestamps")
			}
			d := a[0].I - a[1].I
			return types.IntervalValue{Days: int32(d / usPerDay), Micros: d % usPerDay}, nil
		}))
		def("age", tIv, t, t).r(iv(func(a []types.Datum) (types.IntervalValue, error) { return age(a[0].I, a[1].I), nil }))
		def("age", tIv, t).r(func(ctx *Ctx, a []types.Datum) (types.Datum, error) {
			return types.DInterval(age(floorDiv(ctx.Now, usPerDay)*usPerDay, a[0].I)), nil
		}).vol_(Stable)
	}
	// time arithmetic
	def("+", tTm, tTm, tIv).r(ts(func(_ *Ctx, a []types.Datum) (int64, error) { return timeAdd(a[0].I, a[1].Iv.Micros), nil }))
	def("+", tTm, tIv, tTm).r(ts(func(_ *Ctx, a []types.Datum) (int64, error) { return timeAdd(a[1].I, a[0].Iv.Micros), nil }))
	def("-", tTm, tTm, tIv).r(ts(func(_ *Ctx, a []types.Datum) (int64, error) { return timeAdd(a[0].I, -a[1].Iv.Micros), nil }))
	def("-", tIv, tTm, tTm).r(iv(func(a []types.Datum) (types.IntervalValue, error) {
		return types.IntervalValue{Micros: a[0].I - a[1].I}, nil
	}))
	// interval arithmetic
	def("+", tIv, tIv, tIv).r(iv(func(a []types.Datum) (types.IntervalValue, error) { return ivAdd(a[0].Iv, a[1].Iv, 1) }))
	def("-", tIv, tIv, tIv).r(iv(func(a []types.Datum) (types.IntervalValue, error) { return ivAdd(a[0].Iv, a[1].Iv, -1) }))
	def("neg", tIv, tIv).r(iv(func(a []types.Datum) (types.IntervalValue, error) {
		return ivAdd(types.IntervalValue{}, a[0].Iv, -1)
	}))
	def("*", tIv, tIv, tF8).r(iv(func(a []types.Datum) (types.IntervalValue, error) { return ivMul(a[0].Iv, a[1].F) }))
	def("*", tIv, tF8, tIv).r(iv(func(a []types.Datum) (types.IntervalValue, error) { return ivMul(a[1].Iv, a[0].F) }))
	def("/", tIv, tIv, tF8).r(iv(func(a []types.Datum) (types.IntervalValue, error) {
		if a[1].F == 0 {
			return types.IntervalValue{}, errDivZero
		}
		return ivMul(a[0].Iv, 1/a[1].F)
	}))
	def("justify_hours", tIv, tIv).r(iv(func(a []types.Datum) (types.IntervalValue, error) {
		v := a[0].Iv
		v.Days += int32(v.Micros / usPerDay)
		v.Micros %= usPerDay
		return v, nil
	}))
	def("justify_days", tIv, tIv).r(iv(func(a []types.Datum) (types.IntervalValue, error) {
		v := a[0].Iv
		v.Months += v.Days / 30
		v.Days %= 30
		return v, nil
	}))

	// current time
	now := func(ctx *Ctx, _ []types.Datum) (types.Datum, error) { return types.DInt(ctx.Now), nil }
	def("now current_timestamp transaction_timestamp statement_timestamp", tTZ).r(now).vol_(Stable)
	def("localtimestamp", tTS).r(now).vol_(Stable)
	def("current_date", tD).r(func(ctx *Ctx, _ []types.Datum) (types.Datum, error) {
		return types.DInt(floorDiv(ctx.Now, usPerDay)), nil
	}).vol_(Stable)
	def("clock_timestamp", tTZ).r(func(*Ctx, []types.Datum) (types.Datum, error) {
		return types.DInt(time.Now().UnixMicro()), nil
	}).vol_(Volatile)

	def("date_trunc", tTS, tS, tTS).r(ts(func(_ *Ctx, a []types.Datum) (int64, error) { return truncTS(a[0].S, a[1].I) }))
	def("date_trunc", tTZ, tS, tTZ).r(ts(func(_ *Ctx, a []types.Datum) (int64, error) { return truncTS(a[0].S, a[1].I) }))
	def("date_trunc", tIv, tS, tIv).r(iv(func(a []types.Datum) (types.IntervalValue, error) { return truncIv(a[0].S, a[1].Iv) }))
	for _, t := range []types.T{tD, tTm, tTS, tTZ, tIv} {
		tt := t
		def("extract", tN, tS, t).r(func(_ *Ctx, a []types.Datum) (types.Datum, error) {
			var out types.Datum
			err := extract(&out.Dec, a[0].S, tt, &a[1])
			return out, err
		})
		def("date_part", tF8, tS, t).r(func(_ *Ctx, a []types.Datum) (types.Datum, error) {
			var d apd.Decimal
			if err := extract(&d, a[0].S, tt, &a[1]); err != nil {
				return types.NullDatum, err
			}
			f, err := decToFloat(&d)
			return types.DFloat(f), err
		})
	}
	for _, t := range []types.T{tTS, tTZ} {
		def("to_char", tS, t, tS).r(func(_ *Ctx, a []types.Datum) (types.Datum, error) {
			return types.DString(toChar(a[0].I, a[1].S)), nil
		})
	}
	def("to_timestamp", tTZ, tF8).r(ts(func(_ *Ctx, a []types.Datum) (int64, error) {
		f := a[0].F
		switch {
		case math.IsInf(f, 1):
			return types.InfinityTS, nil
		case math.IsInf(f, -1):
			return types.NegInfinityTS, nil
		case math.IsNaN(f) || f*1e6 < minTS || f*1e6 > maxTS:
			return 0, errTSRange
		}
		return int64(math.Round(f * 1e6)), nil
	}))
	def("to_timestamp", tTZ, tS, tS).r(ts(func(_ *Ctx, a []types.Datum) (int64, error) { return parseFormatted(a[0].S, a[1].S) }))
	def("to_date", tD, tS, tS).r(ts(func(_ *Ctx, a []types.Datum) (int64, error) {
		v, err := parseFormatted(a[0].S, a[1].S)
		return floorDiv(v, usPerDay), err
	}))
	def("make_date", tD, tI4, tI4, tI4).r(ts(func(_ *Ctx, a []types.Datum) (int64, error) {
		return makeDate(a[0].I, a[1].I, a[2].I)
	}))
	def("make_timestamp", tTS, tI4, tI4, tI4, tI4, tI4, tF8).r(ts(func(_ *Ctx, a []types.Datum) (int64, error) {
		d, err := makeDate(a[0].I, a[1].I, a[2].I)
		if err != nil {
			return 0, err
		}
		if a[3].I < 0 || a[3].I > 24 || a[4].I < 0 || a[4].I > 59 || a[5].F < 0 || a[5].F > 60 {
			return 0, types.Errorf(types.ErrDatetimeOverflow, "time field value out of range: %d:%02d:%v", a[3].I, a[4].I, a[5].F)
		}
		return d*usPerDay + (a[3].I*3600+a[4].I*60)*1e6 + int64(math.Round(a[5].F*1e6)), nil
	}))
}

func dateAdd(d, n int64) (int64, error) {
	if isInf(d) {
		return d, nil
	}
	r := d + n
	if r*usPerDay < minTS || r > maxTS/usPerDay {
		return 0, types.Errorf(types.ErrDatetimeOverflow, "date out of range")
	}
	return r, nil
}

func makeDate(y, m, d int64) (int64, error) {
	if y == 0 {
		return 0, types.Errorf(types.ErrDatetimeOverflow, "date field value out of range: %d-%02d-%02d", y, m, d)
	}
	if y < 0 {
		y++ // 1 BC is year 0
	}
	t := time.Date(int(y), time.Month(m), int(d), 0, 0, 0, 0, time.UTC)
	if m < 1 || m > 12 || d < 1 || t.Day() != int(d) {
		return 0, types.Errorf(types.ErrDatetimeOverflow, "date field value out of range: %d-%02d-%02d", y, m, d)
	}
	return floorDiv(t.Unix(), 86400), nil
}

// civil splits µs-since-epoch into a UTC time and the µs within its second.
func civil(us int64) time.Time {
	return time.Unix(floorDiv(us, 1e6), (us-floorDiv(us, 1e6)*1e6)*1000).UTC()
}

func fromCivil(t time.Time) int64 { return t.Unix()*1e6 + int64(t.Nanosecond()/1000) }

// tsAddInterval adds sign*iv to a timestamp: months by calendar (clamping
// the day to the month's end), then days, then microseconds.
func tsAddInterval(us int64, iv types.IntervalValue, sign int64) (int64, error) {
	if isInf(us) {
		return us, nil
	}
	if iv.Months != 0 {
		t := civil(us)
		y, m, d := t.Date()
		total := int64(y)*12 + int64(m-1) + sign*int64(iv.Months)
		ny, nm := floorDiv(total, 12), total-floorDiv(total, 12)*12+1
		last := time.Date(int(ny), time.Month(nm)+1, 0, 0, 0, 0, 0, time.UTC).Day()
		if d > last {
			d = last
		}
		h, mi, s := t.Clock()
		us = fromCivil(time.Date(int(ny), time.Month(nm), d, h, mi, s, t.Nanosecond(), time.UTC))
	}
	us += sign * (int64(iv.Days)*usPerDay + iv.Micros)
	if us < minTS || us > maxTS {
		return 0, errTSRange
	}
	return us, nil
}

func timeAdd(t, us int64) int64 {
	r := (t + us) % usPerDay
	if r < 0 {
		r += usPerDay
	}
	return r
}

func ivAdd(a, b types.IntervalValue, sign int64) (types.IntervalValue, error) {
	m := int64(a.Months) + sign*int64(b.Months)
	d := int64(a.Days) + sign*int64(b.Days)
	us := a.Micros + sign*b.Micros
	if m > math.MaxInt32 || m < math.MinInt32 || d > math.MaxInt32 || d < math.MinInt32 {
		return types.IntervalValue{}, types.Errorf(types.ErrDatetimeOverflow, "interval out of range")
	}
	return types.IntervalValue{Months: int32(m), Days: int32(d), Micros: us}, nil
}

// ivMul is PostgreSQL's interval_mul: fractional months cascade into days
// (30 per month) and fractional days into microseconds.
func ivMul(v types.IntervalValue, f float64) (types.IntervalValue, error) {
	// As PostgreSQL 15's interval_mul: the whole months and days of each
	// product, then the months' fraction in (30-day) days and the days'
	// fraction in time, rounded to microseconds; nothing cascades up.
	tsRound := func(x float64) float64 { return math.RoundToEven(x*1e6) / 1e6 }
	overflow := types.Errorf(types.ErrDatetimeOverflow, "interval out of range")
	m, d := float64(v.Months)*f, float64(v.Days)*f
	if math.IsNaN(m) || math.IsNaN(d) || math.Abs(m) > math.MaxInt32 || math.Abs(d) > math.MaxInt32 {
		return types.IntervalValue{}, overflow
	}
	months, days := math.Trunc(m), math.Trunc(d)
	monthDays := tsRound((m - months) * 30)
	secs := tsRound((d - days + monthDays - math.Trunc(monthDays)) * 86400)
	if math.Abs(secs) >= 86400 {
		days += math.Trunc(secs / 86400)
		secs -= math.Trunc(secs/86400) * 86400
	}
	days += math.Trunc(monthDays)
	us := math.RoundToEven(float64(v.Micros)*f + secs*1e6)
	if math.Abs(days) > math.MaxInt32 || math.IsNaN(us) || math.Abs(us) > 9.2e18 {
		return types.IntervalValue{}, overflow
	}
	return types.IntervalValue{Months: int32(months), Days: int32(days), Micros: int64(us)}, nil
}

// age is PostgreSQL's symbolic difference a - b in years, months and days.
func age(a, b int64) types.IntervalValue {
	neg := a < b
	if neg {
		a, b = b, a
	}
	ta, tb := civil(a), civil(b)
	ya, ma, da := ta.Date()
	yb, mb, db := tb.Date()
	usA := a - floorDiv(a, usPerDay)*usPerDay
	usB := b - floorDiv(b, usPerDay)*usPerDay
	us := usA - usB
	days := da - db
	months := int(ma) - int(mb)
	years := ya - yb
	if us < 0 {
		us += usPerDay
		days--
	}
	if days < 0 {
		// borrow the length of the earlier timestamp's month, as PostgreSQL does
		days += time.Date(yb, mb+1, 0, 0, 0, 0, 0, time.UTC).Day()
		months--
	}
	if months < 0 {
		months += 12
		years--
	}
	iv := types.IntervalValue{Months: int32(years*12 + months), Days: int32(days), Micros: us}
	if neg {
		iv = types.IntervalValue{Months: -iv.Months, Days: -iv.Days, Micros: -iv.Micros}
	}
	return iv
}

func badUnit(unit string, t types.T) error {
	return types.Errorf(types.ErrInvalidParameter, "unit %q not recognized for type %s", unit, t)
}

func normUnit(u string) string {
	u = strings.ToLower(strings.TrimSpace(u))
	switch u {
	case "microseconds", "microsecond", "us", "usec", "usecs", "useconds":
		return "microseconds"
	case "milliseconds", "millisecond", "ms", "msec", "msecs", "mseconds":
		return "milliseconds"
	case "second", "seconds", "s", "sec", "secs":
		return "second"
	case "minute", "minutes", "m", "min", "mins":
		return "minute"
	case "hour", "hours", "h", "hr", "hrs":
		return "hour"
	case "day", "days", "d":
		return "day"
	case "week", "weeks", "w":
		return "week"
	case "month", "months", "mon", "mons":
		return "month"
	case "quarter", "qtr":
		return "quarter"
	case "year", "years", "y", "yr", "yrs":
		return "year"
	case "decade", "decades", "dec", "decs":
		return "decade"
	case "century", "centuries", "c", "cent":
		return "century"
	case "millennium", "millennia", "mil", "mils", "millenniums":
		return "millennium"
	}
	return u
}

func truncTS(unit string, us int64) (int64, error) {
	if isInf(us) {
		return us, nil
	}
	t := civil(us)
	y, m, d := t.Date()
	day := floorDiv(us, usPerDay) * usPerDay
	switch normUnit(unit) {
	case "microseconds":
		return us, nil
	case "milliseconds":
		return floorDiv(us, 1000) * 1000, nil
	case "second":
		return floorDiv(us, 1e6) * 1e6, nil
	case "minute":
		return floorDiv(us, 60e6) * 60e6, nil
	case "hour":
		return floorDiv(us, 3600e6) * 3600e6, nil
	case "day":
		return day, nil
	case "week":
		wd := (int64(t.Weekday()) + 6) % 7 // Monday = 0
		return day - wd*usPerDay, nil
	case "month":
		return fromCivil(time.Date(y, m, 1, 0, 0, 0, 0, time.UTC)), nil
	case "quarter":
		return fromCivil(time.Date(y, (m-1)/3*3+1, 1, 0, 0, 0, 0, time.UTC)), nil
	case "year":
		return fromCivil(time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC)), nil
	case "decade":
		return fromCivil(time.Date(int(floorDiv(int64(y), 10)*10), 1, 1, 0, 0, 0, 0, time.UTC)), nil
	case "century":
		c := floorDiv(int64(y)-1, 100)*100 + 1
		return fromCivil(time.Date(int(c), 1, 1, 0, 0, 0, 0, time.UTC)), nil
	case "millennium":
		c := floorDiv(int64(y)-1, 1000)*1000 + 1
		return fromCivil(time.Date(int(c), 1, 1, 0, 0, 0, 0, time.UTC)), nil
	}
	_ = d
	return 0, badUnit(unit, tTS)
}

func truncIv(unit string, v types.IntervalValue) (types.IntervalValue, error) {
	switch normUnit(unit) {
	case "microseconds":
		return v, nil
	case "milliseconds":
		v.Micros = v.Micros / 1000 * 1000
	case "second":
		v.Micros = v.Micros / 1e6 * 1e6
	case "minute":
		v.Micros = v.Micros / 60e6 * 60e6
	case "hour":
		v.Micros = v.Micros / 3600e6 * 3600e6
	case "day":
		v.Micros = 0
	case "month":
		v.Days, v.Micros = 0, 0
	case "quarter":
		v = types.IntervalValue{Months: v.Months / 3 * 3}
	case "year":
		v = types.IntervalValue{Months: v.Months / 12 * 12}
	case "decade":
		v = types.IntervalValue{Months: v.Months / 120 * 120}
	case "century":
		v = types.IntervalValue{Months: v.Months / 1200 * 1200}
	case "millennium":
		v = types.IntervalValue{Months: v.Months / 12000 * 12000}
	default:
		return v, badUnit(unit, tIv)
	}
	return v, nil
}

// setScaled sets out = v / 10^scale, keeping scale fractional digits.
func setScaled(out *apd.Decimal, v int64, scale int32) { out.SetFinite(v, -scale) }

// extract computes extract(field FROM d) for a value of type t, as NUMERIC.
func extract(out *apd.Decimal, field string, t types.T, d *types.Datum) error {
	f := normUnit(field)
	switch f {
	case "epoch", "dow", "isodow", "doy", "isoyear", "julian", "timezone", "timezone_hour", "timezone_minute":
	default:
		if strings.HasPrefix(f, "timezone") {
			break
		}
	}
	unsupported := func() error {
		return types.Errorf(types.ErrUnsupported, "unit %q not supported for type %s", field, t)
	}
	switch t.ID {
	case types.Interval:
		v := d.Iv
		switch f {
		case "epoch":
			// a year counts 365.25 days, a month 30
			secs := new(apd.Decimal)
			setScaled(secs, v.Micros, 6)
			var extra apd.Decimal
			days := int64(v.Months/12)*36525*86400 + int64(v.Months%12)*30*86400*100 + int64(v.Days)*86400*100
			setScaled(&extra, days, 2)
			_, err := exactCtx.Add(out, secs, &extra)
			if err == nil {
				_, err = roundCtx.Quantize(out, out, -6)
			}
			return decErr(err)
		case "microseconds":
			setScaled(out, v.Micros%60e6, 0)
		case "milliseconds":
			setScaled(out, v.Micros%60e6, 3)
		case "second":
			setScaled(out, v.Micros%60e6, 6)
		case "minute":
			out.SetInt64(v.Micros / 60e6 % 60)
		case "hour":
			out.SetInt64(v.Micros / 3600e6)
		case "day":
			out.SetInt64(int64(v.Days))
		case "month":
			out.SetInt64(int64(v.Months % 12))
		case "quarter":
			out.SetInt64(int64(v.Months%12/3 + 1))
		case "year":
			out.SetInt64(int64(v.Months / 12))
		case "decade":
			out.SetInt64(int64(v.Months / 120))
		case "century":
			out.SetInt64(int64(v.Months / 1200))
		case "millennium":
			out.SetInt64(int64(v.Months / 12000))
		default:
			return badUnit(field, t)
		}
		return nil
	case types.Time:
		us := d.I
		switch f {
		case "epoch":
			setScaled(out, us, 6)
		case "microseconds":
			setScaled(out, us%60e6, 0)
		case "milliseconds":
			setScaled(out, us%60e6, 3)
		case "second":
			setScaled(out, us%60e6, 6)
		case "minute":
			out.SetInt64(us / 60e6 % 60)
		case "hour":
			out.SetInt64(us / 3600e6)
		default:
			return badUnit(field, t)
		}
		return nil
	}
	us := d.I
	if t.ID == types.Date {
		if isInf(us) {
			out.Form = apd.Infinite
			out.Negative = us < 0
			return nil
		}
		if f == "epoch" {
			out.SetInt64(us * 86400)
			return nil
		}
		switch f {
		case "microseconds", "milliseconds", "second", "minute", "hour", "timezone":
			return unsupported()
		}
		us *= usPerDay
	}
	if isInf(us) {
		out.Form = apd.Infinite
		out.Negative = us < 0
		return nil
	}
	tm := civil(us)
	y, m, dd := tm.Date()
	if y <= 0 {
		y-- // no year 0 in extract
	}
	inMin := us - floorDiv(us, 60e6)*60e6
	switch f {
	case "epoch":
		setScaled(out, us, 6)
	case "microseconds":
		setScaled(out, inMin, 0)
	case "milliseconds":
		setScaled(out, inMin, 3)
	case "second":
		setScaled(out, inMin, 6)
	case "minute":
		out.SetInt64(int64(tm.Minute()))
	case "hour":
		out.SetInt64(int64(tm.Hour()))
	case "day":
		out.SetInt64(int64(dd))
	case "month":
		out.SetInt64(int64(m))
	case "quarter":
		out.SetInt64(int64((m-1)/3 + 1))
	case "year":
		out.SetInt64(int64(y))
	case "decade":
		out.SetInt64(floorDiv(int64(y), 10))
	case "century":
		if y > 0 {
			out.SetInt64((int64(y) + 99) / 100)
		} else {
			out.SetInt64(-((99 - int64(y)) / 100))
		}
	case "millennium":
		if y > 0 {
			out.SetInt64((int64(y) + 999) / 1000)
		} else {
			out.SetInt64(-((999 - int64(y)) / 1000))
		}
	case "dow":
		out.SetInt64(int64(tm.Weekday()))
	case "isodow":
		w := int64(tm.Weekday())
		if w == 0 {
			w = 7
		}
		out.SetInt64(w)
	case "doy":
		out.SetInt64(int64(tm.YearDay()))
	case "week":
		_, w := tm.ISOWeek()
		out.SetInt64(int64(w))
	case "isoyear":
		iy, _ := tm.ISOWeek()
		out.SetInt64(int64(iy))
	case "timezone", "timezone_hour", "timezone_minute":
		if t.ID != types.Timestamptz {
			return unsupported()
		}
		out.SetInt64(0)
	default:
		return badUnit(field, t)
	}
	return nil
}

var (
	monthNames = [...]string{"January", "February", "March", "April", "May", "June", "July", "August",
		"September", "October", "November", "December"}
	dayNames = [...]string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}
)

// fmtTokens are to_char/to_timestamp template patterns, longest first.
var fmtTokens = []string{"YYYY", "HH24", "HH12", "MONTH", "Month", "month", "DDD", "MON", "Mon", "mon",
	"DAY", "Day", "day", "DY", "Dy", "dy", "YY", "MM", "DD", "HH", "MI", "SS", "MS", "US", "AM", "PM", "am", "pm",
	"A.M.", "P.M.", "TZ", "tz", "Q", "D"}

func nextToken(f string) string {
	for _, t := range fmtTokens {
		if strings.HasPrefix(f, t) {
			return t
		}
	}
	return ""
}

// charStep is one piece of a to_char template: a literal (tok "") or a
// pattern, FM-prefixed when fm.
type charStep struct {
	lit, tok string
	fm       bool
}

// charFormats caches compiled to_char templates (up to maxCharFormats of
// them): a query formats every row with the same one.
var (
	charFormats  sync.Map // string -> []charStep
	charFormatsN atomic.Int32
)

const maxCharFormats = 1024

// charFormat returns template f compiled: quoted text and characters that
// start no pattern are literals; FM applies to the pattern after it (and
// is dropped before anything else).
func charFormat(f string) []charStep {
	if v, ok := charFormats.Load(f); ok {
		return v.([]charStep)
	}
	key := f
	var steps []charStep
	lit := func(s string) {
		if n := len(steps); n > 0 && steps[n-1].tok == "" {
			steps[n-1].lit += s
			return
		}
		steps = append(steps, charStep{lit: s})
	}
	for len(f) > 0 {
		if f[0] == '"' {
			end := strings.IndexByte(f[1:], '"')
			if end < 0 {
				lit(f[1:])
				break
			}
			lit(f[1 : 1+end])
			f = f[end+2:]
			continue
		}
		fm := false
		if strings.HasPrefix(f, "FM") || strings.HasPrefix(f, "fm") {
			fm = true
			f = f[2:]
		}
		tok := nextToken(f)
		if tok == "" {
			if len(f) > 0 {
				lit(f[:1])
				f = f[1:]
			}
			continue
		}
		f = f[len(tok):]
		steps = append(steps, charStep{tok: tok, fm: fm})
	}
	if charFormatsN.Load() < maxCharFormats && charFormatsN.Add(1) <= maxCharFormats {
		charFormats.Store(key, steps)
	}
	return steps
}

func caseAs(s, pattern string) string {
	switch {
	case pattern == strings.ToUpper(pattern):
		return strings.ToUpper(s)
	case pattern == strings.ToLower(pattern):
		return strings.ToLower(s)
	}
	return s
}

// toChar formats a timestamp with PostgreSQL's to_char template patterns.
func toChar(us int64, f string) string {
	if isInf(us) {
		return ""
	}
	tm := civil(us)
	b := make([]byte, 0, len(f)+16)
	num := func(v int64, width int, fm bool) {
		var tmp [20]byte
		d := strconv.AppendInt(tmp[:0], v, 10)
		for i := len(d); i < width && !fm; i++ {
			b = append(b, '0')
		}
		b = append(b, d...)
	}
	for _, st := range charFormat(f) {
		if st.tok == "" {
			b = append(b, st.lit...)
			continue
		}
		fm, tok := st.fm, st.tok
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

// parseFormatted is to_timestamp(text, template) for the common patterns.
func parseFormatted(s, f string) (int64, error) {
	bad := func() (int64, error) {
		return 0, types.Errorf(types.ErrInvalidDatetime, "invalid value %q for template %q", s, f)
	}
	year, month, day, hour, min, sec, us := 1, 1, 1, 0, 0, 0, 0
	pm, hasAMPM := false, false
	readNum := func(maxDigits int) (int, bool) {
		s = strings.TrimLeft(s, " ")
		i := 0
		for i < len(s) && i < maxDigits && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == 0 {
			return 0, false
		}
		v, _ := strconv.Atoi(s[:i])
		s = s[i:]
		return v, true
	}
	for len(f) > 0 {
		if strings.HasPrefix(f, "FM") {
			f = f[2:]
			continue
		}
		tok := nextToken(f)
		if tok == "" {
			if len(s) > 0 && (s[0] < '0' || s[0] > '9') {
				s = s[1:]
			}
			f = f[1:]
			continue
		}
		f = f[len(tok):]
		var ok bool
		switch tok {
		case "YYYY":
			year, ok = readNum(4)
		case "YY":
			year, ok = readNum(2)
			year += 2000
			if year > 2069 {
				year -= 100
			}
		case "MM":
			month, ok = readNum(2)
		case "DD":
			day, ok = readNum(2)
		case "HH24", "HH", "HH12":
			hour, ok = readNum(2)
		case "MI":
			min, ok = readNum(2)
		case "SS":
			sec, ok = readNum(2)
		case "MS":
			var v int
			v, ok = readNum(3)
			us = v * 1000
		case "US":
			us, ok = readNum(6)
		case "MON", "Mon", "mon", "MONTH", "Month", "month":
			for i, name := range monthNames {
				n := name[:3]
				if len(tok) > 3 {
					n = name
				}
				if len(s) >= len(n) && strings.EqualFold(s[:len(n)], n) {
					month, ok = i+1, true
					s = s[len(n):]
					break
				}
			}
		case "AM", "PM", "am", "pm":
			if len(s) >= 2 {
				hasAMPM, pm, ok = true, strings.EqualFold(s[:2], "pm"), true
				s = s[2:]
			}
		default:
			ok = true
		}
		if !ok {
			return bad()
		}
	}
	if hasAMPM {
		if hour == 12 {
			hour = 0
		}
		if pm {
			hour += 12
		}
	}
	d, err := makeDate(int64(year), int64(month), int64(day))
	if err != nil {
		return 0, err
	}
	return d*usPerDay + (int64(hour)*3600+int64(min)*60+int64(sec))*1e6 + int64(us), nil
}
