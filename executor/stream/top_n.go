package stream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"unsafe"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage/codec"
	"github.com/tributary/tributary/storage/state"
)

// TopN maintains, per group of its GroupBy columns (one group when none),
// the rows at positions [Offset, Offset+Limit) in ORDER BY order, ties
// broken by the input stream key; with a Rank function, the rows whose rank
// r has Offset < r <= Offset+Limit (so rank and dense_rank keep every row
// tied at the edge), with r as an extra column. At every barrier it emits
// the diff of each touched group's top before and after the epoch: Delete
// for a row that left (first, across all groups, so a row moving between
// groups leaves before it enters), Insert for one that entered, and an
// update pair for one whose values or rank changed.
//
// Every input row is kept in one state table in (group, order, stream key)
// order, so a group's top can be refilled with a range scan after deletes.
// In memory each cached group holds a prefix of its rows in that order
// (the top plus a margin); the groups together hold at most CacheRows rows,
// and no more bytes than the actor's memory pool allows (cacheBudget),
// after each barrier and each chunk, least recently used groups being
// evicted first (within an epoch a group changed in it keeps only its top
// before the epoch and is read back at the barrier, see bound). Watermarks of
// group columns are forwarded after the epoch's changes; others do not bound
// the top's changes and are dropped.
type TopN struct {
	cfg topNConfig
	in  Executor

	table  *state.Table
	groups map[string]*topGroup
	// cacheStats counts group lookups (nil: not counted).
	cacheStats *OpStats
	lru        topGroup // sentinel of the groups' recency list (lru.next is the most recent)
	cached     int      // rows (plus one per group) held in memory
	budget     *cacheBudget
	dirty      []*topGroup
	arena      []topOut // snapshots of the dirty groups' tops before the epoch

	// Output of a barrier, returned one message at a time.
	queue []Message
	qhead int
	out   *types.Chunk
	later []topChange
	wms   []Watermark
	done  bool

	// Scratch.
	row     []types.Datum
	outRow  []types.Datum
	key     []byte
	fillKey []byte
	newTop  []topOut
	oldIdx  map[string]int
	oldHit  []bool
}

// topNConfig is the fixed configuration of a TopN.
type topNConfig struct {
	layout    plan.TopNStateRow
	orderBy   []plan.SortKey
	streamKey []int
	groupCols []int // the state key's group columns
	groupSet  []bool
	inTypes   []types.T
	outTypes  []types.T
	rank      rankKind
	lo, hi    int64 // a row is in the top when lo < rank <= hi
	margin    int
	// appendOnly: the input only inserts (StreamTopN.AppendOnlyInput), so
	// the state holds each group's top alone, all of it cached while the
	// group is.
	appendOnly bool
	actor      ActorID
	vnodes     []uint16 // the actor's vnodes (nil: all)
}

type rankKind uint8

const (
	rankNone rankKind = iota // positions, no extra column
	rankRowNumber
	rankRank
	rankDense
)

// topEntry is one cached row: key is its encoded state key followed by its
// encoded stream key; key[:orderLen] is the group and order part.
type topEntry struct {
	key      string
	pkLen    int32
	orderLen int32
	row      []types.Datum // the state row
}

func (e *topEntry) pk() string    { return e.key[:e.pkLen] }
func (e *topEntry) sk() string    { return e.key[e.pkLen:] }
func (e *topEntry) order() string { return e.key[:e.orderLen] }

// topOut is a row of a group's top with its rank.
type topOut struct {
	e    topEntry
	rank int64
}

type topChange struct {
	old, new topOut
	update   bool
}

// topGroup is a group's cached prefix of rows.
type topGroup struct {
	key   string // encoded group columns
	vnode uint16
	rows  []topEntry
	// complete is set when rows holds every row of the group.
	complete bool

	dirty      bool
	snapLo     int // the top before the epoch is arena[snapLo:snapHi]
	snapHi     int
	prev, next *topGroup
}

