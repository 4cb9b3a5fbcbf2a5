package expr

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"

	"github.com/tributary/tributary/sql/types"
)

// The jsonb (and json) constructors, containment, path and editing
// functions and operators. jsonb values are canonical text (sql/types); json
// is read as jsonb, so json_build_object and json_agg return PostgreSQL's json
// text (keys in argument order, " : " separators) typed jsonb.

func init() {
	specials["jsonb_build_object"] = resolveBuildObject
	specials["json_build_object"] = resolveBuildObject
	specials["jsonb_build_array"] = resolveBuildArray
	specials["json_build_array"] = resolveBuildArray
	specials["to_jsonb"] = resolveToJSON
	specials["to_json"] = resolveToJSON
	tSA := types.ArrayOf(tS)
	def("jsonb_exists_any ?|", tB, tJ, tSA).r(jsonbExistsArr(false))
	def("jsonb_exists_all ?&", tB, tJ, tSA).r(jsonbExistsArr(true))
	def("pg__json_path #>", tJ, tJ, tSA).r(jsonbPath(false))
	def("pg__json_path_text #>>", tS, tJ, tSA).r(jsonbPath(true))
	def("-", tJ, tJ, tS).r(jsonbDeleteKey)
	def("-", tJ, tJ, tSA).r(jsonbDeleteKeys)
	def("-", tJ, tJ, tI4).r(jsonbDeleteIndex)
	def("pg__json_delete_path #-", tJ, tJ, tSA).r(jsonbDeletePath)
	def("jsonb_set", tJ, tJ, tSA, tJ).r(jsonbSet)
	def("jsonb_set", tJ, tJ, tSA, tJ, tB).r(jsonbSet)
	def("jsonb_strip_nulls", tJ, tJ).r(func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		v, err := types.ParseJSONValue(a[0].S)
		if err != nil {
			return types.NullDatum, err
		}
		return types.DString(types.JSONText(stripNulls(v))), nil
	})
	def("jsonb_pretty", tS, tJ).r(func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		v, err := types.ParseJSONValue(a[0].S)
		if err != nil {
			return types.NullDatum, err
		}
		var b strings.Builder
		writePretty(&b, v, 0)
		return types.DString(b.String()), nil
	})
	for _, op := range []string{"?|", "?&", "#>", "#>>", "#-"} {
		infixOps[op] = op
	}
	infixOps["jsonb_exists"] = "?"
	infixOps["jsonb_exists_any"] = "?|"
	infixOps["jsonb_exists_all"] = "?&"
	infixOps["pg__json_path"] = "#>"
	infixOps["pg__json_path_text"] = "#>>"
	infixOps["pg__json_delete_path"] = "#-"
}

// ToJSONValue converts a datum of type t to the value to_jsonb makes of it:
// numbers stay numbers (NaN and infinities become strings), booleans and
// jsonb stay themselves, arrays become JSON arrays, date/time values take
// ISO 8601 text ("T" between date and time), everything else its text form.
func ToJSONValue(t types.T, d *types.Datum) (any, error) {
	if d.Null {
		return nil, nil
	}
	switch t.ID {
	case types.Bool:
		return d.I != 0, nil
	case types.Int16, types.Int32, types.Int64, types.Numeric:
		s := types.FormatText(t, d)
		if s == "NaN" {
			return s, nil
		}
		return json.Number(s), nil
	case types.Float32, types.Float64:
		if math.IsNaN(d.F) || math.IsInf(d.F, 0) {
			return types.FormatText(t, d), nil
		}
		return json.Number(types.FormatText(t, d)), nil
	case types.Jsonb:
		return types.ParseJSONValue(d.S)
	case types.Array:
		elem := t.ElemType()
		vals, err := types.DecodeArray(elem, d.S)
		if err != nil {
			return nil, err
		}
		out := make([]any, len(vals))
		for i := range vals {
			if out[i], err = ToJSONValue(elem, &vals[i]); err != nil {
				return nil, err
			}
		}
		return out, nil
	case types.Struct:
		// An object keyed by the field names, as PostgreSQL's to_jsonb of a
		// composite value.
		vals, err := types.DecodeStruct(t, d.S)
		if err != nil {
			return nil, err
		}
		out := make(map[string]any, len(vals))
		for i, f := range t.StructFields() {
			if out[f.Name], err = ToJSONValue(f.Type, &vals[i]); err != nil {
				return nil, err
			}
		}
		return out, nil
	case types.Timestamp, types.Timestamptz:
		if d.I == types.InfinityTS || d.I == types.NegInfinityTS {
			return types.FormatText(t, d), nil
		}
		s := types.FormatText(t, d)
		if len(s) > 10 && s[10] == ' ' && !strings.HasSuffix(s, " BC") {
			s = s[:10] + "T" + s[11:]
		}
		if t.ID == types.Timestamptz && len(s) > 3 && (s[len(s)-3] == '+' || s[len(s)-3] == '-') {
			s += ":00"
		}
		return s, nil
	}
	return types.FormatText(t, d), nil
}

