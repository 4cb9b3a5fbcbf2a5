package stream

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"unsafe"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage/codec"
	"github.com/tributary/tributary/storage/state"
)

// aggExec is streaming aggregation: hash aggregation (GroupBy non-empty) or
// simple aggregation (one group, always one output row). It accumulates an
// epoch's input per group and, at the barrier, emits one change per group
// that changed and writes each such group's state row once. Groups live in a
// bounded cache (clock eviction) in front of the "agg state" table; min, max,
// string_agg, first_value and last_value keep their input in tables of their
// own (ordered by the call's ORDER BY when it has one), DISTINCT aggregates
// a count per distinct argument tuple (plan.StreamAgg.StateLayouts).
type aggExec struct {
	aggConfig
	run aggRun
}

// aggConfig is the fixed part of the operator.
type aggConfig struct {
	cache      *OpStats // counts group lookups (nil: not counted)
	actx       *ActorContext
	in         Executor
	name       string // "hash agg" or "simple agg", for errors
	simple     bool
	groupBy    []int // input columns
	groupTypes []types.T
	streamKey  []int // input stream key columns
	outTypes   []types.T
	fns        []*aggFn
	rowsCol    int // row count column of the "agg state" row
	// merge: the input is a local aggregation's partial rows
	// (plan.StreamAgg.Merge): aggregate a's partials start at input column
	// partCol[a]; the weight is column weightCol.
	merge      bool
	partCol    []int
	weightCol  int
	stateWidth int // columns of the "agg state" row
	// eowc: emit on window close (plan.StreamAgg.EmitOnWindowClose); a
	// group is emitted, once, when the watermark on group column windowCol
	// passes its value, and then deleted.
	eowc      bool
	windowCol int
	// appendOnly: the input only inserts (plan.StreamAgg.AppendOnlyInput):
	// min and max keep their extreme alone, and a distinct table's count
	// is written once, when a value first appears.
	appendOnly bool
	// inView: the groups live in the rows of the materialized view above
	// (plan.StreamAgg.ViewState), which writes them from the output; the
	// aggregation only reads them: output column j is view column
	// viewCols[j], and the group's row count is output column viewRows.
	inView   bool
	viewCols []int
	viewRows int
}

// aggRun is the per-run state.
type aggRun struct {
	state  *state.Table
	tables []*state.Table // the aggregates' extra tables, in layout order

	groups map[string]*aggGroup // cached groups by encoded group key
	// ints holds the groups of a single integer group column but NULL's again, by value: a
	// lookup without encoding the key (nil for other group columns).
	ints   map[int64]*aggGroup
	budget *cacheBudget // bounds groups (rows and bytes)
	clock  []*aggGroup  // the cached groups, swept by hand to evict
	hand   int
	single *aggGroup   // simple aggregation's group, once loaded
	dirty  []*aggGroup // groups changed since the last flush, in first-change order

	outQ        []Message // messages to return before reading more input
	out         *types.Chunk
	outRows     int         // how many rows the flush's changes may take (a new out's capacity)
	watermarks  []Watermark // latest watermark per group column, sent after the next barrier's changes
	done        bool
	closedBelow types.Datum // eowc: every group whose window column is below it was emitted (when hasClosed)
	hasClosed   bool
	late        int64 // eowc: input rows of closed groups, dropped

	keyBuf   []byte
	keyRow   []types.Datum // group values of the current input row
	arg      types.Datum
	stateRow []types.Datum // "agg state" row being written
	viewRow  []types.Datum // inView: a view row read as an "agg state" row
	getRow   []types.Datum // decode target of Get (never aliased with input vectors)
	inRow    []types.Datum // extra table row being written
	outRow   []types.Datum
	res      []types.Datum
	statePK  []types.Datum // simple aggregation's constant key
}

// aggGroup is one cached group.
type aggGroup struct {
	key    string
	keyRow []types.Datum // the group values
	rows   int64
	accs   []aggAcc
	// prevRows and prev are the group's row count and results when it first
	// changed after the last flush (prev only when it had an output row).
	prevRows int64
	prev     []types.Datum
	dirty    bool
	inState  bool // its row is in the "agg state" table (committed or pending)
	ref      bool // clock reference bit
	slot     int  // index in aggRun.clock
}

