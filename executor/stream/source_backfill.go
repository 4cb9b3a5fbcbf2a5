package stream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/connector"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage/state"
)

// The phases of a split in a shared source's backfill. They only move
// forward, and each is self-contained: the split's row holds all a reader
// needs to go on, whichever actor reads it next.
const (
	// SplitBackfilling: the backfill reads the split itself from offset;
	// the shared stream's rows of the split are dropped (the backfill will
	// read them).
	SplitBackfilling = iota
	// SplitCatchingUp: the backfill has read every row before next, beyond
	// what the shared stream had delivered; the shared stream's rows from
	// next on are forwarded, earlier ones dropped.
	SplitCatchingUp
	// SplitFinished: the shared stream has passed next; its rows of the
	// split are forwarded.
	SplitFinished
)

// SplitPhaseName names a phase for progress tables.
func SplitPhaseName(p int) string {
	switch p {
	case SplitBackfilling:
		return "backfilling"
	case SplitCatchingUp:
		return "catching up"
	case SplitFinished:
		return "finished"
	}
	return "unknown"
}

// SplitReport is one split of a shared source's backfill.
type SplitReport struct {
	Split  string
	Phase  int
	Start  int64 // the position the backfill started at (-1: not known yet)
	Next   int64 // the position after the last row the backfill read
	Target int64 // the split's end when the backfill started (-1: not known yet)
	Rows   int64
}

// bfSplit is one split's backfill state.
type bfSplit struct {
	phase  int
	offset []byte // where the backfill reader goes on (nil: not started)
	start  int64  // the startup position (-1: not known yet)
	next   int64  // position after the last row the backfill emitted
	rows   int64
	target int64 // the split's end at the backfill's (re)start; -1: unknown
	// upMax is the highest position of the split's rows the shared stream
	// delivered in this run (-1: none).
	upMax int64
	dirty bool
}

// listedMarker is the progress row that says the splits were listed once:
// a split first seen later is new since the job attached, and its rows all
// come through the shared stream.
const listedMarker = ""

// sourceBackfillExec is a shared source's backfill in a new job: it follows
// the shared reader's stream and first reads each split's history itself,
// from the startup position until it is past both the split's end when the
// backfill started and every row the shared stream has delivered, then
// hands the split over to the shared stream with no gap and no duplicate
// (SplitBackfilling -> SplitCatchingUp -> SplitFinished, persisted per split
// with every epoch). The shared stream never waits: its messages are
// consumed by a pump goroutine as they come.
type sourceBackfillExec struct {
	actx     *ActorContext
	upstream Executor
	rel      *catalog.Relation
	src      connector.Source
	ts       []types.T
	splitCol int
	posCol   int
	progress *state.Table
	// shared is the shared reader's split offsets, read (committed) to tell
	// that an idle split has been passed.
	shared  *state.Table
	report  Progress
	limit   *rateLimiter
	monitor SourceMonitor

	loaded   bool
	listed   bool // the splits were listed (now or in an earlier run)
	splits   map[string]*bfSplit
	reader   connector.SplitReader
	readSet  []string // the splits reader reads
	idle     bool
	finished bool // every split finished and saved: pass through
	queue    []Message
	// epochRows counts the rows read in the open epoch: at SourceEpochRows
	// the backfill asks for a barrier and waits for it (asked), so an epoch
	// holds a bounded number of its rows.
	epochRows int
	asked     bool
	list      struct {
		out    chan splitList
		req    chan []string
		cancel context.CancelFunc
		wg     sync.WaitGroup
	}
	pump upstreamPump
}

