package stream

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/connector"
	_ "github.com/tributary/tributary/connector/all" // registers the connectors
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage/state"
)

// TableWriter writes a connector source's rows into its table, exactly as
// DML does: into the table's state and its change stream, in one epoch.
type TableWriter interface {
	// Write writes c's rows in epoch and returns true, or returns false and
	// writes nothing when epoch is no longer the open epoch (its barrier is
	// on its way to the source) or the table is gone.
	// With fresh not empty, c's rows are inserts of keys the table does
	// not hold (connector.ReadResult.Fresh), and fresh names their run: the
	// split that read them, whose key range no other run's fresh rows share.
	Write(ctx context.Context, epoch uint64, c *types.Chunk, fresh string) (bool, error)
	// Truncate deletes every row of the table (those in says, when not
	// nil) in epoch, as Write writes (connector.ReadResult.Truncate).
	Truncate(ctx context.Context, epoch uint64, in func(row []types.Datum) bool) (bool, error)
}

// SourceMonitor collects what source readers report (nil: not collected):
// messages they could not read whole, trouble with the external system,
// and where each split stands.
type SourceMonitor interface {
	BadMessage(source, split string, actor ActorID, position int64, err error)
	Trouble(source string, actor ActorID, err error)
	// SplitState reports where a split stands at a barrier.
	SplitState(source, split string, actor ActorID, r SplitStatus)
	CDCProgress(p connector.CDCProgress)
}

// SplitStatus is where a source split stands at a barrier.
type SplitStatus struct {
	// Next is the position after the last row read; Rows and Bytes the
	// rows and message bytes read in this run (Bytes 0: not told).
	Next, Rows, Bytes int64
	// Lag is how many messages the split's newest is ahead of Next
	// (connector.Newester), LagBytes how far its committed position is
	// behind the end of the upstream's log (connector.LogLagger); -1 when
	// the reader cannot tell.
	Lag, LagBytes int64
}

// SourceSpec is what rel's connector parses its options against: the
// options recorded with rel and its columns.
func SourceSpec(rel *catalog.Relation) connector.SourceSpec {
	spec := connector.SourceSpec{Relation: rel.QualifiedName(), Key: rel.PK, Table: rel.Kind == catalog.KindTable}
	if rel.Connector != nil {
		spec.Props, spec.Format, spec.Encode = rel.Connector.Props, rel.Connector.Format, rel.Connector.Encode
	}
	for _, c := range rel.Columns {
		spec.Columns = append(spec.Columns, connector.SourceColumn{Name: c.Name, Type: c.Type, Meta: c.Meta})
	}
	return spec
}

// OpenSource parses rel's connector options (the errors CREATE reports).
func OpenSource(rel *catalog.Relation) (connector.SourceConnector, connector.Source, error) {
	return connector.ParseSource(SourceSpec(rel))
}

// SplitShare says which of a source's splits an actor reads: those whose
// number (or, for a name that is not a number, hash) is Index modulo Of.
type SplitShare struct{ Index, Of int }

// owns reports whether the share includes split.
func (s SplitShare) owns(split string) bool {
	if s.Of <= 1 {
		return true
	}
	if n, err := strconv.ParseUint(split, 10, 63); err == nil {
		return int(n%uint64(s.Of)) == s.Index
	}
	h := fnv.New32a()
	h.Write([]byte(split))
	return int(h.Sum32()%uint32(s.Of)) == s.Index
}

// sourceConfig is a connector source's fixed configuration.
type sourceConfig struct {
	src connector.Source
	// discover: list the splits again every DiscoverInterval (an external
	// system's splits grow); a generator's are fixed.
	discover bool
	ts       []types.T
	rel      *catalog.Relation
	writer   TableWriter
	stats    *OpStats // counts the rows written into the table (nil: not counted)
	report   Progress
	monitor  SourceMonitor
	share    SplitShare
	// progresser: the source's splits begin with a finite part (a CDC
	// table's copy), reported as the job's backfill.
	progresser connector.Progresser
}

