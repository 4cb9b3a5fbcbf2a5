package stream

import (
	"context"
	"fmt"
	"math"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage/codec"
)

// localAggChunkRows is the most rows of a chunk a local aggregation sends.
const localAggChunkRows = 1024

// LocalAggGroups bounds the groups a local aggregation holds: past it, it
// sends its partial rows at the end of the chunk.
const LocalAggGroups = 4096

// localAggExec is the first phase of a two-phase aggregation
// (plan.StreamLocalAgg): it folds changes into one partial row per group and
// sends the partials as inserts before every barrier and watermark, and when
// it holds more than LocalAggGroups groups. It keeps no state: what it holds
// at a barrier is sent before the barrier.
type localAggExec struct {
	in         Executor
	groupBy    []int
	groupTypes []types.T
	aggs       []localFn
	width      int // partial columns
	outTypes   []types.T
	maxGroups  int // LocalAggGroups

	groups map[string]int // group key -> index in entries
	// One integer group column: groups by its value (ints) and NULL
	// (nullAt, -1 when absent), without encoding a key per row.
	intKey  bool
	ints    map[int64]int
	nullAt  int
	entries []localEntry
	simple  localEntry // no GroupBy: the one group
	keyBuf  []byte
	keyRow  []types.Datum
	row     []types.Datum
	outQ    []Message
	wmOut   map[int]int // group input column -> output column, for watermarks
	// spread says the groups barely repeat: the last send had nearly as many
	// groups as rows folded (spreadShare), so chunks go out as one partial
	// row each (passThrough) instead of through the group map; every
	// spreadSample-th chunk is folded again to measure anew.
	spread bool
	folded int // rows folded since the last send
	passed int // chunks passed through since the last fold
}

// spreadMinRows is the fewest rows folded between two sends that tell
// whether the groups repeat; 1/spreadShare the share of them that must fold
// into a group already held for folding to go on (fewer: a partial row a row
// costs the global phase at most 1/(spreadShare-1) more rows); spreadSample
// how many chunks pass through between two folded to measure again.
const (
	spreadMinRows = 256
	spreadShare   = 8
	spreadSample  = 16
)

// localFn is one aggregate's partial computation.
type localFn struct {
	star   bool // count(*)
	sum    bool // sum/avg of integers: net count of non-NULL arguments, net sum
	arg    int  // argument column (-1: count(*))
	filter int  // FILTER column (-1: none)
	col    int  // first partial column in localEntry.parts
}

// localEntry is one group's partials.
type localEntry struct {
	keyRow []types.Datum
	weight int64
	parts  []int64
	used   bool
}

// NewLocalAgg returns the executor of a StreamLocalAgg.
func NewLocalAgg(n *plan.StreamLocalAgg, in Executor) (Executor, error) {
	e := &localAggExec{in: in, groupBy: n.GroupBy, outTypes: plan.Types(n.Out), maxGroups: LocalAggGroups,
		wmOut: map[int]int{}}
	lendChunks(in) // fold keeps no chunk it is given
	inTypes := in.Schema()
	for k, c := range n.GroupBy {
		if c < 0 || c >= len(inTypes) {
			return nil, fmt.Errorf("local agg: group column %d out of %d", c, len(inTypes))
		}
		e.groupTypes = append(e.groupTypes, inTypes[c])
		e.wmOut[c] = k
	}
	for i := range n.Aggs {
		c := &n.Aggs[i]
		ts, ok := plan.LocalAggPartials(c)
		if !ok {
			return nil, fmt.Errorf("local agg: %s has no partial form", c.Name)
		}
		f := localFn{star: c.Agg.Kind == expr.AggCountStar, sum: len(ts) == 2, arg: -1, filter: c.Filter, col: e.width}
		if !f.star {
			if len(c.Args) == 0 || c.Args[0] >= len(inTypes) {
				return nil, fmt.Errorf("local agg: %s has no argument column", c.Name)
			}
			f.arg = c.Args[0]
		}
		e.aggs = append(e.aggs, f)
		e.width += len(ts)
	}
	if want := len(n.GroupBy) + e.width + 1; len(e.outTypes) != want {
		return nil, fmt.Errorf("local agg: %d output columns, want %d", len(e.outTypes), want)
	}
	e.intKey = len(e.groupTypes) == 1 && e.groupTypes[0].IsInteger()
	e.initGroups()
	fuseLocalAgg(e)
	return e, nil
}