// NewSourceBackfill returns the backfill of a StreamSource on a shared
// source (its first state table holds the per-split progress). upstream is
// the receiver of the shared reader's stream.
func NewSourceBackfill(actx *ActorContext, n *plan.StreamSource, upstream Executor, report Progress, rowsPerSecond int64, monitor SourceMonitor) (Executor, func(), error) {
	rel := n.Relation
	t, err := openProgress(actx, n, "source backfill")
	if err != nil {
		return nil, nil, err
	}
	_, src, err := OpenSource(rel)
	if err != nil {
		return nil, nil, fmt.Errorf("source backfill %s: %w", rel.QualifiedName(), err)
	}
	b := &sourceBackfillExec{actx: actx, upstream: upstream, rel: rel, src: src, ts: rel.ColumnTypes(),
		splitCol: -1, posCol: -1, progress: t, report: report, limit: newRateLimiter(rowsPerSecond),
		monitor: monitor, splits: map[string]*bfSplit{}}
	for i, c := range rel.Columns {
		switch c.Meta {
		case connector.MetaSplit:
			b.splitCol = i
		case connector.MetaPosition:
			b.posCol = i
		}
	}
	if b.splitCol < 0 || b.posCol < 0 || len(rel.StateTables) == 0 {
		return nil, nil, fmt.Errorf("source backfill %s: the source is not shared", rel.QualifiedName())
	}
	if b.shared, err = state.New(actx.Store, stateSchema(plan.ConnectorSourceState(rel.StateTables[0]))); err != nil {
		return nil, nil, fmt.Errorf("source backfill %s: %w", rel.QualifiedName(), err)
	}
	if b.report == nil {
		b.report = func(BackfillReport) {}
	}
	return b, b.close, nil
}

func (b *sourceBackfillExec) Schema() []types.T { return b.ts }

func (b *sourceBackfillExec) wrap(err error) error {
	return fmt.Errorf("source backfill %s: %w", b.rel.QualifiedName(), err)
}

func (b *sourceBackfillExec) close() {
	b.pump.stop()
	b.stopBackfill()
}

// stopBackfill closes the reader and the lister: the backfill reads the
// external system no more.
func (b *sourceBackfillExec) stopBackfill() {
	if b.list.cancel != nil {
		b.list.cancel()
		b.list.wg.Wait()
		b.list.cancel = nil
	}
	if b.reader != nil {
		b.reader.Close()
		b.reader, b.readSet = nil, nil
	}
}

func (b *sourceBackfillExec) trouble(err error) {
	if b.monitor != nil {
		b.monitor.Trouble(b.rel.QualifiedName(), b.actx.ID, err)
	}
}

// startLister lists the splits (unless listed before) and gets the bounds of
// the splits asked for on req, on a goroutine, retrying with a capped
// backoff: an external system that does not answer never holds up a barrier.
func (b *sourceBackfillExec) startLister(first []string) {
	ctx, cancel := context.WithCancel(context.Background())
	b.list.cancel = cancel
	b.list.out = make(chan splitList, 16)
	b.list.req = make(chan []string, 64)
	listNow := !b.listed
	b.list.wg.Add(1)
	go func() {
		defer b.list.wg.Done()
		en, err := openEnumerator(ctx, b.src, b.trouble)
		if err != nil {
			return
		}
		defer en.Close()
		want := first
		if listNow {
			splits := listSplits(ctx, en, b.trouble)
			if splits == nil {
				return
			}
			want = append(want, splits...)
			select {
			case b.list.out <- splitList{splits: splits}:
			case <-ctx.Done():
				return
			}
		}
		for {
			if len(want) > 0 {
				var bounds map[string]connector.SplitBounds
				if retry(ctx, b.trouble, func() error {
					var err error
					bounds, err = en.Bounds(ctx, want)
					return err
				}) != nil {
					return
				}
				select {
				case b.list.out <- splitList{bounds: bounds}:
				case <-ctx.Done():
					return
				}
			}
			select {
			case want = <-b.list.req:
			case <-ctx.Done():
				return
			}
		}
	}()
}

// load reads the persisted progress and starts the lister for the splits
// not finished (a restart measures their ends again).
func (b *sourceBackfillExec) load(ctx context.Context) error {
	b.loaded = true
	err := eachRow(ctx, b.progress, func(row []types.Datum) {
		if row[0].S == listedMarker {
			b.listed = true
			return
		}
		s := &bfSplit{phase: int(row[1].I), next: row[3].I, rows: row[4].I, start: row[5].I, target: -1, upMax: -1}
		if !row[2].Null {
			s.offset = []byte(row[2].S)
		}
		b.splits[row[0].S] = s
	})
	if err != nil {
		return err
	}
	var want []string
	for name, s := range b.splits {
		if s.phase != SplitFinished {
			want = append(want, name)
		}
	}
	if b.listed && len(want) == 0 {
		b.finished = true
		b.sendReport()
		return nil
	}
	sort.Strings(want)
	b.startLister(want)
	b.sendReport()
	return nil
}

