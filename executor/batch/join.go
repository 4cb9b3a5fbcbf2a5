package batch

import (
	"context"
	"io"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
)

// joinExec is the probe loop shared by the hash join (hash_join.go) and the
// nested loop join (nested_loop_join.go). It reads the whole right input into
// one chunk (the build side), then streams the left input: for each left row
// it lists candidate right rows (same key from the hash table, or every row),
// batches the candidate pairs, filters them with the extra condition, and
// emits matches; once a left chunk is done it emits what the join kind wants
// for its unmatched (or, for semi joins, matched) rows. Right and full joins
// emit the right rows nothing matched after the left input ends.
type joinExec struct {
	joinConfig
	left, right Executor
	run         joinRun
}

// joinConfig is the fixed part of a join.
type joinConfig struct {
	env       *Env
	kind      plan.JoinKind
	eqL, eqR  []int // equi-join keys; empty for a nested loop join
	cond      expr.Expr
	nullAware bool
	maxOne    bool // a left row may join at most one right row (plan.Join.MaxOneRow)
	lts, rts  []types.T
	ts        []types.T // output types
}

// Candidate listing phases for the current left row.
const (
	phaseStart    = iota
	phaseChain    // right rows with the left row's hash (hash join)
	phaseNullKeys // right rows with a NULL key (null-aware anti join)
	phaseAll      // every right row (nested loop join)
	phaseAllMaybe // every right row that may equal a left key with NULLs (null-aware anti join)
	phaseDone
)

// joinRun is the per-run state of a join.
type joinRun struct {
	built   bool
	build   *types.Chunk // every right row
	heads   map[uint64]int32
	next    []int32 // build row -> next build row with the same hash, -1 at end
	nullKey []int32 // build rows with a NULL key
	bMatch  []bool  // build row matched (right and full joins)

	probe   *types.Chunk // current left chunk (visible rows only); nil between chunks
	scratch *types.Chunk
	hs      []uint64 // hashes of probe rows
	lMatch  []bool   // probe row matched
	pi      int      // probe row whose candidates are being listed
	phase   int
	cursor  int32

	pairL, pairR []int32      // candidate pairs (probe row, build row)
	pairs        *types.Chunk // candidate pairs as joined rows, for cond
	condVec      types.Vector

	leftDone bool
	tail     int // next build row to check for the unmatched-right tail
	out      *types.Chunk
}

func newJoin(env *Env, n *plan.Join, left, right Executor) *joinExec {
	e := &joinExec{
		joinConfig: joinConfig{
			env: env, kind: n.Kind, eqL: n.EqLeft, eqR: n.EqRight, cond: n.Cond, nullAware: n.NullAware, maxOne: n.MaxOneRow,
			lts: left.Schema(), rts: right.Schema(),
		},
		left: left, right: right,
	}
	if e.kind == plan.SemiJoin || e.kind == plan.AntiJoin {
		e.ts = e.lts
	} else {
		e.ts = append(append(make([]types.T, 0, len(e.lts)+len(e.rts)), e.lts...), e.rts...)
	}
	return e
}

func (e *joinExec) Schema() []types.T { return e.ts }

func (e *joinExec) hashed() bool { return len(e.eqL) > 0 }

// emitsPairs reports whether matched pairs are output rows (not semi/anti).
func (e *joinExec) emitsPairs() bool { return e.kind != plan.SemiJoin && e.kind != plan.AntiJoin }

// firstDecides reports whether the first candidate settles a left row (semi
// and anti joins without a condition).
func (e *joinExec) firstDecides() bool { return !e.emitsPairs() && e.cond == nil }

func (e *joinExec) Next(ctx context.Context) (*types.Chunk, error) {
	r := &e.run
	if !r.built {
		r.built = true
		if err := e.buildSide(ctx); err != nil {
			return nil, err
		}
		r.out = types.NewChunk(e.ts, types.DefaultChunkSize)
	}
	r.out.Reset()
	for {
		if err := checkCtx(ctx); err != nil {
			return nil, err
		}
		if r.leftDone {
			if e.kind == plan.RightJoin || e.kind == plan.FullJoin {
				e.emitUnmatchedRight()
			}
			if r.out.Len() > 0 {
				return r.out, nil
			}
			return nil, io.EOF
		}
		if r.probe == nil {
			c, err := e.left.Next(ctx)
			if isEOF(err) {
				r.leftDone = true
				continue
			}
			if err != nil {
				return nil, err
			}
			if err := e.startProbe(visibleRows(c, &r.scratch)); err != nil {
				return nil, err
			}
			continue
		}
		e.collect()
		if err := e.matchPairs(); err != nil {
			return nil, err
		}
		if r.pi >= r.probe.Len() {
			e.finishProbe()
		}
		if r.out.Len() > 0 {
			return r.out, nil
		}
	}
}

