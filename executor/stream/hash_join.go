package stream

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage/state"
)

// hashJoin is the streaming equi-join (inner, left, right, full outer, semi,
// anti) with an optional extra condition. Each side's rows live in its state
// table keyed by (join key, stream key); a bounded cache keeps recently used
// join keys' rows of each side. A row from one side is joined with the other
// side's rows of its key, then written to its own side's state. Outer sides
// keep a degree per row (matching rows of the other side) so a row switching
// between matched and unmatched retracts or emits its NULL-padded row; a
// semi (anti) join's left rows keep a degree too and are output, left
// columns only, while it is above 0 (is 0). Updates are processed as a
// delete then an insert; the output has only Insert and Delete.
// Row changes update the cache during the epoch and reach the state tables at
// the barrier (joinSide, join_cache.go); the cache is then cut back to
// CacheRows rows (half per side), or fewer when the actor's memory pool
// allows each side fewer bytes (cacheBudget), least recently used keys first. Within an
// epoch a side over its half writes its changes early and evicts (bound),
// and a key with more rows than the half is never kept (shed).
type hashJoin struct {
	actx    *ActorContext
	align   *Aligner
	cond    expr.Expr // nil: none
	outer   [2]bool   // side's unmatched rows are emitted NULL-padded
	semi    bool      // a semi join: left rows with a match
	anti    bool      // an anti join: left rows without a match
	nl, nr  int       // column counts of the left and right inputs
	outT    []types.T
	limit   int // cached rows per side at most (half of CacheRows; the memory pool may allow fewer)
	sameKey bool
	inner   bool
	eqs     [2][]int  // the join key columns of each side
	keyT    []types.T // the join key types (the left side's)
	bands   []plan.JoinBand

	run joinRun
}

// CountInto implements OpCounter: the probes of either side's cache.
func (e *hashJoin) CountInto(st *OpStats) {
	for _, s := range e.run.sides {
		if s != nil {
			s.stats = st
		}
	}
}

// joinRun is the hash join's per-run state.
type joinRun struct {
	sides   [2]*joinSide
	ectx    expr.Ctx
	lenient lenientEval // a failing condition is false
	tick    uint64
	row     []types.Datum // the input row being processed (+ degree)
	kd      []types.Datum // its join key values
	joined  []types.Datum // left columns ++ right columns
	padded  []types.Datum // a NULL-padded output row
	nulls   []types.Datum // all NULL, for padding
	cur     *types.Chunk  // output being built
	out     []*types.Chunk
	marks   []lruMark
	stopped bool
	warmed  bool // the sides' caches were warmed (joinSide.warm)
	// Watermarks of an inner join, per join key: each side's latest, and
	// the least of the two last sent (on both of the key's output columns).
	wm      [2][]types.Datum
	wmSent  []types.Datum
	wmClean []types.Datum // per join key, the watermark state was last cleaned below
	wmQ     []Message
	// Every column's latest watermark per side, and per band the bound
	// (µs) its side's state was last cleaned below.
	wmCol     [2]map[int]types.Datum
	bandClean []int64
	bandSeen  []bool
}