// sourceSplit is one split a source executor reads.
type sourceSplit struct {
	offset []byte // where reading goes on (nil: the startup position)
	next   int64  // the position after the last row read
	rows   int64  // rows read in this run
	bytes  int64  // bytes of the messages read in this run (when the reader tells)
	dirty  bool   // offset changed since the last barrier
}

// sourceExec is the root of a source's reader: a connector table's job (the
// rows go into the table through a TableWriter, in the epoch the last
// barrier opened), a shared source's reader job or a generator read inside a
// view's job (the rows are the executor's output). Between barriers it reads
// its splits at the allowed rate; each split's offset goes to a state table
// in the same epoch as its rows, so a restart resumes exactly after the last
// committed rows. A barrier is handled as soon as it arrives: waiting for an
// external system never holds one up (splits are listed by a goroutine).
type sourceExec struct {
	sourceConfig
	actx     *ActorContext
	barriers <-chan *Barrier
	state    *state.Table

	// per-run state
	started bool
	done    bool
	epoch   uint64 // the epoch rows are written in (0 before the first barrier)
	splits  map[string]*sourceSplit
	reader  connector.SplitReader
	idle    bool // the reader had nothing: wait for Ready
	// copiedAsked: the progresser's splits were all copied and the next barrier was asked for.
	copiedAsked bool
	pending     *types.Chunk // rows read but refused (their epoch had ended)
	pendRead    connector.ReadResult
	blocked     bool // a write was refused: wait for the barrier
	exhausted   bool
	rate        int64 // rows per second over all splits (< 0 unlimited, 0 paused)
	tokens      float64
	last        time.Time
	produced    int64
	epochRows   int64 // rows written in the current epoch
	asked       bool  // a barrier was requested for this epoch
	// emit: the rows are this executor's output, not written into a table;
	// out is the chunk to return next, read from split outSplit.
	emit     bool
	out      *types.Chunk
	outSplit string
	list     splitLister
	// running: the source has read before (its splits were listed): a
	// split first listed now appeared since, and is read from its first row.
	running bool
	// saved are the offsets stored at barriers whose epochs have not yet
	// been seen committed, for a connector.OffsetCommitter reader.
	saved []savedOffset

	// backfillRate limits a progresser's finite part alone (a
	// connector.BackfillRater reader's), in rows per second (< 0 unlimited).
	backfillRate int64
}

// savedOffset is a split's offset stored in an epoch.
type savedOffset struct {
	epoch  uint64
	split  string
	offset []byte
}

// freshRun is the run name TableWriter.Write takes for a read: its split
// when its rows are fresh, else empty.
func freshRun(r connector.ReadResult) string {
	if !r.Fresh {
		return ""
	}
	return "split " + r.Split
}

// SourceEpochRows bounds the rows a connector source writes in one epoch;
// then it asks for the next barrier and waits for it. Every row of an epoch
// is held in memory (table buffers, the commit batch) until the epoch
// commits, so this bounds the memory and the commit time an unthrottled
// source causes.
const SourceEpochRows = 32 * types.DefaultChunkSize

// DiscoverInterval is how often a source of an external system lists its
// splits again, to pick up new ones (Kafka partitions added to the topic).
var DiscoverInterval = 5 * time.Second

// NewConnectorSource returns the executor of a StreamConnectorSource fed by
// barriers; w writes its rows into the table and report (may be nil)
// receives its progress for bounded sources and connector.Progresser ones,
// whose finite part backfillRate limits (rows per second, < 0 unlimited).
// The closer stops its goroutines and its reader. share says which splits
// this actor reads (all of them unless the job splits them: n.Split).
func NewConnectorSource(actx *ActorContext, n *plan.StreamConnectorSource, barriers <-chan *Barrier, w TableWriter, report Progress, monitor SourceMonitor, backfillRate int64, share SplitShare) (Executor, func(), error) {
	e, err := newSourceExec(actx, n.Table, n.State, ShareRate(n.RateLimit, share.Of), barriers, report, monitor)
	if err != nil {
		return nil, nil, err
	}
	// The actors share the backfill rate as they share the splits.
	e.writer, e.backfillRate, e.share = w, ShareRate(backfillRate, share.Of), share
	return e, e.close, nil
}

