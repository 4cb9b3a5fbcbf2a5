package expr

import (
	"strings"

	"github.com/tributary/tributary/sql/types"
)

// Array constructors, operators and functions. They are polymorphic
// (PostgreSQL's anyarray and anyelement), so each has a resolver in specials
// that settles the element type from its arguments.

func init() {
	specials["pg__array"] = resolveArrayCtor
	specials["pg__subscript"] = resolveSubscript
	specials["pg__slice"] = resolveSlice
	specials["@>"] = resolveContainment
	specials["<@"] = resolveContainment
	specials["&&"] = resolveContainment
	specials["array_length"] = resolveArrayLength
	specials["array_upper"] = resolveArrayLength
	specials["array_lower"] = resolveArrayLength
	specials["cardinality"] = resolveArrayUnary
	specials["array_ndims"] = resolveArrayUnary
	specials["array_dims"] = resolveArrayUnary
	specials["array_append"] = resolveArrayElem
	specials["array_prepend"] = resolveArrayElem
	specials["array_remove"] = resolveArrayElem
	specials["array_position"] = resolveArrayElem
	specials["array_positions"] = resolveArrayElem
	specials["array_cat"] = resolveArrayCat
	specials["array_to_string"] = resolveArrayToString
	specials["string_to_array"] = resolveStringToArray
	specials["array_replace"] = resolveArrayReplace
	specials["trim_array"] = resolveTrimArray
	tSA := types.ArrayOf(tS)
	// regexp_match(s, p): the capture groups of the first match (the whole
	// match when the pattern has none), NULL for a group that did not take
	// part; NULL without a match. (regexp_match(s, p)[n] is rewritten by the
	// parser into pg__regexp_match_group.)
	def("regexp_match", tSA, tS, tS).r(func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		re, err := compileRegex(a[1].S, false)
		if err != nil {
			return types.NullDatum, err
		}
		m := re.FindStringSubmatchIndex(a[0].S)
		if m == nil {
			return types.NullDatum, nil
		}
		if re.NumSubexp() == 0 {
			return arrayDatum(tS, []types.Datum{types.DString(a[0].S[m[0]:m[1]])}), nil
		}
		vals := make([]types.Datum, re.NumSubexp())
		for g := range vals {
			if lo, hi := m[2*g+2], m[2*g+3]; lo >= 0 {
				vals[g] = types.DString(a[0].S[lo:hi])
			} else {
				vals[g] = types.NullDatum
			}
		}
		return arrayDatum(tS, vals), nil
	})
	def("regexp_split_to_array", tSA, tS, tS).r(func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		re, err := compileRegex(a[1].S, false)
		if err != nil {
			return types.NullDatum, err
		}
		parts := re.Split(a[0].S, -1)
		vals := make([]types.Datum, len(parts))
		for i, p := range parts {
			vals[i] = types.DString(p)
		}
		return arrayDatum(tS, vals), nil
	})
	infixOps["@>"] = "@>"
	infixOps["<@"] = "<@"
	infixOps["&&"] = "&&"
}

// errNotArray is PostgreSQL's error for an array operation on a non-array.
func errNotArray(t types.T) error {
	return types.Errorf(types.ErrDatatypeMismatch, "cannot subscript type %s because it does not support subscripting", t)
}

func arrayCall(name string, args []Expr, ret types.T, strict bool, row rowFn) *FuncExpr {
	return &FuncExpr{Name: name, Args: args, depth: argDepth(args), Ret: ret, strict: strict, row: row}
}

func decode(t types.T, d *types.Datum) ([]types.Datum, error) {
	return types.DecodeArray(t.ElemType(), d.S)
}

func arrayDatum(elem types.T, vals []types.Datum) types.Datum {
	return types.DString(types.EncodeArray(elem, vals))
}

// asArray coerces e to an array: an array stays, an unknown literal or
// parameter becomes want (when want is an array type).
func asArray(e Expr, want types.T) (Expr, bool) {
	t := e.Type()
	switch {
	case t.ID == types.Array && (want.ID != types.Array || t.Elem == want.Elem):
		return e, true
	case t.ID == types.Array:
		c, err := coerce(e, want)
		return c, err == nil
	case t.ID == types.Unknown && want.ID == types.Array:
		c, err := castExpr(e, want, castImplicit)
		return c, err == nil
	}
	return e, false
}