// NewHashJoin returns the stream hash join of n over its two inputs, and the
// Aligner it pulls them through (the builder closes it when the actor ends).
// n.State() must hold the layouts of StateLayouts with ids assigned.
func NewHashJoin(actx *ActorContext, n *plan.StreamHashJoin, left, right Executor) (Executor, *Aligner, error) {
	switch n.Kind {
	case plan.InnerJoin, plan.LeftJoin, plan.RightJoin, plan.FullJoin, plan.SemiJoin, plan.AntiJoin:
	default:
		return nil, nil, fmt.Errorf("hash join: unsupported join kind %s", n.Kind)
	}
	if len(n.EqLeft) == 0 || len(n.EqLeft) != len(n.EqRight) {
		return nil, nil, fmt.Errorf("hash join: %d left keys and %d right keys", len(n.EqLeft), len(n.EqRight))
	}
	lt, rt := left.Schema(), right.Schema()
	for i := range n.EqLeft {
		l, r := n.EqLeft[i], n.EqRight[i]
		if l < 0 || l >= len(lt) || r < 0 || r >= len(rt) {
			return nil, nil, fmt.Errorf("hash join: key %d ($%d = $%d) out of range", i, l, r)
		}
		if lt[l].Physical() != rt[r].Physical() {
			return nil, nil, fmt.Errorf("hash join: key %d compares %s with %s", i, lt[l], rt[r])
		}
	}
	st := n.State()
	if len(st) != 2 {
		return nil, nil, fmt.Errorf("hash join: %d state tables, want 2", len(st))
	}
	e := &hashJoin{
		actx:  actx,
		cond:  n.Cond,
		outer: [2]bool{n.LeftOuter(), n.RightOuter()},
		semi:  n.Kind == plan.SemiJoin,
		anti:  n.Kind == plan.AntiJoin,
		nl:    len(lt),
		nr:    len(rt),
		outT:  append(append(make([]types.T, 0, len(lt)+len(rt)), lt...), rt...),
		limit: actx.CacheRows,
	}
	if n.SemiOrAnti() {
		e.outT = slices.Clone(lt)
	}
	e.run.lenient = newLenientEval(actx)
	if e.limit <= 0 {
		e.limit = DefaultCacheRows
	}
	// Each side gets half of the cache.
	e.limit = max(e.limit/2, 1)
	eqs := [2][]int{n.EqLeft, n.EqRight}
	for s, ts := range [2][]types.T{lt, rt} {
		want := len(ts)
		degree := e.outer[s] || (s == 0 && n.SemiOrAnti())
		if degree {
			want++
		}
		if len(st[s].Types) != want {
			return nil, nil, fmt.Errorf("hash join: %s state has %d columns, want %d", st[s].Name, len(st[s].Types), want)
		}
		pk := st[s].PK
		if len(pk) < len(eqs[s]) || !slices.Equal(pk[:len(eqs[s])], eqs[s]) {
			return nil, nil, fmt.Errorf("hash join: %s state key %v does not start with the join key %v", st[s].Name, pk, eqs[s])
		}
		t, err := actx.NewTable(state.Schema{TableID: st[s].ID, Types: st[s].Types, PK: pk, PKDesc: st[s].PKDesc, DistKey: st[s].Dist})
		if err != nil {
			return nil, nil, fmt.Errorf("hash join: open %s state: %w", st[s].Name, err)
		}
		t.TrackKeys() // the join's own state: reads of keys above what it holds read nothing
		if nk := len(eqs[s]); nk > 0 && (st[s].PKDesc == nil || !slices.Contains(st[s].PKDesc[:nk], true)) {
			// Keys the side never held (q20: a bid of an auction the filtered side has not) read nothing.
			if err := t.TrackPrefixes(nk); err != nil {
				return nil, nil, fmt.Errorf("hash join: %s state: %w", st[s].Name, err)
			}
		}
		b := newCacheBudget(actx, [2]string{"hash join left", "hash join right"}[s])
		b.maxRows = e.limit
		b.holdsFilters(t)
		e.run.sides[s] = newJoinSide(t, st[s].Types, eqs[s], pk, degree, b)
	}
	e.inner = n.Kind == plan.InnerJoin
	e.eqs = eqs
	for _, c := range n.EqLeft {
		e.keyT = append(e.keyT, lt[c])
	}
	for s := range e.run.wm {
		e.run.wm[s] = make([]types.Datum, len(n.EqLeft))
		for i := range e.run.wm[s] {
			e.run.wm[s][i] = types.NullDatum
		}
	}
	e.run.wmSent = slices.Clone(e.run.wm[0])
	e.run.wmClean = slices.Clone(e.run.wm[0])
	e.bands = n.Bands()
	for _, b := range e.bands {
		if ts := [2][]types.T{lt, rt}; ts[b.Side][b.Col].Physical() != types.PhysI64 || ts[1-b.Side][b.Other].Physical() != types.PhysI64 {
			return nil, nil, fmt.Errorf("hash join: interval band %+v over non-timestamp columns", b)
		}
	}
	e.run.bandClean = make([]int64, len(e.bands))
	e.run.bandSeen = make([]bool, len(e.bands))
	e.run.wmCol = [2]map[int]types.Datum{{}, {}}
	e.sameKey = true
	for i := range n.EqLeft {
		if lt[n.EqLeft[i]] != rt[n.EqRight[i]] {
			e.sameKey = false
		}
	}
	r := &e.run
	r.row = make([]types.Datum, 0, max(e.nl, e.nr)+1)
	r.kd = make([]types.Datum, len(n.EqLeft))
	r.joined = make([]types.Datum, e.nl+e.nr)
	r.padded = make([]types.Datum, e.nl+e.nr)
	r.nulls = make([]types.Datum, max(e.nl, e.nr))
	for i := range r.nulls {
		r.nulls[i] = types.NullDatum
	}
	e.align = NewAligner(left, right)
	return e, e.align, nil
}

