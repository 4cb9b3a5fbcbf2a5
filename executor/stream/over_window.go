package stream

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"unsafe"

	"github.com/tributary/tributary/executor/window"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage/codec"
	"github.com/tributary/tributary/storage/state"
)

// OverWindow maintains window functions sharing one PARTITION BY and ORDER
// BY (RisingWave's general over window). Every input row is kept in one state
// table keyed by (partition, order key, stream key), distributed by the
// partition columns, so a partition is one range scan of one vnode. A chunk's
// rows change their partitions' rows in memory and in the state table; at the
// barrier each changed partition's outputs are computed again from the first
// row they can have changed in (see start), compared with the outputs kept
// with the rows, and the rows whose outputs (or values) changed are emitted:
// Deletes first, across all partitions (a row moving between partitions leaves
// before it enters), then Inserts and update pairs. Partitions stay cached
// between epochs up to CacheRows rows (fewer when the actor's memory pool
// allows fewer bytes, cacheBudget), least recently used evicted first.
// Watermarks are dropped: a change can alter any row of its partition.
// Emitting on window close (over an append-only input), a row is instead
// emitted once, as an insert, when the rows its functions read are below the
// watermark on the first ORDER BY column; a progress table keeps, per
// partition, the rows emitted and held, and a rise of the watermark scans it
// for the partitions with rows to emit.
type OverWindow struct {
	cfg overWindowConfig
	in  Executor

	table *state.Table
	fns   []*window.Func
	parts map[string]*owPartition
	// Emitting on window close: the progress table, the vnodes to scan and
	// the watermark on the first ORDER BY column.
	progress *state.Table
	vnodes   []int
	wm       types.Datum
	hasWM    bool
	wmMoved  bool
	dirty    []*owPartition
	// cached counts the rows held in parts; tick orders partitions by use.
	cached     int
	budget     *cacheBudget
	tick       uint64
	cacheStats *OpStats

	queue []Message
	qhead int
	out   *types.Chunk
	later []owChange
	done  bool

	// Scratch.
	row    []types.Datum
	key    []byte
	outRow []types.Datum
	datums [][]types.Datum
	vals   [][]types.Datum // per function
	oldIdx map[string]int
}

// overWindowConfig is the fixed configuration of an OverWindow.
type overWindowConfig struct {
	layout    plan.TopNStateRow
	orderBy   []plan.SortKey
	streamKey []int
	partCols  []int
	inTypes   []types.T
	outTypes  []types.T
	actor     ActorID
	eowc      bool
	wmCol     int // the watermarked ORDER BY column (eowc)
}

// owRow is one input row of a partition: pk is its encoded state key after
// the partition columns (pk[:orderLen] its order key), sk its encoded stream
// key, vals its window outputs as of the last barrier (nil while unknown).
type owRow struct {
	pk, sk   string
	orderLen int32
	row      []types.Datum // the state row
	vals     []types.Datum
}

type owPartition struct {
	key   string
	vnode uint16
	rows  []owRow // in window order
	old   []owRow // the rows before the epoch (while dirty)
	dirty bool
	// first is the index of the first row the epoch changed: rows[:first]
	// and old[:first] are the same rows.
	first int
	// loaded: read from state in this epoch, so old has no outputs yet.
	loaded bool
	used   uint64
	// Emitting on window close: rows[:emitted] were emitted; total counts
	// the rows (as the progress table does once written).
	emitted, total int64
	progressDirty  bool
}

// owOut is a row with its window outputs.
type owOut struct {
	r    *owRow
	vals []types.Datum
}

type owChange struct {
	old, new owOut
	update   bool
}