// aggGroupBytes and aggAccBytes are an aggGroup's and an aggAcc's own sizes.
const (
	aggGroupBytes = int(unsafe.Sizeof(aggGroup{}))
	aggAccBytes   = int(unsafe.Sizeof(aggAcc{}))
)

// CountInto implements OpCounter: group lookups.
func (e *aggExec) CountInto(st *OpStats) { e.cache = st }

// NewAgg returns the executor of a StreamAgg: hash aggregation when
// n.GroupBy is non-empty, else simple aggregation. Its state tables are
// n.State(), laid out by n.StateLayouts().
func NewAgg(actx *ActorContext, n *plan.StreamAgg, in Executor) (Executor, error) {
	e := &aggExec{aggConfig: aggConfig{actx: actx, in: in, name: "hash agg", simple: len(n.GroupBy) == 0,
		groupBy: n.GroupBy, streamKey: n.Input.StreamKey(), outTypes: plan.Types(n.Out)}}
	if e.simple {
		e.name = "simple agg"
	}
	if n.EmitOnWindowClose {
		if e.simple || n.WindowCol < 0 || n.WindowCol >= len(n.GroupBy) {
			return nil, fmt.Errorf("%s: emit on window close needs group column %d of %d", e.name, n.WindowCol, len(n.GroupBy))
		}
		e.eowc, e.windowCol = true, n.WindowCol
	}
	inTypes := plan.Types(n.Input.Schema())
	for _, c := range n.GroupBy {
		e.groupTypes = append(e.groupTypes, inTypes[c])
	}
	layouts := n.StateLayouts()
	tables := n.State()
	if len(tables) != len(layouts) {
		return nil, fmt.Errorf("%s: %d state tables, the layout has %d", e.name, len(tables), len(layouts))
	}
	e.rowsCol = max(len(n.GroupBy), 1)
	col := e.rowsCol + 1
	tableOf, countOf := n.AggTables()
	shares := map[int]*distinctShare{}
	for i, c := range n.Aggs {
		f, err := newAggFn(c, col, n.AppendOnlyInput)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.name, err)
		}
		col += f.nState
		if f.input != plan.AggInputNone {
			f.table = tableOf[i] - 1
		}
		if countOf[i] >= 0 {
			s := shares[f.table]
			if s == nil {
				s = &distinctShare{}
				shares[f.table] = s
			}
			f.share, f.count = s, countOf[i]
			s.fns = append(s.fns, i)
		}
		e.fns = append(e.fns, f)
	}
	e.stateWidth = col
	e.appendOnly = n.AppendOnlyInput
	if n.Merge {
		e.merge = true
		pc := len(n.GroupBy)
		for i := range n.Aggs {
			ts, ok := plan.LocalAggPartials(&n.Aggs[i])
			if !ok {
				return nil, fmt.Errorf("%s: %s has no partial form to merge", e.name, n.Aggs[i].Name)
			}
			e.partCol = append(e.partCol, pc)
			pc += len(ts)
		}
		e.weightCol = pc
		if len(inTypes) != pc+1 {
			return nil, fmt.Errorf("%s: %d input columns, the partial rows have %d", e.name, len(inTypes), pc+1)
		}
	}
	open := actx.NewTable
	if n.ViewState != nil {
		width := len(n.GroupBy) + len(n.Aggs)
		e.viewCols = n.ViewCols
		if e.viewCols == nil {
			e.viewCols = make([]int, width)
			for j := range e.viewCols {
				e.viewCols[j] = j
			}
		}
		if !plan.StateInView(n) || len(tables) != 1 || len(tables[0].Types) != width || len(e.viewCols) != width {
			return nil, fmt.Errorf("%s: its groups cannot live in the view's table %s", e.name, tables[0])
		}
		e.inView, open = true, actx.SharedTable
		e.viewRows, _ = plan.RowsFromView(n)
	} else if len(tables[0].Types) != col {
		return nil, fmt.Errorf("%s: agg state table has %d columns, want %d", e.name, len(tables[0].Types), col)
	}
	r := &e.run
	widest := 0
	for i, st := range tables {
		t, err := open(state.Schema{TableID: st.ID, Types: st.Types, PK: st.PK, PKDesc: st.PKDesc, DistKey: st.Dist})
		if err != nil {
			return nil, fmt.Errorf("%s: open %s: %w", e.name, st.Name, err)
		}
		t.TrackKeys() // new groups and values above those stored read nothing
		if i == 0 {
			r.state = t
		} else {
			r.tables = append(r.tables, t)
			widest = max(widest, len(st.Types))
		}
	}
	r.groups = make(map[string]*aggGroup)
	if len(e.groupTypes) == 1 && e.groupTypes[0].IsInteger() {
		r.ints = make(map[int64]*aggGroup)
	}
	if !e.simple {
		r.budget = newCacheBudget(actx, e.name)
	}
	r.keyRow = make([]types.Datum, len(n.GroupBy))
	r.stateRow = make([]types.Datum, col)
	if e.inView {
		r.viewRow = make([]types.Datum, col)
	}
	r.inRow = make([]types.Datum, widest)
	r.outRow = make([]types.Datum, len(e.outTypes))
	r.res = make([]types.Datum, len(e.fns))
	r.statePK = []types.Datum{types.DInt(0)}
	return e, nil
}