// NewTopN builds the top-N executor of n over in.
func NewTopN(actx *ActorContext, n *plan.StreamTopN, in Executor) (Executor, error) {
	cfg := topNConfig{layout: n.StateRow(), orderBy: n.OrderBy, streamKey: n.Input.StreamKey(), inTypes: in.Schema()}
	switch n.Rank {
	case "":
		cfg.rank = rankNone
	case "row_number":
		cfg.rank = rankRowNumber
	case "rank":
		cfg.rank = rankRank
	case "dense_rank":
		cfg.rank = rankDense
	default:
		return nil, fmt.Errorf("top-n: unknown rank function %q", n.Rank)
	}
	if n.Limit < 0 || n.Offset < 0 || n.Limit > math.MaxInt32 || n.Offset > math.MaxInt32 {
		return nil, fmt.Errorf("top-n: limit %d offset %d out of range", n.Limit, n.Offset)
	}
	cfg.lo, cfg.hi = n.Offset, n.Offset+n.Limit
	cfg.margin = int(min(max(cfg.hi/2, 8), 512))
	cfg.appendOnly = n.AppendOnlyInput
	cfg.actor = actx.ID
	cfg.vnodes = actx.Vnodes
	width := len(cfg.inTypes)
	if cfg.rank != rankNone {
		width++
	}
	if len(n.Out) != width {
		return nil, fmt.Errorf("top-n: %d output columns, want %d", len(n.Out), width)
	}
	for _, f := range n.Out {
		cfg.outTypes = append(cfg.outTypes, f.Type)
	}
	if cfg.rank != rankNone && cfg.outTypes[width-1].Physical() != types.PhysI64 {
		return nil, fmt.Errorf("top-n: rank column of type %v", cfg.outTypes[width-1])
	}
	l := cfg.layout
	if nin := len(n.Input.Schema()); nin != len(cfg.inTypes) {
		return nil, fmt.Errorf("top-n: input has %d columns, plan %d", len(cfg.inTypes), nin)
	}
	cfg.groupCols = l.PK[:len(l.Dist)]
	cfg.groupSet = make([]bool, len(cfg.inTypes))
	for _, c := range cfg.groupCols {
		cfg.groupSet[c] = true
	}
	st := n.State()
	if len(st) != 1 {
		return nil, fmt.Errorf("top-n: %d state tables assigned, want 1", len(st))
	}
	if len(st[0].Types) != len(l.Types) {
		return nil, fmt.Errorf("top-n: state table %d has %d columns, layout %d", st[0].ID, len(st[0].Types), len(l.Types))
	}
	table, err := actx.NewTable(state.Schema{TableID: st[0].ID, Types: st[0].Types, PK: st[0].PK, PKDesc: st[0].PKDesc, DistKey: st[0].Dist})
	if err != nil {
		return nil, fmt.Errorf("top-n: open state: %w", err)
	}
	table.TrackKeys() // groups above those stored (new ones) load without a read
	if ng := len(cfg.groupCols); ng > 0 && slices.Equal(st[0].PK[:ng], cfg.groupCols) && (st[0].PKDesc == nil || !slices.Contains(st[0].PKDesc[:ng], true)) {
		// Groups the store never held (a bidder's first bid on an auction) load without a read.
		if err := table.TrackPrefixes(ng); err != nil {
			return nil, fmt.Errorf("top-n: %w", err)
		}
	}
	x := &TopN{cfg: cfg, in: in, table: table, groups: make(map[string]*topGroup), oldIdx: make(map[string]int),
		budget: newCacheBudget(actx, "top-n")}
	x.budget.holdsFilters(table)
	x.lru.prev, x.lru.next = &x.lru, &x.lru
	x.row = make([]types.Datum, len(l.Types))
	if l.Const >= 0 {
		x.row[l.Const] = types.DBool(false)
	}
	x.outRow = make([]types.Datum, width)
	return x, nil
}

// CountInto implements OpCounter: group lookups.
func (x *TopN) CountInto(st *OpStats) { x.cacheStats = st }

// Schema implements Executor.
func (x *TopN) Schema() []types.T { return x.cfg.outTypes }

// Next implements Executor.
func (x *TopN) Next(ctx context.Context) (Message, error) {
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
			return Message{}, fmt.Errorf("top-n: %w", err)
		}
		switch {
		case m.Chunk != nil:
			if err := x.apply(ctx, m.Chunk); err != nil {
				return Message{}, err
			}
			x.bound()
		case m.Watermark != nil:
			x.watermark(m.Watermark)
		case m.Barrier != nil:
			if err := x.barrier(ctx, m.Barrier); err != nil {
				return Message{}, err
			}
		}
	}
}