// initGroups makes e's (empty) group state for its configuration.
func (e *localAggExec) initGroups() {
	e.groups = map[string]int{}
	if e.intKey {
		e.ints, e.nullAt = map[int64]int{}, -1
	}
	e.keyRow = make([]types.Datum, len(e.groupBy))
	e.row = make([]types.Datum, len(e.outTypes))
	e.simple.parts = make([]int64, e.width)
}

// fuseLocalAgg lets a snapshot backfill below e, through projections of bare
// columns only (nothing to evaluate), fold its snapshot rows into e's partial
// groups in its readers: each reader keeps partial groups of its own (a copy
// of e reading the backfill's columns) and sends their partial rows, which
// pass up to e's output as they are (Message.Partial). The readers then do
// the aggregation's work beside each other, and the actor passes on a few
// partial rows instead of folding every snapshot row itself.
func fuseLocalAgg(e *localAggExec) {
	cols := make([]int, len(e.in.Schema())) // e's input columns in in's
	for i := range cols {
		cols[i] = i
	}
	in := e.in
	for {
		switch x := in.(type) {
		case *profiled:
			in = x.in
		case *projectExec:
			inTypes := x.in.Schema()
			for j, ex := range x.exprs {
				ref, ok := ex.(*expr.ColumnRef)
				if !ok || ref.Index >= len(inTypes) || inTypes[ref.Index].Physical() != x.ts[j].Physical() {
					return
				}
			}
			next := make([]int, len(cols))
			for i, c := range cols {
				next[i] = x.exprs[c].(*expr.ColumnRef).Index
			}
			cols, in = next, x.in
		case *snapshotBackfillExec:
			x.fold = func() *localAggExec { return e.folderOn(cols) }
			return
		default:
			return
		}
	}
}

// folderOn returns an empty copy of e reading chunks whose column cols[i] is
// e's input column i.
func (e *localAggExec) folderOn(cols []int) *localAggExec {
	f := &localAggExec{groupTypes: e.groupTypes, width: e.width, outTypes: e.outTypes, maxGroups: e.maxGroups, intKey: e.intKey}
	for _, c := range e.groupBy {
		f.groupBy = append(f.groupBy, cols[c])
	}
	for _, a := range e.aggs {
		if a.arg >= 0 {
			a.arg = cols[a.arg]
		}
		if a.filter >= 0 {
			a.filter = cols[a.filter]
		}
		f.aggs = append(f.aggs, a)
	}
	f.initGroups()
	return f
}

func (e *localAggExec) Schema() []types.T { return e.outTypes }

func (e *localAggExec) Next(ctx context.Context) (Message, error) {
	for {
		if m, ok := popQueued(&e.outQ); ok {
			return m, nil
		}
		m, err := e.in.Next(ctx)
		if err != nil {
			return m, err
		}
		switch {
		case m.Partial: // the snapshot readers' folds (fuseLocalAgg)
			e.outQ = append(e.outQ, ChunkMsg(m.Chunk))
		case m.Chunk != nil:
			if e.spread && e.passed < spreadSample && e.passThrough(m.Chunk) {
				e.passed++
				continue
			}
			e.passed = 0
			e.fold(m.Chunk)
			if len(e.entries) > e.maxGroups {
				e.send()
			}
		case m.Watermark != nil:
			k, ok := e.wmOut[m.Watermark.Col]
			if !ok {
				continue // says nothing about the groups
			}
			e.send()
			e.outQ = append(e.outQ, WatermarkMsg(&Watermark{Col: k, Val: m.Watermark.Val}))
		default:
			e.send()
			e.outQ = append(e.outQ, m)
		}
	}
}

