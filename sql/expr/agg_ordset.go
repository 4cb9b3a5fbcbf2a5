package expr

import (
	"math"

	"github.com/tributary/tributary/sql/types"
)

// The ordered-set aggregates percentile_cont(f), percentile_disc(f) and
// mode() WITHIN GROUP (ORDER BY x): their states receive x (and the fraction
// f, a constant) in the WITHIN GROUP order (the batch ordered-aggregate state
// sorts a group's rows, the streaming one reads its ordered input table) and
// skip NULL values, as PostgreSQL's do.

// ordSetState keeps the non-NULL values in arrival order and the fraction.
type ordSetState struct {
	firstLastState
	kind AggKind
	frac types.Datum
	has  bool // frac was seen
}

func (s *ordSetState) Add(args []types.Datum) error {
	if len(args) > 1 && !s.has {
		s.frac, s.has = args[1].Copy(), true
	}
	if args[0].Null {
		return nil
	}
	return s.firstLastState.Add(args)
}

func (s *ordSetState) Retract(args []types.Datum) error {
	if args[0].Null {
		return nil
	}
	return s.firstLastState.Retract(args)
}

func (s *ordSetState) Result() types.Datum {
	n := len(s.vals)
	if s.kind == AggMode {
		return s.mode()
	}
	if !s.has || s.frac.Null || n == 0 {
		return types.NullDatum
	}
	p := s.frac.F
	if s.kind == AggPercentileDisc {
		// PostgreSQL: the first value whose position reaches p of the rows.
		row := int64(math.Ceil(p * float64(n)))
		if row > 1 {
			return s.vals[min(row, int64(n))-1]
		}
		return s.vals[0]
	}
	pos := p * float64(n-1)
	lo, hi := int(math.Floor(pos)), int(math.Ceil(pos))
	if lo == hi {
		return s.vals[lo]
	}
	a, b := s.vals[lo], s.vals[hi]
	frac := pos - float64(lo)
	if s.t.ID == types.Interval {
		// lo + (hi - lo) * frac, as PostgreSQL's interval_lerp.
		d, err := ivAdd(b.Iv, a.Iv, -1)
		if err == nil {
			d, err = ivMul(d, frac)
		}
		if err == nil {
			d, err = ivAdd(d, a.Iv, 1)
		}
		if err != nil {
			return types.NullDatum // out of range: the inputs' own difference overflows
		}
		return types.Datum{Iv: d}
	}
	return types.DFloat(a.F + frac*(b.F-a.F))
}

// mode returns the most frequent value, the first in order among ties.
func (s *ordSetState) mode() types.Datum {
	best, bestN := -1, 0
	for i := 0; i < len(s.vals); {
		j := i + 1
		for j < len(s.vals) && types.CompareNonNull(s.t, &s.vals[i], &s.vals[j]) == 0 {
			j++
		}
		if j-i > bestN {
			best, bestN = i, j-i
		}
		i = j
	}
	if best < 0 {
		return types.NullDatum
	}
	return s.vals[best]
}

// PercentileOutOfRange is PostgreSQL's error for a fraction outside [0, 1].
func PercentileOutOfRange(f float64) error {
	if f >= 0 && f <= 1 {
		return nil
	}
	return types.Errorf(types.ErrNumericOutOfRange, "percentile value %g is not between 0 and 1", f)
}
