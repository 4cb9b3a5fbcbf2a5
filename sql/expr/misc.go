package expr

import (
	"context"
	"fmt"
	"time"

	"github.com/tributary/tributary/sql/types"
)

// Version is what version() reports; PostgreSQL clients parse the leading
// "PostgreSQL <major>.<minor>".
const Version = "PostgreSQL 15.0-Tributary on x86_64-pc-linux-gnu, compiled by Go"

func init() {
	str := func(s string) rowFn {
		return func(*Ctx, []types.Datum) (types.Datum, error) { return types.DString(s), nil }
	}
	def("version", tS).r(str(Version))
	def("current_schema", tS).r(str("public")).vol_(Stable)
	def("current_database current_catalog", tS).r(func(ctx *Ctx, _ []types.Datum) (types.Datum, error) {
		if ctx.Database == "" {
			return types.DString("dev"), nil
		}
		return types.DString(ctx.Database), nil
	}).vol_(Stable)
	def("current_user user current_role", tS).r(func(ctx *Ctx, _ []types.Datum) (types.Datum, error) {
		if ctx.User == "" {
			return types.DString("root"), nil
		}
		return types.DString(ctx.User), nil
	}).vol_(Stable)
	def("session_user", tS).r(func(ctx *Ctx, _ []types.Datum) (types.Datum, error) {
		switch {
		case ctx.SessionUser != "":
			return types.DString(ctx.SessionUser), nil
		case ctx.User != "":
			return types.DString(ctx.User), nil
		}
		return types.DString("root"), nil
	}).vol_(Stable)
	def("pg_backend_pid", tI4).r(func(ctx *Ctx, _ []types.Datum) (types.Datum, error) {
		return types.DInt(int64(ctx.BackendPID)), nil
	}).vol_(Stable)
	signal := func(terminate bool) rowFn {
		return func(ctx *Ctx, a []types.Datum) (types.Datum, error) {
			if ctx.Backends == nil {
				return types.DBool(false), nil
			}
			ok, err := ctx.Backends.Signal(int32(a[0].I), terminate)
			if err != nil {
				return types.Datum{}, err
			}
			return types.DBool(ok), nil
		}
	}
	comment := func(text string, ok bool) types.Datum {
		if !ok {
			return types.NullDatum
		}
		return types.DString(text)
	}
	objDescription := func(ctx *Ctx, a []types.Datum) (types.Datum, error) {
		if ctx.Comments == nil || len(a) > 1 && a[1].S != "pg_class" {
			return types.NullDatum, nil
		}
		return comment(ctx.Comments.RelationComment(a[0].I)), nil
	}
	def("obj_description", tS, tI4, tS).r(objDescription).vol_(Stable)
	def("obj_description", tS, tI4).r(objDescription).vol_(Stable)
	def("col_description", tS, tI4, tI4).r(func(ctx *Ctx, a []types.Datum) (types.Datum, error) {
		if ctx.Comments == nil {
			return types.NullDatum, nil
		}
		return comment(ctx.Comments.ColumnComment(a[0].I, a[1].I)), nil
	}).vol_(Stable)
	def("pg_cancel_backend", tB, tI4).r(signal(false)).vol_(Volatile)
	def("pg_terminate_backend", tB, tI4).r(signal(true)).vol_(Volatile)
	def("pg_terminate_backend", tB, tI4, tI8).r(signal(true)).vol_(Volatile)
	// pg_sleep returns void in PostgreSQL; here an empty string, which
	// clients print the same way.
	def("pg_sleep", tS, tF8).r(func(ctx *Ctx, a []types.Datum) (types.Datum, error) {
		secs := a[0].F
		if !(secs > 0) {
			return types.DString(""), nil
		}
		d := time.Duration(min(secs, 1e9) * float64(time.Second))
		done := context.Background().Done()
		if ctx.Context != nil {
			done = ctx.Context.Done()
		}
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return types.DString(""), nil
		case <-done:
			return types.Datum{}, types.Errorf(types.ErrQueryCanceled, "canceling statement due to user request")
		}
	}).vol_(Volatile)
	specials["pg_typeof"] = func(name string, args []Expr) (Expr, error) {
		if len(args) != 1 {
			return nil, noFunction(name, exprTypes(args))
		}
		s := args[0].Type().String()
		return &FuncExpr{Name: name, Args: args, depth: argDepth(args), Ret: tS, row: str(s)}, nil
	}
}

func init() {
	// format_type(type oid, typmod): the type's name as PostgreSQL prints it
	// (NULL for a NULL oid; a NULL typmod is none).
	def("format_type", tS, tI8, tI8).r(func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		if a[0].Null {
			return types.NullDatum, nil
		}
		typmod := int32(-1)
		if !a[1].Null {
			typmod = int32(a[1].I)
		}
		return types.DString(formatType(uint32(a[0].I), typmod)), nil
	}).nonStrict = true
}

// formatType is PostgreSQL's format_type for the types Tributary knows, and
// "???" for other oids, as PostgreSQL prints an unknown one.
func formatType(oid uint32, typmod int32) string {
	if e := types.ElemOID(oid); e != 0 {
		return formatType(e, typmod) + "[]"
	}
	switch oid {
	case 0:
		return "-"
	case types.OIDText:
		return "text"
	case types.OIDName:
		return "name"
	case types.OIDOid:
		return "oid"
	case types.OIDRegclass:
		return "regclass"
	case 2206:
		return "regtype"
	case types.OIDJSON:
		return "json"
	case types.OIDUnknown:
		return "unknown"
	case types.OIDBpchar:
		if typmod >= 4 {
			return fmt.Sprintf("character(%d)", typmod-4)
		}
		return "bpchar"
	case types.OIDVarchar:
		if typmod >= 4 {
			return fmt.Sprintf("character varying(%d)", typmod-4)
		}
		return "character varying"
	case types.OIDNumeric:
		if typmod >= 4 {
			return fmt.Sprintf("numeric(%d,%d)", (typmod-4)>>16, (typmod-4)&0xffff)
		}
		return "numeric"
	}
	if t, ok := types.FromOID(oid); ok && t.ID != types.Unknown {
		return t.String()
	}
	return "???"
}
