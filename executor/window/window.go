package window

import (
	"sort"
	"strings"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
)

type kind uint8

const (
	kindAgg kind = iota
	kindRowNumber
	kindRank
	kindDenseRank
	kindPercentRank
	kindCumeDist
	kindNtile
	kindLag
	kindLead
	kindFirstValue
	kindLastValue
	kindNthValue
)

var kinds = map[string]kind{
	"row_number": kindRowNumber, "rank": kindRank, "dense_rank": kindDenseRank,
	"percent_rank": kindPercentRank, "cume_dist": kindCumeDist, "ntile": kindNtile,
	"lag": kindLag, "lead": kindLead,
	"first_value": kindFirstValue, "last_value": kindLastValue, "nth_value": kindNthValue,
}

// Func computes one window function over partitions. It is not safe for
// concurrent use (it keeps scratch space between calls).
type Func struct {
	f       plan.WindowFunc
	kind    kind
	in      []types.T
	order   []int // ORDER BY columns
	retract bool  // the aggregate's frame slides by retracting rows
	outPhys types.Physical

	// Scratch, per partition.
	gFirst, gEnd []int // per row: its peer group's first row and end
	gIdx         []int // per row: its peer group's number
	groups       []int // per group: its first row; groups[len] = n
	starts, ends []int
	args         []types.Datum
	keys         [2][]types.Datum // RANGE: the rows' keys in each bound's type
}

// New compiles f over input rows of types in.
func New(f plan.WindowFunc, in []types.T) (*Func, error) {
	f.Frame = f.Frame.Normal()
	w := &Func{f: f, in: in, outPhys: f.Type.Physical()}
	if f.Agg != nil {
		w.kind = kindAgg
		w.retract = retractable(f.Agg)
		w.args = make([]types.Datum, len(f.Args))
	} else {
		k, ok := kinds[strings.ToLower(f.Name)]
		if !ok {
			return nil, types.Errorf(types.ErrUnsupported, "window function %s is not supported", f.Name)
		}
		w.kind = k
	}
	for _, k := range f.OrderBy {
		w.order = append(w.order, k.Col)
	}
	return w, nil
}

// retractable reports whether a sliding frame may remove rows from the
// aggregate's state and still give PostgreSQL's exact answer: not for
// floating-point sums (PostgreSQL restarts those, and the rounding differs)
// nor for order-dependent aggregates.
func retractable(a *expr.Agg) bool {
	switch a.Kind {
	case expr.AggCountStar, expr.AggCount, expr.AggMin, expr.AggMax, expr.AggBoolAnd, expr.AggBoolOr:
		return !a.Distinct
	case expr.AggSum, expr.AggAvg:
		t := a.Args[0].ID
		return !a.Distinct && t != types.Float32 && t != types.Float64
	}
	return false
}

// Eval computes the function's value for every row of part, one partition in
// window order, into out (len(part) values). Rows hold the input columns.
func (w *Func) Eval(part [][]types.Datum, out []types.Datum) error {
	return w.EvalFrom(part, 0, out)
}

// EvalFrom is Eval for the rows from index from on: out[:from] is left
// alone (the rows before from are still read as the others' context).
func (w *Func) EvalFrom(part [][]types.Datum, from int, out []types.Datum) error {
	n := len(part)
	if n == 0 || from >= n {
		return nil
	}
	w.peers(part)
	switch w.kind {
	case kindRowNumber, kindRank, kindDenseRank, kindPercentRank, kindCumeDist:
		for i := from; i < n; i++ {
			switch w.kind {
			case kindRowNumber:
				out[i] = types.DInt(int64(i) + 1)
			case kindRank:
				out[i] = types.DInt(int64(w.gFirst[i]) + 1)
			case kindDenseRank:
				out[i] = types.DInt(int64(w.gIdx[i]) + 1)
			case kindPercentRank:
				if n == 1 {
					out[i] = types.DFloat(0)
				} else {
					out[i] = types.DFloat(float64(w.gFirst[i]) / float64(n-1))
				}
			default:
				out[i] = types.DFloat(float64(w.gEnd[i]) / float64(n))
			}
		}
		return nil
	case kindNtile:
		return w.ntile(part, from, out)
	case kindLag, kindLead:
		return w.lagLead(part, from, out)
	}
	if err := w.frames(part, from); err != nil {
		return err
	}
	switch w.kind {
	case kindFirstValue, kindLastValue, kindNthValue:
		a := w.f.Args[0]
		for i := from; i < n; i++ {
			s, e := w.starts[i], w.ends[i]
			at := -1
			switch w.kind {
			case kindFirstValue:
				at = s
				for at < e && w.excluded(i, at) {
					at++
				}
			case kindLastValue:
				at = e - 1
				for at >= s && w.excluded(i, at) {
					at--
				}
			default:
				nd := &part[i][w.f.Args[1]]
				if nd.Null {
					break
				}
				if nd.I <= 0 {
					return types.Errorf(types.ErrNthValueArgument, "argument of nth_value must be greater than zero")
				}
				if w.f.Frame.Exclude == plan.ExcludeNoOthers {
					if int64(e-s) >= nd.I {
						at = s + int(nd.I) - 1
					}
					break
				}
				for k, left := s, nd.I; k < e; k++ {
					if !w.excluded(i, k) {
						if left--; left == 0 {
							at = k
							break
						}
					}
				}
			}
			if at < s || at >= e {
				out[i] = types.NullDatum
				continue
			}
			out[i] = w.copyOut(part[at][a])
		}
		return nil
	}
	return w.aggregate(part, from, out)
}