func (e *hashJoin) Schema() []types.T { return e.outT }

func (e *hashJoin) Next(ctx context.Context) (Message, error) {
	r := &e.run
	if !r.warmed {
		r.warmed = true
		for _, s := range r.sides {
			if err := s.warm(ctx, e.actx.Vnodes, s.limit/2); err != nil {
				return Message{}, err
			}
		}
	}
	for {
		if len(r.out) > 0 {
			c := r.out[0]
			r.out[0] = nil
			r.out = r.out[1:]
			return ChunkMsg(c), nil
		}
		if len(r.wmQ) > 0 {
			m := r.wmQ[0]
			r.wmQ = r.wmQ[1:]
			return m, nil
		}
		if r.stopped {
			return Message{}, io.EOF
		}
		side, m, err := e.align.Next(ctx)
		if err != nil {
			return Message{}, fmt.Errorf("hash join: %w", err)
		}
		switch {
		case m.Chunk != nil:
			if err := e.processChunk(ctx, side, m.Chunk); err != nil {
				return Message{}, err
			}
			if err := e.bound(); err != nil {
				return Message{}, err
			}
		case m.Barrier != nil:
			// Every output of the sealed epoch has been returned (out is empty here):
			// write the epoch's state changes, then bound the cache.
			for _, s := range r.sides {
				if err := s.flush(); err != nil {
					return Message{}, err
				}
			}
			if err := e.cleanState(ctx); err != nil {
				return Message{}, err
			}
			for _, s := range r.sides {
				s.check()
				r.marks = s.evict(s.limit, r.marks)
				s.budget.report(s.cached)
			}
			if m.Barrier.Stops(e.actx.ID) {
				r.stopped = true
			}
			return m, nil
		case m.Watermark != nil:
			e.watermark(side, m.Watermark)
		}
	}
}

// bound keeps each side's cache within its bound during an epoch: a side
// over it writes its changes to its state table early, then evicts least
// recently used keys down to three quarters of the bound (so the next early
// write is a quarter of the bound away).
func (e *hashJoin) bound() error {
	r := &e.run
	for _, s := range r.sides {
		s.check()
		if s.cached > s.limit {
			if err := s.flush(); err != nil {
				return err
			}
			r.marks = s.evict(s.limit-s.limit/4, r.marks)
		}
		s.budget.report(s.cached)
	}
	return nil
}

// watermark records a side's watermark on a join key column of an inner
// join: once both sides have one on that key, the lesser holds for every
// later output row's key (each is a new row's key, from one side or the
// other), and is sent on the key's left and right output columns when it
// rises. Other watermarks are dropped (an outer join's NULL-padded rows may
// be retracted below them).
func (e *hashJoin) watermark(side Side, w *Watermark) {
	if !e.inner || w.Val.Null {
		return
	}
	r := &e.run
	s := 0
	if side != Left {
		s = 1
	}
	if cur, ok := r.wmCol[s][w.Col]; !ok || w.Val.I > cur.I {
		r.wmCol[s][w.Col] = w.Val.Copy() // for interval bands (timestamps: compared as µs)
	}
	for i, c := range e.eqs[s] {
		if c != w.Col {
			continue
		}
		t := e.keyT[i]
		if cur := &r.wm[s][i]; cur.Null || types.Compare(t, &w.Val, cur) > 0 {
			*cur = w.Val.Copy()
		}
		a, b := &r.wm[0][i], &r.wm[1][i]
		if a.Null || b.Null {
			continue
		}
		least := a
		if types.Compare(t, b, a) < 0 {
			least = b
		}
		if sent := &r.wmSent[i]; !sent.Null && types.Compare(t, least, sent) <= 0 {
			continue
		}
		r.wmSent[i] = least.Copy()
		r.wmQ = append(r.wmQ,
			WatermarkMsg(&Watermark{Col: e.eqs[0][i], Val: least.Copy()}),
			WatermarkMsg(&Watermark{Col: e.nl + e.eqs[1][i], Val: least.Copy()}))
	}
}

// processChunk joins every visible row of c (from side) and queues the output.
func (e *hashJoin) processChunk(ctx context.Context, side Side, c *types.Chunk) error {
	r := &e.run
	for i := 0; i < c.Len(); i++ {
		if !c.Visible(i) {
			continue
		}
		r.row = c.Row(i, r.row[:0])
		if err := e.processRow(ctx, side, r.row, c.Op(i).IsInsert()); err != nil {
			return err
		}
	}
	if r.cur != nil && r.cur.Len() > 0 {
		r.out = append(r.out, r.cur)
		r.cur = nil
	}
	return nil
}