// literalErr is the error reading an unknown literal among args as an
// array of type t ('{1,x}'::int[]: 22P02), nil when none fails.
func literalErr(args []Expr, t types.T) error {
	for _, a := range args {
		if a.Type().ID == types.Unknown && t.ID == types.Array {
			if _, err := castExpr(a, t, castImplicit); err != nil {
				return err
			}
		}
	}
	return nil
}

func resolveArrayCtor(name string, args []Expr) (Expr, error) {
	if len(args) == 0 {
		return nil, types.Errorf(types.ErrIndeterminateDatatype, "cannot determine type of empty array")
	}
	ts := exprTypes(args)
	for _, t := range ts {
		if t.ID == types.Array {
			return nil, types.Errorf(types.ErrUnsupported, "multidimensional arrays are not supported")
		}
	}
	elem, err := CommonType(ts)
	if err != nil {
		return nil, err
	}
	cargs, err := coerceAll(args, elem)
	if err != nil {
		return nil, err
	}
	return arrayCall(name, cargs, types.ArrayOf(elem), false, func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		return arrayDatum(elem, a), nil
	}), nil
}

func subscriptIndex(args []Expr, i int) (Expr, error) {
	if args[i].Type().ID == types.Int32 {
		return args[i], nil
	}
	c, err := castExpr(args[i], types.TInt32, castAssign)
	if err != nil {
		return nil, types.Errorf(types.ErrDatatypeMismatch, "array subscript must have type integer")
	}
	return c, nil
}

func resolveSubscript(name string, args []Expr) (Expr, error) {
	if len(args) != 2 {
		return nil, types.Errorf(types.ErrUnsupported, "multidimensional subscripts are not supported")
	}
	at := args[0].Type()
	if at.ID != types.Array {
		return nil, errNotArray(at)
	}
	idx, err := subscriptIndex(args, 1)
	if err != nil {
		return nil, err
	}
	cargs := []Expr{args[0], idx}
	return arrayCall(name, cargs, at.ElemType(), true, func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		vals, err := decode(at, &a[0])
		if err != nil {
			return types.NullDatum, err
		}
		i := a[1].I
		if i < 1 || i > int64(len(vals)) {
			return types.NullDatum, nil
		}
		return vals[i-1], nil
	}), nil
}

func resolveSlice(name string, args []Expr) (Expr, error) {
	at := args[0].Type()
	if at.ID != types.Array {
		return nil, errNotArray(at)
	}
	lo, err := subscriptIndex(args, 1)
	if err != nil {
		return nil, err
	}
	hi, err := subscriptIndex(args, 2)
	if err != nil {
		return nil, err
	}
	elem := at.ElemType()
	cargs := []Expr{args[0], lo, hi}
	return arrayCall(name, cargs, at, false, func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		if a[0].Null {
			return types.NullDatum, nil
		}
		vals, err := decode(at, &a[0])
		if err != nil {
			return types.NullDatum, err
		}
		from, to := int64(1), int64(len(vals))
		if !a[1].Null {
			from = max(from, a[1].I)
		}
		if !a[2].Null {
			to = min(to, a[2].I)
		}
		if from > to {
			return arrayDatum(elem, nil), nil
		}
		return arrayDatum(elem, vals[from-1:to]), nil
	}), nil
}

// arrayPair coerces two array arguments (or an array and an unknown
// literal) to one array type.
func arrayPair(name string, args []Expr) ([]Expr, types.T, error) {
	if len(args) != 2 {
		return nil, types.TUnknown, noFunction(name, exprTypes(args))
	}
	t0, t1 := args[0].Type(), args[1].Type()
	var t types.T
	switch {
	case t0.ID == types.Array && t1.ID == types.Array:
		var err error
		if t, err = CommonType([]types.T{t0, t1}); err != nil {
			return nil, t, noFunction(name, exprTypes(args))
		}
	case t0.ID == types.Array && t1.ID == types.Unknown:
		t = t0
	case t1.ID == types.Array && t0.ID == types.Unknown:
		t = t1
	default:
		return nil, t, noFunction(name, exprTypes(args))
	}
	out := make([]Expr, 2)
	for i, a := range args {
		c, ok := asArray(a, t)
		if !ok {
			if err := literalErr(args, t); err != nil {
				return nil, t, err
			}
			return nil, t, noFunction(name, exprTypes(args))
		}
		out[i] = c
	}
	return out, t, nil
}