// buildSide reads the right input and indexes it.
func (e *joinExec) buildSide(ctx context.Context) error {
	r := &e.run
	r.build = types.NewChunk(e.rts, types.DefaultChunkSize)
	if err := drain(ctx, e.right, r.build); err != nil {
		return err
	}
	if e.kind == plan.RightJoin || e.kind == plan.FullJoin {
		r.bMatch = make([]bool, r.build.Len())
	}
	if e.hashed() {
		e.index()
	}
	return nil
}

func (e *joinExec) startProbe(c *types.Chunk) error {
	r := &e.run
	n := c.Len()
	if n == 0 {
		return nil
	}
	if r.build.Len() == 0 && e.kind != plan.LeftJoin && e.kind != plan.FullJoin && e.kind != plan.AntiJoin {
		return nil // nothing can match and unmatched left rows are not wanted
	}
	r.probe = c
	if e.hashed() {
		r.hs = hashRows(c, e.eqL, r.hs)
	}
	if cap(r.lMatch) < n {
		r.lMatch = make([]bool, n)
	}
	r.lMatch = r.lMatch[:n]
	clear(r.lMatch)
	r.pi, r.phase = 0, phaseStart
	return nil
}

// collect lists candidate pairs from the current position until a batch is
// full or the probe chunk is exhausted.
func (e *joinExec) collect() {
	r := &e.run
	r.pairL, r.pairR = r.pairL[:0], r.pairR[:0]
	n := r.probe.Len()
	nb := int32(r.build.Len())
	for r.pi < n && len(r.pairL) < types.DefaultChunkSize {
		l := r.pi
		switch r.phase {
		case phaseStart:
			e.startRow(l)
		case phaseChain:
			for r.cursor >= 0 && len(r.pairL) < types.DefaultChunkSize && r.phase == phaseChain {
				b := r.cursor
				r.cursor = r.next[b]
				if eqCols(r.probe, e.eqL, l, r.build, e.eqR, int(b)) {
					e.candidate(l, b)
				}
			}
			if r.cursor < 0 && r.phase == phaseChain {
				if e.nullAware && e.kind == plan.AntiJoin {
					r.phase, r.cursor = phaseNullKeys, 0
				} else {
					r.phase = phaseDone
				}
			}
		case phaseNullKeys:
			for int(r.cursor) < len(r.nullKey) && len(r.pairL) < types.DefaultChunkSize && r.phase == phaseNullKeys {
				b := r.nullKey[r.cursor]
				r.cursor++
				if e.mayEqual(l, int(b)) {
					e.candidate(l, b)
				}
			}
			if int(r.cursor) >= len(r.nullKey) && r.phase == phaseNullKeys {
				r.phase = phaseDone
			}
		case phaseAll, phaseAllMaybe:
			p := r.phase
			for r.cursor < nb && len(r.pairL) < types.DefaultChunkSize && r.phase == p {
				b := r.cursor
				r.cursor++
				if p == phaseAll || e.mayEqual(l, int(b)) {
					e.candidate(l, b)
				}
			}
			if r.cursor >= nb && r.phase == p {
				r.phase = phaseDone
			}
		case phaseDone:
			r.pi++
			r.phase = phaseStart
		}
	}
}

// startRow chooses how to list the candidates of probe row l.
func (e *joinExec) startRow(l int) {
	r := &e.run
	if !e.hashed() {
		r.phase, r.cursor = phaseAll, 0
		return
	}
	if anyNull(r.probe, e.eqL, l) {
		// NULL never equals anything; but NOT IN is unknown (so rejects) if a right row may equal it.
		if e.nullAware && e.kind == plan.AntiJoin {
			r.phase, r.cursor = phaseAllMaybe, 0
		} else {
			r.phase = phaseDone
		}
		return
	}
	r.phase, r.cursor = phaseChain, -1
	if head, ok := r.heads[r.hs[l]]; ok {
		r.cursor = head
	}
}

// candidate records pair (l, b), or settles l at once when the first candidate decides.
func (e *joinExec) candidate(l int, b int32) {
	r := &e.run
	if e.firstDecides() {
		r.lMatch[l] = true
		r.phase = phaseDone
		return
	}
	r.pairL = append(r.pairL, int32(l))
	r.pairR = append(r.pairR, b)
}