func (b *sourceBackfillExec) Next(ctx context.Context) (Message, error) {
	if !b.pump.started() {
		b.pump.start(context.Background(), b.upstream)
	}
	for {
		if len(b.queue) > 0 {
			m := b.queue[0]
			b.queue = b.queue[1:]
			return m, nil
		}
		if b.finished {
			return b.pump.take(ctx) // backfill over and recorded: pass through
		}
		// Take what came without waiting while there is backfill work.
		select {
		case pm := <-b.pump.ch:
			if err := b.handle(ctx, pm); err != nil {
				return Message{}, b.wrap(err)
			}
			continue
		case l := <-b.list.out:
			b.onList(l)
			continue
		case <-ctx.Done():
			return Message{}, ctx.Err()
		default:
		}
		if c, err := b.read(ctx); err != nil {
			return Message{}, b.wrap(err)
		} else if c != nil {
			return ChunkMsg(c), nil
		}
		var ready <-chan struct{}
		if b.reader != nil && b.idle {
			ready = b.reader.Ready()
		}
		var tick <-chan time.Time
		if b.reader != nil && !b.idle {
			tick = time.After(5 * time.Millisecond) // rate limited: look again soon
		}
		select {
		case pm := <-b.pump.ch:
			if err := b.handle(ctx, pm); err != nil {
				return Message{}, b.wrap(err)
			}
		case l := <-b.list.out:
			b.onList(l)
		case <-ready:
			b.idle = false
		case <-tick:
		case <-ctx.Done():
			return Message{}, ctx.Err()
		}
	}
}

// onList takes a listing (splits never seen start backfilling from the
// startup position) or the bounds of splits.
func (b *sourceBackfillExec) onList(l splitList) {
	if l.splits != nil {
		b.listed = true
		for _, name := range l.splits {
			if _, ok := b.splits[name]; !ok {
				b.splits[name] = &bfSplit{phase: SplitBackfilling, start: -1, target: -1, upMax: -1, dirty: true}
			}
		}
	}
	for name, bd := range l.bounds {
		s := b.splits[name]
		if s == nil || s.phase != SplitBackfilling {
			continue
		}
		s.target = bd.End
		if s.offset == nil { // pin the startup position: later reads go on from it
			s.offset, s.next, s.start, s.dirty = bd.Start, bd.StartPos, bd.StartPos, true
		}
		b.maybeCatchUp(name, s)
	}
}

// maybeCatchUp moves a split whose backfill has read past both its end at
// the start and everything the shared stream delivered to SplitCatchingUp.
func (b *sourceBackfillExec) maybeCatchUp(name string, s *bfSplit) {
	if s.phase == SplitBackfilling && s.target >= 0 && s.next >= s.target && s.next > s.upMax {
		s.phase, s.dirty = SplitCatchingUp, true
	}
}