// containsAll reports whether every element of the array value sub is in
// the array value super (PostgreSQL's @>: a NULL element matches nothing).
// It walks the encodings without building slices.
func containsAll(elem types.T, super, sub string) (bool, error) {
	all := true
	var innerErr error
	err := types.ForEachElem(elem, sub, func(x *types.Datum) bool {
		if x.Null {
			all = false
			return false
		}
		found := false
		if innerErr = types.ForEachElem(elem, super, func(y *types.Datum) bool {
			found = !y.Null && types.CompareNonNull(elem, x, y) == 0
			return !found
		}); innerErr != nil || !found {
			all = false
			return false
		}
		return true
	})
	if err == nil {
		err = innerErr
	}
	return all, err
}

// overlaps reports whether the array values share a non-NULL element (&&).
func overlaps(elem types.T, a, b string) (bool, error) {
	found := false
	var innerErr error
	err := types.ForEachElem(elem, a, func(x *types.Datum) bool {
		if x.Null {
			return true
		}
		innerErr = types.ForEachElem(elem, b, func(y *types.Datum) bool {
			found = !y.Null && types.CompareNonNull(elem, x, y) == 0
			return !found
		})
		return !found && innerErr == nil
	})
	if err == nil {
		err = innerErr
	}
	return found, err
}

func resolveContainment(name string, args []Expr) (Expr, error) {
	if len(args) == 2 && name != "&&" && (args[0].Type().ID == types.Jsonb || args[1].Type().ID == types.Jsonb) {
		return jsonbContainment(name, args)
	}
	cargs, t, err := arrayPair(name, args)
	if err != nil {
		return nil, err
	}
	elem := t.ElemType()
	return arrayCall(name, cargs, tB, true, func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		var r bool
		var err error
		switch name {
		case "@>":
			r, err = containsAll(elem, a[0].S, a[1].S)
		case "<@":
			r, err = containsAll(elem, a[1].S, a[0].S)
		default:
			r, err = overlaps(elem, a[0].S, a[1].S)
		}
		if err != nil {
			return types.NullDatum, err
		}
		return types.DBool(r), nil
	}), nil
}

func resolveArrayLength(name string, args []Expr) (Expr, error) {
	if len(args) != 2 || args[0].Type().ID != types.Array {
		return nil, noFunction(name, exprTypes(args))
	}
	dim, err := coerce(args[1], types.TInt32)
	if err != nil {
		return nil, noFunction(name, exprTypes(args))
	}
	cargs := []Expr{args[0], dim}
	return arrayCall(name, cargs, tI4, true, func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		n := types.ArrayLen(a[0].S)
		if a[1].I != 1 || n == 0 {
			return types.NullDatum, nil
		}
		if name == "array_lower" {
			return types.DInt(1), nil
		}
		return types.DInt(int64(n)), nil
	}), nil
}

func resolveArrayUnary(name string, args []Expr) (Expr, error) {
	if len(args) != 1 || args[0].Type().ID != types.Array {
		return nil, noFunction(name, exprTypes(args))
	}
	ret := tI4
	if name == "array_dims" {
		ret = tS
	}
	return arrayCall(name, args, ret, true, func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		n := types.ArrayLen(a[0].S)
		switch name {
		case "cardinality":
			return types.DInt(int64(n)), nil
		case "array_ndims":
			if n == 0 {
				return types.NullDatum, nil
			}
			return types.DInt(1), nil
		}
		if n == 0 {
			return types.NullDatum, nil
		}
		return types.DString("[1:" + itoa(n) + "]"), nil
	}), nil
}

func itoa(n int) string { return types.FormatText(types.TInt64, &types.Datum{I: int64(n)}) }