// mayEqual reports whether the keys of probe row l and build row b are not
// known to differ (equal where both are non-NULL), for NOT IN semantics.
func (e *joinExec) mayEqual(l, b int) bool {
	r := &e.run
	for k, lc := range e.eqL {
		lv, bv := &r.probe.Cols[lc], &r.build.Cols[e.eqR[k]]
		if lv.Nulls[l] || bv.Nulls[b] {
			continue
		}
		if cmpNonNull(lv, l, bv, b) != 0 {
			return false
		}
	}
	return true
}

// matchPairs filters the collected pairs with cond and records the matches.
func (e *joinExec) matchPairs() error {
	r := &e.run
	np := len(r.pairL)
	if np == 0 {
		return nil
	}
	if e.cond == nil {
		for k := 0; k < np; k++ {
			if err := e.match(r.pairL[k], r.pairR[k]); err != nil {
				return err
			}
		}
		return nil
	}
	if r.pairs == nil {
		all := append(append(make([]types.T, 0, len(e.lts)+len(e.rts)), e.lts...), e.rts...)
		r.pairs = types.NewChunk(all, types.DefaultChunkSize)
	}
	r.pairs.Reset()
	nl := len(e.lts)
	for j := range e.lts {
		v, src := &r.pairs.Cols[j], &r.probe.Cols[j]
		for _, l := range r.pairL {
			v.AppendFrom(src, int(l))
		}
	}
	for j := range e.rts {
		v, src := &r.pairs.Cols[nl+j], &r.build.Cols[j]
		for _, b := range r.pairR {
			v.AppendFrom(src, int(b))
		}
	}
	r.pairs.SetLen(np)
	if err := evalInto(e.env, e.cond, r.pairs, &r.condVec); err != nil {
		return err
	}
	for k := 0; k < np; k++ {
		if !r.condVec.Nulls[k] && r.condVec.I64[k] != 0 {
			if err := e.match(r.pairL[k], r.pairR[k]); err != nil {
				return err
			}
		}
	}
	return nil
}

// match records that probe row l joins build row b.
func (e *joinExec) match(l, b int32) error {
	r := &e.run
	if e.maxOne && r.lMatch[l] {
		return types.Errorf(types.ErrCardinality, "more than one row returned by a subquery used as an expression")
	}
	r.lMatch[l] = true
	if r.bMatch != nil {
		r.bMatch[b] = true
	}
	if e.emitsPairs() {
		e.appendJoined(int(l), int(b))
	}
	return nil
}

// appendJoined appends probe row l joined with build row b; -1 stands for NULLs.
func (e *joinExec) appendJoined(l, b int) {
	r := &e.run
	out := r.out
	nl := len(e.lts)
	for j := 0; j < nl; j++ {
		if l < 0 {
			out.Cols[j].AppendNull()
		} else {
			out.Cols[j].AppendFrom(&r.probe.Cols[j], l)
		}
	}
	for j := range e.rts {
		if b < 0 {
			out.Cols[nl+j].AppendNull()
		} else {
			out.Cols[nl+j].AppendFrom(&r.build.Cols[j], b)
		}
	}
	out.SetLen(out.Len() + 1)
}

// finishProbe emits what the join kind wants for the probe chunk's rows by
// whether they matched, then releases the chunk.
func (e *joinExec) finishProbe() {
	r := &e.run
	switch e.kind {
	case plan.LeftJoin, plan.FullJoin:
		for l, m := range r.lMatch {
			if !m {
				e.appendJoined(l, -1)
			}
		}
	case plan.SemiJoin, plan.AntiJoin:
		want := e.kind == plan.SemiJoin
		for l, m := range r.lMatch {
			if m == want {
				r.out.AppendFrom(r.probe, l)
			}
		}
	}
	r.probe = nil
}

// emitUnmatchedRight appends up to a chunk of right rows that matched nothing.
func (e *joinExec) emitUnmatchedRight() {
	r := &e.run
	n := r.build.Len()
	for ; r.tail < n && r.out.Len() < types.DefaultChunkSize; r.tail++ {
		if !r.bMatch[r.tail] {
			e.appendJoined(-1, r.tail)
		}
	}
}

func (e *joinExec) Close() error {
	e.run = joinRun{}
	err := e.left.Close()
	if rerr := e.right.Close(); err == nil {
		err = rerr
	}
	return err
}
