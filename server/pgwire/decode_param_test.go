package pgwire

import (
	"encoding/binary"
	"errors"
	"reflect"
	"testing"

	"github.com/tributary/tributary/sql/types"
)

// TestDecodeParamInto: decodeParamInto's own paths (binary int4 and int8,
// text of varchar and unknown) leave the Datum decodeParam returns, also over
// a reused Datum holding another value, and fail where it fails.
func TestDecodeParamInto(t *testing.T) {
	be8 := binary.BigEndian.AppendUint64(nil, uint64(0xFFFFFFFFFFFFFFFE)) // -2
	be4 := binary.BigEndian.AppendUint32(nil, uint32(0x80000000))         // MinInt32
	cases := []struct {
		t      types.T
		format int16
		raw    []byte
	}{
		{types.TInt64, formatBinary, be8},
		{types.TInt32, formatBinary, be4},
		{types.TInt64, formatBinary, be4}, // wrong length
		{types.TInt32, formatBinary, nil}, // NULL
		{types.TVarchar, formatText, []byte("héllo")},
		{types.TUnknown, formatText, []byte("x")},
		{types.TVarchar, formatText, []byte{0}},    // NUL refused
		{types.TVarchar, formatText, []byte{0xff}}, // not UTF-8
		{types.T{ID: types.Varchar, Width: 2}, formatText, []byte("abc")},
		{types.TInt64, formatText, []byte("12")},
		{types.TFloat64, formatBinary, binary.BigEndian.AppendUint64(nil, 0x3ff0000000000000)},
	}
	for i, c := range cases {
		want, wantErr := decodeParam(c.t, c.format, c.raw, 0)
		got := types.Datum{I: 99, S: "stale", F: 1.5}
		err := decodeParamInto(&got, c.t, c.format, c.raw, 0)
		if (err != nil) != (wantErr != nil) || err != nil && !errors.Is(err, wantErr) && err.Error() != wantErr.Error() {
			t.Fatalf("case %d (%s %x): error %v, want %v", i, c.t, c.raw, err, wantErr)
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("case %d (%s %x): %+v, want %+v", i, c.t, c.raw, got, want)
		}
	}
}
