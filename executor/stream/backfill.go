package stream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage"
	"github.com/tributary/tributary/storage/codec"
	"github.com/tributary/tributary/storage/state"
)

// Progress receives a backfill's progress. The coordinator installs it.
type Progress func(BackfillReport)

// BackfillReport is a backfilling source's progress.
type BackfillReport struct {
	Rows int64 // snapshot rows emitted so far
	Done bool  // the backfill has finished: the source is live
	// Covered is the share of the upstream's vnodes whose snapshot has been
	// read (0 to 1), and Estimate the snapshot's row count extrapolated from
	// them (0: unknown yet). Rows are spread evenly over vnodes by hash.
	Covered  float64
	Estimate int64
	// Vnodes is the per-vnode state, when this report carries it (at barriers).
	Vnodes []VnodeReport
	// Splits is the per-split state of a shared source's backfill, when
	// this report carries it.
	Splits []SplitReport
}

// VnodeReport is the backfill of one upstream vnode.
type VnodeReport struct {
	Vnode    uint16
	Epoch    uint64 // the snapshot epoch it is read at (arrangement: the last barrier's)
	Rows     int64  // snapshot rows read from it
	Started  bool
	Finished bool
}

// backfillExec is arrangement backfill: it feeds a new job the upstream
// relation's existing rows, read in key order from its committed snapshot,
// while upstream changes keep flowing, and then becomes a plain pass-through.
//
// Every epoch it reads snapshot chunks at the epoch the last barrier sealed
// (once committed) starting after pos, the key of the last row it emitted.
// The upstream changes of the epoch are held until its barrier: a change to
// a row at or before pos is forwarded (its earlier version came from the
// snapshot); a change beyond pos is dropped (a later snapshot read includes
// it). pos, finished and the row count commit with the epoch, so a restart
// resumes where the last committed epoch left off, and downstream state never
// sees a row twice. The upstream never waits for the backfill: its messages
// are consumed by a pump goroutine and held in memory for at most one epoch.
type backfillExec struct {
	actx     *ActorContext
	upstream Executor
	rel      plan.StreamNode
	relID    uint32
	blocks   bool // the relation may store blocks (catalog.Relation.StoresBlocks)
	types    []types.T
	missing  []types.Datum // what columns added later read in older rows (catalog.Relation.MissingValues)
	pk       []int
	progress *state.Table
	report   Progress
	limit    *rateLimiter

	started  bool
	loaded   bool
	pos      []byte // encoded key of the last snapshot row emitted; nil = none yet
	finished bool
	// savedDone: the finished state is persisted; nothing more to save.
	savedDone    bool
	reportedDone bool // the last detailed report said finished
	// vrows counts the snapshot rows read per upstream vnode; savedCur is
	// the vnode of pos at the last save (the vnodes from it up to pos's
	// changed since).
	vrows    [codec.VnodeCount]int64
	savedCur int
	rows     int64
	snap     uint64 // the epoch the last barrier sealed: the snapshot to read
	held     []*types.Chunk
	queue    []Message

	pump     upstreamPump
	row, key []types.Datum
	keyBuf   []byte
}

// BackfillChunkRows is how many snapshot rows one read emits.
const BackfillChunkRows = 1024

// NewBackfill returns the backfilling source of a StreamSource (its first
// state table holds the progress). upstream is the receiver of the relation's
// change stream.
func NewBackfill(actx *ActorContext, n *plan.StreamSource, upstream Executor, report Progress, rowsPerSecond int64) (Executor, func(), error) {
	t, err := openProgress(actx, n, "backfill")
	if err != nil {
		return nil, nil, err
	}
	if report == nil {
		report = func(BackfillReport) {}
	}
	b := &backfillExec{actx: actx, upstream: upstream, relID: n.Relation.ID, types: n.Relation.ColumnTypes(), missing: n.Relation.MissingValues(),
		blocks: n.Relation.StoresBlocks(), pk: n.Relation.PK, progress: t, report: report, limit: newRateLimiter(rowsPerSecond)}
	return b, b.close, nil
}