// processRow applies one row change of side: joins it with the other side's
// rows of its key, maintaining degrees, then updates the side's state.
func (e *hashJoin) processRow(ctx context.Context, side Side, row []types.Datum, insert bool) error {
	r := &e.run
	this, other := r.sides[side], r.sides[1-side]
	op := types.OpDelete
	if insert {
		op = types.OpInsert
	}
	r.tick++
	for i, c := range this.key {
		if row[c].Null || e.keyT[i].ID == types.Struct && types.HasNullField(e.keyT[i], &row[c]) {
			// A NULL key (or a struct with a NULL field) never matches: the row is only ever NULL-padded (or
			// output by an anti join) and needs no state.
			if e.outer[side] {
				e.emitPadded(side, row, op)
			}
			if e.anti && side == Left {
				e.emit(op, row[:e.nl])
			}
			return nil
		}
		r.kd[i] = row[c]
	}
	other.encodeKey(r.kd)
	degree := int64(0)
	// A hot key (more rows than the other side may cache) is read in batches.
	oe, err := other.read(ctx, r.kd, r.tick, func(b *joinEntry) error {
		n, err := e.probe(side, row, insert, other, b)
		degree += n
		return err
	})
	if err != nil {
		return err
	}
	if oe != nil {
		n, err := e.probe(side, row, insert, other, oe)
		if err != nil {
			return err
		}
		degree += n
		if len(oe.dirty) > other.limit {
			if err := other.shed(oe); err != nil {
				return err
			}
		}
	}
	if degree == 0 && e.outer[side] {
		e.emitPadded(side, row, op)
	}
	if side == Left && (e.semi && degree > 0 || e.anti && degree == 0) {
		e.emit(op, row[:e.nl])
	}

	// The row's own side: its key's entry (written to state at the barrier).
	if e.sameKey {
		this.keyBuf = append(this.keyBuf[:0], other.keyBuf...)
	} else {
		this.encodeKey(r.kd)
	}
	// Adding or removing a row needs none of its key's other rows: no read.
	te := this.loadForWrite(r.tick)
	if !insert {
		this.remove(te, row)
		if len(te.gone) > this.limit*this.width {
			return this.shed(te) // deletions of a key not read: bounded too
		}
		return nil
	}
	if this.degree {
		row = append(row[:this.ncols], types.DInt(degree))
		r.row = row
	}
	this.add(te, row)
	if len(te.dirty) > this.limit {
		return this.shed(te)
	}
	return nil
}

// probe joins row, a change of side, with the rows of oe, the other side's
// entry of its key (or a batch of its rows), emits the joined rows and updates
// their degrees (touching them), and returns how many matched.
func (e *hashJoin) probe(side Side, row []types.Datum, insert bool, other *joinSide, oe *joinEntry) (int64, error) {
	rows := oe.rows
	r := &e.run
	op := types.OpDelete
	if insert {
		op = types.OpInsert
	}
	degree := int64(0)
	w := other.width
	for i := 0; i*w < len(rows); i++ {
		orow := rows[i*w : (i+1)*w]
		e.fillJoined(side, row, orow)
		if e.cond != nil {
			ok, err := e.evalCond()
			if err != nil {
				return degree, err
			}
			if !ok {
				continue
			}
		}
		degree++
		if e.semi || e.anti {
			if side == Right {
				e.semiAntiMatch(orow, insert)
				other.touch(oe, i)
			}
			continue
		}
		if !other.degree {
			e.emit(op, r.joined)
			continue
		}
		d := &orow[other.ncols]
		switch {
		case insert:
			if d.I == 0 {
				e.emitPadded(1-side, orow, types.OpDelete)
			}
			d.I++
			e.emit(op, r.joined)
		case d.I > 0:
			d.I--
			e.emit(op, r.joined)
			if d.I == 0 {
				e.emitPadded(1-side, orow, types.OpInsert)
			}
		default:
			// A delete matching a row of degree 0 means the input was inconsistent;
			// retract the joined row, keep the degree at 0.
			e.emit(op, r.joined)
		}
		other.touch(oe, i)
	}
	return degree, nil
}

