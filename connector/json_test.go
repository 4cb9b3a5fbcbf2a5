package connector

import (
	"testing"

	"github.com/tributary/tributary/sql/types"
)

func TestAppendJSONValueArrays(t *testing.T) {
	cases := []struct {
		elem types.T
		text string
		want string
	}{
		{types.TInt32, "{1,NULL,3}", `[1,null,3]`},
		{types.TVarchar, `{a,"b \"c\"",NULL}`, `["a","b \"c\"",null]`},
		{types.TNumeric, "{1.50,NaN}", `["1.50","NaN"]`},
		{types.TBool, "{t,f}", `[true,false]`},
		{types.TFloat64, "{1.5,Infinity}", `[1.5,"Infinity"]`},
		{types.TDate, "{2024-01-02}", `["2024-01-02"]`},
		{types.TInt64, "{}", `[]`},
	}
	for _, c := range cases {
		at := types.ArrayOf(c.elem)
		d, err := types.ParseText(at, c.text)
		if err != nil {
			t.Fatalf("%s %q: %v", at, c.text, err)
		}
		got, _ := AppendJSONValue(nil, nil, at, &d)
		if string(got) != c.want {
			t.Errorf("%s %q: got %s, want %s", at, c.text, got, c.want)
		}
	}
}

func TestAppendJSONValueStruct(t *testing.T) {
	inner := types.StructOf([]types.StructField{{Name: "c", Type: types.TVarchar}})
	st := types.StructOf([]types.StructField{{Name: "b", Type: types.TInt32}, {Name: "a", Type: inner}, {Name: "n", Type: types.TInt32}})
	d := types.DString(types.EncodeStruct(st, []types.Datum{types.DInt(1), types.DString(types.EncodeStruct(inner, []types.Datum{types.DString(`q"`)})), types.NullDatum}))
	got, _ := AppendJSONValue(nil, nil, st, &d)
	if want := `{"b":1,"a":{"c":"q\""},"n":null}`; string(got) != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}