// Schema implements Executor.
func (e *aggExec) Schema() []types.T { return e.outTypes }

// Next implements Executor.
func (e *aggExec) Next(ctx context.Context) (Message, error) {
	r := &e.run
	for {
		if m, ok := popQueued(&r.outQ); ok {
			return m, nil
		}
		if r.done {
			return Message{}, io.EOF
		}
		m, err := e.in.Next(ctx)
		if err == io.EOF {
			return Message{}, err
		}
		if err != nil {
			return Message{}, fmt.Errorf("%s: %w", e.name, err)
		}
		switch {
		case m.Chunk != nil:
			if err := e.applyChunk(ctx, m.Chunk); err != nil {
				return Message{}, fmt.Errorf("%s: %w", e.name, err)
			}
			if !e.simple {
				if limit := r.budget.limit(); len(r.groups) > limit {
					// Too many groups for the cache: emit and write the dirty ones now so they
					// can be evicted (they may then change again in this epoch).
					if err := e.flush(ctx); err != nil {
						return Message{}, fmt.Errorf("%s: %w", e.name, err)
					}
					e.evict(limit)
				}
				r.budget.report(len(r.groups))
			}
		case m.Barrier != nil:
			if e.simple && r.single == nil {
				if _, err := e.simpleGroup(ctx); err != nil {
					return Message{}, fmt.Errorf("%s: %w", e.name, err)
				}
			}
			if e.simple && !r.single.inState {
				// The initial row: written and emitted at the first barrier.
				if err := e.touch(r.single); err != nil {
					return Message{}, fmt.Errorf("%s: %w", e.name, err)
				}
			}
			if err := e.flush(ctx); err != nil {
				return Message{}, fmt.Errorf("%s: %w", e.name, err)
			}
			if e.eowc {
				if err := e.closeWindows(ctx); err != nil {
					return Message{}, fmt.Errorf("%s: %w", e.name, err)
				}
			}
			if !e.simple {
				e.evict(r.budget.limit())
				r.budget.report(len(r.groups))
			}
			for _, w := range r.watermarks {
				r.outQ = append(r.outQ, WatermarkMsg(&w))
			}
			r.watermarks = r.watermarks[:0]
			r.outQ = append(r.outQ, m)
			r.done = m.Barrier.Stops(e.actx.ID)
		case m.Watermark != nil:
			e.watermark(m.Watermark)
		}
	}
}

// watermark keeps a watermark on a group column (renumbered to the output)
// for after the next barrier; others say nothing about the output.
func (e *aggExec) watermark(w *Watermark) {
	r := &e.run
	for k, c := range e.groupBy {
		if c != w.Col {
			continue
		}
		for i := range r.watermarks {
			if r.watermarks[i].Col == k {
				r.watermarks[i].Val = w.Val.Copy()
				return
			}
		}
		r.watermarks = append(r.watermarks, Watermark{Col: k, Val: w.Val.Copy()})
		return
	}
}

