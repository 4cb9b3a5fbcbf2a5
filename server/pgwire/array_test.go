package pgwire

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/tributary/tributary/sql/types"
)

// TestArrayBinaryRoundTrip encodes arrays of several element types in
// PostgreSQL's binary form and decodes them back to equal values.
func TestArrayBinaryRoundTrip(t *testing.T) {
	cases := []struct {
		elem types.T
		text string
	}{
		{types.TInt32, "{1,NULL,-3}"},
		{types.TInt64, "{}"},
		{types.TVarchar, `{a,"b c",NULL,""}`},
		{types.TNumeric, "{1.50,-2,NaN}"},
		{types.TFloat64, "{1.5,-0,Infinity}"},
		{types.TBool, "{t,f}"},
		{types.TDate, "{2024-02-29,1999-01-01}"},
		{types.TTimestamptz, `{"2024-01-02 03:04:05.5+00"}`},
		{types.TInterval, `{"1 mon 2 days 03:00:00"}`},
		{types.TUuid, "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}"},
		{types.TJsonb, `{"{\"a\": 1}"}`},
		{types.TBytea, `{"\\x00ff"}`},
	}
	var e rowEncoder
	for _, c := range cases {
		at := types.ArrayOf(c.elem)
		d, err := types.ParseText(at, c.text)
		if err != nil {
			t.Fatalf("%s %q: %v", at, c.text, err)
		}
		v := types.NewVector(at, 1)
		v.Append(&d)
		buf, err := e.appendBinary(nil, at, v, 0)
		if err != nil {
			t.Fatalf("%s %q: encode: %v", at, c.text, err)
		}
		if got := binary.BigEndian.Uint32(buf[8:]); got != c.elem.OID() {
			t.Errorf("%s: element oid %d, want %d", at, got, c.elem.OID())
		}
		back, err := decodeBinary(at, buf, 0)
		if err != nil {
			t.Fatalf("%s %q: decode: %v", at, c.text, err)
		}
		if got := types.FormatText(at, &back); got != types.FormatText(at, &d) {
			t.Errorf("%s: round trip %q -> %q", at, types.FormatText(at, &d), got)
		}
	}
}

// TestArrayBinaryMalformed refuses damaged binary arrays with 22P03 and a
// second dimension with 0A000, never panicking.
func TestArrayBinaryMalformed(t *testing.T) {
	at := types.ArrayOf(types.TInt32)
	be := func(ws ...uint32) []byte {
		var b []byte
		for _, w := range ws {
			b = binary.BigEndian.AppendUint32(b, w)
		}
		return b
	}
	bad := [][]byte{
		{},
		be(1, 0, 23),                      // no dimension
		be(1, 0, 23, 2, 1, 4, 7),          // two elements announced, one given
		be(1, 0, 23, 1, 1, 8, 7),          // element longer than the data
		be(1, 0, 23, 1, 1, 2, 7),          // int4 of 2 bytes
		be(1, 0, 23, 1, 1, 4, 7, 9),       // trailing bytes
		be(0xffffffff, 0, 23),             // negative dimensions
		be(1, 0, 23, 0x7fffffff, 1, 4, 7), // absurd length
		be(1, 0, 23, 0xffffffff, 1),       // negative length
	}
	for i, raw := range bad {
		if _, err := decodeBinary(at, raw, 0); err == nil {
			t.Errorf("case %d accepted", i)
		}
	}
	if _, err := decodeBinary(at, be(2, 0, 23, 1, 1, 1, 1, 4, 7), 0); !errors.Is(err, types.ErrUnsupported) {
		t.Errorf("two dimensions: %v", err)
	}
	d, err := decodeBinary(at, be(1, 1, 23, 2, 0, 4, 7, 0xffffffff), 0) // lower bound 0 is read as 1
	if err != nil || types.FormatText(at, &d) != "{7,NULL}" {
		t.Errorf("lower bound 0: %v %v", types.FormatText(at, &d), err)
	}
}