// read emits the next chunk of the backfilling splits' history, or nil.
func (b *sourceBackfillExec) read(ctx context.Context) (*types.Chunk, error) {
	var set []string
	for name, s := range b.splits {
		if s.phase == SplitBackfilling && s.target >= 0 {
			set = append(set, name)
		}
	}
	slices.SortFunc(set, CompareSplits)
	if rm, ok := b.reader.(connector.SplitRemover); ok && len(set) > 0 && len(set) < len(b.readSet) && isSubset(set, b.readSet) {
		// Splits handed over: the reader goes on with the others and
		// keeps what it fetched of them (nothing is fetched twice).
		var gone []string
		for _, name := range b.readSet {
			if !slices.Contains(set, name) {
				gone = append(gone, name)
			}
		}
		rm.RemoveSplits(gone)
		b.readSet = set
	}
	if !slices.Equal(set, b.readSet) {
		if b.reader != nil {
			b.reader.Close()
			b.reader = nil
		}
		b.readSet = set
		if len(set) > 0 {
			offs := make([]connector.SplitOffset, len(set))
			for i, name := range set {
				offs[i] = connector.SplitOffset{Split: name, Offset: b.splits[name].offset}
			}
			r, err := b.src.Reader(ctx, offs, b.readerEnv())
			if err != nil {
				return nil, fmt.Errorf("open reader: %w", err)
			}
			b.reader, b.idle = r, false
		}
	}
	if b.reader == nil || b.idle || b.epochRows >= SourceEpochRows {
		if b.epochRows >= SourceEpochRows && !b.asked && b.actx.RequestBarrier != nil {
			b.asked = true
			b.actx.RequestBarrier()
		}
		return nil, nil
	}
	n := b.limit.grant(BackfillChunkRows)
	if n == 0 {
		return nil, nil
	}
	c := types.NewChunk(b.ts, n)
	r, err := b.reader.Read(c, n)
	if err != nil {
		return nil, err
	}
	b.limit.charge(r.Rows - n) // give back what was not read
	if r.Rows == 0 && r.Split == "" {
		b.idle = !r.Exhausted
		return nil, nil
	}
	s := b.splits[r.Split]
	if s == nil || s.phase != SplitBackfilling {
		return nil, fmt.Errorf("the reader returned rows of split %q, which it does not backfill", r.Split)
	}
	// Rows == 0 with a split: it passed messages that carry no row.
	s.offset, s.next, s.dirty = r.Offset, r.Next, true
	s.rows += int64(r.Rows)
	b.epochRows += r.Rows
	b.maybeCatchUp(r.Split, s)
	if r.Rows == 0 {
		return nil, nil
	}
	return c, nil
}

func (b *sourceBackfillExec) readerEnv() connector.ReaderEnv {
	if b.monitor == nil {
		return connector.ReaderEnv{}
	}
	name, aid := b.rel.QualifiedName(), b.actx.ID
	return connector.ReaderEnv{
		// The shared reader counts the bad messages; a backfill reads them
		// again and would count them twice.
		Trouble: func(err error) { b.monitor.Trouble(name, aid, err) },
	}
}

// handle filters a chunk of the shared stream by its splits' phases, or at a
// barrier saves the progress and queues the barrier.
func (b *sourceBackfillExec) handle(ctx context.Context, pm pumpMsg) error {
	if pm.err != nil {
		if errors.Is(pm.err, io.EOF) {
			return fmt.Errorf("upstream ended without a stop barrier")
		}
		return pm.err
	}
	if !b.loaded {
		if err := b.load(ctx); err != nil {
			return err
		}
	}
	switch {
	case pm.msg.Chunk != nil:
		if out := b.filter(pm.msg.Chunk); out != nil {
			b.queue = append(b.queue, ChunkMsg(out))
		}
	case pm.msg.Barrier != nil:
		bar := pm.msg.Barrier
		bar.ForEachMutation(func(m Mutation) {
			if r, ok := m.(*SetRateLimit); ok && r.Actors[b.actx.ID] {
				b.limit.Set(r.RowsPerSecond)
			}
		})
		b.epochRows, b.asked = 0, false
		if err := b.passIdle(ctx); err != nil {
			return err
		}
		if err := b.save(); err != nil {
			return err
		}
		b.sendReport()
		if b.listed && b.allFinished() {
			b.finished = true
			b.stopBackfill()
		}
		if bar.Stops(b.actx.ID) {
			b.stopBackfill()
		}
		b.queue = append(b.queue, pm.msg)
	default:
		b.queue = append(b.queue, pm.msg)
	}
	return nil
}

// filter keeps the rows of finished splits and the rows a catching-up split
// has not read itself; the rows of backfilling splits are dropped.
func (b *sourceBackfillExec) filter(c *types.Chunk) *types.Chunk {
	var vis []bool
	for i := 0; i < c.Len(); i++ {
		if !c.Visible(i) {
			continue
		}
		keep := b.keep(c.Cols[b.splitCol].Str[i], c.Cols[b.posCol].I64[i]) // both NOT NULL
		if !keep && vis == nil {
			vis = make([]bool, c.Len())
			for j := 0; j < c.Len(); j++ {
				vis[j] = c.Visible(j)
			}
		}
		if vis != nil {
			vis[i] = keep
		}
	}
	if vis == nil {
		return c
	}
	out := *c
	out.Vis = vis
	if out.NumVisible() == 0 {
		return nil
	}
	return &out
}

