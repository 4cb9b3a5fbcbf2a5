package window

import (
	"slices"

	"github.com/cockroachdb/apd/v3"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/types"
)

// AppendGapRows appends the rows GAP_FILL adds between prev and next, rows
// of one partition in time order: one at every step after prev's time and
// before next's. A NULL time has no gap.
func AppendGapRows(dst [][]types.Datum, n *plan.GapFill, ts []types.T, prev, next []types.Datum, step int64) ([][]types.Datum, error) {
	tc := n.TimeCol
	if prev[tc].Null || next[tc].Null || step <= 0 {
		return dst, nil
	}
	t0, t1 := prev[tc].I, next[tc].I
	if t1-t0 <= step {
		return dst, nil
	}
	steps := (t1 - t0) / step
	if (t1-t0)%step == 0 {
		steps-- // next sits on the grid
	}
	for k := int64(1); k <= steps; k++ {
		row := make([]types.Datum, len(prev))
		for c := range row {
			switch {
			case c == tc:
				row[c] = types.Datum{I: t0 + k*step}
			case slices.Contains(n.PartitionBy, c):
				row[c] = prev[c]
			default:
				switch n.Fills[c] {
				case plan.FillLOCF:
					row[c] = prev[c]
				case plan.FillInterpolate:
					v, err := interpolate(ts[c], &prev[c], &next[c], k, step, t1-t0)
					if err != nil {
						return nil, err
					}
					row[c] = v
				default:
					row[c] = types.NullDatum
				}
			}
		}
		dst = append(dst, row)
	}
	return dst, nil
}

// interpolate returns the value k steps into span on the line from a to
// b (a + (b - a) * k * step / span); NULL when either is. Floats step by
// (b - a) / (span / step) added once per step, as RisingWave does.
func interpolate(t types.T, a, b *types.Datum, k, step, span int64) (types.Datum, error) {
	off := k * step
	if a.Null || b.Null {
		return types.NullDatum, nil
	}
	switch {
	case t.IsInteger():
		return types.DInt(a.I + (b.I-a.I)*off/span), nil
	case t.ID == types.Numeric:
		var d, out apd.Decimal
		ctx := types.DecimalContext
		if _, err := ctx.Sub(&d, &b.Dec, &a.Dec); err != nil {
			return types.Datum{}, err
		}
		if _, err := ctx.Mul(&d, &d, apd.New(off, 0)); err != nil {
			return types.Datum{}, err
		}
		if _, err := ctx.Quo(&d, &d, apd.New(span, 0)); err != nil {
			return types.Datum{}, err
		}
		if _, err := ctx.Add(&out, &a.Dec, &d); err != nil {
			return types.Datum{}, err
		}
		// Exact results keep the inputs' scale (1.5 .. 3.0 gives 2.0).
		out.Reduce(&out)
		if exp := min(a.Dec.Exponent, b.Dec.Exponent); out.Exponent > exp {
			if _, err := ctx.Quantize(&out, &out, exp); err != nil {
				return types.Datum{}, err
			}
		}
		return types.Datum{Dec: out}, nil
	}
	delta := (b.F - a.F) / (float64(span) / float64(step))
	v := a.F
	for range k {
		v += delta
	}
	return types.DFloat(v), nil
}