// applyChunk feeds every visible row of c to its group.
func (e *aggExec) applyChunk(ctx context.Context, c *types.Chunk) error {
	r := &e.run
	for i := 0; i < c.Len(); i++ {
		if !c.Visible(i) {
			continue
		}
		sign := int64(1)
		if !c.Op(i).IsInsert() {
			sign = -1
		}
		if e.merge {
			sign = c.Cols[e.weightCol].I64[i]
		}
		if e.eowc && r.hasClosed && e.closed(c, i) {
			r.late++
			lateRows.Add(1)
			continue
		}
		var g *aggGroup
		var err error
		if e.simple {
			g, err = e.simpleGroup(ctx)
		} else {
			g, err = e.hashGroup(ctx, c, i)
		}
		if err != nil {
			return err
		}
		if err := e.touch(g); err != nil {
			return err
		}
		g.rows += sign
		if e.merge {
			for a, f := range e.fns {
				if err := f.merge(&g.accs[a], c, e.partCol[a], &r.arg, i); err != nil {
					return fmt.Errorf("%s: %w", f.call.Name, err)
				}
			}
			continue
		}
		for a, f := range e.fns {
			if f.share != nil {
				// The first aggregate of a shared distinct table counts the
				// row for all of them (each under its own filter).
				if f.share.fns[0] == a {
					if err := e.applySharedDistinct(ctx, f.share, g, c, i, sign); err != nil {
						return err
					}
				}
				continue
			}
			if f.call.Filter >= 0 && !passes(c, f.call.Filter, i) {
				continue
			}
			acc := &g.accs[a]
			switch f.input {
			case plan.AggInputNone:
				if len(f.call.Args) > 0 {
					c.Cols[f.call.Args[0]].GetInto(i, &r.arg)
				}
				err = f.apply(acc, &r.arg, sign)
			case plan.AggInputMinMax:
				err = e.applyMinMax(f, g, acc, c, i, sign)
			case plan.AggInputString:
				err = e.applyStringAgg(f, g, acc, c, i, sign)
			case plan.AggInputOrdered:
				err = e.applyOrdered(f, g, acc, c, i, sign)
			case plan.AggInputDistinct:
				err = e.applyDistinct(ctx, f, g, acc, c, i, sign)
			}
			if err != nil {
				return fmt.Errorf("%s: %w", f.call.Name, err)
			}
		}
	}
	return nil
}

// hashGroup returns the group of row i of c, from the cache or the state table.
func (e *aggExec) hashGroup(ctx context.Context, c *types.Chunk, i int) (*aggGroup, error) {
	r := &e.run
	if r.ints != nil {
		if col := &c.Cols[e.groupBy[0]]; !col.Nulls[i] {
			if g, ok := r.ints[col.I64[i]]; ok {
				e.cache.hit(true)
				g.ref = true
				return g, nil
			}
		}
	}
	buf := r.keyBuf[:0]
	for k, col := range e.groupBy {
		c.Cols[col].GetInto(i, &r.keyRow[k])
		buf = codec.EncodeKey(buf, e.groupTypes[k], &r.keyRow[k], false)
	}
	r.keyBuf = buf
	g, ok := r.groups[string(buf)]
	e.cache.hit(ok)
	if ok {
		g.ref = true
		return g, nil
	}
	g = e.newGroup(string(buf))
	for k := range r.keyRow {
		g.keyRow[k] = r.keyRow[k].Copy()
	}
	if err := e.load(ctx, g, g.keyRow); err != nil {
		return nil, err
	}
	r.groups[g.key] = g
	if r.ints != nil && !g.keyRow[0].Null {
		r.ints[g.keyRow[0].I] = g
	}
	// A group holds its key (map key and row), accumulators and previous results.
	r.budget.sample(g.keyRow, len(g.key)+len(g.accs)*aggAccBytes+len(g.prev)*int(datumBytes)+aggGroupBytes)
	g.slot = len(r.clock)
	r.clock = append(r.clock, g)
	return g, nil
}

// simpleGroup returns simple aggregation's only group, loading it once.
func (e *aggExec) simpleGroup(ctx context.Context) (*aggGroup, error) {
	r := &e.run
	if r.single != nil {
		return r.single, nil
	}
	g := e.newGroup("")
	if err := e.load(ctx, g, r.statePK); err != nil {
		return nil, err
	}
	r.single = g
	return g, nil
}

func (e *aggExec) newGroup(key string) *aggGroup {
	g := &aggGroup{key: key, keyRow: make([]types.Datum, len(e.groupBy)), accs: make([]aggAcc, len(e.fns)),
		prev: make([]types.Datum, len(e.fns)), ref: true}
	for a, f := range e.fns {
		f.initAcc(&g.accs[a])
	}
	return g
}