func (b *sourceBackfillExec) keep(split string, pos int64) bool {
	s := b.splits[split]
	if s == nil {
		if b.listed {
			// New since the splits were listed: every row of it comes
			// through the shared stream.
			s = &bfSplit{phase: SplitFinished, start: pos, next: pos, target: pos, upMax: -1, dirty: true}
		} else {
			s = &bfSplit{phase: SplitBackfilling, start: -1, target: -1, upMax: -1, dirty: true}
			if b.list.req != nil {
				select {
				case b.list.req <- []string{split}:
				default: // the listing asks for every split's bounds anyway
				}
			}
		}
		b.splits[split] = s
	}
	switch s.phase {
	case SplitFinished:
		return true
	case SplitCatchingUp:
		if pos >= s.next {
			s.phase, s.dirty = SplitFinished, true
			return true
		}
		return false
	}
	s.upMax = max(s.upMax, pos)
	return false
}

// passIdle finishes the catching-up splits the shared reader has passed (by
// its committed offsets): an idle split sends no rows to tell.
func (b *sourceBackfillExec) passIdle(ctx context.Context) error {
	for name, s := range b.splits {
		if s.phase != SplitCatchingUp {
			continue
		}
		row, ok, err := b.shared.Get(ctx, []types.Datum{types.DString(name)}, nil)
		if err != nil {
			return fmt.Errorf("read the shared reader's offset of split %s: %w", name, err)
		}
		if ok && row[2].I >= s.next {
			s.phase, s.dirty = SplitFinished, true
		}
	}
	return nil
}

func (b *sourceBackfillExec) allFinished() bool {
	for _, s := range b.splits {
		if s.phase != SplitFinished {
			return false
		}
	}
	return true
}

// save writes the splits changed since the last barrier, and the listed
// marker once.
func (b *sourceBackfillExec) save() error {
	if b.listed {
		if err := b.progress.Insert([]types.Datum{types.DString(listedMarker), types.DInt(SplitFinished),
			types.NullDatum, types.DInt(0), types.DInt(0), types.DInt(0)}); err != nil {
			return err
		}
	}
	for name, s := range b.splits {
		if !s.dirty {
			continue
		}
		if err := b.progress.Insert([]types.Datum{types.DString(name), types.DInt(int64(s.phase)), bytesOrNull(s.offset),
			types.DInt(s.next), types.DInt(s.rows), types.DInt(s.start)}); err != nil {
			return fmt.Errorf("save split %s: %w", name, err)
		}
		s.dirty = false
	}
	return nil
}

// sendReport tells the coordinator the progress: rows read, the rows to
// read (from the splits' positions) once every split's end is known, and
// each split's state.
func (b *sourceBackfillExec) sendReport() {
	r := BackfillReport{Done: b.listed && b.allFinished()}
	known, caught := b.listed, 0
	for name, s := range b.splits {
		r.Rows += s.rows
		switch {
		case s.phase != SplitBackfilling:
			caught++
			r.Estimate += s.rows
		case s.target >= 0 && s.start >= 0:
			r.Estimate += s.rows + max(s.target-s.next, 0)
		default:
			known = false
		}
		r.Splits = append(r.Splits, SplitReport{Split: name, Phase: s.phase, Start: s.start, Next: s.next, Target: s.target, Rows: s.rows})
	}
	slices.SortFunc(r.Splits, func(x, y SplitReport) int { return CompareSplits(x.Split, y.Split) })
	if !known {
		r.Estimate = 0
	}
	if len(b.splits) > 0 && b.listed {
		r.Covered = float64(caught) / float64(len(b.splits))
	}
	if r.Done {
		r.Covered, r.Estimate = 1, r.Rows
	}
	if r.Splits == nil {
		r.Splits = []SplitReport{}
	}
	b.report(r)
}

// isSubset reports whether every name of a is in b.
func isSubset(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}