// ReportsProgress reports whether a source's reading has a finite part a
// job's backfill progress follows: bounded sources and connector.Progresser
// ones (a CDC table's copy).
func ReportsProgress(src connector.Source) bool {
	_, ok := src.(connector.Progresser)
	return ok || src.TotalRows() >= 0
}

// NewSourceScan returns the executor of a StreamSourceScan: a source whose
// rows are its output (a shared source's reader job, or a generator read in
// a view's or sink's job), fed barriers like a constant source.
func NewSourceScan(actx *ActorContext, n *plan.StreamSourceScan, barriers <-chan *Barrier, report Progress, monitor SourceMonitor, share SplitShare) (Executor, func(), error) {
	if len(n.State()) != 1 {
		return nil, nil, fmt.Errorf("source %s: no split state assigned", n.Source.QualifiedName())
	}
	rate := ShareRate(n.RateLimit, share.Of) // the actors share the rate
	e, err := newSourceExec(actx, n.Source, n.State()[0], rate, barriers, report, monitor)
	if err != nil {
		return nil, nil, err
	}
	e.emit, e.share = true, share
	return e, e.close, nil
}

func newSourceExec(actx *ActorContext, rel *catalog.Relation, st plan.StateTable, rateLimit int64, barriers <-chan *Barrier, report Progress, monitor SourceMonitor) (*sourceExec, error) {
	c, src, err := OpenSource(rel)
	if err != nil {
		return nil, fmt.Errorf("source of %s: %w", rel.QualifiedName(), err)
	}
	t, err := actx.NewTable(stateSchema(st))
	if err != nil {
		return nil, fmt.Errorf("source of %s: %w", rel.QualifiedName(), err)
	}
	rate := src.DefaultRate()
	if rateLimit >= 0 {
		rate = rateLimit
	}
	if !ReportsProgress(src) {
		report = nil // an endless source has no progress to follow
	}
	p, _ := src.(connector.Progresser)
	return &sourceExec{
		sourceConfig: sourceConfig{src: src, discover: c.Shared, ts: rel.ColumnTypes(), rel: rel, report: report, monitor: monitor, progresser: p},
		actx:         actx, barriers: barriers, state: t, rate: rate, backfillRate: -1, splits: map[string]*sourceSplit{},
	}, nil
}

func stateSchema(t plan.StateTable) state.Schema {
	return state.Schema{TableID: t.ID, Types: t.Types, PK: t.PK, PKDesc: t.PKDesc, DistKey: t.Dist}
}

func (e *sourceExec) Schema() []types.T {
	if e.emit {
		return e.ts
	}
	return nil
}

func (e *sourceExec) close() {
	e.list.stop()
	if e.reader != nil {
		e.reader.Close()
		e.reader = nil
	}
}

// CountInto implements OpCounter: a connector table's source counts the
// rows it writes into the table as its output.
func (e *sourceExec) CountInto(st *OpStats) { e.stats = st }

func (e *sourceExec) Next(ctx context.Context) (Message, error) {
	if e.done {
		return Message{}, io.EOF
	}
	for {
		select {
		case b := <-e.barriers:
			return e.onBarrier(ctx, b)
		case l := <-e.list.out:
			if err := e.addSplits(ctx, l); err != nil {
				return Message{}, e.wrap(err)
			}
			continue
		default:
		}
		wait := e.wait(time.Now())
		if wait == 0 {
			if err := e.produce(ctx); err != nil {
				return Message{}, e.wrap(err)
			}
			if e.out != nil {
				m := Message{Chunk: e.out, Split: e.outSplit}
				e.out = nil
				return m, nil
			}
			continue
		}
		var timer *time.Timer
		var fire <-chan time.Time
		if wait > 0 {
			timer = time.NewTimer(wait)
			fire = timer.C
		}
		var ready <-chan struct{}
		if e.idle && e.reader != nil {
			ready = e.reader.Ready()
		}
		// Waiting for a barrier, the rate limit or the reader is not work.
		waitStart := time.Now()
		select {
		case b := <-e.barriers:
			stopTimer(timer)
			e.actx.waitedFor(time.Since(waitStart))
			return e.onBarrier(ctx, b)
		case l := <-e.list.out:
			stopTimer(timer)
			e.actx.waitedFor(time.Since(waitStart))
			if err := e.addSplits(ctx, l); err != nil {
				return Message{}, e.wrap(err)
			}
		case <-ready:
			e.idle = false
		case <-fire:
		case <-ctx.Done():
			stopTimer(timer)
			return Message{}, ctx.Err()
		}
		e.actx.waitedFor(time.Since(waitStart))
	}
}

