package stream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage/codec"
	"github.com/tributary/tributary/storage/state"
)

// Snapshot backfill phases.
const (
	phaseSnapshot int64 = iota // reading the snapshot at the fixed epoch E
	phaseCatchUp               // replaying the changes after E, epoch range by range
	phaseDone                  // live
)

// snapshotBackfillExec is snapshot backfill: the new job reads its upstream's
// rows at one fixed committed epoch E, outside the upstream's barrier path
// (the upstream's changes meanwhile are dropped, not buffered: storage keeps
// every version after E while the backfill pins E, and that is the change
// log). The snapshot is read vnode by vnode by parallel reader goroutines
// (the upstream's keys are table | vnode | pk), each vnode in key order;
// a vnode's position (the key of its last row emitted), row count and
// finished flag commit with each epoch, so a restart resumes every vnode
// where it was.
//
// Then it catches up: for an epoch range (E, X] it emits, for every key that
// changed, the row as of E as a Delete and the row as of X as an Insert, and
// moves E to X. Live changes after X are held in memory from the start of a
// range until the range is emitted (across barriers if need be) and then
// released: the job follows its upstream directly. The job's phase, E, the
// range end and the position in the range commit with each epoch too; held
// changes are lost in a crash, so a resumed range does not go live but starts
// another range from its end, which covers them.
type snapshotBackfillExec struct {
	actx     *ActorContext
	upstream Executor
	relID    uint32
	blocks   bool // the relation may store blocks (catalog.Relation.StoresBlocks)
	types    []types.T
	missing  []types.Datum // what columns added later read in older rows (catalog.Relation.MissingValues)
	progress *state.Table
	report   Progress
	limit    *rateLimiter

	started, loaded bool
	phase           int64
	epoch           uint64 // E
	target          uint64 // X of the catch-up range in progress (0: none)
	dpos            []byte // position within the catch-up range
	rows            int64  // rows emitted (snapshot and catch-up)
	vnodes          [codec.VnodeCount]vnodeProgress
	finishedVnodes  int
	finishedRows    int64 // snapshot rows of the finished vnodes
	readers         *snapshotReaders
	// The snapshot rows emitted per epoch are bounded by an adaptive window;
	// the readers read chunks of readSize rows.
	window   snapshotWindow
	readSize atomic.Int64
	unpin    func()
	// stale are pins of earlier E's, kept until the epoch that saved the
	// move past them commits (until: that epoch; 0 until it is saved): a
	// rebuild or a restart resumes from the saved E, whose versions must
	// still be there.
	stale   []stalePin
	holding bool // collecting live chunks after the range end
	held    []*types.Chunk
	queue   []Message

	pump *backfillExec // reuses the arrangement backfill's upstream pump
	row  []types.Datum
	// free holds snapshot chunks for the readers to fill again (nil: each chunk is new): a
	// consumer that is done with a chunk when it asks for the next enables it (lendChunks);
	// lent is the chunk Next returned last.
	free chan *types.Chunk
	lent *types.Chunk
	// fold, when set, gives each snapshot reader the partial groups of the local
	// aggregation above to fold its rows into (fuseLocalAgg).
	fold func() *localAggExec
}

// lendChunks lets a snapshot backfill below in (through projections and filters, which keep
// no chunk) fill the chunks it returned again once in's consumer asks for the next: the
// consumer (a local aggregation) folds each chunk before it pulls again and keeps none. A 10M-row
// snapshot otherwise allocates its whole size in chunks (hundreds of MB of fresh memory).
func lendChunks(in Executor) {
	for {
		switch e := in.(type) {
		case *profiled:
			in = e.in
		case *projectExec:
			in = e.in
		case *filterExec:
			in = e.in
		case *snapshotBackfillExec:
			e.free = make(chan *types.Chunk, 2*snapshotReaderCount()+2)
			return
		default:
			return
		}
	}
}

// chunk returns a chunk for a reader to fill: one the consumer is done with, or a new one.
func (s *snapshotBackfillExec) chunk(size int) *types.Chunk {
	select {
	case c := <-s.free:
		c.Reset()
		return c
	default:
		return types.NewChunk(s.types, size)
	}
}

