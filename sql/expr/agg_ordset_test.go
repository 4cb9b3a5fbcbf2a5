package expr

import (
	"errors"
	"testing"

	"github.com/tributary/tributary/sql/types"
)

// TestOrderedSetAggs feeds sorted inputs (as the ordered-aggregate states do)
// with NULLs among them and checks PostgreSQL's answers, also after a
// retraction.
func TestOrderedSetAggs(t *testing.T) {
	f8 := types.TFloat64
	vals := []float64{1, 3, 5, 7}
	run := func(name string, frac float64, in types.T, xs []types.Datum) types.Datum {
		t.Helper()
		args := []types.T{in, f8}
		if name == "mode" {
			args = args[:1]
		}
		a, err := LookupAgg(name, args, false)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		s := a.NewState()
		for _, x := range xs {
			if err := s.Add([]types.Datum{x, types.DFloat(frac)}); err != nil {
				t.Fatal(err)
			}
		}
		return s.Result()
	}
	var xs []types.Datum
	for _, v := range vals {
		xs = append(xs, types.DFloat(v))
	}
	xs = append(xs, types.NullDatum) // ignored
	for _, c := range []struct {
		name string
		frac float64
		want float64
	}{
		{"percentile_cont", 0.5, 4}, {"percentile_cont", 0.25, 2.5}, {"percentile_cont", 1, 7},
		{"percentile_disc", 0.5, 3}, {"percentile_disc", 0, 1}, {"percentile_disc", 0.51, 5}, {"percentile_disc", 1, 7},
	} {
		if got := run(c.name, c.frac, f8, xs); got.Null || got.F != c.want {
			t.Errorf("%s(%v) over %v = %v, want %v", c.name, c.frac, vals, got, c.want)
		}
	}
	ivs := []types.Datum{types.DInterval(types.IntervalValue{Days: 1}), types.DInterval(types.IntervalValue{Months: 1})}
	if got := run("percentile_cont", 0.5, types.TInterval, ivs); got.Iv != (types.IntervalValue{Days: 16, Micros: -12 * 3600e6}) {
		t.Errorf("percentile_cont(0.5) over 1 day, 1 mon = %+v, want 16 days -12:00 (as PostgreSQL)", got.Iv)
	}
	ints := []types.Datum{types.DInt(1), types.DInt(2), types.DInt(2), types.NullDatum, types.NullDatum, types.DInt(3), types.DInt(3)}
	if got := run("mode", 0, types.TInt32, ints); got.I != 2 {
		t.Errorf("mode = %v, want 2 (the first of the tied values)", got)
	}
	if got := run("mode", 0, types.TInt32, nil); !got.Null {
		t.Errorf("mode over no rows = %v, want NULL", got)
	}
	a, _ := LookupAgg("percentile_disc", []types.T{f8, f8}, false)
	s := a.NewState()
	for _, x := range xs {
		_ = s.Add([]types.Datum{x, types.DFloat(0.5)})
	}
	if err := s.Retract([]types.Datum{types.DFloat(3), types.DFloat(0.5)}); err != nil {
		t.Fatal(err)
	}
	if got := s.Result(); got.F != 5 {
		t.Errorf("percentile_disc(0.5) over 1, 5, 7 = %v, want 5", got)
	}
	if err := PercentileOutOfRange(1.5); !errors.Is(err, types.ErrNumericOutOfRange) {
		t.Errorf("PercentileOutOfRange(1.5) = %v", err)
	}
}