// excluded reports whether the frame of row i leaves out row j (EXCLUDE).
func (w *Func) excluded(i, j int) bool {
	switch w.f.Frame.Exclude {
	case plan.ExcludeCurrentRow:
		return i == j
	case plan.ExcludeGroup:
		return j >= w.gFirst[i] && j < w.gEnd[i]
	case plan.ExcludeTies:
		return j != i && j >= w.gFirst[i] && j < w.gEnd[i]
	}
	return false
}

func (w *Func) copyOut(d types.Datum) types.Datum {
	if w.outPhys == types.PhysDec && !d.Null {
		return d.Copy()
	}
	return d
}

// Following reports how far after a row the rows its value depends on can
// be: reach rows (-1: any row of the partition), and, with peers, the rest of
// its peer group too. Rows before it may matter as well; a caller that knows
// the rows before index c are unchanged recomputes from
// Following-adjusted c on (see EvalFrom). part gives lead's offsets.
func (w *Func) Following(part [][]types.Datum) (reach int, peers bool) {
	switch w.kind {
	case kindRowNumber, kindRank, kindDenseRank, kindLag:
		return 0, false
	case kindPercentRank, kindCumeDist, kindNtile:
		return -1, false
	case kindLead:
		reach = 1
		if len(w.f.Args) > 1 {
			for _, r := range part {
				d := &r[w.f.Args[1]]
				if !d.Null && d.I > int64(reach) {
					if d.I > int64(len(part)) {
						return -1, false
					}
					reach = int(d.I)
				}
			}
		}
		return reach, false
	}
	fr := w.f.Frame
	defer func() {
		if fr.Exclude == plan.ExcludeGroup || fr.Exclude == plan.ExcludeTies {
			peers = true // a new peer leaves the frame too
		}
	}()
	switch end := fr.End; {
	case end.Kind == plan.UnboundedFollowing:
		return -1, false
	case end.Kind == plan.CurrentRow && fr.Mode == plan.FrameRows:
		return 0, false
	case end.Kind == plan.CurrentRow:
		return 0, true
	case end.Kind == plan.OffsetPreceding:
		return 0, false
	case fr.Mode == plan.FrameRows && end.Offset < int64(len(part)):
		return int(end.Offset), false
	}
	return -1, false
}

// peers finds the peer groups (rows equal on every ORDER BY column).
func (w *Func) peers(part [][]types.Datum) {
	n := len(part)
	w.gFirst = grow(w.gFirst, n)
	w.gEnd = grow(w.gEnd, n)
	w.gIdx = grow(w.gIdx, n)
	w.groups = w.groups[:0]
	for i := 0; i < n; i++ {
		if i == 0 || !w.samePeers(part[i-1], part[i]) {
			w.groups = append(w.groups, i)
		}
		w.gFirst[i] = w.groups[len(w.groups)-1]
		w.gIdx[i] = len(w.groups) - 1
	}
	w.groups = append(w.groups, n)
	for i := 0; i < n; i++ {
		w.gEnd[i] = w.groups[w.gIdx[i]+1]
	}
}

func (w *Func) samePeers(a, b []types.Datum) bool {
	for _, c := range w.order {
		if types.Compare(w.in[c], &a[c], &b[c]) != 0 {
			return false
		}
	}
	return true
}

