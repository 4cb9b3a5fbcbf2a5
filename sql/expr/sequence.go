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
	def("currval", tI8, tS).r(func(ctx *Ctx, a []types.Datum) (types.Datum, error) {
		if ctx == nil || ctx.Sequences == nil {
			return types.NullDatum, noSeq(a[0].S)
		}
		v, err := ctx.Sequences.CurrVal(a[0].S)
		return types.DInt(v), err
	}).vol_(Volatile)
}