// watermark keeps the latest watermark of a group column, forwarded after
// the epoch's output (a group's changes are emitted only at the barrier).
// Watermarks of other columns do not hold for the top's changes and are
// dropped.
func (x *TopN) watermark(w *Watermark) {
	if w.Col < 0 || w.Col >= len(x.cfg.groupSet) || !x.cfg.groupSet[w.Col] {
		return
	}
	for i := range x.wms {
		if x.wms[i].Col == w.Col {
			x.wms[i] = *w
			return
		}
	}
	x.wms = append(x.wms, *w)
}

// apply records a chunk's changes in the state table and the cached groups.
func (x *TopN) apply(ctx context.Context, c *types.Chunk) error {
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
		var groupLen, orderLen, pkLen int
		x.key, groupLen, orderLen, pkLen = x.cfg.encode(x.key[:0], x.row)
		g, err := x.group(ctx, x.key[:groupLen], x.row)
		if err != nil {
			return err
		}
		x.touch(g)
		pk := x.key[:pkLen]
		if x.cfg.appendOnly {
			if err := x.applyAppendOnly(ctx, g, c.Op(i), orderLen, pkLen); err != nil {
				return err
			}
			continue
		}
		if c.Op(i).IsInsert() {
			if err := x.table.Insert(x.row); err != nil {
				return fmt.Errorf("top-n: %w", err)
			}
			if g.complete || (len(g.rows) > 0 && string(pk) < g.rows[len(g.rows)-1].pk()) {
				x.insertCached(g, orderLen, pkLen)
			}
		} else {
			if err := x.table.Delete(x.row); err != nil {
				return fmt.Errorf("top-n: %w", err)
			}
			if j, ok := g.search(pk); ok {
				g.rows = slices.Delete(g.rows, j, j+1)
				x.cached--
			}
		}
	}
	return nil
}

// applyAppendOnly records an insert (x.row, encoded in x.key) into group g
// of a top-N over an append-only input, whose state holds each group's top
// alone: ranks only grow as rows arrive, so a row ranked after the top never
// enters it again. A row that would rank after the top is dropped; one that
// enters it is written, and the rows it pushes out are deleted.
func (x *TopN) applyAppendOnly(ctx context.Context, g *topGroup, op types.Op, orderLen, pkLen int) error {
	if !op.IsInsert() {
		return fmt.Errorf("top-n over an append-only input received a retraction")
	}
	if !g.complete {
		// The cache bound took the rows of a group changed in this epoch:
		// read its top back (the state holds the epoch's writes).
		if err := x.fill(ctx, g); err != nil {
			return err
		}
	}
	j, found := g.search(x.key[:pkLen])
	if !found && x.cfg.rank <= rankRowNumber && int64(j) >= x.cfg.hi {
		return nil // its position is after the top: it never enters it
	}
	if found { // a repeated insert of a key: the row replaces it, as in the state table
		g.rows[j] = x.newEntry(x.key, x.row, orderLen, pkLen)
		if err := x.table.Insert(x.row); err != nil {
			return fmt.Errorf("top-n: %w", err)
		}
		return nil
	}
	g.rows = slices.Insert(g.rows, j, x.newEntry(x.key, x.row, orderLen, pkLen))
	x.cached++
	b := x.cfg.beyond(g.rows)
	if b >= 0 && j >= b { // after the top: it never enters it
		clear(g.rows[j : j+1])
		g.rows = slices.Delete(g.rows, j, j+1)
		x.cached--
		return nil
	}
	if err := x.table.Insert(x.row); err != nil {
		return fmt.Errorf("top-n: %w", err)
	}
	if b < 0 {
		return nil
	}
	for k := b; k < len(g.rows); k++ {
		if err := x.table.Delete(g.rows[k].row); err != nil {
			return fmt.Errorf("top-n: %w", err)
		}
	}
	clear(g.rows[b:])
	x.cached -= len(g.rows) - b
	g.rows = g.rows[:b]
	return nil
}

// encode appends row's state key then its stream key to buf and returns
// it with the lengths of the group, group+order and state key parts.
func (c *topNConfig) encode(buf []byte, row []types.Datum) (key []byte, groupLen, orderLen, pkLen int) {
	l := &c.layout
	ng := len(c.groupCols)
	buf = codec.AppendKey(buf, l.Types, row, c.groupCols, nil)
	groupLen = len(buf)
	buf = codec.AppendKey(buf, l.Types, row, l.PK[ng:l.OrderEnd], l.PKDesc[ng:l.OrderEnd])
	orderLen = len(buf)
	buf = codec.AppendKey(buf, l.Types, row, l.PK[l.OrderEnd:], l.PKDesc[l.OrderEnd:])
	pkLen = len(buf)
	buf = codec.AppendKey(buf, l.Types, row, c.streamKey, nil)
	return buf, groupLen, orderLen, pkLen
}