// splitLag is how far reading split s is behind its newest message, or -1
// when the reader cannot tell.
func splitLag(n connector.Newester, split string, s *sourceSplit) int64 {
	if n == nil || s.offset == nil { // not read yet: its startup position is unknown
		return -1
	}
	newest, ok := n.Newest(split)
	if !ok {
		return -1
	}
	return max(newest-s.next, 0)
}

func stopTimer(t *time.Timer) {
	if t != nil {
		t.Stop()
	}
}

func (e *sourceExec) wrap(err error) error {
	return fmt.Errorf("source of %s: %w", e.rel.QualifiedName(), err)
}

// wait returns 0 when a chunk may be read now, how long until one may, or
// -1 when only a barrier, new splits or the reader's Ready can change that.
func (e *sourceExec) wait(now time.Time) time.Duration {
	if e.epoch == 0 || e.reader == nil || e.blocked || e.exhausted || e.rate == 0 {
		return -1
	}
	if e.epochRows >= SourceEpochRows {
		if !e.asked && e.actx.RequestBarrier != nil {
			e.asked = true
			e.actx.RequestBarrier()
		}
		return -1
	}
	if e.pending != nil {
		return 0
	}
	if e.idle {
		return -1
	}
	if e.rate < 0 {
		return 0
	}
	// Tokens accrue at the rate, up to a tenth of a second's worth; a chunk
	// is read once a full one (or the whole burst) is available.
	burst := max(float64(e.rate)/10, 1)
	e.tokens = min(burst, e.tokens+now.Sub(e.last).Seconds()*float64(e.rate))
	e.last = now
	want := min(burst, float64(e.src.ChunkRows()))
	if e.tokens >= want {
		return 0
	}
	return max(time.Duration((want-e.tokens)/float64(e.rate)*float64(time.Second)), time.Millisecond)
}

// produce reads one chunk (or retries the refused one) and writes it.
func (e *sourceExec) produce(ctx context.Context) error {
	if e.pending == nil {
		n := e.src.ChunkRows()
		if e.rate > 0 {
			n = max(min(n, int(e.tokens)), 1)
		}
		c := types.NewChunk(e.ts, n)
		r, err := e.reader.Read(c, n)
		if err != nil {
			return err
		}
		if r.Truncate {
			if e.emit {
				return errors.New("the reader truncated a split, which a source's stream cannot carry")
			}
			e.pending, e.pendRead = c, r
			return e.write(ctx)
		}
		if r.Rows == 0 && r.Split != "" {
			// Messages that carry no row: the split moves on all the same.
			if s := e.splits[r.Split]; s != nil {
				s.offset, s.next, s.dirty = r.Offset, r.Next, true
				e.askIfCopied(r.Split)
			}
			return nil
		}
		if r.Rows == 0 {
			if !r.Exhausted {
				e.idle = true
				return nil
			}
			e.exhausted = true
			// The last rows commit (and a bounded source's job finishes)
			// with the next barrier: ask for it rather than wait for the
			// interval.
			if e.actx.RequestBarrier != nil {
				e.actx.RequestBarrier()
			}
			return nil
		}
		e.pending, e.pendRead = c, r
	}
	return e.write(ctx)
}