// arrayAndElem resolves (anyarray, anyelement): the array's element type
// rules, an unknown array adopts the element's.
func arrayAndElem(name string, arr, el Expr) (Expr, Expr, types.T, error) {
	at := arr.Type()
	et := el.Type()
	if at.ID == types.Unknown && et.ID != types.Unknown && et.ID != types.Array {
		at = types.ArrayOf(et)
	}
	if at.ID == types.Array && et.ID != types.Unknown && et.ID != at.Elem {
		// PostgreSQL's anycompatiblearray and anycompatible: both take the
		// common type (int[] || bigint is bigint[]).
		common, err := CommonType([]types.T{at.ElemType(), et})
		if err != nil || common.ID == types.Array {
			return nil, nil, at, noFunction(name, []types.T{arr.Type(), et})
		}
		at = types.ArrayOf(common)
	}
	if at.ID != types.Array {
		return nil, nil, at, noFunction(name, []types.T{arr.Type(), el.Type()})
	}
	a, ok := asArray(arr, at)
	if !ok {
		return nil, nil, at, noFunction(name, []types.T{arr.Type(), el.Type()})
	}
	e, err := coerce(el, at.ElemType())
	if err != nil {
		return nil, nil, at, noFunction(name, []types.T{arr.Type(), el.Type()})
	}
	return a, e, at, nil
}

func resolveArrayElem(name string, args []Expr) (Expr, error) {
	arrAt, elAt := 0, 1
	if name == "array_prepend" {
		arrAt, elAt = 1, 0
	}
	if len(args) < 2 || len(args) > 3 || len(args) == 3 && name != "array_position" {
		return nil, noFunction(name, exprTypes(args))
	}
	arr, el, at, err := arrayAndElem(name, args[arrAt], args[elAt])
	if err != nil {
		return nil, err
	}
	elem := at.ElemType()
	cargs := make([]Expr, 2, 3)
	cargs[arrAt], cargs[elAt] = arr, el
	if len(args) == 3 {
		start, err := coerce(args[2], types.TInt32)
		if err != nil {
			return nil, noFunction(name, exprTypes(args))
		}
		cargs = append(cargs, start)
	}
	switch name {
	case "array_append", "array_prepend":
		return arrayCall(name, cargs, at, false, func(_ *Ctx, a []types.Datum) (types.Datum, error) {
			var vals []types.Datum
			if !a[arrAt].Null {
				var err error
				if vals, err = decode(at, &a[arrAt]); err != nil {
					return types.NullDatum, err
				}
			}
			if name == "array_append" {
				vals = append(vals, a[elAt])
			} else {
				vals = append([]types.Datum{a[elAt]}, vals...)
			}
			return arrayDatum(elem, vals), nil
		}), nil
	case "array_remove":
		return arrayCall(name, cargs, at, false, func(_ *Ctx, a []types.Datum) (types.Datum, error) {
			if a[0].Null {
				return types.NullDatum, nil
			}
			vals, err := decode(at, &a[0])
			if err != nil {
				return types.NullDatum, err
			}
			out := vals[:0]
			for i := range vals {
				if !types.Equal(elem, &vals[i], &a[1]) { // IS NOT DISTINCT FROM
					out = append(out, vals[i])
				}
			}
			return arrayDatum(elem, out), nil
		}), nil
	}
	ret := tI4
	if name == "array_positions" {
		ret = types.ArrayOf(tI4)
	}
	return arrayCall(name, cargs, ret, false, func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		if a[0].Null {
			return types.NullDatum, nil
		}
		vals, err := decode(at, &a[0])
		if err != nil {
			return types.NullDatum, err
		}
		start := 0
		if len(a) == 3 {
			if a[2].Null {
				return types.NullDatum, types.Errorf(types.ErrInvalidParameter, "initial position must not be null")
			}
			start = max(0, int(a[2].I)-1)
		}
		var found []types.Datum
		for i := start; i < len(vals); i++ {
			if types.Equal(elem, &vals[i], &a[1]) {
				if name == "array_position" {
					return types.DInt(int64(i + 1)), nil
				}
				found = append(found, types.DInt(int64(i+1)))
			}
		}
		if name == "array_position" {
			return types.NullDatum, nil
		}
		return arrayDatum(tI4, found), nil
	}), nil
}

