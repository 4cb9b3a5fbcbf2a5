package expr

import (
	"errors"
	"testing"

	"github.com/tributary/tributary/sql/types"
)

// Expected values are PostgreSQL 15's answers (also checked end to end by
// e2e/query/jsonb_functions.slt with -pg).
func TestJSONBFunctions(t *testing.T) {
	for _, c := range []struct{ expr, want string }{
		{"jsonb_build_object('b', 1, 'a', 'x', 'c', NULL)", `{"a": "x", "b": 1, "c": null}`},
		{"json_build_object('b', 1, 'a', 'x')", `{"b" : 1, "a" : "x"}`},
		{"jsonb_build_array(1, 'two', NULL, 2.50)", `[1, "two", null, 2.50]`},
		{"to_jsonb('2024-01-02 03:04:05'::timestamp)", `"2024-01-02T03:04:05"`},
		{"to_jsonb('NaN'::float8)", `"NaN"`},
		{"jsonb_set('{\"a\":[1,2]}'::jsonb, '{a,0}', '9'::jsonb)", `{"a": [9, 2]}`},
		{"jsonb_set('[1,2]'::jsonb, '{-5}', '0'::jsonb)", `[0, 1, 2]`},
		{"jsonb_strip_nulls('[null,{\"a\":null}]'::jsonb)", `[null, {}]`},
		{"jsonb_pretty('[]'::jsonb)", "[\n]"},
		{"jsonb_pretty('{\"a\":1}'::jsonb)", "{\n    \"a\": 1\n}"},
	} {
		got, err := evalText(c.expr, nil)
		if err != nil {
			t.Errorf("%s: error %v", c.expr, err)
		} else if got != c.want {
			t.Errorf("%s = %q, want %q", c.expr, got, c.want)
		}
	}
	for expr, kind := range map[string]error{
		"jsonb_build_object('a')":                        types.ErrInvalidParameter,
		"jsonb_build_object(NULL::text, 1)":              types.ErrInvalidParameter,
		"jsonb_set('[1]'::jsonb, '{x}', '1'::jsonb)":     types.ErrInvalidText,
		"jsonb_set('1'::jsonb, '{x}', '1'::jsonb)":       types.ErrInvalidParameter,
		"jsonb_set('{}'::jsonb, '{a,NULL}', '1'::jsonb)": types.ErrInvalidParameter,
		"to_jsonb(NULL)":                                 types.ErrIndeterminateDatatype,
	} {
		if _, err := evalText(expr, nil); !errors.Is(err, kind) {
			t.Errorf("%s: error %v, want kind %v", expr, err, kind)
		}
	}
}

func TestJSONBContains(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{`{"a":1,"b":[1,2]}`, `{"b":[2]}`, true},
		{`{"a":1}`, `{"a":1.0}`, true},
		{`[1,[2,3]]`, `[[3]]`, true},
		{`[1,[2,3]]`, `[3]`, false},
		{`[1,2]`, `1`, true},
		{`{"a":[1]}`, `{"a":1}`, false},
		{`"x"`, `"x"`, true},
		{`[]`, `[]`, true},
		{`{}`, `[]`, false},
	} {
		x, _ := types.ParseJSONValue(c.a)
		y, _ := types.ParseJSONValue(c.b)
		if got := jsonContains(x, y, true); got != c.want {
			t.Errorf("%s @> %s = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

func TestJSONAggResult(t *testing.T) {
	vals := []types.Datum{types.DInt(1), types.NullDatum, types.DInt(3)}
	for _, name := range []string{"jsonb_agg", "json_agg"} {
		a, err := LookupAgg(name, []types.T{types.TInt32}, false)
		if err != nil {
			t.Fatal(err)
		}
		s := a.NewState()
		for i := range vals {
			if err := s.Add(vals[i : i+1]); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Retract(vals[1:2]); err != nil {
			t.Fatal(err)
		}
		if got := s.Result(); got.S != "[1, 3]" {
			t.Errorf("%s after retract = %q", name, got.S)
		}
	}
	a, err := LookupAgg("json_object_agg", []types.T{types.TVarchar, types.TInt32}, false)
	if err != nil {
		t.Fatal(err)
	}
	s := a.NewState()
	_ = s.Add([]types.Datum{types.DString("b"), types.DInt(1)})
	_ = s.Add([]types.Datum{types.DString("a"), types.NullDatum})
	if got := s.Result(); got.S != `{ "b" : 1, "a" : null }` {
		t.Errorf("json_object_agg = %q", got.S)
	}
	if err := s.Add([]types.Datum{types.NullDatum, types.DInt(1)}); !errors.Is(err, types.ErrInvalidParameter) {
		t.Errorf("NULL key: %v", err)
	}
}