// jsonArg is one argument of a json constructor: its type and whether the
// json (not jsonb) form is wanted.
func jsonValues(ts []types.T, a []types.Datum) ([]any, error) {
	out := make([]any, len(a))
	for i := range a {
		v, err := ToJSONValue(ts[i], &a[i])
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func unknownAsText(args []Expr) ([]Expr, []types.T, error) {
	out := make([]Expr, len(args))
	ts := make([]types.T, len(args))
	for i, e := range args {
		if e.Type().ID == types.Unknown {
			c, err := castExpr(e, tS, castImplicit)
			if err != nil {
				return nil, nil, err
			}
			e = c
		}
		out[i], ts[i] = e, e.Type()
	}
	return out, ts, nil
}

func resolveBuildObject(name string, args []Expr) (Expr, error) {
	if len(args)%2 != 0 {
		return nil, &types.Error{Kind: types.ErrInvalidParameter, Msg: "argument list must have even number of elements",
			Hint: "The arguments of " + name + "() must consist of alternating keys and values."}
	}
	cargs, ts, err := unknownAsText(args)
	if err != nil {
		return nil, err
	}
	jsonText := name == "json_build_object"
	return arrayCall(name, cargs, tJ, false, func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		obj := map[string]any{}
		var b bytes.Buffer
		b.WriteByte('{')
		for i := 0; i < len(a); i += 2 {
			if a[i].Null {
				if jsonText {
					return types.NullDatum, types.Errorf(types.ErrInvalidParameter, "argument %d cannot be null", i+1)
				}
				return types.NullDatum, types.Errorf(types.ErrInvalidParameter, "argument %d: key must not be null", i+1)
			}
			k, err := ToJSONValue(ts[i], &a[i])
			if err != nil {
				return types.NullDatum, err
			}
			key, ok := k.(string)
			if !ok {
				key = types.JSONText(k)
			}
			v, err := ToJSONValue(ts[i+1], &a[i+1])
			if err != nil {
				return types.NullDatum, err
			}
			obj[key] = v
			if jsonText {
				if i > 0 {
					b.WriteString(", ")
				}
				types.WriteJSONString(&b, key)
				b.WriteString(" : ")
				writeJSONText(&b, ts[i+1], &a[i+1], v)
			}
		}
		if jsonText {
			b.WriteByte('}')
			return types.DString(b.String()), nil
		}
		return types.DString(types.JSONText(obj)), nil
	}), nil
}

func resolveBuildArray(name string, args []Expr) (Expr, error) {
	cargs, ts, err := unknownAsText(args)
	if err != nil {
		return nil, err
	}
	jsonText := name == "json_build_array"
	return arrayCall(name, cargs, tJ, false, func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		vals, err := jsonValues(ts, a)
		if err != nil {
			return types.NullDatum, err
		}
		if !jsonText {
			return types.DString(types.JSONText(vals)), nil
		}
		var b bytes.Buffer
		b.WriteByte('[')
		for i := range vals {
			if i > 0 {
				b.WriteString(", ")
			}
			writeJSONText(&b, ts[i], &a[i], vals[i])
		}
		b.WriteByte(']')
		return types.DString(b.String()), nil
	}), nil
}

func resolveToJSON(name string, args []Expr) (Expr, error) {
	if len(args) != 1 {
		return nil, noFunction(name, exprTypes(args))
	}
	if args[0].Type().ID == types.Unknown {
		return nil, &types.Error{Kind: types.ErrIndeterminateDatatype, Msg: "could not determine polymorphic type because input has type unknown"}
	}
	t := args[0].Type()
	jsonText := name == "to_json"
	return arrayCall(name, args, tJ, true, func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		v, err := ToJSONValue(t, &a[0])
		if err != nil {
			return types.NullDatum, err
		}
		if jsonText {
			var b bytes.Buffer
			writeJSONText(&b, t, &a[0], v)
			return types.DString(b.String()), nil
		}
		return types.DString(types.JSONText(v)), nil
	}), nil
}