// vnodeProgress is the snapshot read of one upstream vnode.
type vnodeProgress struct {
	pos      []byte // key of the last row emitted (nil: none yet)
	rows     int64
	finished bool
	dirty    bool // changed since the last save
}

// observeCommit adjusts the window by the committed epochs' barrier latencies.
func (s *snapshotBackfillExec) observeCommit() {
	s.window.judge(s.actx.Store.CommittedEpoch(), s.actx.BarrierLatency)
}

// snapshotReaderCount is how many goroutines read the snapshot's vnodes.
func snapshotReaderCount() int { return min(max(runtime.GOMAXPROCS(0), 1), 4) }

// snapshotChunksQueued is how many chunks per reader may wait for the actor:
// the readers and the actor's operators above them take about the same time
// per row, and a short queue parks one side or the other at every burst
// (a 10M-row GROUP BY view's backfill: 0.57-0.61 s with 8, 0.60-0.63 s with 2).
const snapshotChunksQueued = 8

// snapshotChunkBytes bounds the encoded rows of one chunk a reader reads, so
// that the queued chunks of wide rows stay a few megabytes.
const snapshotChunkBytes = 256 << 10

// NewSnapshotBackfill returns the snapshot-backfilling source of a StreamSource.
func NewSnapshotBackfill(actx *ActorContext, n *plan.StreamSource, upstream Executor, report Progress, rowsPerSecond int64) (Executor, func(), error) {
	t, err := openProgress(actx, n, "snapshot backfill")
	if err != nil {
		return nil, nil, err
	}
	if report == nil {
		report = func(BackfillReport) {}
	}
	s := &snapshotBackfillExec{actx: actx, upstream: upstream, relID: n.Relation.ID, blocks: n.Relation.StoresBlocks(), types: n.Relation.ColumnTypes(), missing: n.Relation.MissingValues(),
		progress: t, report: report, limit: newRateLimiter(rowsPerSecond), window: newSnapshotWindow()}
	s.readSize.Store(BackfillChunkRows)
	s.pump = &backfillExec{upstream: upstream}
	return s, s.close, nil
}

func (s *snapshotBackfillExec) Schema() []types.T { return s.upstream.Schema() }

func (s *snapshotBackfillExec) close() {
	s.stopReaders()
	s.pump.close()
	if s.unpin != nil {
		s.unpin()
	}
	for _, p := range s.stale {
		p.release()
	}
	s.stale = nil
}

func bytesOrNull(b []byte) types.Datum {
	if b == nil {
		return types.NullDatum
	}
	return types.DString(string(b))
}

// save writes the job's row and the rows of the vnodes that changed. The
// progress table (plan.StreamSource's layout) is keyed by vnode: vnode,
// phase, epoch, range end, position, row count, finished. The row of vnode -1
// is the job's: its phase, E, the catch-up range's end and position, and
// every row emitted; the row of vnode v is the snapshot read of upstream
// vnode v: its position and row count.
func (s *snapshotBackfillExec) save() error {
	done := s.phase != phaseSnapshot
	if err := s.progress.Insert([]types.Datum{types.DInt(-1), types.DInt(s.phase), types.DInt(int64(s.epoch)),
		types.DInt(int64(s.target)), bytesOrNull(s.dpos), types.DInt(s.rows), types.DBool(s.phase == phaseDone)}); err != nil {
		return err
	}
	for v := range s.vnodes {
		vp := &s.vnodes[v]
		if !vp.dirty {
			continue
		}
		vp.dirty = false
		if err := s.progress.Insert([]types.Datum{types.DInt(int64(v)), types.DInt(s.phase), types.DInt(int64(s.epoch)),
			types.DInt(0), bytesOrNull(vp.pos), types.DInt(vp.rows), types.DBool(vp.finished || done)}); err != nil {
			return err
		}
	}
	return nil
}

// stalePin is a pin kept until the epoch that saved a later E commits.
type stalePin struct {
	release func()
	until   uint64
}

// pinAt holds the versions at epoch; the previous pin is kept until the new
// E is committed (releaseStale).
func (s *snapshotBackfillExec) pinAt(epoch uint64) error {
	release, err := s.actx.Store.Pin(epoch)
	if err != nil {
		return fmt.Errorf("snapshot backfill: pin epoch %d: %w", epoch, err)
	}
	s.retire()
	s.unpin = release
	return nil
}