// resolveArrayReplace is array_replace(a, from, to): every element not
// distinct from from becomes to.
func resolveArrayReplace(name string, args []Expr) (Expr, error) {
	if len(args) != 3 {
		return nil, noFunction(name, exprTypes(args))
	}
	arr, from, at, err := arrayAndElem(name, args[0], args[1])
	if err != nil {
		return nil, err
	}
	to, err := coerce(args[2], at.ElemType())
	if err != nil {
		return nil, noFunction(name, exprTypes(args))
	}
	elem := at.ElemType()
	return arrayCall(name, []Expr{arr, from, to}, at, false, func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		if a[0].Null {
			return types.NullDatum, nil
		}
		vals, err := decode(at, &a[0])
		if err != nil {
			return types.NullDatum, err
		}
		for i := range vals {
			if types.Equal(elem, &vals[i], &a[1]) {
				vals[i] = a[2]
			}
		}
		return arrayDatum(elem, vals), nil
	}), nil
}

// resolveTrimArray is trim_array(a, n): a without its last n elements.
func resolveTrimArray(name string, args []Expr) (Expr, error) {
	if len(args) != 2 || args[0].Type().ID != types.Array {
		return nil, noFunction(name, exprTypes(args))
	}
	n, err := coerce(args[1], types.TInt32)
	if err != nil {
		return nil, noFunction(name, exprTypes(args))
	}
	at := args[0].Type()
	return arrayCall(name, []Expr{args[0], n}, at, true, func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		vals, err := decode(at, &a[0])
		if err != nil {
			return types.NullDatum, err
		}
		if a[1].I < 0 || a[1].I > int64(len(vals)) {
			return types.NullDatum, types.Errorf(types.ErrArraySubscript, "number of elements to trim must be between 0 and %d", len(vals))
		}
		return arrayDatum(at.ElemType(), vals[:int64(len(vals))-a[1].I]), nil
	}), nil
}

func resolveArrayCat(name string, args []Expr) (Expr, error) {
	cargs, t, err := arrayPair(name, args)
	if err != nil {
		return nil, err
	}
	elem := t.ElemType()
	return arrayCall(name, cargs, t, false, func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		if a[0].Null {
			return a[1], nil
		}
		if a[1].Null {
			return a[0], nil
		}
		x, err := decode(t, &a[0])
		if err != nil {
			return types.NullDatum, err
		}
		if x, err = types.AppendDecodedArray(x, elem, a[1].S); err != nil {
			return types.NullDatum, err
		}
		return arrayDatum(elem, x), nil
	}), nil
}

// resolveArrayConcat is || with an array on either side: array || array is
// array_cat, array || element array_append, element || array array_prepend.
// An unknown literal next to an array is an array, as in PostgreSQL.
func resolveArrayConcat(name string, args []Expr) (Expr, error) {
	t0, t1 := args[0].Type(), args[1].Type()
	switch {
	case t0.ID == types.Array && (t1.ID == types.Array || t1.ID == types.Unknown),
		t1.ID == types.Array && t0.ID == types.Unknown:
		e, err := resolveArrayCat(name, args)
		if err == nil {
			e.(*FuncExpr).Name = "||"
		}
		return e, err
	case t0.ID == types.Array:
		e, err := resolveArrayElem("array_append", args)
		if err == nil {
			e.(*FuncExpr).Name = "||"
		}
		return e, err
	}
	e, err := resolveArrayElem("array_prepend", args)
	if err == nil {
		e.(*FuncExpr).Name = "||"
	}
	return e, err
}

func resolveArrayToString(name string, args []Expr) (Expr, error) {
	if len(args) < 2 || len(args) > 3 || args[0].Type().ID != types.Array {
		return nil, noFunction(name, exprTypes(args))
	}
	at := args[0].Type()
	elem := at.ElemType()
	cargs := []Expr{args[0]}
	for _, a := range args[1:] {
		c, err := coerce(a, tS)
		if err != nil {
			return nil, noFunction(name, exprTypes(args))
		}
		cargs = append(cargs, c)
	}
	return arrayCall(name, cargs, tS, false, func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		if a[0].Null || a[1].Null {
			return types.NullDatum, nil
		}
		vals, err := decode(at, &a[0])
		if err != nil {
			return types.NullDatum, err
		}
		var b strings.Builder
		first := true
		for i := range vals {
			var s string
			if vals[i].Null {
				if len(a) < 3 || a[2].Null {
					continue
				}
				s = a[2].S
			} else {
				s = types.FormatText(elem, &vals[i])
			}
			if !first {
				b.WriteString(a[1].S)
			}
			first = false
			b.WriteString(s)
		}
		return types.DString(b.String()), nil
	}), nil
}