// write writes the pending rows (or truncate) in the open epoch, or emits
// them, and moves their split on.
func (e *sourceExec) write(ctx context.Context) error {
	if e.emit {
		e.out = e.pending // the stream itself: it belongs to the open epoch
		e.outSplit = e.pendRead.Split
	} else {
		var ok bool
		var err error
		if e.pendRead.Truncate {
			ok, err = e.writer.Truncate(ctx, e.epoch, e.pendRead.TruncateIn)
		} else {
			ok, err = e.writer.Write(ctx, e.epoch, e.pending, freshRun(e.pendRead))
		}
		if err != nil {
			return err
		}
		if !ok {
			e.blocked = true
			return nil
		}
		if e.pending != nil {
			n := int64(e.pending.Len())
			if e.stats != nil {
				e.stats.RowsOut.Add(n)
			}
			if e.actx != nil && e.actx.Stats != nil {
				e.actx.Stats.RowsOut.Add(n) // its output goes into the table
			}
		}
	}
	r := e.pendRead
	s := e.splits[r.Split]
	if s == nil {
		return fmt.Errorf("the reader returned rows of split %q, which it was not given", r.Split)
	}
	s.offset, s.next, s.dirty = r.Offset, r.Next, true
	s.rows += int64(r.Rows)
	s.bytes += r.Bytes
	e.produced += int64(r.Rows)
	e.epochRows += int64(r.Rows)
	e.tokens -= float64(r.Rows)
	e.pending = nil
	e.askIfCopied(r.Split)
	return nil
}

// askIfCopied asks for the next barrier once split's move made every split's finite part
// written (a progresser's copy): the job's copy is done at that barrier, not up to an
// interval later.
func (e *sourceExec) askIfCopied(split string) {
	if e.progresser == nil || e.copiedAsked || e.actx == nil || e.actx.RequestBarrier == nil {
		return
	}
	if s := e.splits[split]; s == nil {
		return
	} else if _, _, done := e.progresser.Progress(split, s.offset); !done {
		return
	}
	for name, s := range e.splits {
		if _, _, done := e.progresser.Progress(name, s.offset); !done {
			return
		}
	}
	e.copiedAsked = true
	e.actx.RequestBarrier()
}

func (e *sourceExec) onBarrier(ctx context.Context, b *Barrier) (Message, error) {
	if b == nil {
		return Message{}, e.wrap(errors.New("barrier channel closed without a stop barrier"))
	}
	if !e.started {
		e.started = true
		if err := e.load(ctx); err != nil {
			return Message{}, e.wrap(err)
		}
		e.last = time.Now()
		every := time.Duration(0)
		if e.discover {
			every = DiscoverInterval
		}
		e.list.start(e.src, every, func(err error) {
			if e.monitor != nil {
				e.monitor.Trouble(e.rel.QualifiedName(), e.actx.ID, err)
			}
		})
	}
	e.tellCommitted()
	_, committer := e.reader.(connector.OffsetCommitter)
	newester, _ := e.reader.(connector.Newester)
	logLagger, _ := e.reader.(connector.LogLagger)
	report := func(name string, s *sourceSplit) SplitStatus {
		r := SplitStatus{Next: s.next, Rows: s.rows, Bytes: s.bytes, Lag: splitLag(newester, name, s), LagBytes: -1}
		if logLagger != nil {
			if n, ok := logLagger.LogLag(name); ok {
				r.LagBytes = n
			}
		}
		return r
	}
	for name, s := range e.splits {
		if !s.dirty {
			if (newester != nil || logLagger != nil) && e.monitor != nil {
				// A split that did not move may still fall behind.
				e.monitor.SplitState(e.rel.QualifiedName(), name, e.actx.ID, report(name, s))
			}
			continue
		}
		if err := e.state.Insert([]types.Datum{types.DString(name), bytesOrNull(s.offset), types.DInt(s.next)}); err != nil {
			return Message{}, e.wrap(fmt.Errorf("save split %s: %w", name, err))
		}
		if committer && s.offset != nil && b.Epoch.Prev != 0 {
			e.saved = append(e.saved, savedOffset{epoch: b.Epoch.Prev, split: name, offset: s.offset})
		}
		s.dirty = false
		if e.monitor != nil {
			e.monitor.SplitState(e.rel.QualifiedName(), name, e.actx.ID, report(name, s))
		}
	}
	b.ForEachMutation(func(m Mutation) {
		if r, ok := m.(*SetRateLimit); ok && r.Actors[e.actx.ID] {
			if r.Backfill && e.progresser != nil {
				e.backfillRate = ShareRate(r.RowsPerSecond, e.share.Of)
				e.tellBackfillRate()
				return
			}
			e.rate = r.RowsPerSecond
			if e.rate < 0 {
				e.rate = e.src.DefaultRate()
			}
		}
	})
	if b.Stops(e.actx.ID) {
		e.done = true
		e.close()
		return BarrierMsg(b), nil
	}
	e.epoch = b.Epoch.Curr
	e.blocked, e.epochRows, e.asked = false, 0, false
	e.reportProgress()
	return BarrierMsg(b), nil
}

