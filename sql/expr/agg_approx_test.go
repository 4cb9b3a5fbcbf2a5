package expr

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSketchWithinError checks the sketch's answer against the exact value
// of the same rank on random data with both signs and zeros, through
// retractions and an encode/decode round trip.
func TestSketchWithinError(t *testing.T) {
	seed := uint64(20261202)
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, seed))
	for _, relErr := range []float64{0.01, 0.05, 0.001} {
		s := NewSketch(0, relErr)
		var vals []float64
		for range 5000 {
			v := math.Exp(r.Float64()*20-10) * float64(r.IntN(3)-1) // negative, zero or positive
			vals = append(vals, v)
			s.Update(v, 1)
		}
		for range 1000 { // retract some
			i := r.IntN(len(vals))
			s.Update(vals[i], -1)
			vals = slices.Delete(vals, i, i+1)
		}
		dec, err := DecodeSketch(EncodeSketch(s), 0, relErr)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(vals)
		for _, q := range []float64{0, 0.01, 0.25, 0.5, 0.9, 0.99, 1} {
			s.Quantile, dec.Quantile = q, q
			want := vals[int(math.Floor(float64(len(vals)-1)*q))]
			got, got2 := s.Result(), dec.Result()
			if got.Null || got.F != got2.F {
				t.Fatalf("e=%g q=%g: %v, after decoding %v", relErr, q, got, got2)
			}
			if math.Abs(got.F-want) > relErr*math.Abs(want)*(1+1e-9) {
				t.Errorf("e=%g q=%g: got %g, exact %g", relErr, q, got.F, want)
			}
		}
	}
}

func TestSketchEmptyAndDamaged(t *testing.T) {
	s := NewSketch(0.5, 0.01)
	s.Update(3, 1)
	s.Update(3, -1)
	if !s.Result().Null || s.Count() != 0 || len(s.pos) != 0 {
		t.Fatalf("empty sketch: %v, %d values, %d buckets", s.Result(), s.Count(), len(s.pos))
	}
	if _, err := DecodeSketch("\x02\x00\x05", 0.5, 0.01); err == nil {
		t.Fatal("damaged state decoded")
	}
	if err := ApproxPercentileArgsOK(0.5, 1); err == nil {
		t.Fatal("relative error 1 accepted")
	}
}