// openProgress opens a backfilling source's progress table (its first state table).
func openProgress(actx *ActorContext, n *plan.StreamSource, what string) (*state.Table, error) {
	if len(n.State()) == 0 {
		return nil, fmt.Errorf("%s %s: no progress table assigned", what, n.Relation.QualifiedName())
	}
	t, err := actx.NewTable(stateSchema(n.State()[0]))
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", what, n.Relation.QualifiedName(), err)
	}
	return t, nil
}

// eachRow calls fn with every row of t (all vnodes), as of the last committed epoch.
func eachRow(ctx context.Context, t *state.Table, fn func(row []types.Datum)) error {
	it, err := t.Iter(ctx, state.IterOptions{Vnode: state.AllVnodes})
	if err != nil {
		return err
	}
	for {
		if err := it.Next(); err != nil {
			if errors.Is(err, io.EOF) {
				return it.Close()
			}
			it.Close()
			return err
		}
		fn(it.Row())
	}
}

func (b *backfillExec) Schema() []types.T { return b.upstream.Schema() }

func (b *backfillExec) start(ctx context.Context) {
	b.started = true
	b.pump.start(ctx, b.upstream)
}

func (b *backfillExec) close() { b.pump.stop() }

// loadProgress reads the persisted position (once, before the first snapshot read).
func (b *backfillExec) loadProgress(ctx context.Context) error {
	b.loaded = true
	found, finished := false, 0
	err := eachRow(ctx, b.progress, func(row []types.Datum) {
		v := row[0].I
		if v < 0 || v >= codec.VnodeCount {
			return
		}
		found = true
		if !row[1].Null {
			b.pos = []byte(row[1].S) // only the vnode in progress keeps one
		}
		if row[2].Bool() {
			finished++
		}
		b.vrows[v] = row[3].I
		b.rows += row[3].I
	})
	if err != nil {
		return err
	}
	if !found {
		return nil
	}
	b.finished = finished == codec.VnodeCount
	b.savedDone = b.finished
	b.savedCur = b.curVnode()
	b.sendReport(true)
	return nil
}

// curVnode is the vnode of pos: every vnode below it is finished.
func (b *backfillExec) curVnode() int {
	switch {
	case b.finished:
		return codec.VnodeCount
	case b.pos == nil:
		return 0
	}
	_, v, _ := codec.SplitTablePrefix(b.pos)
	return int(v)
}

// sendReport tells the coordinator the progress; with detail, per vnode too.
// The scan goes vnode by vnode (keys are table | vnode | pk), so every vnode
// below the current position's is finished.
func (b *backfillExec) sendReport(detail bool) {
	r := BackfillReport{Rows: b.rows, Done: b.finished}
	cur := b.curVnode() // vnodes finished
	switch {
	case b.finished:
		r.Covered, r.Estimate = 1, b.rows
	case cur > 0:
		r.Covered = float64(cur) / codec.VnodeCount
		r.Estimate = b.rows * codec.VnodeCount / int64(cur)
	}
	if detail {
		r.Vnodes = make([]VnodeReport, codec.VnodeCount)
		for v := range r.Vnodes {
			r.Vnodes[v] = VnodeReport{Vnode: uint16(v), Epoch: b.snap, Rows: b.vrows[v], Finished: v < cur,
				Started: v < cur || (v == cur && b.pos != nil)}
		}
	}
	b.report(r)
}