// load reads g's state row (key pk) if it has one.
func (e *aggExec) load(ctx context.Context, g *aggGroup, pk []types.Datum) error {
	r := &e.run
	row, found, err := r.state.Get(ctx, pk, r.getRow)
	r.getRow = row
	if err != nil {
		return fmt.Errorf("load group: %w", err)
	}
	if !found {
		return nil
	}
	if e.inView {
		row = e.stateOfView(row)
	}
	g.inState = true
	g.rows = row[e.rowsCol].I
	for a, f := range e.fns {
		if err := f.load(&g.accs[a], row); err != nil {
			return err
		}
	}
	return nil
}

// touch marks g dirty, remembering its output before the change.
func (e *aggExec) touch(g *aggGroup) error {
	if g.dirty {
		return nil
	}
	g.dirty = true
	g.prevRows = g.rows
	if e.simple && g.inState || !e.simple && g.rows > 0 {
		for a, f := range e.fns {
			if err := f.resultInto(&g.accs[a], &g.prev[a]); err != nil {
				return err
			}
		}
	}
	e.run.dirty = append(e.run.dirty, g)
	return nil
}

// groupPrefix returns the vnode and encoded key prefix of g's rows in an
// aggregate's extra table.
func (e *aggExec) groupPrefix(t *state.Table, g *aggGroup) (int, []byte) {
	vnode := int(t.VnodeOfPK(g.keyRow))
	var buf []byte
	for k := range g.keyRow {
		buf = codec.EncodeKey(buf, e.groupTypes[k], &g.keyRow[k], false)
	}
	return vnode, buf
}

// flush recomputes stale results of the dirty groups, emits their changes,
// writes their state rows, and drops emptied groups from the cache.
func (e *aggExec) flush(ctx context.Context) error {
	r := &e.run
	for gi, g := range r.dirty {
		r.dirty[gi] = nil
		r.outRows = 2 * (len(r.dirty) - gi) // an update takes two rows
		for a, f := range e.fns {
			if g.accs[a].stale {
				if err := e.recompute(ctx, f, g, &g.accs[a]); err != nil {
					return fmt.Errorf("%s: %w", f.call.Name, err)
				}
			}
		}
		if g.rows < 0 {
			return fmt.Errorf("group (%s) has %d rows: the input deleted rows it never inserted", e.describeGroup(g), g.rows)
		}
		if err := e.emit(g); err != nil {
			return err
		}
		g.dirty = false
		if e.inView {
			// The view writes the group's row from the change just emitted (inState is
			// not read: a view row exists exactly while the group has rows).
			if g.rows == 0 {
				e.removeGroup(g)
			}
			continue
		}
		if g.rows == 0 && !e.simple {
			if g.inState {
				if err := r.state.Delete(e.writeStateRow(g)); err != nil {
					return err
				}
			}
			e.removeGroup(g)
			continue
		}
		if err := r.state.Insert(e.writeStateRow(g)); err != nil {
			return err
		}
		g.inState = true
	}
	r.dirty = r.dirty[:0]
	if r.out != nil && r.out.Len() > 0 {
		r.outQ = append(r.outQ, ChunkMsg(r.out))
		r.out = nil
	}
	return nil
}

// stateOfView returns a view row (the output's columns, placed by viewCols) as the
// "agg state" row it stands for (inView): each aggregate's one state column is its
// result, and the row count is a count(*)'s.
func (e *aggExec) stateOfView(v []types.Datum) []types.Datum {
	s := e.run.viewRow
	g := len(e.groupBy)
	for k := range g {
		s[k] = v[e.viewCols[k]]
	}
	s[e.rowsCol] = v[e.viewCols[e.viewRows]]
	for a, f := range e.fns {
		s[f.stateCol] = v[e.viewCols[g+a]]
	}
	return s
}

func (e *aggExec) writeStateRow(g *aggGroup) []types.Datum {
	row := e.run.stateRow
	if e.simple {
		row[0] = types.Datum{I: 0}
	} else {
		copy(row, g.keyRow)
	}
	row[e.rowsCol] = types.Datum{I: g.rows}
	for a, f := range e.fns {
		f.store(&g.accs[a], row)
	}
	return row
}