// retire moves the current pin to the stale ones.
func (s *snapshotBackfillExec) retire() {
	if s.unpin != nil {
		s.stale = append(s.stale, stalePin{release: s.unpin})
		s.unpin = nil
	}
}

// releaseStale marks the stale pins as saved in epoch (when not yet) and
// releases those whose saving epoch has committed.
func (s *snapshotBackfillExec) releaseStale(saved uint64) {
	committed := s.actx.Store.CommittedEpoch()
	kept := s.stale[:0]
	for _, p := range s.stale {
		if p.until == 0 {
			p.until = saved
		}
		if p.until != 0 && p.until <= committed {
			p.release()
			continue
		}
		kept = append(kept, p)
	}
	s.stale = kept
}

// load reads the persisted progress, or starts at the sealed epoch.
func (s *snapshotBackfillExec) load(ctx context.Context, sealed uint64) error {
	s.loaded = true
	s.phase, s.epoch = phaseSnapshot, sealed
	err := eachRow(ctx, s.progress, func(row []types.Datum) {
		var pos []byte
		if !row[4].Null {
			pos = []byte(row[4].S)
		}
		switch v := row[0].I; {
		case v < 0:
			s.phase, s.epoch, s.target, s.dpos, s.rows = row[1].I, uint64(row[2].I), uint64(row[3].I), pos, row[5].I
		case v < codec.VnodeCount:
			s.vnodes[v] = vnodeProgress{pos: pos, rows: row[5].I, finished: row[6].Bool()}
		}
	})
	if err != nil {
		return err
	}
	for v := range s.vnodes {
		if s.vnodes[v].finished {
			s.finishedVnodes++
			s.finishedRows += s.vnodes[v].rows
		}
	}
	s.sendReport(true)
	if s.phase == phaseDone {
		return nil
	}
	return s.pinAt(s.epoch)
}

// sendReport tells the coordinator the progress; with detail, per vnode too.
func (s *snapshotBackfillExec) sendReport(detail bool) {
	r := BackfillReport{Rows: s.rows, Done: s.phase == phaseDone}
	switch {
	case s.phase != phaseSnapshot:
		r.Covered, r.Estimate = 1, s.finishedRows
	case s.finishedVnodes > 0:
		r.Covered = float64(s.finishedVnodes) / codec.VnodeCount
		r.Estimate = s.finishedRows * codec.VnodeCount / int64(s.finishedVnodes)
	}
	if detail {
		r.Vnodes = make([]VnodeReport, codec.VnodeCount)
		for v := range s.vnodes {
			vp := &s.vnodes[v]
			r.Vnodes[v] = VnodeReport{Vnode: uint16(v), Epoch: s.epoch, Rows: vp.rows, Finished: vp.finished || s.phase != phaseSnapshot,
				Started: vp.pos != nil || vp.finished}
		}
	}
	s.report(r)
}

func (s *snapshotBackfillExec) Next(ctx context.Context) (Message, error) {
	if s.lent != nil { // the consumer is done with it
		select {
		case s.free <- s.lent:
		default:
		}
		s.lent = nil
	}
	if !s.started {
		s.started = true
		s.pump.start(ctx)
	}
	for {
		if len(s.queue) > 0 {
			m := s.queue[0]
			s.queue = s.queue[1:]
			return m, nil
		}
		if s.loaded && s.phase == phaseDone {
			m, err := s.pump.take(ctx)
			if err == nil && m.Barrier != nil && len(s.stale) > 0 {
				// The snapshot's pins go once the done state's epoch commits: held on,
				// they would keep every version since from being discarded.
				s.releaseStale(m.Barrier.Epoch.Prev)
			}
			return m, err
		}
		select {
		case pm := <-s.pump.pump.ch:
			if err := s.handle(ctx, pm); err != nil {
				return Message{}, err
			}
			continue
		case <-ctx.Done():
			return Message{}, ctx.Err()
		default:
		}
		c, progressed, err := s.work(ctx)
		if err != nil {
			return Message{}, err
		}
		if c != nil {
			return ChunkMsg(c), nil
		}
		if progressed {
			continue
		}
		// Nothing to do now: wait for upstream, a snapshot chunk, or (catching
		// up) the range's end epoch to commit.
		var snap <-chan snapChunk
		if s.readers != nil && s.window.budget() > 0 {
			snap = s.readers.ch
		}
		select {
		case pm := <-s.pump.pump.ch:
			if err := s.handle(ctx, pm); err != nil {
				return Message{}, err
			}
		case sc := <-snap:
			c, err := s.applySnap(sc)
			if err != nil {
				return Message{}, err
			}
			if c != nil {
				return ChunkMsg(c), nil
			}
		case <-time.After(2 * time.Millisecond):
		case <-ctx.Done():
			return Message{}, ctx.Err()
		}
	}
}