// semiAntiMatch applies a right row's insert or delete to a matching left
// row (of a semi or anti join): its degree changes, and when it crosses 0
// the left row enters or leaves the output.
func (e *hashJoin) semiAntiMatch(lrow []types.Datum, insert bool) {
	d := &lrow[e.nl]
	switch {
	case insert:
		if d.I == 0 {
			e.emitSemiAnti(lrow, true)
		}
		d.I++
	case d.I > 0:
		d.I--
		if d.I == 0 {
			e.emitSemiAnti(lrow, false)
		}
	}
	// A delete matching a row of degree 0 means the input was inconsistent: keep 0.
}

// emitSemiAnti outputs a left row whose degree left 0 (matched: true) or
// returned to 0: an insert into a semi join's output and a delete from an
// anti join's, or the reverse.
func (e *hashJoin) emitSemiAnti(lrow []types.Datum, matched bool) {
	op := types.OpInsert
	if matched == e.anti {
		op = types.OpDelete
	}
	e.emit(op, lrow[:e.nl])
}

// fillJoined sets r.joined to the row of side joined with orow of the other side.
func (e *hashJoin) fillJoined(side Side, row, orow []types.Datum) {
	j := e.run.joined
	if side == Left {
		copy(j[:e.nl], row[:e.nl])
		copy(j[e.nl:], orow[:e.nr])
	} else {
		copy(j[:e.nl], orow[:e.nl])
		copy(j[e.nl:], row[:e.nr])
	}
}

func (e *hashJoin) evalCond() (bool, error) {
	d, err := e.run.lenient.evalRow(&e.run.ectx, e.cond, e.run.joined)
	if err != nil {
		return false, fmt.Errorf("hash join: condition: %w", err)
	}
	return !d.Null && d.Bool(), nil
}

// emitPadded emits row of side with NULLs for the other side's columns.
func (e *hashJoin) emitPadded(side Side, row []types.Datum, op types.Op) {
	j := e.run.padded
	if side == Left {
		copy(j[:e.nl], row[:e.nl])
		copy(j[e.nl:], e.run.nulls[:e.nr])
	} else {
		copy(j[:e.nl], e.run.nulls[:e.nl])
		copy(j[e.nl:], row[:e.nr])
	}
	e.emit(op, j)
}

// emit appends one output row, queueing full chunks.
func (e *hashJoin) emit(op types.Op, row []types.Datum) {
	r := &e.run
	if r.cur == nil {
		r.cur = types.NewChunk(e.outT, types.DefaultChunkSize)
	}
	r.cur.AppendRowOp(op, row)
	if r.cur.Len() >= types.DefaultChunkSize {
		r.out = append(r.out, r.cur)
		r.cur = nil
	}
}

// cleanState, at a barrier, deletes from both sides' state (and cache) the
// rows whose join key is below the watermark an inner join sent on it: no
// later row of either side has such a key, so they can neither match nor
// change again.
func (e *hashJoin) cleanState(ctx context.Context) error {
	r := &e.run
	for i := range r.wmSent {
		wm := &r.wmSent[i]
		t := e.keyT[i]
		if wm.Null || !r.wmClean[i].Null && types.Compare(t, wm, &r.wmClean[i]) <= 0 {
			continue
		}
		r.wmClean[i] = wm.Copy()
		for s, side := range r.sides {
			if err := side.deleteBelow(ctx, e.actx.Vnodes, e.eqs[s][i], t, wm, i == 0); err != nil {
				return fmt.Errorf("hash join: clean state below the watermark: %w", err)
			}
		}
	}
	// Interval bands: a side's rows with Col below the other side's
	// watermark on Other less Delay match no later row; they are deleted
	// once the side's own watermark on Col has passed them too (so no later
	// change of its own refers to them).
	for bi, b := range e.bands {
		wo, ok1 := r.wmCol[1-b.Side][b.Other]
		ws, ok2 := r.wmCol[b.Side][b.Col]
		if !ok1 || !ok2 || wo.I == types.NegInfinityTS || ws.I == types.NegInfinityTS {
			continue
		}
		bound := ws.I
		if wo.I != types.InfinityTS && wo.I-b.Delay < bound {
			bound = wo.I - b.Delay
		}
		if r.bandSeen[bi] && bound <= r.bandClean[bi] {
			continue
		}
		r.bandClean[bi], r.bandSeen[bi] = bound, true
		t := e.outT[b.Col]
		if b.Side == 1 {
			t = e.outT[e.nl+b.Col]
		}
		d := types.Datum{I: bound}
		if err := r.sides[b.Side].deleteBelow(ctx, e.actx.Vnodes, b.Col, t, &d, false); err != nil {
			return fmt.Errorf("hash join: clean state below the interval bound: %w", err)
		}
	}
	return nil
}