// emit appends g's change since it was touched to the output (nothing
// when emitting on window close: closeWindows emits).
func (e *aggExec) emit(g *aggGroup) error {
	r := &e.run
	if e.eowc {
		return nil
	}
	had := g.prevRows > 0
	has := g.rows > 0
	if e.simple {
		had, has = g.inState, true
	}
	if !had && !has {
		return nil
	}
	if has {
		for a, f := range e.fns {
			if err := f.resultInto(&g.accs[a], &r.res[a]); err != nil {
				return fmt.Errorf("%s: %w", f.call.Name, err)
			}
		}
	}
	switch {
	case !had:
		e.appendOut(types.OpInsert, g, r.res)
	case !has:
		e.appendOut(types.OpDelete, g, g.prev)
	default:
		changed := false
		for a, f := range e.fns {
			if !sameDatum(f.result, &g.prev[a], &r.res[a]) {
				changed = true
				break
			}
		}
		if changed {
			e.appendOut(types.OpUpdateDelete, g, g.prev)
			e.appendOut(types.OpUpdateInsert, g, r.res)
		}
	}
	return nil
}

func (e *aggExec) appendOut(op types.Op, g *aggGroup, res []types.Datum) {
	r := &e.run
	// Start a new chunk when full, but never between the halves of an update.
	if r.out != nil && r.out.Len() >= types.DefaultChunkSize && op != types.OpUpdateInsert {
		r.outQ = append(r.outQ, ChunkMsg(r.out))
		r.out = nil
	}
	if r.out == nil {
		// Sized for the groups left to emit: an epoch that changed a group or
		// two (one-row INSERTs) allocated a whole chunk for them.
		r.out = types.NewChunk(e.outTypes, min(max(r.outRows, 2), types.DefaultChunkSize))
	}
	n := copy(r.outRow, g.keyRow)
	copy(r.outRow[n:], res)
	r.out.AppendRowOp(op, r.outRow)
}

// evict drops clean groups, by clock, until at most limit are cached.
func (e *aggExec) evict(limit int) {
	r := &e.run
	for sweeps := 2 * len(r.clock); len(r.groups) > limit && len(r.clock) > 0 && sweeps >= 0; sweeps-- {
		if r.hand >= len(r.clock) {
			r.hand = 0
		}
		g := r.clock[r.hand]
		if g.dirty || g.ref {
			g.ref = false
			r.hand++
			continue
		}
		e.removeGroup(g)
	}
}

// removeGroup drops g from the cache (it must be clean).
func (e *aggExec) removeGroup(g *aggGroup) {
	r := &e.run
	delete(r.groups, g.key)
	if r.ints != nil && !g.keyRow[0].Null {
		delete(r.ints, g.keyRow[0].I)
	}
	last := len(r.clock) - 1
	r.clock[g.slot] = r.clock[last]
	r.clock[g.slot].slot = g.slot
	r.clock[last] = nil
	r.clock = r.clock[:last]
}

func (e *aggExec) describeGroup(g *aggGroup) string {
	var b []byte
	for k := range g.keyRow {
		if k > 0 {
			b = append(b, ", "...)
		}
		if g.keyRow[k].Null {
			b = append(b, "NULL"...)
			continue
		}
		b = types.AppendText(b, e.groupTypes[k], &g.keyRow[k])
	}
	return string(b)
}

// closed reports whether row i of c belongs to a group already emitted on
// window close (its window column below closedBelow).
func (e *aggExec) closed(c *types.Chunk, i int) bool {
	r := &e.run
	col := e.groupBy[e.windowCol]
	c.Cols[col].GetInto(i, &r.arg)
	return !r.arg.Null && types.Compare(e.groupTypes[e.windowCol], &r.arg, &r.closedBelow) < 0
}