// handle takes an upstream message: live chunks are dropped (or held while a
// final range may finish), watermarks dropped; a barrier saves progress and
// may start a range.
func (s *snapshotBackfillExec) handle(ctx context.Context, pm pumpMsg) error {
	if pm.err != nil {
		if errors.Is(pm.err, io.EOF) {
			return fmt.Errorf("snapshot backfill: upstream ended without a stop barrier")
		}
		return pm.err
	}
	if s.loaded && s.phase == phaseDone {
		// Live already (the last range can end while this message waits in
		// Next): everything passes through in order.
		if b := pm.msg.Barrier; b != nil && len(s.stale) > 0 {
			s.releaseStale(b.Epoch.Prev)
		}
		s.queue = append(s.queue, pm.msg)
		return nil
	}
	b := pm.msg.Barrier
	if b == nil {
		// Before the progress is loaded (the first barrier after a start) chunks
		// are held too: a job that finished backfilling must not lose them.
		if pm.msg.Chunk != nil && (s.holding || !s.loaded) {
			s.held = append(s.held, pm.msg.Chunk)
		}
		// An upstream watermark is dropped until the backfill is done: the
		// snapshot and catch-up rows still to come may lie below it.
		return nil
	}
	b.ForEachMutation(func(m Mutation) {
		if r, ok := m.(*SetRateLimit); ok && r.Actors[s.actx.ID] {
			s.limit.Set(r.RowsPerSecond)
		}
	})
	if s.phase == phaseSnapshot {
		s.window.seal(b.Epoch.Prev, time.Now())
		s.window.open(s.actx.Foreground != nil && s.actx.Foreground())
		s.readSize.Store(int64(s.window.chunkRows()))
	}
	if !s.loaded {
		if err := s.load(ctx, b.Epoch.Prev); err != nil {
			return err
		}
		if s.phase == phaseDone {
			// Live already: the chunks before this barrier follow as they came.
			for _, c := range s.held {
				s.queue = append(s.queue, ChunkMsg(c))
			}
		}
		// Otherwise the snapshot or a later range covers them.
		s.held = s.held[:0]
	}
	if s.phase == phaseCatchUp && s.target == 0 {
		// Start the range (E, X] up to the epoch this barrier seals, and hold
		// the live changes after it in case the range finishes in this epoch.
		s.target, s.dpos, s.holding = b.Epoch.Prev, nil, true
	}
	if err := s.save(); err != nil {
		return err
	}
	s.releaseStale(b.Epoch.Prev)
	s.sendReport(true)
	s.queue = append(s.queue, pm.msg)
	return nil
}

// work emits the next snapshot chunk (without waiting for one) or catch-up
// chunk, if any is due; progressed says that it did something that emitted
// nothing (a vnode finished without rows, the snapshot ended).
func (s *snapshotBackfillExec) work(ctx context.Context) (*types.Chunk, bool, error) {
	if !s.loaded {
		return nil, false, nil
	}
	switch s.phase {
	case phaseSnapshot:
		if s.actx.Store.CommittedEpoch() < s.epoch {
			return nil, false, nil
		}
		s.observeCommit()
		if s.window.budget() == 0 {
			if s.window.wantBarrier() && s.actx.RequestBarrier != nil {
				s.actx.RequestBarrier()
			}
			return nil, false, nil
		}
		if s.readers == nil {
			s.startReaders(ctx)
			if s.phase != phaseSnapshot { // every vnode had finished
				return nil, true, nil
			}
		}
		select {
		case sc := <-s.readers.ch:
			c, err := s.applySnap(sc)
			return c, c == nil, err
		default:
			return nil, false, nil
		}
	case phaseCatchUp:
		if s.target == 0 || s.actx.Store.CommittedEpoch() < s.target {
			return nil, false, nil
		}
		c, err := s.readRange(ctx)
		return c, c == nil && err == nil, err
	}
	return nil, false, nil
}