// NewOverWindow builds the over-window executor of n over in.
func NewOverWindow(actx *ActorContext, n *plan.StreamOverWindow, in Executor) (Executor, error) {
	cfg := overWindowConfig{layout: n.StateRow(), orderBy: n.OrderBy(), streamKey: n.Input.StreamKey(),
		inTypes: in.Schema(), actor: actx.ID}
	if nin := len(n.Input.Schema()); nin != len(cfg.inTypes) {
		return nil, fmt.Errorf("over-window: input has %d columns, plan %d", len(cfg.inTypes), nin)
	}
	if len(n.Out) != len(cfg.inTypes)+len(n.Funcs) {
		return nil, fmt.Errorf("over-window: %d output columns, want %d", len(n.Out), len(cfg.inTypes)+len(n.Funcs))
	}
	for _, f := range n.Out {
		cfg.outTypes = append(cfg.outTypes, f.Type)
	}
	l := cfg.layout
	cfg.partCols = l.PK[:len(l.Dist)]
	st := n.State()
	cfg.eowc = n.EmitOnWindowClose
	if want := 1 + btoi(cfg.eowc); len(st) != want {
		return nil, fmt.Errorf("over-window: %d state tables assigned, want %d", len(st), want)
	}
	if cfg.eowc {
		cfg.wmCol = n.OrderBy()[0].Col
	}
	if len(st[0].Types) != len(l.Types) {
		return nil, fmt.Errorf("over-window: state table %d has %d columns, layout %d", st[0].ID, len(st[0].Types), len(l.Types))
	}
	table, err := actx.NewTable(state.Schema{TableID: st[0].ID, Types: st[0].Types, PK: st[0].PK, PKDesc: st[0].PKDesc, DistKey: st[0].Dist})
	if err != nil {
		return nil, fmt.Errorf("over-window: open state: %w", err)
	}
	x := &OverWindow{cfg: cfg, in: in, table: table, parts: map[string]*owPartition{}, oldIdx: map[string]int{},
		budget: newCacheBudget(actx, "over window")}
	if cfg.eowc {
		pt := st[1]
		if x.progress, err = actx.NewTable(state.Schema{TableID: pt.ID, Types: pt.Types, PK: pt.PK, DistKey: pt.Dist}); err != nil {
			return nil, fmt.Errorf("over-window: open progress: %w", err)
		}
		x.vnodes = []int{state.AllVnodes}
		if actx.Vnodes != nil {
			x.vnodes = x.vnodes[:0]
			for _, v := range actx.Vnodes {
				x.vnodes = append(x.vnodes, int(v))
			}
		}
	}
	for _, f := range n.Funcs {
		fn, err := window.New(f, l.Types)
		if err != nil {
			return nil, fmt.Errorf("over-window: %w", err)
		}
		x.fns = append(x.fns, fn)
	}
	x.row = make([]types.Datum, len(l.Types))
	if l.Const >= 0 {
		x.row[l.Const] = types.DBool(false)
	}
	x.outRow = make([]types.Datum, len(cfg.outTypes))
	x.vals = make([][]types.Datum, len(x.fns))
	return x, nil
}

// CountInto implements OpCounter: partition lookups.
func (x *OverWindow) CountInto(st *OpStats) { x.cacheStats = st }

// Schema implements Executor.
func (x *OverWindow) Schema() []types.T { return x.cfg.outTypes }

// Next implements Executor.
func (x *OverWindow) Next(ctx context.Context) (Message, error) {
	for {
		if x.qhead < len(x.queue) {
			m := x.queue[x.qhead]
			x.queue[x.qhead] = Message{}
			x.qhead++
			return m, nil
		}
		x.queue, x.qhead = x.queue[:0], 0
		if x.done {
			return Message{}, io.EOF
		}
		m, err := x.in.Next(ctx)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return Message{}, err
			}
			return Message{}, fmt.Errorf("over-window: %w", err)
		}
		switch {
		case m.Chunk != nil:
			if err := x.apply(ctx, m.Chunk); err != nil {
				return Message{}, err
			}
		case m.Watermark != nil:
			x.watermark(m.Watermark)
		case m.Barrier != nil:
			if x.cfg.eowc {
				if err := x.closeWindows(ctx); err != nil {
					return Message{}, err
				}
			}
			if err := x.barrier(m.Barrier); err != nil {
				return Message{}, err
			}
		}
	}
}

// encode appends row's partition key, state key and stream key to buf and
// returns it with the lengths of the first two parts and of the order key.
func (c *overWindowConfig) encode(buf []byte, row []types.Datum) (key []byte, partLen, orderLen, pkLen int) {
	l := &c.layout
	np := len(c.partCols)
	buf = codec.AppendKey(buf, l.Types, row, c.partCols, nil)
	partLen = len(buf)
	buf = codec.AppendKey(buf, l.Types, row, l.PK[np:l.OrderEnd], l.PKDesc[np:l.OrderEnd])
	orderLen = len(buf) - partLen
	buf = codec.AppendKey(buf, l.Types, row, l.PK[l.OrderEnd:], l.PKDesc[l.OrderEnd:])
	pkLen = len(buf)
	buf = codec.AppendKey(buf, l.Types, row, c.streamKey, nil)
	return buf, partLen, orderLen, pkLen
}