// saveProgress writes the state of the vnodes read since the last save, one
// row each: vnode | current_pos | finished | row_count. The scan goes in key
// order (table | vnode | pk), so the vnodes below pos's are finished and only
// pos's vnode is in progress; it alone keeps a position.
func (b *backfillExec) saveProgress() error {
	cur := b.curVnode()
	last := min(cur, codec.VnodeCount-1)
	if b.pos == nil && !b.finished {
		return nil // nothing read yet
	}
	for v := b.savedCur; v <= last; v++ {
		row := []types.Datum{types.DInt(int64(v)), types.NullDatum, types.DBool(v < cur), types.DInt(b.vrows[v])}
		if v == cur {
			row[1] = bytesOrNull(b.pos)
		}
		if err := b.progress.Insert(row); err != nil {
			return err
		}
	}
	b.savedCur = min(cur, codec.VnodeCount-1)
	return nil
}

func (b *backfillExec) Next(ctx context.Context) (Message, error) {
	if !b.started {
		b.start(ctx)
	}
	for {
		if len(b.queue) > 0 {
			m := b.queue[0]
			b.queue = b.queue[1:]
			return m, nil
		}
		if b.loaded && b.finished && b.savedDone && len(b.held) == 0 {
			return b.take(ctx) // backfill over and recorded: pass through
		}
		// Take upstream messages without waiting while snapshot work remains.
		select {
		case pm := <-b.pump.ch:
			if err := b.handle(pm); err != nil {
				return Message{}, err
			}
			continue
		case <-ctx.Done():
			return Message{}, ctx.Err()
		default:
		}
		if b.snap != 0 && b.loaded && !b.finished && b.actx.Store.CommittedEpoch() >= b.snap && b.limit.allow(BackfillChunkRows) {
			c, err := b.readSnapshot(ctx)
			if err != nil {
				return Message{}, err
			}
			if c != nil {
				return ChunkMsg(c), nil
			}
			continue
		}
		// Nothing to read now: wait for upstream (or poll for the snapshot to commit).
		select {
		case pm := <-b.pump.ch:
			if err := b.handle(pm); err != nil {
				return Message{}, err
			}
		case <-time.After(2 * time.Millisecond):
		case <-ctx.Done():
			return Message{}, ctx.Err()
		}
	}
}

// take returns the next upstream message once the backfill is over.
func (b *backfillExec) take(ctx context.Context) (Message, error) { return b.pump.take(ctx) }

// handle holds an upstream chunk, or at a barrier releases the epoch's held
// changes that concern rows already emitted and queues the barrier; it drops
// watermarks.
func (b *backfillExec) handle(pm pumpMsg) error {
	if pm.err != nil {
		if errors.Is(pm.err, io.EOF) {
			return fmt.Errorf("backfill: upstream ended without a stop barrier")
		}
		return pm.err
	}
	switch {
	case pm.msg.Chunk != nil:
		b.held = append(b.held, pm.msg.Chunk)
	case pm.msg.Barrier != nil:
		pm.msg.Barrier.ForEachMutation(func(m Mutation) {
			if r, ok := m.(*SetRateLimit); ok && r.Actors[b.actx.ID] {
				b.limit.Set(r.RowsPerSecond)
			}
		})
		if !b.loaded {
			if err := b.loadProgress(context.Background()); err != nil {
				return err
			}
		}
		for _, c := range b.held {
			if out := b.filter(c); out != nil {
				b.queue = append(b.queue, ChunkMsg(out))
			}
		}
		b.held = b.held[:0]
		if !b.savedDone {
			if err := b.saveProgress(); err != nil {
				return err
			}
			b.savedDone = b.finished
		}
		b.snap = pm.msg.Barrier.Epoch.Prev
		if !b.finished || !b.reportedDone {
			b.sendReport(true)
			b.reportedDone = b.finished
		}
		b.queue = append(b.queue, pm.msg)
	default:
		// A watermark: dropped until the backfill passes everything
		// through, since snapshot rows still to come (and held changes)
		// may lie below it.
	}
	return nil
}