// snapChunk is what a snapshot reader sends: rows of one vnode and the key of
// the last, or the vnode's end (done), or an error.
type snapChunk struct {
	c     *types.Chunk
	vnode uint16
	pos   []byte
	done  bool
	err   error
	// A folding reader's send instead (fold): the partial rows of the rows
	// it read since its last send, and where those rows end in each vnode.
	partials []*types.Chunk
	marks    []snapMark
}

// snapMark is a folding reader's progress in one vnode: rows more read, up
// to pos (nil: none), done at the vnode's end.
type snapMark struct {
	vnode uint16
	pos   []byte
	rows  int64
	done  bool
}

// snapshotReaders are the goroutines reading the snapshot's vnodes.
type snapshotReaders struct {
	ch     chan snapChunk
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// startReaders starts the readers over the vnodes not yet finished; reader i
// takes every n-th of them, each from its saved position.
func (s *snapshotBackfillExec) startReaders(ctx context.Context) {
	var todo []uint16
	for v := range s.vnodes {
		if !s.vnodes[v].finished {
			todo = append(todo, uint16(v))
		}
	}
	if len(todo) == 0 {
		s.snapshotDone()
		return
	}
	n := min(snapshotReaderCount(), len(todo))
	rctx, cancel := context.WithCancel(ctx)
	r := &snapshotReaders{ch: make(chan snapChunk, snapshotChunksQueued*n), cancel: cancel}
	for i := 0; i < n; i++ {
		var mine []snapshotTask
		for j := i; j < len(todo); j += n {
			v := todo[j]
			mine = append(mine, snapshotTask{vnode: v, after: bytes.Clone(s.vnodes[v].pos)})
		}
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			var f *snapFolder
			if s.fold != nil {
				f = &snapFolder{agg: s.fold(), last: time.Now()}
			}
			s.readVnodes(rctx, r.ch, mine, f)
		}()
	}
	s.readers = r
}

func (s *snapshotBackfillExec) stopReaders() {
	if s.readers != nil {
		s.readers.cancel()
		s.readers.wg.Wait()
		s.readers = nil
	}
}

// snapshotTask is one vnode to read, after the key after (nil: from its start).
type snapshotTask struct {
	vnode uint16
	after []byte
}

// readVnodes reads the given vnodes at E in key order, BackfillChunkRows rows
// at a time as the rate limit allows, and sends the chunks to out; with f, it
// folds them into f's partial groups and sends those (snapFolder).
func (s *snapshotBackfillExec) readVnodes(ctx context.Context, out chan<- snapChunk, tasks []snapshotTask, f *snapFolder) {
	send := func(sc snapChunk) bool {
		select {
		case out <- sc:
			return true
		case <-ctx.Done():
			return false
		}
	}
	tmp := make([]types.Datum, len(s.types))
	var last []byte          // key of the last row read (the iterator's is gone at its end)
	var folding *types.Chunk // the chunk a folding reader reads into each time
	for _, t := range tasks {
		lower, upper := codec.VnodeSpan(s.relID, t.vnode)
		if t.after != nil {
			lower = append(t.after, 0) // just after the last row emitted
		}
		it, err := state.Scan(ctx, s.actx.Store, lower, upper, s.epoch, s.blocks)
		if err != nil {
			send(snapChunk{err: fmt.Errorf("snapshot backfill of %d, vnode %d: %w", s.relID, t.vnode, err)})
			return
		}
		for eof := false; !eof; {
			if err := s.limit.ready(ctx); err != nil {
				it.Close()
				return
			}
			size := int(s.readSize.Load())
			var c *types.Chunk
			switch {
			case f == nil:
				c = s.chunk(size)
			case folding == nil:
				folding = types.NewChunk(s.types, idleChunkRows)
				c = folding
			default:
				folding.Reset()
				c = folding
			}
			for read := 0; c.Len() < size && read < snapshotChunkBytes; {
				if err = it.Next(); err != nil {
					break
				}
				v := it.Value()
				read += len(v)
				if err = codec.AppendDecodedRow(c, s.types, v, tmp, s.missing); err != nil {
					break
				}
				last = append(last[:0], it.Key()...)
			}
			if err != nil && !errors.Is(err, io.EOF) {
				it.Close()
				send(snapChunk{err: fmt.Errorf("snapshot backfill of %d, vnode %d: %w", s.relID, t.vnode, err)})
				return
			}
			eof = err != nil
			s.limit.charge(c.Len())
			sc := snapChunk{c: c, vnode: t.vnode, done: eof}
			if c.Len() > 0 {
				sc.pos = bytes.Clone(last)
			}
			if f != nil {
				if !f.add(sc, size, send) {
					it.Close()
					return
				}
				continue
			}
			if !send(sc) {
				it.Close()
				return
			}
		}
		it.Close()
	}
	if f != nil {
		f.flush(send)
	}
}