func (x *OverWindow) newRow(key []byte, partLen, orderLen, pkLen int, row []types.Datum) owRow {
	r := owRow{pk: string(key[partLen:pkLen]), sk: string(key[pkLen:]), orderLen: int32(orderLen), row: make([]types.Datum, len(row))}
	for j := range row {
		if x.cfg.layout.Types[j].Physical() == types.PhysDec {
			r.row[j] = row[j].Copy()
		} else {
			r.row[j] = row[j]
		}
	}
	x.budget.sample(r.row, len(r.pk)+len(r.sk)+len(x.cfg.layout.Types)*int(datumBytes)+owRowBytes)
	return r
}

// owRowBytes is an owRow's own size (its vals are counted as one datum per
// state column, about their number).
const owRowBytes = int(unsafe.Sizeof(owRow{}))

// apply records a chunk's changes in the state table and the partitions.
func (x *OverWindow) apply(ctx context.Context, c *types.Chunk) error {
	l := &x.cfg.layout
	nin := len(x.cfg.inTypes)
	for i := 0; i < c.Len(); i++ {
		if !c.Visible(i) {
			continue
		}
		for j := 0; j < nin; j++ {
			c.Cols[j].GetInto(i, &x.row[j])
		}
		for k, f := range l.NullFlag {
			if f >= 0 {
				x.row[f] = types.DBool(x.row[x.cfg.orderBy[k].Col].Null != x.cfg.orderBy[k].NullsFirst)
			}
		}
		var partLen, orderLen, pkLen int
		x.key, partLen, orderLen, pkLen = x.cfg.encode(x.key[:0], x.row)
		p, err := x.partition(ctx, x.key[:partLen], x.row)
		if err != nil {
			return err
		}
		pk := string(x.key[partLen:pkLen])
		j, found := sort.Find(len(p.rows), func(j int) int { return strings.Compare(pk, p.rows[j].pk) })
		p.first = min(p.first, j)
		if x.cfg.eowc && !c.Op(i).IsInsert() {
			return fmt.Errorf("over-window: a delete reached a window emitting on window close (its input must be append-only)")
		}
		if c.Op(i).IsInsert() {
			if err := x.table.Insert(x.row); err != nil {
				return fmt.Errorf("over-window: %w", err)
			}
			if x.cfg.eowc && !found {
				p.total++
				p.progressDirty = true
			}
			r := x.newRow(x.key, partLen, orderLen, pkLen, x.row)
			if found { // a repeated insert of a key replaces it, as in the state table
				p.rows[j] = r
			} else {
				p.rows = slices.Insert(p.rows, j, r)
				x.cached++
			}
			continue
		}
		if err := x.table.Delete(x.row); err != nil {
			return fmt.Errorf("over-window: %w", err)
		}
		if found {
			p.rows = slices.Delete(p.rows, j, j+1)
			x.cached--
		}
	}
	return nil
}

// partition returns the partition with the given key, loading it from state
// when it is not cached, and keeps its rows before the epoch when it is first
// changed in the epoch.
func (x *OverWindow) partition(ctx context.Context, key []byte, row []types.Datum) (*owPartition, error) {
	p := x.parts[string(key)]
	x.cacheStats.hit(p != nil)
	if p == nil {
		p = &owPartition{key: string(key), vnode: x.table.VnodeOfRow(row)}
		if err := x.load(ctx, p); err != nil {
			return nil, err
		}
		if x.cfg.eowc {
			if err := x.loadProgress(ctx, p, row); err != nil {
				return nil, err
			}
		}
		p.loaded = true
		x.parts[p.key] = p
	}
	x.tick++
	p.used = x.tick
	if !p.dirty {
		p.dirty = true
		p.first = len(p.rows)
		if !x.cfg.eowc {
			p.old = slices.Clone(p.rows)
		}
		x.dirty = append(x.dirty, p)
	}
	return p, nil
}