// fold adds c's visible rows to their groups' partials.
func (e *localAggExec) fold(c *types.Chunk) {
	for i := 0; i < c.Len(); i++ {
		if !c.Visible(i) {
			continue
		}
		e.folded++
		sign := int64(1)
		if !c.Op(i).IsInsert() {
			sign = -1
		}
		g := &e.simple
		if len(e.groupBy) > 0 {
			g = e.group(c, i)
		}
		if e.overflows(g, c, i, sign) {
			e.sendEntry(g) // then the row starts the group's partials again
		}
		g.used = true
		g.weight += sign
		carry := false
		for _, f := range e.aggs {
			if !f.counts(c, i) {
				continue
			}
			g.parts[f.col] += sign
			if f.sum {
				v := c.Cols[f.arg].I64[i]
				if sign < 0 && v == math.MinInt64 {
					// -v is 2^63, one past int8: add 2^63-1 here and the
					// last 1 in a partial row of its own.
					g.parts[f.col+1] += math.MaxInt64
					carry = true
					continue
				}
				g.parts[f.col+1] += sign * v
			}
		}
		if carry {
			e.sendCarry(g, c, i)
		}
	}
}

// passThrough queues c's visible rows as partial rows, one each (the group
// columns copied, a column at a time), for a grouped aggregation whose groups
// barely repeat. It reports false, queuing nothing, when a row retracts
// math.MinInt64 from a sum (fold's carry handles it).
func (e *localAggExec) passThrough(c *types.Chunk) bool {
	if len(e.groupBy) == 0 {
		return false
	}
	n := c.Len()
	for _, f := range e.aggs {
		if !f.sum {
			continue
		}
		for i := 0; i < n; i++ {
			if c.Visible(i) && !c.Op(i).IsInsert() && f.counts(c, i) && c.Cols[f.arg].I64[i] == math.MinInt64 {
				return false
			}
		}
	}
	rows := c.NumVisible()
	if rows == 0 {
		return true
	}
	out := types.NewChunk(e.outTypes, rows)
	k := len(e.groupBy)
	for j, col := range e.groupBy {
		if c.Vis == nil {
			out.Cols[j].AppendRange(&c.Cols[col], 0, n)
			continue
		}
		for i := 0; i < n; i++ {
			if c.Vis[i] {
				out.Cols[j].AppendFrom(&c.Cols[col], i)
			}
		}
	}
	// The partials and the weight are integers, never NULL, zero until set.
	for j := k; j < len(out.Cols); j++ {
		out.Cols[j].I64 = out.Cols[j].I64[:rows]
		out.Cols[j].Nulls = out.Cols[j].Nulls[:rows]
	}
	weight := out.Cols[len(out.Cols)-1].I64
	r := 0
	for i := 0; i < n; i++ {
		if !c.Visible(i) {
			continue
		}
		sign := int64(1)
		if !c.Op(i).IsInsert() {
			sign = -1
		}
		weight[r] = sign
		for _, f := range e.aggs {
			if !f.counts(c, i) {
				continue
			}
			out.Cols[k+f.col].I64[r] = sign
			if f.sum {
				out.Cols[k+f.col+1].I64[r] = sign * c.Cols[f.arg].I64[i]
			}
		}
		r++
	}
	out.SetLen(rows)
	e.outQ = append(e.outQ, ChunkMsg(out))
	return true
}

// sendCarry sends g (holding row i of c, a retraction of math.MinInt64 from
// a sum, folded as math.MaxInt64) and then a partial row adding the missing
// 1 to each such sum, with no rows and no counts.
func (e *localAggExec) sendCarry(g *localEntry, c *types.Chunk, i int) {
	e.sendEntry(g)
	for _, f := range e.aggs {
		if f.sum && f.counts(c, i) && c.Cols[f.arg].I64[i] == math.MinInt64 {
			g.parts[f.col+1] = 1
		}
	}
	g.used = true
	e.sendEntry(g)
}

// counts reports whether row i of c is counted by f (its filter holds and
// its argument is not NULL).
func (f *localFn) counts(c *types.Chunk, i int) bool {
	if f.filter >= 0 {
		if fc := &c.Cols[f.filter]; fc.Nulls[i] || fc.I64[i] == 0 {
			return false
		}
	}
	return f.star || !c.Cols[f.arg].Nulls[i]
}