// filter keeps the rows of c whose key is at or before pos (all, once finished).
func (b *backfillExec) filter(c *types.Chunk) *types.Chunk {
	if b.finished {
		return c
	}
	if b.pos == nil {
		return nil
	}
	out := types.NewChunk(c.Types(), c.Len())
	for i := 0; i < c.Len(); i++ {
		if !c.Visible(i) {
			continue
		}
		b.row = c.Row(i, b.row)
		if bytes.Compare(b.rowKey(b.row), b.pos) <= 0 {
			out.AppendFrom(c, i)
		} else if c.Op(i) == types.OpUpdateDelete && i+1 < c.Len() {
			// Keep pairs whole: the insert half decides on its own.
			continue
		}
	}
	if out.Len() == 0 {
		return nil
	}
	return fixPairs(out)
}

// fixPairs turns update halves that lost their partner into plain ops.
func fixPairs(c *types.Chunk) *types.Chunk {
	if c.Ops == nil {
		return c
	}
	for i := 0; i < c.Len(); i++ {
		switch c.Ops[i] {
		case types.OpUpdateDelete:
			if i+1 >= c.Len() || c.Ops[i+1] != types.OpUpdateInsert {
				c.Ops[i] = types.OpDelete
			} else {
				i++
			}
		case types.OpUpdateInsert:
			c.Ops[i] = types.OpInsert
		}
	}
	return c
}

// rowKey is the upstream state key of row (table prefix, vnode, pk).
func (b *backfillExec) rowKey(row []types.Datum) []byte {
	v := codec.VnodeOf(codec.HashRow(b.types, row, b.pk))
	b.keyBuf = codec.AppendTablePrefix(b.keyBuf[:0], b.relID, v)
	return codec.AppendKey(b.keyBuf, b.types, row, b.pk, nil)
}

// BackfillRowsRead counts the upstream rows every table backfill of the
// process has read from its snapshot (rebuilt jobs included; from zero at
// each start): what /metrics shows as tributary_backfill_rows_read_total,
// which tells how much a resumed backfill read again.
var BackfillRowsRead atomic.Int64

// readSnapshot emits the next rows after pos at the snapshot epoch.
func (b *backfillExec) readSnapshot(ctx context.Context) (*types.Chunk, error) {
	out, eof, err := scanAfter(ctx, b.actx.Store, b.relID, b.blocks, b.types, b.missing, b.snap, &b.pos, &b.row, &b.vrows)
	if err != nil {
		if errors.Is(err, storage.ErrEpochNotCommitted) {
			return nil, nil
		}
		return nil, fmt.Errorf("backfill snapshot of %d: %w", b.relID, err)
	}
	b.finished = eof
	b.rows += int64(out.Len())
	BackfillRowsRead.Add(int64(out.Len()))
	b.sendReport(false)
	if out.Len() == 0 {
		return nil, nil
	}
	return out, nil
}

// spanAfter is the key span of relation relID after the key pos (the whole
// relation when pos is nil).
func spanAfter(relID uint32, pos []byte) (lower, upper []byte) {
	lower, upper = codec.TableSpan(relID)
	if pos != nil {
		lower = append(append([]byte(nil), pos...), 0) // just after pos
	}
	return lower, upper
}

// scanAfter reads up to BackfillChunkRows rows of relation relID at epoch, in
// key order, starting just after *pos; it moves *pos to the key of the last
// row read, counts the rows per vnode into vrows, and reports whether the
// relation's end was reached. *row is the decoding scratch row; blocks says
// the relation may store blocks (state.Scan).
func scanAfter(ctx context.Context, kv storage.KV, relID uint32, blocks bool, typs []types.T, missing []types.Datum, epoch uint64, pos *[]byte, row *[]types.Datum, vrows *[codec.VnodeCount]int64) (*types.Chunk, bool, error) {
	lower, upper := spanAfter(relID, *pos)
	it, err := state.Scan(ctx, kv, lower, upper, epoch, blocks)
	if err != nil {
		return nil, false, err
	}
	defer it.Close()
	out := types.NewChunk(typs, BackfillChunkRows)
	for out.Len() < BackfillChunkRows {
		if err := it.Next(); err != nil {
			if errors.Is(err, io.EOF) {
				return out, true, nil
			}
			return nil, false, err
		}
		if *row, err = codec.DecodeRowMissing(typs, it.Value(), *row, missing); err != nil {
			return nil, false, err
		}
		out.AppendRow(*row)
		*pos = append((*pos)[:0], it.Key()...)
		if _, v, ok := codec.SplitTablePrefix(*pos); ok {
			vrows[v]++
		}
	}
	return out, false, nil
}

