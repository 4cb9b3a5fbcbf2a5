package expr

import (
	"strconv"

	"github.com/tributary/tributary/sql/types"
)

// Struct values: the row constructor ROW(a, b) (and (a, b)), pg__row, whose
// fields are named f1, f2, ... as PostgreSQL names an anonymous record's;
// field access (s).name, pg__field(s, 'name'); and casts between struct
// types of as many fields, field by field.

func init() {
	specials["pg__row"] = resolveRow
	specials["pg__field"] = resolveField
}

func resolveRow(name string, args []Expr) (Expr, error) {
	if len(args) == 0 {
		return nil, types.Errorf(types.ErrUnsupported, "empty row constructors are not supported")
	}
	fs := make([]types.StructField, len(args))
	cargs := make([]Expr, len(args))
	for i, a := range args {
		if k, ok := a.(*Const); a.Type().ID == types.Unknown && !(ok && k.Value.Null) {
			// A string literal is text; a bare NULL stays unknown, so that
			// ROW(1, NULL) compares with ROW(1, 3) and casts to any struct.
			c, err := Cast(a, tS)
			if err != nil {
				return nil, err
			}
			a = c
		}
		cargs[i] = a
		fs[i] = types.StructField{Name: "f" + strconv.Itoa(i+1), Type: a.Type()}
	}
	st := types.StructOf(fs)
	return arrayCall(name, cargs, st, false, func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		return types.DString(types.EncodeStruct(st, a)), nil
	}), nil
}

// resolveField binds pg__field(s, 'name'): the named field of a struct.
func resolveField(name string, args []Expr) (Expr, error) {
	if len(args) != 2 {
		return nil, noFunction(name, exprTypes(args))
	}
	k, ok := args[1].(*Const)
	if !ok || k.Value.Null {
		return nil, types.Errorf(types.ErrInternal, "malformed field access")
	}
	field := k.Value.S
	st := args[0].Type()
	if st.ID != types.Struct {
		return nil, types.Errorf(types.ErrWrongObjectType, "column notation .%s applied to type %s, which is not a composite type", field, st)
	}
	fs := st.StructFields()
	idx := -1
	for i, f := range fs {
		if f.Name == field {
			idx = i
			break
		}
	}
	if idx < 0 {
		return nil, types.Errorf(types.ErrUndefinedColumn, "column \"%s\" not found in data type %s", field, st)
	}
	ft := fs[idx].Type
	return &FuncExpr{Name: name, Args: args, depth: argDepth(args), Ret: ft, strict: true,
		row: func(_ *Ctx, a []types.Datum) (types.Datum, error) {
			vals, err := types.DecodeStruct(st, a[0].S)
			if err != nil {
				return types.NullDatum, err
			}
			return vals[idx], nil
		}}, nil
}

// structCastClass is the weakest mode in which struct type from converts to
// struct type to (0: never): as many fields, each convertible; at least an
// assignment (PostgreSQL's record-to-composite conversion).
func structCastClass(from, to types.T) castMode {
	ff, tf := from.StructFields(), to.StructFields()
	if len(ff) != len(tf) {
		return 0
	}
	mode := castAssign
	for i := range ff {
		m := castClass(ff[i].Type.ID, tf[i].Type.ID)
		if ff[i].Type.ID == types.Struct && tf[i].Type.ID == types.Struct {
			m = structCastClass(ff[i].Type, tf[i].Type)
		}
		if m == 0 {
			return 0
		}
		mode = max(mode, m)
	}
	return mode
}

// structCast converts field by field.
func structCast(from, to types.T, explicit bool) castFn {
	ff, tf := from.StructFields(), to.StructFields()
	fns := make([]castFn, len(ff))
	for i := range ff {
		fns[i] = castFunc(ff[i].Type, tf[i].Type, explicit)
	}
	return func(ctx *Ctx, d *types.Datum) (types.Datum, error) {
		vals, err := types.DecodeStruct(from, d.S)
		if err != nil {
			return types.NullDatum, err
		}
		for i := range vals {
			if vals[i].Null || fns[i] == nil {
				continue
			}
			if vals[i], err = fns[i](ctx, &vals[i]); err != nil {
				return types.NullDatum, err
			}
		}
		return types.DString(types.EncodeStruct(to, vals)), nil
	}
}

// commonStruct is the common type of two struct types of as many fields:
// a's names, each field's common type.
func commonStruct(a, b types.T) (types.T, error) {
	fa, fb := a.StructFields(), b.StructFields()
	if len(fa) != len(fb) {
		return types.TUnknown, types.Errorf(types.ErrDatatypeMismatch, "types %s and %s cannot be matched", a, b)
	}
	out := make([]types.StructField, len(fa))
	for i := range fa {
		t, err := CommonType([]types.T{fa[i].Type, fb[i].Type})
		if err != nil {
			return types.TUnknown, err
		}
		out[i] = types.StructField{Name: fa[i].Name, Type: t}
	}
	return types.StructOf(out), nil
}