// progressRow returns a progress row: the partition values of the state row
// row (or a constant), then emitted and total.
func (x *OverWindow) progressRow(row []types.Datum, emitted, total int64) []types.Datum {
	out := make([]types.Datum, 0, len(x.cfg.partCols)+3)
	for _, c := range x.cfg.partCols {
		out = append(out, row[c])
	}
	if len(x.cfg.partCols) == 0 {
		out = append(out, types.DBool(false))
	}
	return append(out, types.DInt(emitted), types.DInt(total))
}

// loadProgress reads how many of p's rows were emitted and held.
func (x *OverWindow) loadProgress(ctx context.Context, p *owPartition, row []types.Datum) error {
	pr := x.progressRow(row, 0, 0)
	got, ok, err := x.progress.Get(ctx, pr[:len(pr)-2], nil)
	if err != nil {
		return fmt.Errorf("over-window: load progress: %w", err)
	}
	if ok {
		p.emitted, p.total = got[len(got)-2].I, got[len(got)-1].I
	}
	return nil
}

// watermark records a rise of the watermark on the ORDER BY column (when
// emitting on window close); watermarks are not forwarded.
func (x *OverWindow) watermark(w *Watermark) {
	if !x.cfg.eowc || w.Col != x.cfg.wmCol || w.Val.Null {
		return
	}
	t := x.cfg.inTypes[x.cfg.wmCol]
	if !x.hasWM || types.Compare(t, &w.Val, &x.wm) > 0 {
		x.wm, x.hasWM, x.wmMoved = w.Val.Copy(), true, true
	}
}

// closeWindows emits, when the watermark rose in the epoch, the rows whose
// outputs became final: in every partition with rows not yet emitted (listed
// by the progress table, or new in the epoch), the rows below the watermark
// less the functions' reach after a row. It then writes the progress of the
// partitions that changed.
func (x *OverWindow) closeWindows(ctx context.Context) error {
	if x.wmMoved {
		x.wmMoved = false
		open, err := x.openPartitions(ctx)
		if err != nil {
			return err
		}
		for _, row := range open {
			var partLen int
			x.key, partLen, _, _ = x.cfg.encode(x.key[:0], row)
			p, err := x.partition(ctx, x.key[:partLen], row)
			if err != nil {
				return err
			}
			if err := x.emitFinal(p); err != nil {
				return err
			}
		}
	}
	for _, p := range x.dirty {
		if !p.progressDirty || len(p.rows) == 0 {
			continue
		}
		p.progressDirty = false
		if err := x.progress.Insert(x.progressRow(p.rows[0].row, p.emitted, p.total)); err != nil {
			return fmt.Errorf("over-window: progress: %w", err)
		}
	}
	return nil
}

// openPartitions lists (as state rows holding their partition values) the
// partitions of this actor's vnodes with rows not yet emitted.
func (x *OverWindow) openPartitions(ctx context.Context) ([][]types.Datum, error) {
	var out [][]types.Datum
	seen := map[string]bool{}
	for _, v := range x.vnodes {
		it, err := x.progress.Iter(ctx, state.IterOptions{Vnode: v})
		if err != nil {
			return nil, fmt.Errorf("over-window: scan progress: %w", err)
		}
		for {
			err := it.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				_ = it.Close()
				return nil, fmt.Errorf("over-window: scan progress: %w", err)
			}
			pr := it.Row()
			if pr[len(pr)-2].I >= pr[len(pr)-1].I {
				continue
			}
			row := make([]types.Datum, len(x.cfg.layout.Types))
			for k, c := range x.cfg.partCols {
				row[c] = pr[k].Copy()
			}
			out = append(out, row)
			key, partLen, _, _ := x.cfg.encode(nil, row)
			seen[string(key[:partLen])] = true
		}
		if err := it.Close(); err != nil {
			return nil, fmt.Errorf("over-window: scan progress: %w", err)
		}
	}
	// Partitions whose first rows came in this epoch are not in the table yet.
	for _, p := range x.dirty {
		if !seen[p.key] && p.emitted < int64(len(p.rows)) {
			out = append(out, p.rows[0].row)
		}
	}
	return out, nil
}