// newEntry copies row and its encoded key into an entry.
func (x *TopN) newEntry(key []byte, row []types.Datum, orderLen, pkLen int) topEntry {
	e := topEntry{key: string(key), pkLen: int32(pkLen), orderLen: int32(orderLen), row: make([]types.Datum, len(row))}
	for j := range row {
		if x.cfg.layout.Types[j].Physical() == types.PhysDec {
			e.row[j] = row[j].Copy()
		} else {
			e.row[j] = row[j]
		}
	}
	x.budget.sample(e.row, len(e.key)+topEntryBytes)
	return e
}

// topEntryBytes is a topEntry's own size.
const topEntryBytes = int(unsafe.Sizeof(topEntry{}))

func (x *TopN) insertCached(g *topGroup, orderLen, pkLen int) {
	j, found := g.search(x.key[:pkLen])
	e := x.newEntry(x.key, x.row, orderLen, pkLen)
	if found { // a repeated insert of a key: the row replaces it, as in the state table
		g.rows[j] = e
		return
	}
	g.rows = slices.Insert(g.rows, j, e)
	x.cached++
}

// search finds pk among the cached rows (or where it would go).
func (g *topGroup) search(pk []byte) (int, bool) {
	j := sort.Search(len(g.rows), func(j int) bool { return g.rows[j].pk() >= string(pk) })
	return j, j < len(g.rows) && g.rows[j].pk() == string(pk)
}

// group returns the cached group with the given key, loading it from state
// when it is not cached, and snapshots its top when it is first changed in
// the epoch.
func (x *TopN) group(ctx context.Context, key []byte, row []types.Datum) (*topGroup, error) {
	g := x.groups[string(key)]
	x.cacheStats.hit(g != nil)
	if g == nil {
		g = &topGroup{key: string(key), vnode: x.table.VnodeOfRow(row)}
		x.groups[g.key] = g
		x.cached++
		g.prev, g.next = &x.lru, x.lru.next
		g.prev.next, g.next.prev = g, g
		if err := x.fill(ctx, g); err != nil {
			return nil, err
		}
	}
	if !g.dirty {
		g.dirty = true
		x.dirty = append(x.dirty, g)
		g.snapLo = len(x.arena)
		x.arena = x.cfg.top(g.rows, x.arena)
		g.snapHi = len(x.arena)
	}
	return g, nil
}

// touch makes g the most recently used group.
func (x *TopN) touch(g *topGroup) {
	if x.lru.next == g {
		return
	}
	g.prev.next, g.next.prev = g.next, g.prev
	g.prev, g.next = &x.lru, x.lru.next
	g.prev.next, g.next.prev = g, g
}

// beyond returns the index of the first row ranked after the top, or -1
// when every row of rows could be in it.
func (c *topNConfig) beyond(rows []topEntry) int {
	var r int64
	for i := range rows {
		r = c.rankAt(rows, i, r)
		if r > c.hi {
			return i
		}
	}
	return -1
}

// rankAt returns the rank of rows[i] given prev, the rank of rows[i-1].
func (c *topNConfig) rankAt(rows []topEntry, i int, prev int64) int64 {
	switch c.rank {
	case rankRank:
		if i == 0 || rows[i].order() != rows[i-1].order() {
			return int64(i) + 1
		}
		return prev
	case rankDense:
		if i == 0 || rows[i].order() != rows[i-1].order() {
			return prev + 1
		}
		return prev
	}
	return int64(i) + 1
}

// top appends the rows of the top (with their ranks) to dst.
func (c *topNConfig) top(rows []topEntry, dst []topOut) []topOut {
	var r int64
	for i := range rows {
		r = c.rankAt(rows, i, r)
		if r > c.hi {
			break
		}
		if r > c.lo {
			dst = append(dst, topOut{e: rows[i], rank: r})
		}
	}
	return dst
}