// foldSendChunks is how many idle-size chunks a folding reader reads between
// sends: every partial row it sends is one more row for the actor, the
// exchange and the final aggregation (a 10M-row GROUP BY view's backfill:
// 0.61-0.72 s sending every 4 chunks, 0.51-0.54 s every 64). A send's rows
// count in the idle window whole, so an epoch takes at least one send.
const foldSendChunks = 64

// foldSendAfter bounds the time between a folding reader's sends, so that its
// progress shows (a rate-limited backfill reads a chunk in hundreds of ms).
const foldSendAfter = 50 * time.Millisecond

// snapFolder is a reader's fold of its rows into agg, a copy of the local
// aggregation above (fold): it sends agg's partial rows with the positions
// they cover once it has read foldSendChunks chunks of the idle size (a chunk
// while barriers are busy, as an unfolding reader sends) or for
// foldSendAfter, once agg holds more groups than the aggregation's bound, and
// at the reader's end.
type snapFolder struct {
	agg    *localAggExec
	marks  []snapMark
	folded int
	last   time.Time // of the last send
}

// add folds sc's rows (read as chunks of size rows) and sends when due;
// false when the reader is canceled.
func (f *snapFolder) add(sc snapChunk, size int, send func(snapChunk) bool) bool {
	f.agg.fold(sc.c)
	f.folded += sc.c.Len()
	f.marks = append(f.marks, snapMark{vnode: sc.vnode, pos: sc.pos, rows: int64(sc.c.Len()), done: sc.done})
	sendAt := size
	if size >= idleChunkRows {
		sendAt = foldSendChunks * size
	}
	if f.folded >= sendAt || len(f.agg.entries) > f.agg.maxGroups || time.Since(f.last) >= foldSendAfter {
		return f.flush(send)
	}
	return true
}

// flush sends the partial rows of what was folded since the last send.
func (f *snapFolder) flush(send func(snapChunk) bool) bool {
	f.last = time.Now()
	if len(f.marks) == 0 {
		return true
	}
	f.agg.send()
	parts := make([]*types.Chunk, 0, len(f.agg.outQ))
	for _, m := range f.agg.outQ {
		parts = append(parts, m.Chunk)
	}
	clear(f.agg.outQ)
	f.agg.outQ = f.agg.outQ[:0]
	sc := snapChunk{partials: parts, marks: f.marks}
	f.marks, f.folded = nil, 0
	return send(sc)
}

// applySnap records a reader's chunk as emitted and returns its rows (nil if
// none); the last vnode's end ends the snapshot. A folding reader's partial
// rows go to the queue, to pass up to the local aggregation.
func (s *snapshotBackfillExec) applySnap(sc snapChunk) (*types.Chunk, error) {
	if sc.err != nil {
		return nil, sc.err
	}
	if sc.marks != nil {
		for _, c := range sc.partials {
			s.queue = append(s.queue, Message{Chunk: c, Partial: true})
		}
		for _, m := range sc.marks {
			s.progressed(m.vnode, m.pos, m.rows, m.done)
		}
		s.sendReport(false)
		return nil, nil
	}
	n := int64(0)
	if sc.c != nil {
		n = int64(sc.c.Len())
	}
	s.progressed(sc.vnode, sc.pos, n, sc.done)
	s.sendReport(false)
	if n == 0 {
		return nil, nil
	}
	if s.free != nil {
		s.lent = sc.c
	}
	return sc.c, nil
}