// rateLimiter is a token bucket in rows per second (< 0: unlimited, 0: paused).
type rateLimiter struct {
	mu     sync.Mutex
	rate   int64
	tokens float64
	last   time.Time
}

func newRateLimiter(rate int64) *rateLimiter { return &rateLimiter{rate: rate, last: time.Now()} }

// Set changes the rate online.
func (r *rateLimiter) Set(rate int64) {
	r.mu.Lock()
	r.rate = rate
	r.mu.Unlock()
}

// ready blocks while the limiter is paused or in debt (more rows charged
// than its rate has earned), or until ctx ends. Readers that cannot know how
// many rows they will get (a vnode may hold a few) call ready, read, then
// charge what they read.
func (r *rateLimiter) ready(ctx context.Context) error {
	for {
		r.mu.Lock()
		r.refillLocked(BackfillChunkRows)
		d := 20 * time.Millisecond // paused
		switch {
		case r.rate < 0, r.rate > 0 && r.tokens >= 0:
			r.mu.Unlock()
			return nil
		case r.rate > 0:
			d = min(max(time.Duration(-r.tokens/float64(r.rate)*float64(time.Second)), time.Millisecond), 20*time.Millisecond)
		}
		r.mu.Unlock()
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// charge takes n rows read from the bucket, which may go into debt.
func (r *rateLimiter) charge(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refillLocked(n)
	if r.rate >= 0 {
		r.tokens -= float64(n)
	}
}

// refillLocked adds the tokens earned since the last call, holding at most a
// second's worth plus burst.
func (r *rateLimiter) refillLocked(burst int) {
	now := time.Now()
	if r.rate > 0 {
		r.tokens += now.Sub(r.last).Seconds() * float64(r.rate)
		r.tokens = min(r.tokens, float64(r.rate)+float64(burst))
	}
	r.last = now
}

// grant returns how many of up to n rows may be read now, taking them from
// the bucket: 0 while paused or until a row's worth has accrued, so a rate
// below n rows a second reads a few rows at a time.
func (r *rateLimiter) grant(n int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refillLocked(n)
	switch {
	case r.rate < 0:
		return n
	case r.rate == 0 || r.tokens < 1:
		return 0
	}
	k := min(n, int(r.tokens))
	r.tokens -= float64(k)
	return k
}

// allow reports whether n rows may be read now, taking them from the bucket.
func (r *rateLimiter) allow(n int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refillLocked(n)
	if r.rate < 0 {
		return true
	}
	if r.rate == 0 || r.tokens < float64(n) {
		return false
	}
	r.tokens -= float64(n)
	return true
}

// Backfiller is a backfilling source: a new job's reader of a relation's
// history (its snapshot, or a shared source's splits from their start)
// before the relation's live stream.
type Backfiller interface {
	// BackfillDone reports whether every row of the history has been
	// emitted (checked between messages, in the actor's goroutine).
	BackfillDone() bool
}

// BackfillDone implements Backfiller.
func (b *backfillExec) BackfillDone() bool { return b.loaded && b.finished }

// BackfillDone implements Backfiller: the snapshot and every catch-up
// range are emitted.
func (s *snapshotBackfillExec) BackfillDone() bool { return s.loaded && s.phase == phaseDone }

// BackfillDone implements Backfiller: every split is finished.
func (b *sourceBackfillExec) BackfillDone() bool { return b.finished }