// writeJSONText writes v, made from d of type t, as PostgreSQL's json type
// prints it: a jsonb value as its text, an array without spaces ([1,2]).
func writeJSONText(b *bytes.Buffer, t types.T, d *types.Datum, v any) {
	switch {
	case d.Null:
		b.WriteString("null")
	case t.ID == types.Jsonb:
		b.WriteString(d.S)
	case t.ID == types.Array:
		b.WriteString(strings.NewReplacer(", ", ",", ": ", ":").Replace(types.JSONText(v)))
	default:
		b.WriteString(types.JSONText(v))
	}
}

func textArray(d *types.Datum) ([]types.Datum, error) {
	return types.DecodeArray(tS, d.S)
}

func jsonbExistsArr(all bool) rowFn {
	return func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		v, err := types.ParseJSONValue(a[0].S)
		if err != nil {
			return types.NullDatum, err
		}
		keys, err := textArray(&a[1])
		if err != nil {
			return types.NullDatum, err
		}
		for _, k := range keys {
			if k.Null {
				continue
			}
			has := jsonHasKey(v, k.S)
			if has && !all {
				return types.DBool(true), nil
			}
			if !has && all {
				return types.DBool(false), nil
			}
		}
		return types.DBool(all), nil
	}
}

func jsonHasKey(v any, k string) bool {
	switch x := v.(type) {
	case map[string]any:
		_, ok := x[k]
		return ok
	case []any:
		for _, e := range x {
			if s, ok := e.(string); ok && s == k {
				return true
			}
		}
	case string:
		return x == k
	}
	return false
}

