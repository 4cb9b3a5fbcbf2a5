package expr

import (
	"encoding/binary"
	"math"
	"slices"

	"github.com/tributary/tributary/sql/types"
)

// approx_percentile(q [, relative_error]) WITHIN GROUP (ORDER BY x), as
// RisingWave has it: a DDSketch-style histogram with logarithmic buckets of
// base γ = (1+e)/(1-e). A value v ≠ 0 falls in bucket i = ⌈log_γ |v|⌉ (the
// sign apart), and bucket i answers 2γ^i/(γ+1), within e of every value in
// it. Zeros are counted apart. Adding and retracting are exact (counts), so
// the aggregate is retractable and its state is the bucket counts, which
// EncodeSketch turns into bytes for a streaming aggregate's state row.

// DefaultRelativeError is approx_percentile's relative error when the call
// gives none.
const DefaultRelativeError = 0.01

// Sketch is one group's approx_percentile state.
type Sketch struct {
	Quantile, RelErr float64
	pos, neg         map[int32]int64
	zeros, n         int64
}

// NewSketch returns an empty sketch answering quantile q within relErr.
func NewSketch(q, relErr float64) *Sketch {
	return &Sketch{Quantile: q, RelErr: relErr, pos: map[int32]int64{}, neg: map[int32]int64{}}
}

func (s *Sketch) base() float64 { return (1 + s.RelErr) / (1 - s.RelErr) }

// Update adds (sign 1) or retracts (sign -1) the value v; NaN is ignored.
func (s *Sketch) Update(v float64, sign int64) {
	if math.IsNaN(v) {
		return
	}
	s.n += sign
	if v == 0 {
		s.zeros += sign
		return
	}
	m := s.pos
	if v < 0 {
		m, v = s.neg, -v
	}
	var id int32
	switch {
	case math.IsInf(v, 0):
		id = math.MaxInt32
	default:
		id = int32(math.Ceil(math.Log(v) / math.Log(s.base())))
	}
	if c := m[id] + sign; c != 0 {
		m[id] = c
	} else {
		delete(m, id)
	}
}

// Count is the number of values in the sketch.
func (s *Sketch) Count() int64 { return s.n }

// Result is the approximate quantile, NULL when the sketch is empty: the
// bucket holding the value of rank ⌊(n-1)·q⌋ (from 0, in ascending order).
func (s *Sketch) Result() types.Datum {
	if s.n <= 0 {
		return types.NullDatum
	}
	rank := int64(math.Floor(float64(s.n-1) * s.Quantile))
	g := s.base()
	value := func(id int32) float64 {
		if id == math.MaxInt32 {
			return math.Inf(1)
		}
		return 2 * math.Pow(g, float64(id)) / (g + 1)
	}
	var acc int64
	neg := sortedIDs(s.neg)
	for i := len(neg) - 1; i >= 0; i-- {
		if acc += s.neg[neg[i]]; acc > rank {
			return types.DFloat(-value(neg[i]))
		}
	}
	if acc += s.zeros; acc > rank {
		return types.DFloat(0)
	}
	pos := sortedIDs(s.pos)
	for _, id := range pos {
		if acc += s.pos[id]; acc > rank {
			return types.DFloat(value(id))
		}
	}
	return types.NullDatum
}

func sortedIDs(m map[int32]int64) []int32 {
	ids := make([]int32, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// EncodeSketch returns the bucket counts of s as bytes: zeros, then the
// positive and the negative buckets, each a count of entries followed by
// (bucket, count) pairs in bucket order, all varints.
func EncodeSketch(s *Sketch) string {
	buf := binary.AppendVarint(nil, s.n)
	buf = binary.AppendVarint(buf, s.zeros)
	for _, m := range []map[int32]int64{s.pos, s.neg} {
		buf = binary.AppendUvarint(buf, uint64(len(m)))
		for _, id := range sortedIDs(m) {
			buf = binary.AppendVarint(buf, int64(id))
			buf = binary.AppendVarint(buf, m[id])
		}
	}
	return string(buf)
}

// DecodeSketch reads the counts EncodeSketch wrote into a sketch for
// quantile q and relative error relErr.
func DecodeSketch(b string, q, relErr float64) (*Sketch, error) {
	s := NewSketch(q, relErr)
	if b == "" {
		return s, nil
	}
	r := []byte(b)
	bad := types.Errorf(types.ErrInternal, "damaged approx_percentile state")
	next := func() (int64, bool) {
		v, k := binary.Varint(r)
		if k <= 0 {
			return 0, false
		}
		r = r[k:]
		return v, true
	}
	var ok1, ok2 bool
	if s.n, ok1 = next(); !ok1 {
		return nil, bad
	}
	if s.zeros, ok2 = next(); !ok2 {
		return nil, bad
	}
	for _, m := range []map[int32]int64{s.pos, s.neg} {
		n, k := binary.Uvarint(r)
		if k <= 0 || n > uint64(len(r)) {
			return nil, bad
		}
		r = r[k:]
		for range n {
			id, ok1 := next()
			c, ok2 := next()
			if !ok1 || !ok2 {
				return nil, bad
			}
			m[int32(id)] = c
		}
	}
	if len(r) != 0 {
		return nil, bad
	}
	return s, nil
}

// ApproxPercentileArgsOK reports whether q and relErr are a valid quantile
// (0 ≤ q ≤ 1) and relative error (0 < e < 1).
func ApproxPercentileArgsOK(q, relErr float64) error {
	if !(q >= 0 && q <= 1) {
		return types.Errorf(types.ErrInvalidParameter, "approx_percentile: quantile must be between 0 and 1, got %g", q)
	}
	if !(relErr > 0 && relErr < 1) {
		return types.Errorf(types.ErrInvalidParameter, "approx_percentile: relative_error must be between 0 and 1 (exclusive), got %g", relErr)
	}
	return nil
}

// approxState is the batch accumulator: a sketch over argument 0 (double
// precision), with the quantile and relative error of the call.
type approxState struct {
	sk *Sketch
}

func (s *approxState) Add(args []types.Datum) error {
	if !args[0].Null {
		s.sk.Update(args[0].F, 1)
	}
	return nil
}

func (s *approxState) Retract(args []types.Datum) error {
	if !args[0].Null {
		s.sk.Update(args[0].F, -1)
	}
	return nil
}

func (s *approxState) Result() types.Datum { return s.sk.Result() }