func grow(s []int, n int) []int {
	if cap(s) < n {
		return make([]int, n)
	}
	return s[:n]
}

// ntile splits the partition into buckets whose sizes differ by at most one,
// the larger first. The bucket count is read from the first row where it is
// not NULL (rows before it get NULL), as PostgreSQL does.
func (w *Func) ntile(part [][]types.Datum, from int, out []types.Datum) error {
	n := int64(len(part))
	var buckets int64
	for i := range part {
		if buckets == 0 {
			d := &part[i][w.f.Args[0]]
			if d.Null {
				if i >= from {
					out[i] = types.NullDatum
				}
				continue
			}
			if d.I <= 0 {
				return types.Errorf(types.ErrNtileArgument, "argument of ntile must be greater than zero")
			}
			buckets = d.I
		}
		if i < from {
			continue
		}
		size, extra := n/buckets, n%buckets
		// Rows 0 .. extra*(size+1)-1 fill the larger buckets.
		r := int64(i)
		var b int64
		if big := extra * (size + 1); r < big {
			b = r/(size+1) + 1
		} else {
			b = extra + (r-big)/max(size, 1) + 1
		}
		out[i] = types.DInt(b)
	}
	return nil
}

// lagLead reads the argument offset rows before (lag) or after (lead) the
// current row, or the default when that is outside the partition.
func (w *Func) lagLead(part [][]types.Datum, from int, out []types.Datum) error {
	a := w.f.Args
	for i := from; i < len(part); i++ {
		off := int64(1)
		if len(a) > 1 {
			d := &part[i][a[1]]
			if d.Null {
				out[i] = types.NullDatum
				continue
			}
			off = d.I
		}
		if w.kind == kindLag {
			off = -off
		}
		j := int64(i) + off
		switch {
		case j >= 0 && j < int64(len(part)):
			out[i] = w.copyOut(part[j][a[0]])
		case len(a) > 2:
			out[i] = w.copyOut(part[i][a[2]])
		default:
			out[i] = types.NullDatum
		}
	}
	return nil
}

// aggregate computes the aggregate over each row's frame. Frame ends never
// move backwards, so the state slides: rows leaving the frame are retracted,
// or, for aggregates that cannot retract exactly, the state restarts when the
// frame's start moves (as PostgreSQL does).
func (w *Func) aggregate(part [][]types.Datum, from int, out []types.Datum) error {
	st := w.f.Agg.NewState()
	cs, ce := 0, 0
	step := func(k int, add bool) error {
		for j, c := range w.f.Args {
			w.args[j] = part[k][c]
		}
		if add {
			return st.Add(w.args)
		}
		return st.Retract(w.args)
	}
	var last types.Datum
	valid := false
	exclude := w.f.Frame.Exclude != plan.ExcludeNoOthers
	for i := from; i < len(part); i++ {
		s, e := w.starts[i], max(w.ends[i], w.starts[i])
		if exclude {
			d, err := w.excludedAgg(part, i, s, e)
			if err != nil {
				return err
			}
			out[i] = w.copyOut(d)
			continue
		}
		if s == cs && e == ce && valid {
			out[i] = w.copyOut(last)
			continue
		}
		switch {
		case s < cs || e < ce || s >= ce || (s != cs && !w.retract):
			st = w.f.Agg.NewState()
			cs, ce = s, s
		default:
			for ; cs < s; cs++ {
				if err := step(cs, false); err != nil {
					return err
				}
			}
		}
		for ; ce < e; ce++ {
			if err := step(ce, true); err != nil {
				return err
			}
		}
		last, valid = st.Result(), true
		if w.outPhys == types.PhysDec {
			last = last.Copy()
		}
		out[i] = w.copyOut(last)
	}
	return nil
}

// excludedAgg aggregates row i's frame [s, e) less the rows its EXCLUDE
// clause leaves out, afresh for each row (as PostgreSQL does for most
// aggregates): O(frame) per row.
func (w *Func) excludedAgg(part [][]types.Datum, i, s, e int) (types.Datum, error) {
	st := w.f.Agg.NewState()
	for k := s; k < e; k++ {
		if w.excluded(i, k) {
			continue
		}
		for j, c := range w.f.Args {
			w.args[j] = part[k][c]
		}
		if err := st.Add(w.args); err != nil {
			return types.Datum{}, err
		}
	}
	return st.Result(), nil
}