// walkPath follows a text[] path through objects (keys) and arrays
// (integer indexes, negative from the end); ok is false when a step fails.
func walkPath(v any, path []types.Datum) (any, bool) {
	for _, p := range path {
		if p.Null {
			return nil, false
		}
		switch x := v.(type) {
		case map[string]any:
			e, ok := x[p.S]
			if !ok {
				return nil, false
			}
			v = e
		case []any:
			i, ok := pathIndex(p.S, len(x))
			if !ok || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// pathIndex reads an array index path element (negative counts from the end).
func pathIndex(s string, n int) (int, bool) {
	s = strings.TrimSpace(s)
	neg := strings.HasPrefix(s, "-")
	digits := strings.TrimPrefix(s, "-")
	if digits == "" || len(digits) > 9 {
		return 0, false
	}
	i := 0
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		i = i*10 + int(c-'0')
	}
	if neg {
		i = n - i
	}
	return i, true
}

func jsonbPath(asText bool) rowFn {
	return func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		v, err := types.ParseJSONValue(a[0].S)
		if err != nil {
			return types.NullDatum, err
		}
		path, err := textArray(&a[1])
		if err != nil {
			return types.NullDatum, err
		}
		r, ok := walkPath(v, path)
		if !ok {
			return types.NullDatum, nil
		}
		if asText {
			switch x := r.(type) {
			case nil:
				return types.NullDatum, nil
			case string:
				return types.DString(x), nil
			}
		}
		return types.DString(types.JSONText(r)), nil
	}
}

func jsonbDeleteKey(_ *Ctx, a []types.Datum) (types.Datum, error) {
	return jsonbDelete(a[0].S, []types.Datum{a[1]})
}

func jsonbDeleteKeys(_ *Ctx, a []types.Datum) (types.Datum, error) {
	keys, err := textArray(&a[1])
	if err != nil {
		return types.NullDatum, err
	}
	return jsonbDelete(a[0].S, keys)
}

func jsonbDelete(doc string, keys []types.Datum) (types.Datum, error) {
	v, err := types.ParseJSONValue(doc)
	if err != nil {
		return types.NullDatum, err
	}
	drop := func(s string) bool {
		for _, k := range keys {
			if !k.Null && k.S == s {
				return true
			}
		}
		return false
	}
	switch x := v.(type) {
	case map[string]any:
		for k := range x {
			if drop(k) {
				delete(x, k)
			}
		}
	case []any:
		out := x[:0]
		for _, e := range x {
			if s, ok := e.(string); ok && drop(s) {
				continue
			}
			out = append(out, e)
		}
		v = out
	default:
		return types.NullDatum, types.Errorf(types.ErrInvalidParameter, "cannot delete from scalar")
	}
	return types.DString(types.JSONText(v)), nil
}

func jsonbDeleteIndex(_ *Ctx, a []types.Datum) (types.Datum, error) {
	v, err := types.ParseJSONValue(a[0].S)
	if err != nil {
		return types.NullDatum, err
	}
	switch x := v.(type) {
	case []any:
		i := int(a[1].I)
		if i < 0 {
			i += len(x)
		}
		if i >= 0 && i < len(x) {
			x = append(x[:i:i], x[i+1:]...)
		}
		return types.DString(types.JSONText(x)), nil
	case map[string]any:
		return types.NullDatum, types.Errorf(types.ErrInvalidParameter, "cannot delete from object using integer index")
	}
	return types.NullDatum, types.Errorf(types.ErrInvalidParameter, "cannot delete from scalar")
}

func jsonbDeletePath(_ *Ctx, a []types.Datum) (types.Datum, error) {
	v, err := types.ParseJSONValue(a[0].S)
	if err != nil {
		return types.NullDatum, err
	}
	path, err := textArray(&a[1])
	if err != nil {
		return types.NullDatum, err
	}
	switch v.(type) {
	case map[string]any, []any:
	default:
		return types.NullDatum, types.Errorf(types.ErrInvalidParameter, "cannot delete path in scalar")
	}
	if len(path) == 0 {
		return a[0], nil
	}
	parent, ok := walkPath(v, path[:len(path)-1])
	if ok {
		last := path[len(path)-1]
		switch x := parent.(type) {
		case map[string]any:
			if !last.Null {
				delete(x, last.S)
			}
		case []any:
			// Arrays are values: rebuild the document with the element removed.
			if i, ok := pathIndex(last.S, len(x)); ok && i >= 0 && i < len(x) {
				nx := append(append([]any{}, x[:i]...), x[i+1:]...)
				v = replaceAt(v, path[:len(path)-1], nx)
			}
		}
	}
	return types.DString(types.JSONText(v)), nil
}

// replaceAt returns v with the value at path (which exists) replaced by nv.
func replaceAt(v any, path []types.Datum, nv any) any {
	if len(path) == 0 {
		return nv
	}
	switch x := v.(type) {
	case map[string]any:
		x[path[0].S] = replaceAt(x[path[0].S], path[1:], nv)
		return x
	case []any:
		i, _ := pathIndex(path[0].S, len(x))
		x[i] = replaceAt(x[i], path[1:], nv)
		return x
	}
	return v
}

// jsonbSet is jsonb_set(target, path, new [, create_missing]).
func jsonbSet(_ *Ctx, a []types.Datum) (types.Datum, error) {
	v, err := types.ParseJSONValue(a[0].S)
	if err != nil {
		return types.NullDatum, err
	}
	path, err := textArray(&a[1])
	if err != nil {
		return types.NullDatum, err
	}
	nv, err := types.ParseJSONValue(a[2].S)
	if err != nil {
		return types.NullDatum, err
	}
	create := len(a) < 4 || a[3].I != 0
	switch v.(type) {
	case map[string]any, []any:
	default:
		return types.NullDatum, types.Errorf(types.ErrInvalidParameter, "cannot set path in scalar")
	}
	for i, p := range path {
		if p.Null {
			return types.NullDatum, types.Errorf(types.ErrInvalidParameter, "path element at position %d is null", i+1)
		}
	}
	r, err := setPath(v, path, 0, nv, create)
	if err != nil {
		return types.NullDatum, err
	}
	return types.DString(types.JSONText(r)), nil
}

func setPath(v any, path []types.Datum, lvl int, nv any, create bool) (any, error) {
	if lvl == len(path) {
		return nv, nil
	}
	p := path[lvl].S
	switch x := v.(type) {
	case map[string]any:
		e, ok := x[p]
		if !ok {
			if create && lvl == len(path)-1 {
				x[p] = nv
			}
			return x, nil
		}
		r, err := setPath(e, path, lvl+1, nv, create)
		if err != nil {
			return nil, err
		}
		x[p] = r
		return x, nil
	case []any:
		i, ok := pathIndex(p, len(x))
		if !ok {
			return nil, types.Errorf(types.ErrInvalidText,
				"path element at position %d is not an integer: \"%s\"", lvl+1, p)
		}
		if i < 0 || i >= len(x) {
			if create && lvl == len(path)-1 {
				if i < 0 {
					return append([]any{nv}, x...), nil
				}
				return append(x, nv), nil
			}
			return x, nil
		}
		r, err := setPath(x[i], path, lvl+1, nv, create)
		if err != nil {
			return nil, err
		}
		x[i] = r
		return x, nil
	}
	return v, nil
}

func stripNulls(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if e == nil {
				delete(x, k)
				continue
			}
			x[k] = stripNulls(e)
		}
	case []any:
		for i, e := range x {
			x[i] = stripNulls(e)
		}
	}
	return v
}