// fill reads rows of g after its cached prefix from state until the prefix
// holds the whole top and a margin, or the whole group.
func (x *TopN) fill(ctx context.Context, g *topGroup) error {
	if g.complete {
		return nil
	}
	prefix := []byte(g.key)
	start := prefix
	if len(g.rows) > 0 {
		start = append([]byte(g.rows[len(g.rows)-1].pk()), 0)
	}
	it, err := x.table.Iter(ctx, state.IterOptions{Vnode: int(g.vnode), Range: state.KeyRange{Start: start, End: codec.PrefixEnd(prefix)}, Prefix: prefix})
	if err != nil {
		return fmt.Errorf("top-n: load group: %w", err)
	}
	want := max(len(g.rows), int(x.cfg.hi)+1) + x.cfg.margin
	for {
		err := it.Next()
		if err == io.EOF {
			g.complete = true
			break
		}
		if err != nil {
			it.Close()
			return fmt.Errorf("top-n: load group: %w", err)
		}
		row := it.Row()
		var orderLen, pkLen int
		x.fillKey, _, orderLen, pkLen = x.cfg.encode(x.fillKey[:0], row)
		g.rows = append(g.rows, x.newEntry(x.fillKey, row, orderLen, pkLen))
		x.cached++
		if len(g.rows) >= want {
			if b := x.cfg.beyond(g.rows); b >= 0 && len(g.rows) >= b+1+x.cfg.margin {
				break
			}
			want *= 2
		}
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("top-n: load group: %w", err)
	}
	return nil
}

// barrier emits the epoch's changes of the top, then the group watermarks
// and the barrier, and shrinks the cache to its bound.
func (x *TopN) barrier(ctx context.Context, b *Barrier) error {
	for _, g := range x.dirty {
		if !g.complete && x.cfg.beyond(g.rows) < 0 {
			if err := x.fill(ctx, g); err != nil {
				return err
			}
		}
	}
	// Deletes first, across all groups: a row that moved to another group
	// leaves the old one before it enters the new one.
	for _, g := range x.dirty {
		x.diff(g)
	}
	for _, ch := range x.later {
		if ch.update {
			x.emitPair(ch.old, ch.new)
		} else {
			x.emit(types.OpInsert, ch.new)
		}
	}
	clear(x.later)
	x.later = x.later[:0]
	if x.out != nil && x.out.Len() > 0 {
		x.queue = append(x.queue, ChunkMsg(x.out))
	}
	x.out = nil
	for i := range x.wms {
		w := x.wms[i]
		x.queue = append(x.queue, WatermarkMsg(&w))
	}
	x.queue = append(x.queue, BarrierMsg(b))
	for _, g := range x.dirty {
		g.dirty = false
		x.trim(g)
		if cap(g.rows) > 2*len(g.rows)+8 {
			// Rows were deleted or trimmed: keep no room the count does not show.
			g.rows = slices.Clip(slices.Clone(g.rows))
		}
	}
	clear(x.dirty)
	x.dirty = x.dirty[:0]
	clear(x.arena)
	x.arena = x.arena[:0]
	for _, w := range x.wms {
		if err := x.clean(ctx, w); err != nil {
			return err
		}
	}
	x.wms = x.wms[:0]
	x.evict()
	x.done = b.Stops(x.cfg.actor)
	return nil
}

// clean deletes the groups whose column w.Col (a group column) is below the
// watermark w, from the cache and from the state table: every later row has
// that column at or above the watermark (rows below it were dropped as late
// upstream), so no later change can reach those groups, and their tops,
// already emitted, stay in the output as they are.
func (x *TopN) clean(ctx context.Context, w Watermark) error {
	if w.Val.Null {
		return nil
	}
	t := x.cfg.inTypes[w.Col]
	below := func(row []types.Datum) bool {
		return !row[w.Col].Null && types.Compare(t, &row[w.Col], &w.Val) < 0
	}
	for key, g := range x.groups {
		if len(g.rows) == 0 || !below(g.rows[0].row) {
			continue
		}
		if g.prev != nil {
			g.prev.next, g.next.prev = g.next, g.prev
			g.prev, g.next = nil, nil
		}
		delete(x.groups, key)
		x.cached -= len(g.rows) + 1
		g.rows = nil
	}
	// When the group's first column leads the state key, the rows below the
	// watermark are a prefix of each vnode's range.
	keyLeads := len(x.cfg.groupCols) > 0 && x.cfg.groupCols[0] == w.Col
	if err := deleteStateBelow(ctx, x.table, len(x.cfg.layout.Types), x.cfg.vnodes, w.Col, t, &w.Val, keyLeads); err != nil {
		return fmt.Errorf("top-n: clean state below the watermark: %w", err)
	}
	return nil
}