// frames fills starts and ends (exclusive) with each row's frame.
func (w *Func) frames(part [][]types.Datum, from int) error {
	n := len(part)
	w.starts = grow(w.starts, n)
	w.ends = grow(w.ends, n)
	fr := &w.f.Frame
	ng := len(w.groups) - 1
	if fr.Mode == plan.FrameRange {
		for b, bd := range []*plan.FrameBound{&fr.Start, &fr.End} {
			if bd.Kind == plan.OffsetPreceding || bd.Kind == plan.OffsetFollowing {
				if err := w.rangeKeys(part, b, bd); err != nil {
					return err
				}
			}
		}
	}
	for i := from; i < n; i++ {
		for b, bd := range []*plan.FrameBound{&fr.Start, &fr.End} {
			end := b == 1
			var pos int
			switch bd.Kind {
			case plan.UnboundedPreceding:
				pos = 0
			case plan.UnboundedFollowing:
				pos = n
			case plan.CurrentRow:
				switch {
				case fr.Mode == plan.FrameRows && end:
					pos = i + 1
				case fr.Mode == plan.FrameRows:
					pos = i
				case end:
					pos = w.gEnd[i]
				default:
					pos = w.gFirst[i]
				}
			default:
				off := bd.Offset
				if bd.Kind == plan.OffsetPreceding {
					off = -off
				}
				switch fr.Mode {
				case plan.FrameRows:
					off = min(max(off, -int64(n)-1), int64(n)+1)
					if end {
						off++ // the end is exclusive
					}
					pos = clampAdd(i, off, n)
				case plan.FrameGroups:
					g := int64(w.gIdx[i]) + off
					switch {
					case !end && g < 0:
						pos = 0
					case !end && g >= int64(ng):
						pos = n
					case !end:
						pos = w.groups[g]
					case g < 0:
						pos = 0
					case g >= int64(ng):
						pos = n
					default:
						pos = w.groups[g+1]
					}
				default:
					var err error
					if pos, err = w.rangePos(part, i, b, bd, end); err != nil {
						return err
					}
				}
			}
			if end {
				w.ends[i] = pos
			} else {
				w.starts[i] = pos
			}
		}
	}
	return nil
}

// clampAdd returns i+off within [0, n].
func clampAdd(i int, off int64, n int) int {
	v := int64(i) + off
	if v < 0 {
		return 0
	}
	if v > int64(n) {
		return n
	}
	return int(v)
}

// rangeKeys evaluates bound b's Key over the partition's rows.
func (w *Func) rangeKeys(part [][]types.Datum, b int, bd *plan.FrameBound) error {
	ks := w.keys[b][:0]
	oc := w.order[0]
	for _, row := range part {
		d, err := bd.Key.EvalRow(nil, row[oc:oc+1])
		if err != nil {
			return err
		}
		ks = append(ks, d)
	}
	w.keys[b] = ks
	return nil
}

// rangePos finds a RANGE offset bound of row i: the first row whose key is
// not before the target (a start) or is after it (an end), in the key's
// direction. NULL keys: a NULL current row's frame is its NULL peers; other
// rows' offset bounds never reach the NULLs.
func (w *Func) rangePos(part [][]types.Datum, i, b int, bd *plan.FrameBound, end bool) (int, error) {
	ks := w.keys[b]
	n := len(part)
	if ks[i].Null {
		if end {
			return w.gEnd[i], nil
		}
		return w.gFirst[i], nil
	}
	// The non-NULL rows, [lo, hi).
	lo, hi := 0, n
	if w.f.OrderBy[0].NullsFirst {
		lo = sort.Search(n, func(j int) bool { return !ks[j].Null })
	} else {
		hi = sort.Search(n, func(j int) bool { return ks[j].Null })
	}
	desc := w.f.OrderBy[0].Desc
	oc := w.order[0]
	t, err := bd.Target.EvalRow(nil, part[i][oc:oc+1])
	if err != nil {
		// Past the key type's range (integer overflow): every row or none.
		if bd.Target.Type().IsInteger() {
			if bd.Kind == plan.OffsetPreceding {
				return lo, nil
			}
			return hi, nil
		}
		return 0, err
	}
	typ := bd.Target.Type()
	return lo + sort.Search(hi-lo, func(j int) bool {
		c := types.CompareNonNull(typ, &ks[lo+j], &t)
		if desc {
			c = -c
		}
		if end {
			return c > 0
		}
		return c >= 0
	}), nil
}