// overflows reports whether folding row i of c into g would overflow a
// partial sum (one row never overflows an empty partial: a retraction of
// math.MinInt64 is folded as math.MaxInt64, see sendCarry).
func (e *localAggExec) overflows(g *localEntry, c *types.Chunk, i int, sign int64) bool {
	for _, f := range e.aggs {
		if !f.sum || !f.counts(c, i) {
			continue
		}
		s, v := g.parts[f.col+1], sign*c.Cols[f.arg].I64[i]
		if sign < 0 && v == math.MinInt64 {
			v = math.MaxInt64
		}
		if r := s + v; (v > 0 && r < s) || (v < 0 && r > s) {
			return true
		}
	}
	return false
}

// group returns row i's group entry, adding it if new.
func (e *localAggExec) group(c *types.Chunk, i int) *localEntry {
	if e.intKey {
		col := &c.Cols[e.groupBy[0]]
		if col.Nulls[i] {
			if e.nullAt < 0 {
				e.nullAt = e.addGroup(c, i)
			}
			return &e.entries[e.nullAt]
		}
		v := col.I64[i]
		j, ok := e.ints[v]
		if !ok {
			j = e.addGroup(c, i)
			e.ints[v] = j
		}
		return &e.entries[j]
	}
	buf := e.keyBuf[:0]
	for k, col := range e.groupBy {
		c.Cols[col].GetInto(i, &e.keyRow[k])
		buf = codec.EncodeKey(buf, e.groupTypes[k], &e.keyRow[k], false)
	}
	e.keyBuf = buf
	if j, ok := e.groups[string(buf)]; ok {
		return &e.entries[j]
	}
	e.groups[string(buf)] = e.addGroup(c, i)
	return &e.entries[len(e.entries)-1]
}

// addGroup adds row i's group (its key in keyRow, or read from c) and
// returns its index in entries.
func (e *localAggExec) addGroup(c *types.Chunk, i int) int {
	n := len(e.entries)
	if n < cap(e.entries) {
		// An entry a send left behind: its key row and partials are reused.
		e.entries = e.entries[:n+1]
	} else {
		e.entries = append(e.entries, localEntry{})
	}
	g := &e.entries[n]
	if len(g.keyRow) != len(e.groupBy) || len(g.parts) != e.width {
		g.keyRow, g.parts = make([]types.Datum, len(e.groupBy)), make([]int64, e.width)
	}
	g.used, g.weight = false, 0
	clear(g.parts)
	for k, col := range e.groupBy {
		if e.intKey {
			c.Cols[col].GetInto(i, &e.keyRow[k])
		}
		g.keyRow[k] = e.keyRow[k].Copy()
	}
	return n
}

// send queues the partial rows of every group and forgets them.
func (e *localAggExec) send() {
	if len(e.groupBy) == 0 {
		e.sendEntry(&e.simple)
		return
	}
	if e.folded >= spreadMinRows {
		e.spread = len(e.entries)*spreadShare > e.folded*(spreadShare-1)
	}
	e.folded = 0
	for j := range e.entries {
		e.sendEntry(&e.entries[j])
	}
	e.entries = e.entries[:0]
	clear(e.groups)
	if e.intKey {
		clear(e.ints)
		e.nullAt = -1
	}
}

// sendEntry queues g's partial row unless it changes nothing, and resets g.
func (e *localAggExec) sendEntry(g *localEntry) {
	if !g.used {
		return
	}
	zero := g.weight == 0
	for _, p := range g.parts {
		zero = zero && p == 0
	}
	if !zero {
		copy(e.row, g.keyRow)
		k := len(g.keyRow)
		for j, p := range g.parts {
			e.row[k+j] = types.DInt(p)
		}
		e.row[k+len(g.parts)] = types.DInt(g.weight)
		var out *types.Chunk
		if n := len(e.outQ); n > 0 && e.outQ[n-1].Chunk != nil && e.outQ[n-1].Chunk.Len() < localAggChunkRows {
			out = e.outQ[n-1].Chunk
		} else {
			out = types.NewChunk(e.outTypes, min(max(len(e.entries), 1), localAggChunkRows))
			e.outQ = append(e.outQ, ChunkMsg(out))
		}
		out.AppendRowOp(types.OpInsert, e.row)
	}
	g.used, g.weight = false, 0
	clear(g.parts)
}