// diff compares g's top before and after the epoch: deletes are emitted at
// once, inserts and updates queued in x.later.
func (x *TopN) diff(g *topGroup) {
	old := x.arena[g.snapLo:g.snapHi]
	x.newTop = x.cfg.top(g.rows, x.newTop[:0])
	nw := x.newTop
	x.oldHit = slices.Grow(x.oldHit[:0], len(old))[:len(old)]
	clear(x.oldHit)
	useMap := len(old)*len(nw) > 256
	if useMap {
		clear(x.oldIdx)
		for i := range old {
			x.oldIdx[old[i].e.sk()] = i
		}
	}
	for i := range nw {
		j := -1
		if useMap {
			if k, ok := x.oldIdx[nw[i].e.sk()]; ok {
				j = k
			}
		} else {
			for k := range old {
				if old[k].e.sk() == nw[i].e.sk() {
					j = k
					break
				}
			}
		}
		if j < 0 {
			x.later = append(x.later, topChange{new: nw[i]})
			continue
		}
		x.oldHit[j] = true
		if (x.cfg.rank != rankNone && old[j].rank != nw[i].rank) || !x.sameRow(old[j].e.row, nw[i].e.row) {
			x.later = append(x.later, topChange{old: old[j], new: nw[i], update: true})
		}
	}
	for j := range old {
		if !x.oldHit[j] {
			x.emit(types.OpDelete, old[j])
		}
	}
	clear(x.newTop)
}

// sameRow reports whether two rows hold identical values (numerics with the
// same scale), so an update that changes only a value's form is emitted.
func (x *TopN) sameRow(a, b []types.Datum) bool { return identical(x.cfg.inTypes, a, b) }

func (x *TopN) room(n int) {
	if x.out != nil && x.out.Len()+n > types.DefaultChunkSize {
		x.queue = append(x.queue, ChunkMsg(x.out))
		x.out = nil
	}
	if x.out == nil {
		x.out = types.NewChunk(x.cfg.outTypes, types.DefaultChunkSize)
	}
}

func (x *TopN) appendOut(op types.Op, o topOut) {
	n := copy(x.outRow, o.e.row[:len(x.cfg.inTypes)])
	if x.cfg.rank != rankNone {
		x.outRow[n] = types.DInt(o.rank)
	}
	x.out.AppendRowOp(op, x.outRow)
}

func (x *TopN) emit(op types.Op, o topOut) {
	x.room(1)
	x.appendOut(op, o)
}

func (x *TopN) emitPair(old, new topOut) {
	x.room(2)
	x.appendOut(types.OpUpdateDelete, old)
	x.appendOut(types.OpUpdateInsert, new)
}

// trim drops cached rows of g far beyond its top.
func (x *TopN) trim(g *topGroup) {
	b := x.cfg.beyond(g.rows)
	if b < 0 {
		return
	}
	keep := b + 1 + x.cfg.margin
	if len(g.rows) <= keep+x.cfg.margin {
		return
	}
	clear(g.rows[keep:])
	x.cached -= len(g.rows) - keep
	g.rows = g.rows[:keep]
	g.complete = false
}

// bound keeps the cache within its bound during an epoch, least recently
// used groups first as at a barrier (evict), down to three quarters of the
// bound. A group changed in the epoch keeps its entry, with its top before
// the epoch for the barrier's diff, and gives up only its rows: the barrier
// reads them back from state (which holds the epoch's writes).
func (x *TopN) bound() {
	limit := x.budget.limit()
	defer func() { x.budget.report(x.cached) }()
	if x.cached <= limit {
		return
	}
	low := limit - limit/4
	for g := x.lru.prev; g != &x.lru && x.cached > low; {
		prev := g.prev
		if g.dirty {
			x.cached -= len(g.rows)
			g.rows, g.complete = nil, false
		} else {
			g.prev.next, g.next.prev = g.next, g.prev
			g.prev, g.next = nil, nil
			delete(x.groups, g.key)
			x.cached -= len(g.rows) + 1
			g.rows = nil
		}
		g = prev
	}
}

// evict drops least recently used groups until the cache is within bound.
func (x *TopN) evict() {
	limit := x.budget.limit()
	defer func() { x.budget.report(x.cached) }()
	for x.cached > limit && x.lru.prev != &x.lru {
		g := x.lru.prev
		g.prev.next, g.next.prev = g.next, g.prev
		g.prev, g.next = nil, nil
		delete(x.groups, g.key)
		x.cached -= len(g.rows) + 1
		g.rows = nil
	}
}