// emitFinal emits p's rows whose outputs are final under the watermark.
func (x *OverWindow) emitFinal(p *owPartition) error {
	t := x.cfg.inTypes[x.cfg.wmCol]
	below := sort.Search(len(p.rows), func(i int) bool {
		d := &p.rows[i].row[x.cfg.wmCol]
		return d.Null || types.Compare(t, d, &x.wm) >= 0
	})
	x.datums = x.datums[:0]
	for i := range p.rows {
		x.datums = append(x.datums, p.rows[i].row)
	}
	end := below
	for _, fn := range x.fns {
		reach, _ := fn.Following(x.datums)
		if reach < 0 {
			return nil
		}
		end = min(end, below-reach)
	}
	from := int(p.emitted)
	if end <= from {
		return nil
	}
	if err := x.eval(p.rows, from); err != nil {
		return err
	}
	for i := from; i < end; i++ {
		x.room(1)
		x.appendOut(types.OpInsert, owOut{r: &p.rows[i], vals: x.outputs(i)})
	}
	p.emitted = int64(end)
	p.progressDirty = true
	return nil
}

// load reads a partition's rows from state.
func (x *OverWindow) load(ctx context.Context, p *owPartition) error {
	start := []byte(p.key)
	it, err := x.table.Iter(ctx, state.IterOptions{Vnode: int(p.vnode), Range: state.KeyRange{Start: start, End: codec.PrefixEnd(start)}})
	if err != nil {
		return fmt.Errorf("over-window: load partition: %w", err)
	}
	var buf []byte
	for {
		err := it.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			it.Close()
			return fmt.Errorf("over-window: load partition: %w", err)
		}
		row := it.Row()
		var partLen, orderLen, pkLen int
		buf, partLen, orderLen, pkLen = x.cfg.encode(buf[:0], row)
		p.rows = append(p.rows, x.newRow(buf, partLen, orderLen, pkLen, row))
		x.cached++
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("over-window: load partition: %w", err)
	}
	return nil
}

// eval computes every function over rows from index from on into
// x.vals (one vector per function, len(rows) long).
func (x *OverWindow) eval(rows []owRow, from int) error {
	x.datums = x.datums[:0]
	for i := range rows {
		x.datums = append(x.datums, rows[i].row)
	}
	for f, fn := range x.fns {
		x.vals[f] = slices.Grow(x.vals[f][:0], len(rows))[:len(rows)]
		if err := fn.EvalFrom(x.datums, from, x.vals[f]); err != nil {
			return fmt.Errorf("over-window: %w", err)
		}
	}
	return nil
}

// outputs copies the row i's values from x.vals.
func (x *OverWindow) outputs(i int) []types.Datum {
	v := make([]types.Datum, len(x.fns))
	for f := range x.fns {
		v[f] = x.vals[f][i]
	}
	return v
}

// start returns the first row of p whose outputs the epoch may have changed:
// the rows before p.first are unchanged, and so are their outputs unless a
// function reads rows after them that far (or their peer group reaches
// p.first).
func (x *OverWindow) start(p *owPartition) int {
	if p.loaded || p.first == 0 {
		return 0
	}
	x.datums = x.datums[:0]
	for i := range p.rows {
		x.datums = append(x.datums, p.rows[i].row)
	}
	s := p.first
	for _, fn := range x.fns {
		reach, peers := fn.Following(x.datums)
		if reach < 0 {
			return 0
		}
		s = min(s, p.first-reach)
		if peers {
			g := p.first - 1
			order := p.rows[g].pk[:p.rows[g].orderLen]
			for g > 0 && p.rows[g-1].pk[:p.rows[g-1].orderLen] == order {
				g--
			}
			s = min(s, g)
		}
	}
	return max(s, 0)
}

// barrier emits the epoch's changes, then the barrier, and shrinks the cache.
func (x *OverWindow) barrier(b *Barrier) error {
	for _, p := range x.dirty {
		if x.cfg.eowc {
			continue // emitted by closeWindows
		}
		if err := x.diff(p); err != nil {
			return err
		}
	}
	for _, ch := range x.later {
		if ch.update {
			x.room(2)
			x.appendOut(types.OpUpdateDelete, ch.old)
			x.appendOut(types.OpUpdateInsert, ch.new)
		} else {
			x.room(1)
			x.appendOut(types.OpInsert, ch.new)
		}
	}
	clear(x.later)
	x.later = x.later[:0]
	if x.out != nil && x.out.Len() > 0 {
		x.queue = append(x.queue, ChunkMsg(x.out))
	}
	x.out = nil
	x.queue = append(x.queue, BarrierMsg(b))
	for _, p := range x.dirty {
		p.dirty, p.old, p.loaded = false, nil, false
		if len(p.rows) == 0 {
			delete(x.parts, p.key)
		}
	}
	clear(x.dirty)
	x.dirty = x.dirty[:0]
	x.evict()
	x.done = b.Stops(x.cfg.actor)
	return nil
}

