package expr

import (
	"context"

	"github.com/tributary/tributary/sql/types"
)

func init() {
	noSeq := func(name string) error {
		return types.Errorf(types.ErrUndefinedTable, "relation \"%s\" does not exist", name)
	}
	def("nextval", tI8, tS).r(func(ctx *Ctx, a []types.Datum) (types.Datum, error) {
		if ctx == nil || ctx.Sequences == nil {
			return types.NullDatum, noSeq(a[0].S)
		}
		c := ctx.Context
		if c == nil {
			c = context.Background()
		}
		v, err := ctx.Sequences.NextVal(c, a[0].S)
		return types.DInt(v), err
	}).vol_(Volatile)
	setval := func(ctx *Ctx, a []types.Datum) (types.Datum, error) {
		if ctx == nil || ctx.Sequences == nil {
			return types.NullDatum, noSeq(a[0].S)
		}
		c := ctx.Context
		if c == nil {
			c = context.Background()
		}
		called := len(a) < 3 || a[2].I != 0
		v, err := ctx.Sequences.SetVal(c, a[0].S, a[1].I, called)
		return types.DInt(v), err
	}
	def("setval", tI8, tS, tI8).r(setval).vol_(Volatile)
	def("setval", tI8, tS, tI8, tB).r(setval).vol_(Volatile)
	def("pg_get_serial_sequence", tS, tS, tS).r(func(ctx *Ctx, a []types.Datum) (types.Datum, error) {
		if ctx == nil || ctx.Sequences == nil {
			return types.NullDatum, noSeq(a[0].S)
		}
		name, ok, err := ctx.Sequences.SerialSequence(a[0].S, a[1].S)
		if err != nil || !ok {
			return types.NullDatum, err
		}
		return types.DString(name), nil
	}).vol_(Stable)
	def("currval", tI8, tS).r(func(ctx *Ctx, a []types.Datum) (types.Datum, error) {
		if ctx == nil || ctx.Sequences == nil {
			return types.NullDatum, noSeq(a[0].S)
		}
		v, err := ctx.Sequences.CurrVal(a[0].S)
		return types.DInt(v), err
	}).vol_(Volatile)
}
