package types

import (
	"errors"
	"math"
	"testing"
	"time"
	_ "time/tzdata" // zone names on machines without a zoneinfo database

	"github.com/cespare/xxhash/v2"
)

func TestTextRoundTrip(t *testing.T) {
	cases := []struct {
		typ      T
		in, want string
	}{
		{TBool, "yes", "t"},
		{TBool, "f", "f"},
		{TInt32, " 42 ", "42"},
		{TInt64, "-9223372036854775808", "-9223372036854775808"},
		{TFloat64, "3.5", "3.5"},
		{TFloat64, "1e15", "1e+15"},
		{TFloat64, "100000000000000", "100000000000000"},
		{TFloat64, "0.0001", "0.0001"},
		{TFloat64, "0.00001", "1e-05"},
		{TFloat32, "1e6", "1e+06"},
		{TFloat32, "123456", "123456"},
		{TFloat64, "nan", "NaN"},
		{TNumeric, "1.50", "1.50"},
		{T{ID: Numeric, Width: 10, Scale: 2}, "3.14159", "3.14"},
		{TNumeric, "1e3", "1000"},
		{TVarchar, "héllo", "héllo"},
		{TBytea, `\x0aff`, `\x0aff`},
		{TBytea, `ab\\`, `\x61625c`},
		{TDate, "2024-02-29", "2024-02-29"},
		{TDate, "1969-12-31", "1969-12-31"},
		{TTime, "10:20:30.5", "10:20:30.5"},
		{TTimestamp, "2024-01-02 03:04:05.123456", "2024-01-02 03:04:05.123456"},
		{TTimestamp, "2024-01-02T03:04:05Z", "2024-01-02 03:04:05"},
		{TTimestamptz, "2024-01-02 03:04:05+02", "2024-01-02 01:04:05+00"},
		{TTimestamptz, "2024-01-02 03:04:05-05:30", "2024-01-02 08:34:05+00"},
		{TTimestamp, "1960-01-01 00:00:01", "1960-01-01 00:00:01"},
		{TInterval, "1 hour", "01:00:00"},
		{TInterval, "1 year 2 mons 3 days 04:05:06", "1 year 2 mons 3 days 04:05:06"},
		{TInterval, "-1 day", "-1 days"},
		{TInterval, "1.5 hours", "01:30:00"},
		{TInterval, "2 weeks", "14 days"},
		{TInterval, "0", "00:00:00"},
		{TInterval, "P1DT2H", "1 day 02:00:00"},
		{TInterval, "1 mon", "1 mon"},
		{TInterval, "1 day -01:00:00", "1 day -01:00:00"},
		{TJsonb, `{"b": 1, "a": [1, 2.50, "x\n"], "aa": null}`, `{"a": [1, 2.50, "x\n"], "b": 1, "aa": null}`},
	}
	for _, c := range cases {
		d, err := ParseText(c.typ, c.in)
		if err != nil {
			t.Errorf("ParseText(%s, %q): %v", c.typ, c.in, err)
			continue
		}
		if got := FormatText(c.typ, &d); got != c.want {
			t.Errorf("ParseText(%s, %q) prints %q, want %q", c.typ, c.in, got, c.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		typ  T
		in   string
		kind error
	}{
		{TInt32, "abc", ErrInvalidText},
		{TInt16, "40000", ErrNumericOutOfRange},
		{TInt32, "2147483648", ErrNumericOutOfRange},
		{TBool, "maybe", ErrInvalidText},
		{TDate, "2024-02-30", ErrDatetimeOverflow},
		{T{ID: Numeric, Width: 3, Scale: 1}, "123.4", ErrNumericOutOfRange},
		{T{ID: Varchar, Width: 2}, "abc", ErrStringTruncation},
		{TJsonb, "{", ErrInvalidText},
		{TInterval, "1 fortnight", ErrInvalidDatetime},
	}
	for _, c := range cases {
		_, err := ParseText(c.typ, c.in)
		if !errors.Is(err, c.kind) {
			t.Errorf("ParseText(%s, %q) = %v, want kind %v", c.typ, c.in, err, c.kind)
		}
	}
}

func TestCompareAndHash(t *testing.T) {
	a, _ := ParseText(TNumeric, "1.0")
	b, _ := ParseText(TNumeric, "1.00")
	if Compare(TNumeric, &a, &b) != 0 || Hash(TNumeric, &a) != Hash(TNumeric, &b) {
		t.Fatal("1.0 and 1.00 must compare and hash equal")
	}
	z, nz := DFloat(0), DFloat(math.Copysign(0, -1))
	if Hash(TFloat64, &z) != Hash(TFloat64, &nz) {
		t.Fatal("-0 and 0 must hash equal")
	}
	n := NullDatum
	one := DInt(1)
	if Compare(TInt64, &n, &one) <= 0 {
		t.Fatal("NULL sorts last")
	}
}

func TestChunkAppend(t *testing.T) {
	c := NewChunk([]T{TInt64, TVarchar}, 4)
	c.AppendRow([]Datum{DInt(1), DString("a")})
	c.AppendRowOp(OpDelete, []Datum{DInt(2), NullDatum})
	if c.Len() != 2 || c.Op(0) != OpInsert || c.Op(1) != OpDelete || !c.Cols[1].IsNull(1) {
		t.Fatalf("unexpected chunk state: len %d ops %v", c.Len(), c.Ops)
	}
	row := c.Row(0, nil)
	if row[0].I != 1 || row[1].S != "a" {
		t.Fatalf("row 0 = %+v", row)
	}
}

// TestParseTimestampNamedZone: an IANA zone name in timestamptz input (as
// written, case and all) applies the offset in force on that date.
func TestParseTimestampNamedZone(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Time
	}{
		{"2024-07-01 12:00:00 Europe/Paris", time.Date(2024, 7, 1, 10, 0, 0, 0, time.UTC)}, // summer time, +02
		{"2024-01-01 12:00:00 Europe/Paris", time.Date(2024, 1, 1, 11, 0, 0, 0, time.UTC)}, // winter time, +01
		{"2024-01-01 12:00:00 UTC", time.Date(2024, 1, 1, 12, 0, 0, 0, time.UTC)},
	} {
		us, err := ParseTimestamp(c.in, true)
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		if us != c.want.UnixMicro() {
			t.Errorf("%s: got %v, want %v", c.in, time.UnixMicro(us).UTC(), c.want)
		}
	}
}

// TestParseTimestampBC: BC dates and timestamps read back what they print ('0044-03-15 12:00:00+00
// BC' is PostgreSQL's text for 44 BC; year 0 of the proleptic calendar is 1 BC).
func TestParseTimestampBC(t *testing.T) {
	for _, c := range []struct {
		in   string
		tz   bool
		want time.Time
	}{
		{"0044-03-15 12:00:00 BC", false, time.Date(-43, 3, 15, 12, 0, 0, 0, time.UTC)},
		{"0044-03-15 12:00:00+00 BC", true, time.Date(-43, 3, 15, 12, 0, 0, 0, time.UTC)},
		{"0001-01-01 00:00:00+00 bc", true, time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"0044-03-15 BC", false, time.Date(-43, 3, 15, 0, 0, 0, 0, time.UTC)},
		{"2024-01-01 12:00:00", false, time.Date(2024, 1, 1, 12, 0, 0, 0, time.UTC)},
	} {
		us, err := ParseTimestamp(c.in, c.tz)
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		if us != c.want.UnixMicro() {
			t.Errorf("%s: got %v, want %v", c.in, time.UnixMicro(us).UTC(), c.want)
		}
		ty := TTimestamp
		if c.tz {
			ty = TTimestamptz
		}
		d, err := ParseText(ty, FormatText(ty, &Datum{I: us}))
		if err != nil || d.I != us {
			t.Errorf("%s: printed %q, read back %v (%v)", c.in, FormatText(ty, &Datum{I: us}), d.I, err)
		}
	}
}

// Hash of one value equals the digest HashInto feeds (the vnode of a row with a one-column
// key and the hash of a multi-column key share the bytes), for the kinds Hash takes a short
// cut for and the others.
func TestHashMatchesHashInto(t *testing.T) {
	digest := func(typ T, v Datum) uint64 {
		var h xxhash.Digest
		h.Reset()
		HashInto(&h, typ, &v)
		return h.Sum64()
	}
	cases := []struct {
		t T
		v Datum
	}{
		{TInt64, DInt(0)}, {TInt64, DInt(1)}, {TInt64, DInt(-1)}, {TInt64, DInt(math.MaxInt64)}, {TInt64, DInt(math.MinInt64)},
		{TInt32, DInt(42)}, {TInt64, NullDatum}, {TVarchar, DString("value 7")}, {TVarchar, NullDatum},
	}
	for i := int64(0); i < 1000; i++ {
		cases = append(cases, struct {
			t T
			v Datum
		}{TInt64, DInt(i*7919 - 500000)})
	}
	for _, c := range cases {
		if got, want := Hash(c.t, &c.v), digest(c.t, c.v); got != want {
			t.Fatalf("Hash(%v, %v) = %x, the digest %x", c.t, c.v, got, want)
		}
	}
}