// progressed records n more snapshot rows of vnode v emitted, up to pos (nil:
// unchanged), and the vnode's end (done); the last vnode's end ends the
// snapshot.
func (s *snapshotBackfillExec) progressed(v uint16, pos []byte, n int64, done bool) {
	vp := &s.vnodes[v]
	if pos != nil {
		vp.pos = pos
	}
	vp.rows += n
	s.rows += n
	s.window.rows += n
	BackfillRowsRead.Add(n)
	vp.dirty = true
	if done {
		vp.finished = true
		s.finishedVnodes++
		s.finishedRows += vp.rows
		if s.finishedVnodes == codec.VnodeCount {
			s.snapshotDone()
		}
	}
}

// snapshotDone moves to catching up; the next barrier starts the first range.
func (s *snapshotBackfillExec) snapshotDone() {
	s.phase = phaseCatchUp
	if s.readers != nil {
		s.readers.cancel() // they have all returned or are about to
		s.readers.wg.Wait()
		s.readers = nil
	}
}

// readRange emits the changes of the keys that changed in (E, X].
func (s *snapshotBackfillExec) readRange(ctx context.Context) (*types.Chunk, error) {
	lower, upper := spanAfter(s.relID, s.dpos)
	it, err := state.ChangedRows(ctx, s.actx.Store, lower, upper, s.epoch, s.target, s.blocks)
	if err != nil {
		return nil, fmt.Errorf("snapshot backfill catch-up of %d: %w", s.relID, err)
	}
	defer it.Close()
	out := types.NewChunk(s.types, BackfillChunkRows)
	var buf []byte
	for out.Len() < BackfillChunkRows {
		if err := it.Next(); err != nil {
			if !errors.Is(err, io.EOF) {
				return nil, fmt.Errorf("snapshot backfill catch-up of %d: %w", s.relID, err)
			}
			return s.rangeDone(out)
		}
		key := it.Key()
		// The row as of E (a point read), then as of X: the newest version
		// in the range, which the change iterator holds.
		v, found, err := state.GetRow(ctx, s.actx.Store, key, s.epoch, buf[:0], s.blocks)
		if err != nil {
			return nil, fmt.Errorf("snapshot backfill catch-up of %d: %w", s.relID, err)
		}
		buf = v
		if found {
			if s.row, err = codec.DecodeRowMissing(s.types, v, s.row, s.missing); err != nil {
				return nil, fmt.Errorf("snapshot backfill catch-up of %d: %w", s.relID, err)
			}
			out.AppendRowOp(types.OpDelete, s.row)
		}
		if !it.Deleted() {
			if s.row, err = codec.DecodeRowMissing(s.types, it.Value(), s.row, s.missing); err != nil {
				return nil, fmt.Errorf("snapshot backfill catch-up of %d: %w", s.relID, err)
			}
			out.AppendRowOp(types.OpInsert, s.row)
		}
		s.dpos = append(s.dpos[:0], key...)
	}
	if out.Len() == 0 {
		return nil, nil
	}
	return out, nil
}

// rangeDone closes a catch-up range: E moves to X; if the live changes since
// X are held (the range finished within its epoch), they follow and the job
// goes live.
func (s *snapshotBackfillExec) rangeDone(out *types.Chunk) (*types.Chunk, error) {
	s.epoch, s.target, s.dpos = s.target, 0, nil
	if err := s.pinAt(s.epoch); err != nil {
		return nil, err
	}
	if s.holding {
		s.phase, s.holding = phaseDone, false
		for _, c := range s.held {
			s.queue = append(s.queue, ChunkMsg(c))
		}
		s.held = nil
		s.retire() // released once the done state's epoch commits
		s.sendReport(true)
		// Record "done" at once: the next barrier passes through untouched.
		if err := s.save(); err != nil {
			return nil, err
		}
	}
	if out.Len() == 0 {
		return nil, nil
	}
	return out, nil
}
