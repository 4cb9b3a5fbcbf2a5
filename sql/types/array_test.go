package types

import (
	"errors"
	"testing"
)

func TestArrayTextRoundTrip(t *testing.T) {
	cases := []struct {
		elem     T
		in, want string
	}{
		{TInt32, "{1,2,NULL}", "{1,2,NULL}"},
		{TInt32, " { 1 , 2 } ", "{1,2}"},
		{TInt32, "{}", "{}"},
		{TInt64, "{-9223372036854775808}", "{-9223372036854775808}"},
		{TVarchar, `{a,"b c",NULL,"\"q\"","NULL",""}`, `{a,"b c",NULL,"\"q\"","NULL",""}`},
		{TVarchar, `{a b , c\,d, e\\f}`, `{"a b","c,d","e\\f"}`},
		{TVarchar, `{"{x}"}`, `{"{x}"}`},
		{TNumeric, "{1.50,NaN,-0.0}", "{1.50,NaN,0.0}"},
		{TFloat64, "{1.5,-0,Infinity}", "{1.5,-0,Infinity}"},
		{TBool, "{t,false,NULL}", "{t,f,NULL}"},
		{TDate, "{2024-02-29}", "{2024-02-29}"},
		{TTimestamp, "{2024-01-02 03:04:05}", `{"2024-01-02 03:04:05"}`},
		{TInterval, `{"1 day 2 hours"}`, `{"1 day 02:00:00"}`},
		{TUuid, "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}", "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}"},
		{TBytea, `{"\\x01ff"}`, `{"\\x01ff"}`},
		{TJsonb, `{"{\"a\": 1}"}`, `{"{\"a\": 1}"}`},
	}
	for _, c := range cases {
		at := ArrayOf(c.elem)
		d, err := ParseText(at, c.in)
		if err != nil {
			t.Errorf("ParseText(%s, %q): %v", at, c.in, err)
			continue
		}
		if got := FormatText(at, &d); got != c.want {
			t.Errorf("%s %q: got %q, want %q", at, c.in, got, c.want)
		}
		// The output reads back to an equal value.
		d2, err := ParseText(at, c.want)
		if err != nil || Compare(at, &d, &d2) != 0 || Hash(at, &d) != Hash(at, &d2) {
			t.Errorf("%s %q: output %q does not read back equal (%v)", at, c.in, c.want, err)
		}
	}
}

func TestArrayTextErrors(t *testing.T) {
	cases := []struct {
		elem T
		in   string
		kind error
	}{
		{TInt32, "1,2", ErrInvalidText},
		{TInt32, "{1,2", ErrInvalidText},
		{TInt32, "{1,,2}", ErrInvalidText},
		{TInt32, "{1,2,}", ErrInvalidText},
		{TInt32, "{1} x", ErrInvalidText},
		{TInt32, "{a}", ErrInvalidText},
		{TInt32, `{"1}`, ErrInvalidText},
		{TInt32, "{{1,2},{3,4}}", ErrUnsupported},
		{TInt32, "[0:1]={1,2}", ErrUnsupported},
		{TInt16, "{70000}", ErrNumericOutOfRange},
	}
	for _, c := range cases {
		_, err := ParseText(ArrayOf(c.elem), c.in)
		if !errors.Is(err, c.kind) {
			t.Errorf("%q: got %v, want %v", c.in, err, c.kind)
		}
	}
}

func TestArrayCompareAndHash(t *testing.T) {
	at := ArrayOf(TNumeric)
	parse := func(s string) Datum {
		d, err := ParseText(at, s)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	// Ordered as PostgreSQL orders them: element by element, NULL elements
	// last, a prefix first.
	ordered := []string{"{}", "{1}", "{1,2}", "{1,2,NULL}", "{1,3}", "{1,NULL}", "{2}", "{NULL}"}
	for i := range ordered {
		for j := range ordered {
			a, b := parse(ordered[i]), parse(ordered[j])
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got := Compare(at, &a, &b); got != want {
				t.Errorf("Compare(%s, %s) = %d, want %d", ordered[i], ordered[j], got, want)
			}
		}
	}
	// 1.0 = 1.00 as elements, with one hash, though the values print apart.
	a, b := parse("{1.0,2}"), parse("{1.00,2}")
	if Compare(at, &a, &b) != 0 || Hash(at, &a) != Hash(at, &b) {
		t.Errorf("{1.0,2} and {1.00,2} should be equal with equal hashes")
	}
	if FormatText(at, &a) == FormatText(at, &b) {
		t.Errorf("the scale of elements should be kept")
	}
}

func TestArrayTypeNames(t *testing.T) {
	for _, c := range []struct {
		name string
		want T
		str  string
		oid  uint32
	}{
		{"int[]", ArrayOf(TInt32), "integer[]", 1007},
		{"text[]", ArrayOf(TVarchar), "character varying[]", 1015},
		{"_int8", ArrayOf(TInt64), "bigint[]", 1016},
		{"uuid[]", ArrayOf(TUuid), "uuid[]", 2951},
	} {
		got, err := FromName(c.name, nil)
		if err != nil || got != c.want || got.String() != c.str || got.OID() != c.oid {
			t.Errorf("%s: got %v (%s, %d), %v", c.name, got, got.String(), got.OID(), err)
		}
		back, ok := FromOID(c.oid)
		if !ok || back != c.want {
			t.Errorf("FromOID(%d) = %v", c.oid, back)
		}
	}
	if _, err := FromName("int[][]", nil); !errors.Is(err, ErrUnsupported) {
		t.Errorf("int[][]: %v", err)
	}
	vc, err := FromName("varchar[]", []int{10})
	if err != nil || vc.String() != "character varying(10)[]" || vc.Typmod() != 14 {
		t.Errorf("varchar(10)[]: %v %s %d", err, vc, vc.Typmod())
	}
}