// tellCommitted passes an OffsetCommitter reader the saved offsets whose
// epochs have committed since (checked at each barrier, so the external
// system hears of a commit one barrier interval after it, off the commit
// path).
func (e *sourceExec) tellCommitted() {
	if len(e.saved) == 0 {
		return
	}
	oc, ok := e.reader.(connector.OffsetCommitter)
	if !ok {
		e.saved = nil
		return
	}
	committed := e.actx.Store.CommittedEpoch()
	n := 0
	for n < len(e.saved) && e.saved[n].epoch <= committed {
		oc.Committed(e.saved[n].split, e.saved[n].offset)
		n++
	}
	e.saved = append(e.saved[:0], e.saved[n:]...)
}

// load reads the committed split offsets.
func (e *sourceExec) load(ctx context.Context) error {
	err := eachRow(ctx, e.state, func(row []types.Datum) {
		if !e.share.owns(row[0].S) {
			return // another actor's
		}
		s := &sourceSplit{next: row[2].I}
		if !row[1].Null {
			s.offset = []byte(row[1].S)
		}
		e.splits[row[0].S] = s
		e.produced += s.next
	})
	e.running = len(e.splits) > 0
	return err
}

// addSplits takes the splits listed now: new ones start at the startup
// position (or, appearing while the source runs, at their first row), and
// the reader is reopened over all of them (rows read but not
// yet written are read again).
func (e *sourceExec) addSplits(ctx context.Context, l splitList) error {
	added := false
	first, _ := e.src.(connector.FirstOffsetter)
	for _, name := range l.splits {
		if !e.share.owns(name) {
			continue
		}
		if _, ok := e.splits[name]; !ok {
			// Pin the startup position now (it moves for 'latest'), or
			// start a split that appeared while running at its first row.
			s := &sourceSplit{dirty: true, offset: l.bounds[name].Start, next: l.bounds[name].StartPos}
			if e.running && first != nil {
				s.offset, s.next = first.FirstOffset(name), 0
			}
			e.splits[name] = s
			added = true
		}
	}
	e.running = true
	if (e.reader != nil && !added) || len(e.splits) == 0 {
		return nil
	}
	if e.reader != nil {
		e.reader.Close()
		e.reader = nil
	}
	e.pending = nil
	var offs []connector.SplitOffset
	for name, s := range e.splits {
		offs = append(offs, connector.SplitOffset{Split: name, Offset: s.offset})
	}
	slices.SortFunc(offs, func(a, b connector.SplitOffset) int { return CompareSplits(a.Split, b.Split) })
	r, err := e.src.Reader(ctx, offs, e.readerEnv())
	if err != nil {
		return fmt.Errorf("open reader: %w", err)
	}
	e.reader, e.idle, e.exhausted = r, false, false
	e.tellBackfillRate()
	return nil
}

// tellBackfillRate passes the backfill rate to a connector.BackfillRater reader.
func (e *sourceExec) tellBackfillRate() {
	if br, ok := e.reader.(connector.BackfillRater); ok {
		br.SetBackfillRate(e.backfillRate)
	}
}

func (e *sourceExec) readerEnv() connector.ReaderEnv {
	if e.monitor == nil {
		return connector.ReaderEnv{}
	}
	name, aid := e.rel.QualifiedName(), e.actx.ID
	return connector.ReaderEnv{
		BadMessage: func(split string, pos int64, err error) { e.monitor.BadMessage(name, split, aid, pos, err) },
		Trouble:    func(err error) { e.monitor.Trouble(name, aid, err) },
		CDC:        e.monitor.CDCProgress,
	}
}