// closeWindows, at a barrier, emits and deletes every group whose window
// column is below the newest watermark on it: its result as an insert (the
// only change it ever emits), its "agg state" row and its rows in the
// aggregates' extra tables.
func (e *aggExec) closeWindows(ctx context.Context) error {
	r := &e.run
	var wm *types.Datum
	for i := range r.watermarks {
		if r.watermarks[i].Col == e.windowCol {
			wm = &r.watermarks[i].Val
		}
	}
	t := e.groupTypes[e.windowCol]
	if wm == nil || wm.Null || r.hasClosed && types.Compare(t, wm, &r.closedBelow) <= 0 {
		return nil
	}
	r.closedBelow, r.hasClosed = wm.Copy(), true
	keys, err := e.closedGroups(ctx)
	if err != nil {
		return err
	}
	r.outRows = len(keys)
	for _, key := range keys {
		g, cached := r.groups[key.enc]
		e.cache.hit(cached)
		if !cached {
			g = e.newGroup(key.enc)
			copy(g.keyRow, key.row)
			if err := e.load(ctx, g, g.keyRow); err != nil {
				return err
			}
		}
		if g.dirty {
			return fmt.Errorf("closing group (%s): it is dirty after the flush", e.describeGroup(g))
		}
		for a, f := range e.fns {
			if g.accs[a].stale {
				if err := e.recompute(ctx, f, g, &g.accs[a]); err != nil {
					return fmt.Errorf("%s: %w", f.call.Name, err)
				}
			}
			if err := f.resultInto(&g.accs[a], &r.res[a]); err != nil {
				return fmt.Errorf("%s: %w", f.call.Name, err)
			}
		}
		if g.rows > 0 {
			e.appendOut(types.OpInsert, g, r.res)
		}
		if err := r.state.Delete(e.writeStateRow(g)); err != nil {
			return err
		}
		for _, t := range r.tables {
			if err := e.deleteGroupRows(ctx, t, g); err != nil {
				return fmt.Errorf("%s: delete a closed window's input rows: %w", e.name, err)
			}
		}
		if cached {
			e.removeGroup(g)
		}
	}
	if r.out != nil && r.out.Len() > 0 {
		r.outQ = append(r.outQ, ChunkMsg(r.out))
		r.out = nil
	}
	return nil
}

// closedKey is a group to close: its encoded key and values.
type closedKey struct {
	enc string
	row []types.Datum
}

// closedGroups lists the groups in state (this actor's vnodes) whose window
// column is below closedBelow, in key order: a scan of the groups before
// closedBelow when the window column is the first group column, else of
// every group.
func (e *aggExec) closedGroups(ctx context.Context) ([]closedKey, error) {
	r := &e.run
	vnodes := []int{state.AllVnodes}
	if e.actx.Vnodes != nil {
		vnodes = vnodes[:0]
		for _, v := range e.actx.Vnodes {
			vnodes = append(vnodes, int(v))
		}
	}
	t := e.groupTypes[e.windowCol]
	var rng state.KeyRange
	if e.windowCol == 0 {
		// The window column leads the key: the closed groups are a prefix of each vnode's range.
		rng.End = codec.EncodeKey(nil, t, &r.closedBelow, false)
	}
	var keys []closedKey
	for _, v := range vnodes {
		it, err := r.state.Iter(ctx, state.IterOptions{Vnode: v, Range: rng})
		if err != nil {
			return nil, fmt.Errorf("scan groups: %w", err)
		}
		for {
			err := it.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				_ = it.Close()
				return nil, fmt.Errorf("scan groups: %w", err)
			}
			row := it.Row()
			w := &row[e.windowCol]
			if w.Null || types.Compare(t, w, &r.closedBelow) >= 0 {
				continue
			}
			k := closedKey{row: make([]types.Datum, len(e.groupBy))}
			var buf []byte
			for j := range k.row {
				k.row[j] = row[j].Copy()
				buf = codec.EncodeKey(buf, e.groupTypes[j], &k.row[j], false)
			}
			k.enc = string(buf)
			keys = append(keys, k)
		}
		if err := it.Close(); err != nil {
			return nil, fmt.Errorf("scan groups: %w", err)
		}
	}
	slices.SortFunc(keys, func(a, b closedKey) int { return strings.Compare(a.enc, b.enc) })
	return keys, nil
}

// deleteGroupRows deletes g's rows from an aggregate's extra table.
func (e *aggExec) deleteGroupRows(ctx context.Context, t *state.Table, g *aggGroup) error {
	vnode, start := e.groupPrefix(t, g)
	it, err := t.Iter(ctx, state.IterOptions{Vnode: vnode, Range: state.KeyRange{Start: start, End: codec.PrefixEnd(start)}})
	if err != nil {
		return err
	}
	var rows [][]types.Datum
	for {
		err := it.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			_ = it.Close()
			return err
		}
		row := it.Row()
		cp := make([]types.Datum, len(row))
		for j := range row {
			cp[j] = row[j].Copy()
		}
		rows = append(rows, cp)
	}
	if err := it.Close(); err != nil {
		return err
	}
	for _, row := range rows {
		if err := t.Delete(row); err != nil {
			return err
		}
	}
	return nil
}