func resolveStringToArray(name string, args []Expr) (Expr, error) {
	if len(args) < 2 || len(args) > 3 {
		return nil, noFunction(name, exprTypes(args))
	}
	cargs := make([]Expr, len(args))
	for i, a := range args {
		c, err := coerce(a, tS)
		if err != nil {
			return nil, noFunction(name, exprTypes(args))
		}
		cargs[i] = c
	}
	return arrayCall(name, cargs, types.ArrayOf(tS), false, func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		if a[0].Null {
			return types.NullDatum, nil
		}
		s := a[0].S
		var parts []string
		switch {
		case s == "":
		case a[1].Null: // each character
			for _, r := range s {
				parts = append(parts, string(r))
			}
		case a[1].S == "":
			parts = []string{s}
		default:
			parts = strings.Split(s, a[1].S)
		}
		vals := make([]types.Datum, len(parts))
		for i, p := range parts {
			if len(a) == 3 && !a[2].Null && p == a[2].S {
				vals[i] = types.NullDatum
				continue
			}
			vals[i] = types.DString(p)
		}
		return arrayDatum(tS, vals), nil
	}), nil
}

// ArrayQuantified returns "left op ANY (array)" or "left op ALL (array)"
// over an array value, op resolved between left and the element type (an
// unknown array, a literal '{1,2}', takes left's type). ANY is true if some
// comparison is true, else NULL if some is NULL, else false (false for an
// empty array); ALL is false if some comparison is false, else NULL if some
// is NULL, else true.
func ArrayQuantified(left Expr, op string, all bool, arr Expr) (Expr, error) {
	if argDepth([]Expr{left, arr}) > types.MaxExprDepth {
		return nil, types.StackDepthError(types.MaxExprDepth, "expressions")
	}
	at := arr.Type()
	if at.ID == types.Unknown {
		lt := left.Type()
		if lt.ID == types.Unknown {
			lt = tS
		}
		c, err := castExpr(arr, types.ArrayOf(lt), castImplicit)
		if err != nil {
			return nil, err
		}
		arr, at = c, c.Type()
	}
	if at.ID != types.Array {
		return nil, types.Errorf(types.ErrDatatypeMismatch, "op ANY/ALL (array) requires array on right side")
	}
	cmp, err := Call(op, []Expr{Column(0, left.Type()), Column(1, at.ElemType())})
	if err != nil {
		return nil, err
	}
	if cmp.Type().ID != types.Bool {
		return nil, types.Errorf(types.ErrDatatypeMismatch, "op ANY/ALL (array) requires operator to yield boolean")
	}
	name := op + " ANY"
	if all {
		name = op + " ALL"
	}
	elem := at.ElemType()
	// A comparison between values of one type compares them directly.
	direct := left.Type().ID == elem.ID && isCompareOp(op)
	tbl := cmpTable(op)
	args := []Expr{left, arr}
	return arrayCall(name, args, tB, false, func(ctx *Ctx, a []types.Datum) (types.Datum, error) {
		if a[1].Null {
			return types.NullDatum, nil
		}
		sawNull, done := false, false
		var evalErr error
		pair := [2]types.Datum{a[0]}
		err := types.ForEachElem(elem, a[1].S, func(d *types.Datum) bool {
			var r types.Datum
			switch {
			case direct && (a[0].Null || d.Null):
				r.Null = true
			case direct:
				r = types.DBool(tbl[types.CompareNonNull(elem, &a[0], d)+1])
			default:
				pair[1] = *d
				if r, evalErr = cmp.EvalRow(ctx, pair[:]); evalErr != nil {
					return false
				}
			}
			switch {
			case r.Null:
				sawNull = true
			case (r.I != 0) != all:
				done = true
				return false
			}
			return true
		})
		switch {
		case err != nil:
			return types.NullDatum, err
		case evalErr != nil:
			return types.NullDatum, evalErr
		case done:
			return types.DBool(!all), nil
		case sawNull:
			return types.NullDatum, nil
		}
		return types.DBool(all), nil
	}), nil
}

func isCompareOp(op string) bool {
	switch op {
	case "=", "<>", "<", "<=", ">", ">=":
		return true
	}
	return false
}