// diff compares a partition's outputs before and after the epoch, from the
// first row that may have changed on: Deletes are emitted at once, Inserts
// and updates queued in x.later. The new outputs are kept with the rows.
func (x *OverWindow) diff(p *owPartition) error {
	s := x.start(p)
	if p.loaded {
		// The rows read from state this epoch: their outputs before it.
		if err := x.eval(p.old, 0); err != nil {
			return err
		}
		for i := range p.old {
			p.old[i].vals = x.outputs(i)
		}
	}
	if err := x.eval(p.rows, s); err != nil {
		return err
	}
	clear(x.oldIdx)
	for i := s; i < len(p.old); i++ {
		x.oldIdx[p.old[i].sk] = i
	}
	hit := make([]bool, len(p.old))
	nin := len(x.cfg.inTypes)
	for i := s; i < len(p.rows); i++ {
		r := &p.rows[i]
		r.vals = x.outputs(i)
		nw := owOut{r: r, vals: r.vals}
		j, ok := x.oldIdx[r.sk]
		if !ok {
			x.later = append(x.later, owChange{new: nw})
			continue
		}
		hit[j] = true
		old := owOut{r: &p.old[j], vals: p.old[j].vals}
		if !identical(x.cfg.inTypes, old.r.row, r.row) || !identical(x.cfg.outTypes[nin:], old.vals, r.vals) {
			x.later = append(x.later, owChange{old: old, new: nw, update: true})
		}
	}
	for j := s; j < len(p.old); j++ {
		if !hit[j] {
			x.room(1)
			x.appendOut(types.OpDelete, owOut{r: &p.old[j], vals: p.old[j].vals})
		}
	}
	return nil
}

func (x *OverWindow) room(n int) {
	if x.out != nil && x.out.Len()+n > types.DefaultChunkSize {
		x.queue = append(x.queue, ChunkMsg(x.out))
		x.out = nil
	}
	if x.out == nil {
		x.out = types.NewChunk(x.cfg.outTypes, types.DefaultChunkSize)
	}
}

func (x *OverWindow) appendOut(op types.Op, o owOut) {
	n := copy(x.outRow, o.r.row[:len(x.cfg.inTypes)])
	copy(x.outRow[n:], o.vals)
	x.out.AppendRowOp(op, x.outRow)
}

// evict drops least recently used partitions until the cache is within
// its bound.
func (x *OverWindow) evict() {
	limit := x.budget.limit()
	defer func() { x.budget.report(x.cached) }()
	if x.cached <= limit {
		return
	}
	ps := make([]*owPartition, 0, len(x.parts))
	for _, p := range x.parts {
		ps = append(ps, p)
	}
	slices.SortFunc(ps, func(a, b *owPartition) int { return cmp.Compare(a.used, b.used) })
	for _, p := range ps {
		if x.cached <= limit-limit/4 {
			break
		}
		delete(x.parts, p.key)
		x.cached -= len(p.rows)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// identical reports whether two rows hold identical values (numerics with
// the same scale, floats bit for bit), so an update that changes only a
// value's form is still emitted.
func identical(ts []types.T, a, b []types.Datum) bool {
	for j, t := range ts {
		p, q := &a[j], &b[j]
		if p.Null != q.Null {
			return false
		}
		if p.Null {
			continue
		}
		switch t.Physical() {
		case types.PhysI64:
			if p.I != q.I {
				return false
			}
		case types.PhysF64:
			if math.Float64bits(p.F) != math.Float64bits(q.F) {
				return false
			}
		case types.PhysStr:
			if p.S != q.S {
				return false
			}
		case types.PhysDec:
			if p.Dec.Form != q.Dec.Form || p.Dec.Exponent != q.Dec.Exponent || p.Dec.Cmp(&q.Dec) != 0 {
				return false
			}
		case types.PhysIv:
			if p.Iv != q.Iv {
				return false
			}
		}
	}
	return true
}