// reportProgress tells a bounded source's progress: done once every row has
// been written in an epoch now sealed (the barrier being handled seals it).
// A connector.Progresser's is read from its splits' offsets as stored at
// this barrier.
func (e *sourceExec) reportProgress() {
	if e.report == nil {
		return
	}
	if e.progresser != nil {
		// Done once the splits are known and each is: an actor whose
		// share holds none (more actors than splits) is done at once.
		r := BackfillReport{Done: e.running}
		known := true
		for name, s := range e.splits {
			rows, est, done := e.progresser.Progress(name, s.offset)
			r.Rows, r.Estimate, r.Done = r.Rows+rows, r.Estimate+est, r.Done && done
			known = known && est > 0
		}
		if !known {
			r.Estimate = 0
		}
		e.report(r)
		return
	}
	total := e.src.TotalRows()
	if total < 0 {
		return
	}
	if !e.exhausted && e.produced >= total {
		e.exhausted = true
	}
	r := BackfillReport{Rows: e.produced, Estimate: total, Done: e.exhausted && e.pending == nil}
	if total > 0 {
		r.Covered = float64(e.produced) / float64(total)
	}
	e.report(r)
}

// CompareSplits orders split names: numbers numerically, then by text.
func CompareSplits(a, b string) int {
	if len(a) != len(b) && isDigits(a) && isDigits(b) {
		return len(a) - len(b)
	}
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// splitList is one listing of a source's splits.
type splitList struct {
	splits []string
	bounds map[string]connector.SplitBounds // when asked for
}

// splitLister lists a source's splits on a goroutine, so that an external
// system that does not answer never holds up a barrier: the first listing at
// once (retried with a capped backoff until it succeeds), then every
// interval when it is not 0. The newest listing waits in out.
type splitLister struct {
	out    chan splitList
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// listBackoff bounds the wait between failed listings.
const listBackoff = 30 * time.Second

func (l *splitLister) start(src connector.Source, every time.Duration, trouble func(error)) {
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	l.out = make(chan splitList, 1)
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		defer func() {
			if r := recover(); r != nil {
				trouble(fmt.Errorf("split listing panicked: %v", r))
			}
		}()
		en, err := openEnumerator(ctx, src, trouble)
		if err != nil {
			return
		}
		defer en.Close()
		for {
			splits := listSplits(ctx, en, trouble)
			if splits == nil {
				return // stopped
			}
			var bounds map[string]connector.SplitBounds
			if retry(ctx, trouble, func() error {
				var err error
				bounds, err = en.Bounds(ctx, splits)
				return err
			}) != nil {
				return
			}
			select {
			case <-l.out: // replace an unread listing
			default:
			}
			l.out <- splitList{splits: splits, bounds: bounds}
			if every <= 0 {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(every):
			}
		}
	}()
}

func (l *splitLister) stop() {
	if l.cancel != nil {
		l.cancel()
		l.wg.Wait()
		l.cancel = nil
	}
}

// openEnumerator opens src's enumerator, retrying with a capped backoff
// until it succeeds or ctx ends.
func openEnumerator(ctx context.Context, src connector.Source, trouble func(error)) (connector.SplitEnumerator, error) {
	var en connector.SplitEnumerator
	err := retry(ctx, trouble, func() error {
		var err error
		en, err = src.Enumerator(ctx)
		return err
	})
	return en, err
}

// listSplits lists the splits, retrying with a capped backoff; nil when ctx ended.
func listSplits(ctx context.Context, en connector.SplitEnumerator, trouble func(error)) []string {
	var splits []string
	if retry(ctx, trouble, func() error {
		var err error
		splits, err = en.Splits(ctx)
		if err == nil && splits == nil {
			splits = []string{}
		}
		return err
	}) != nil {
		return nil
	}
	return splits
}

// retry calls fn until it succeeds or ctx ends, reporting each failure and
// waiting from 100 ms doubling up to listBackoff between tries.
func retry(ctx context.Context, trouble func(error), fn func() error) error {
	wait := 100 * time.Millisecond
	for {
		err := fn()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		trouble(err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, listBackoff)
	}
}