// writePretty writes v as jsonb_pretty does: four-space indentation, one
// member per line, empty containers as {} and [].
func writePretty(b *strings.Builder, v any, indent int) {
	pad := func(n int) { b.WriteString(strings.Repeat("    ", n)) }
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 {
			b.WriteString("{\n")
			pad(indent)
			b.WriteString("}")
			return
		}
		keys := sortedJSONKeys(x)
		b.WriteString("{\n")
		for i, k := range keys {
			if i > 0 {
				b.WriteString(",\n")
			}
			pad(indent + 1)
			var kb bytes.Buffer
			types.WriteJSONString(&kb, k)
			b.WriteString(kb.String())
			b.WriteString(": ")
			writePretty(b, x[k], indent+1)
		}
		b.WriteString("\n")
		pad(indent)
		b.WriteString("}")
	case []any:
		if len(x) == 0 {
			b.WriteString("[\n")
			pad(indent)
			b.WriteString("]")
			return
		}
		b.WriteString("[\n")
		for i, e := range x {
			if i > 0 {
				b.WriteString(",\n")
			}
			pad(indent + 1)
			writePretty(b, e, indent+1)
		}
		b.WriteString("\n")
		pad(indent)
		b.WriteString("]")
	default:
		b.WriteString(types.JSONText(v))
	}
}

func sortedJSONKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && jsonKeyLess(keys[j], keys[j-1]); j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}

func jsonKeyLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

// jsonContains reports whether a contains b as jsonb @> defines it.
func jsonContains(a, b any, top bool) bool {
	switch y := b.(type) {
	case map[string]any:
		x, ok := a.(map[string]any)
		if !ok {
			return false
		}
		for k, bv := range y {
			av, ok := x[k]
			if !ok || !jsonContains(av, bv, false) {
				return false
			}
		}
		return true
	case []any:
		x, ok := a.([]any)
		if !ok {
			return false
		}
		for _, bv := range y {
			found := false
			for _, av := range x {
				// Scalars in b match scalars in a; containers match containers.
				if jsonContains(av, bv, false) {
					found = true
					break
				}
			}
			if !found {
				return false
			}
		}
		return true
	}
	// b is a scalar: a contains it if equal, or (at the top level) if a is an
	// array holding it.
	if x, ok := a.([]any); ok && top {
		for _, av := range x {
			if jsonScalarEq(av, b) {
				return true
			}
		}
		return false
	}
	return jsonScalarEq(a, b)
}

func jsonScalarEq(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case string:
		y, ok := b.(string)
		return ok && x == y
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		var dx, dy types.Datum
		if _, _, err := dx.Dec.SetString(string(x)); err != nil {
			return false
		}
		if _, _, err := dy.Dec.SetString(string(y)); err != nil {
			return false
		}
		return dx.Dec.Cmp(&dy.Dec) == 0
	}
	return false
}

// jsonbContainment is @> or <@ over two jsonb values.
func jsonbContainment(name string, args []Expr) (Expr, error) {
	cargs := make([]Expr, 2)
	for i, e := range args {
		c, err := coerce(e, tJ)
		if err != nil {
			return nil, noFunction(name, exprTypes(args))
		}
		cargs[i] = c
	}
	return arrayCall(name, cargs, tB, true, func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		x, err := types.ParseJSONValue(a[0].S)
		if err != nil {
			return types.NullDatum, err
		}
		y, err := types.ParseJSONValue(a[1].S)
		if err != nil {
			return types.NullDatum, err
		}
		if name == "<@" {
			x, y = y, x
		}
		return types.DBool(jsonContains(x, y, true)), nil
	}), nil
}
