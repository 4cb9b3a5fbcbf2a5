package types

import (
	"testing"
)

func TestStructTypeNames(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"struct<a int, b varchar>", "struct<a integer, b character varying>"},
		{"STRUCT <A numeric(10,2), \"B c\" timestamp with time zone>", `struct<a numeric(10,2), "B c" timestamp with time zone>`},
		{"struct<v1 int, v2 struct<v1 int, v2 struct <v1 int, v2 int>>, v3 int[]>[]", "struct<v1 integer, v2 struct<v1 integer, v2 struct<v1 integer, v2 integer>>, v3 integer[]>[]"},
	} {
		typ, err := FromName(c.in, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		if got := typ.String(); got != c.want {
			t.Errorf("%s: got %s, want %s", c.in, got, c.want)
		}
		back, err := FromName(typ.String(), nil)
		if err != nil || back != typ {
			t.Errorf("%s: %s does not read back (%v)", c.in, typ, err)
		}
	}
	for _, bad := range []string{"struct<a int", "struct<a nosuchtype>", "struct<a int,>", "struct<a int> x"} {
		if _, err := FromName(bad, nil); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}

func TestStructTextAndOrder(t *testing.T) {
	inner, _ := FromName("struct<c int, d varchar>", nil)
	st := StructOf([]StructField{{"a", TInt32}, {"b", inner}, {"e", TVarchar}})
	if st.OID() != OIDRecord || ArrayOf(st).OID() != OIDRecordArray {
		t.Fatalf("oids %d %d", st.OID(), ArrayOf(st).OID())
	}
	for _, c := range []struct{ in, out string }{
		{`(1,"(2,x)",y)`, `(1,"(2,x)",y)`},
		{`(1,,"")`, `(1,,"")`},
		{`( 1 ,"(2,""a b"")","q\"u")`, `(1,"(2,""a b"")","q""u")`},
	} {
		d, err := ParseText(st, c.in)
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		if got := FormatText(st, &d); got != c.out {
			t.Errorf("%s: prints %s, want %s", c.in, got, c.out)
		}
	}
	for _, bad := range []string{"1,2", "(1,(2,x))", "(1)", `(1,"(2,x)",y,z)`, `(1,"(2,x)",y) z`} {
		if _, err := ParseText(st, bad); err == nil {
			t.Errorf("%s: parsed", bad)
		}
	}
	two := StructOf([]StructField{{"a", TInt32}, {"b", TInt32}})
	row := func(a, b *int64) Datum {
		vals := []Datum{NullDatum, NullDatum}
		if a != nil {
			vals[0] = DInt(*a)
		}
		if b != nil {
			vals[1] = DInt(*b)
		}
		return DString(EncodeStruct(two, vals))
	}
	i := func(v int64) *int64 { return &v }
	ordered := []Datum{row(i(1), i(2)), row(i(1), i(3)), row(i(1), nil), row(i(2), i(0)), row(nil, i(0))}
	for x := range ordered {
		for y := range ordered {
			want := 0
			if x < y {
				want = -1
			} else if x > y {
				want = 1
			}
			if got := Compare(two, &ordered[x], &ordered[y]); got != want {
				t.Errorf("compare %s %s: %d, want %d", FormatText(two, &ordered[x]), FormatText(two, &ordered[y]), got, want)
			}
		}
	}
	if c, null := CompareRows(two, row(i(1), nil).S, row(i(2), nil).S, true); c >= 0 || null {
		t.Errorf("(1,) vs (2,): %d %v", c, null)
	}
	if _, null := CompareRows(two, row(i(1), nil).S, row(i(1), nil).S, true); !null {
		t.Error("(1,) = (1,) is not unknown")
	}
	d := row(i(1), nil)
	if !HasNullField(two, &d) || HasNullField(two, &ordered[0]) {
		t.Error("HasNullField")
	}
	if Hash(two, &ordered[0]) != Hash(two, &[]Datum{row(i(1), i(2))}[0]) {
		t.Error("equal structs hash apart")
	}
}
