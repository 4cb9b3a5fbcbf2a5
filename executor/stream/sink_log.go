package stream

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/connector"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage"
	"github.com/tributary/tributary/storage/codec"
	"github.com/tributary/tributary/storage/state"
)

// The log store of a decoupled sink: the sink's actor appends its input's
// changes to a state table (writer | epoch | seq -> encoded changes) that
// commits with the epoch, so the upstream only waits for that write. A reader
// goroutine reads the committed epochs in order, hands them to the connector
// and commits it epoch by epoch; the actor deletes the delivered entries with
// its next barrier. After a crash the reader starts again from the entries
// left: an epoch delivered but not yet truncated is delivered again, so
// delivery is at least once (idempotent for upsert sinks).

// logPayloadBytes is the size at which the actor writes an entry before the
// epoch ends.
const logPayloadBytes = 256 << 10

// Sink delivery retries back off from 1 s, doubling up to 60 s.
const (
	sinkRetryMin = time.Second
	sinkRetryMax = time.Minute
)

// SinkLogStats is a decoupled sink's log store, as its reader sees it.
type SinkLogStats struct {
	Sink           string
	Actor          ActorID
	PendingEpochs  int64 // committed epochs not yet delivered
	PendingRows    int64
	PendingBytes   int64
	DeliveredEpoch uint64 // the last epoch the connector committed
	Failures       int64  // failed deliveries so far
	DeliveredRows  int64  // rows delivered since the reader started
	LastError      string
	// Into: a sink into a table, whose entries of every epoch through
	// WrittenThrough are written into the table (in a later epoch).
	Into           bool
	WrittenThrough uint64
}

// SinkEvent is an event of the streaming engine's event log: a sink's
// failed delivery (Type "" or SINK_FAIL, Sink names it) or a job's runtime
// expression error (Type EventExprError, Job is its relation id).
type SinkEvent struct {
	Time time.Time
	// Type is the event's kind ("": SINK_FAIL).
	Type  string
	Sink  string // the sink's (or source's) qualified name
	Job   uint32
	Actor ActorID
	Err   string
}

// SinkMonitor collects what decoupled sinks report (nil: not collected).
// Each log store reader registers a function giving its current state, and
// unregisters it when it stops.
type SinkMonitor interface {
	Register(sink string, actor ActorID, stats func() SinkLogStats) (unregister func())
	Event(e SinkEvent)
}

// logWriter is the actor's side of the log store.
type logWriter struct {
	table   *state.Table
	types   []types.T // the input's column types
	writer  int32
	epoch   uint64 // the open epoch (Curr of the last barrier)
	seq     int32
	payload []byte
	rows    int64
	row     []types.Datum
	reader  *logReader
}

// appendChunk encodes c's visible rows (op and row) into the open entry.
func (w *logWriter) appendChunk(c *types.Chunk) error {
	n := c.Len()
	for i := 0; i < n; i++ {
		if !c.Visible(i) {
			continue
		}
		w.row = c.Row(i, w.row[:0])
		w.payload = append(w.payload, byte(c.Op(i)))
		lenAt := len(w.payload)
		w.payload = append(w.payload, 0, 0, 0, 0)
		w.payload = codec.EncodeRow(w.payload, w.types, w.row)
		binary.BigEndian.PutUint32(w.payload[lenAt:], uint32(len(w.payload)-lenAt-4))
		w.rows++
	}
	// Mid-epoch entries need the epoch, known once a barrier was seen; rows
	// before the first barrier wait for it.
	if len(w.payload) >= logPayloadBytes && w.epoch != 0 {
		return w.flush()
	}
	return nil
}

// flush writes the open entry to the table.
func (w *logWriter) flush() error {
	if len(w.payload) == 0 {
		return nil
	}
	err := w.table.Insert([]types.Datum{types.DInt(int64(w.writer)), types.DInt(int64(w.epoch)), types.DInt(int64(w.seq)),
		types.DString(string(w.payload))})
	w.reader.pendingRows.Add(w.rows)
	w.reader.pendingBytes.Add(int64(len(w.payload)))
	if w.seq == 0 {
		w.reader.pendingEpochs.Add(1)
	}
	w.rows = 0
	w.seq++
	w.payload = w.payload[:0]
	return err
}

// barrier ends the epoch: the open entry is written, the entries the reader
// delivered are deleted, and the next epoch opens.
func (w *logWriter) barrier(b *Barrier) error {
	// The rows since the last barrier belong to the epoch this one seals
	// (the same as the last barrier's Curr, when there was one).
	w.epoch = b.Epoch.Prev
	if err := w.flush(); err != nil {
		return err
	}
	for _, k := range w.reader.takeDelivered() {
		for seq := int32(0); seq < k.seqs; seq++ {
			if err := w.table.Delete([]types.Datum{types.DInt(int64(k.writer)), types.DInt(int64(k.epoch)), types.DInt(int64(seq)), types.NullDatum}); err != nil {
				return err
			}
		}
	}
	w.epoch, w.seq = b.Epoch.Curr, 0
	return nil
}

// delivered names the entries of one delivered epoch of one writer.
type delivered struct {
	writer int32
	epoch  uint64
	seqs   int32
}

// logReader delivers the committed log to the connector.
type logReader struct {
	actx    *ActorContext
	name    string
	tableID uint32
	writer  int32
	types   []types.T
	sink    connector.Sink // nil for a sink into a table
	limit   *rateLimiter   // delivery rows per second
	// A sink into a table: its target, and how a target row is made of a
	// sink row (see plan.StreamSink).
	into          *catalog.Relation
	intoMap       []int
	intoDefaults  []types.Datum
	intoGenerated []expr.Expr
	genEval       lenientEval // a generated column's errors: NULL, reported
	genCtx        expr.Ctx
	// The last entry written into the table (reader goroutine only), and the
	// committed epoch through which every entry is written.
	intoEpoch      uint64
	intoSeq        int32
	writtenThrough atomic.Uint64
	// A decoupled sink into a table paces its writes like a snapshot
	// backfill (its window, one batch per epoch): they go into the epochs
	// every writer of the table commits in. decided is the last open epoch
	// a batch was decided for. A coupled one writes as fast as it can (its
	// actor holds the barrier until it has).
	coupled bool
	win     snapshotWindow
	decided uint64
	monitor SinkMonitor
	logger  *slog.Logger
	// The log store's handover between builds (sink_handover.go): the
	// adopter delivers earlier builds' entries, every reader waits for
	// that; own entries start after handoverOf.Through. openWriter opens
	// a connector instance for another writer's entries, oldSinks keeps
	// them, oldDone the old entries delivered.
	handoverOf *SinkHandover
	adopter    bool
	openWriter func(ctx context.Context, writer int) (connector.Sink, error)
	oldSinks   map[int32]connector.Sink
	oldDone    map[oldEntry]bool

	cancel     context.CancelFunc
	done       chan struct{}
	unregister func()
	last       atomic.Uint64 // the last epoch delivered

	mu struct {
		sync.Mutex
		delivered []delivered
		lastErr   string
	}
	failures atomic.Int64
	// deliveredRows counts the rows the sink committed since the reader started.
	deliveredRows atomic.Int64
	// What was written to the log store and not yet delivered (the writer
	// adds, the reader subtracts; a restart counts the entries left).
	pendingRows, pendingBytes, pendingEpochs atomic.Int64
}

func (r *logReader) takeDelivered() []delivered {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := r.mu.delivered
	r.mu.delivered = nil
	return d
}

func (r *logReader) start() {
	if r.monitor != nil {
		r.unregister = r.monitor.Register(r.name, r.actx.ID, r.stats)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel, r.done = cancel, make(chan struct{})
	go func() {
		defer close(r.done)
		r.run(ctx)
	}()
}

func (r *logReader) stop() {
	if r.cancel != nil {
		r.cancel()
		<-r.done
	}
	r.closeOldSinks()
	if r.unregister != nil {
		r.unregister()
	}
}

// run delivers committed epochs as they appear, retrying a failed one.
func (r *logReader) run(ctx context.Context) {
	r.countLeft(ctx)
	if !r.handover(ctx) {
		return
	}
	backoff := sinkRetryMin
	for ctx.Err() == nil {
		progressed, err := r.deliverNext(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			r.failures.Add(1)
			r.logger.Error("sink delivery failed; retrying", "sink", r.name, "actor", r.actx.ID, "retry_in", backoff, "err", err)
			r.mu.Lock()
			r.mu.lastErr = connector.Redact(err).Error() // the whole error is in the log
			r.mu.Unlock()
			if r.monitor != nil {
				r.monitor.Event(SinkEvent{Time: time.Now().UTC(), Sink: r.name, Actor: r.actx.ID, Err: connector.Redact(err).Error()})
			}
			if !sleepCtx(ctx, backoff) {
				return
			}
			backoff = min(backoff*2, sinkRetryMax)
		case err != nil:
			return
		case progressed:
			backoff = sinkRetryMin
		default:
			if !sleepCtx(ctx, 5*time.Millisecond) {
				return
			}
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// span returns the key range of this writer's entries after epoch (and
// after the handover's epoch: earlier ones are the adopter's to deliver).
func (r *logReader) span(after uint64) (lower, upper []byte) {
	if r.handoverOf != nil {
		after = max(after, r.handoverOf.Through)
	}
	ts := plan.LogStoreTypes[:2]
	// The table has no distribution key: every row is on the vnode of an
	// empty hash.
	prefix := codec.AppendTablePrefix(nil, r.tableID, codec.VnodeOf(codec.HashRow(nil, nil, nil)))
	lower = codec.AppendKey(append([]byte(nil), prefix...), ts, []types.Datum{types.DInt(int64(r.writer)), types.DInt(int64(after) + 1)}, []int{0, 1}, nil)
	upper = codec.AppendKey(append([]byte(nil), prefix...), ts[:1], []types.Datum{types.DInt(int64(r.writer) + 1)}, []int{0}, nil)
	return lower, upper
}

// Limits of one delivery: the committed epochs handed to the connector
// before one Commit (when it may commit several at once).
const (
	deliverMaxEpochs = 256
	deliverMaxRows   = 64 * BackfillChunkRows
	// A sink into a table applies its rows under the coordinator's lock that
	// DML takes too: smaller batches keep the table's writers waiting less.
	deliverIntoMaxRows = 4 * BackfillChunkRows
	// A paced sink into a table writes at most this much in one epoch.
	deliverIntoPacedMax = 64 * BackfillChunkRows
)

// deliverNext delivers the oldest committed epochs not yet delivered, if
// any: one epoch per connector commit, or, when the connector allows it,
// several (up to the limits above) committed as the last of them.
func (r *logReader) deliverNext(ctx context.Context) (bool, error) {
	if r.into != nil {
		return r.deliverInto(ctx)
	}
	committed := r.actx.Store.CommittedEpoch()
	release, err := r.actx.Store.Pin(committed)
	if err != nil {
		return false, fmt.Errorf("sink %s: log store: %w", r.name, err)
	}
	defer release()
	lower, upper := r.span(r.last.Load())
	it, err := r.actx.Store.Scan(ctx, lower, upper, committed)
	if err != nil {
		return false, fmt.Errorf("sink %s: log store: %w", r.name, err)
	}
	defer it.Close()
	maxEpochs := 1
	if m, ok := r.sink.(connector.MultiEpochCommitter); ok && m.CommitsEpochsTogether() {
		maxEpochs = deliverMaxEpochs
	}
	var row []types.Datum
	var done []delivered
	rows, bytes := int64(0), int64(0)
	out := types.NewChunk(r.types, BackfillChunkRows)
	for {
		err := it.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return false, fmt.Errorf("sink %s: log store: %w", r.name, err)
		}
		if row, err = codec.DecodeRow(plan.LogStoreTypes, it.Value(), row); err != nil {
			return false, fmt.Errorf("sink %s: log store entry: %w", r.name, err)
		}
		e := uint64(row[1].I)
		if len(done) == 0 || done[len(done)-1].epoch != e {
			if len(done) == maxEpochs || (len(done) > 0 && rows >= deliverMaxRows) {
				break // the next epoch waits for the next delivery
			}
			done = append(done, delivered{epoch: e})
		}
		done[len(done)-1].seqs++
		bytes += int64(len(row[3].S))
		n, err := r.writePayload(ctx, []byte(row[3].S), out)
		if err != nil {
			return false, err
		}
		rows += n
	}
	if len(done) == 0 {
		return false, nil
	}
	last := done[len(done)-1].epoch
	if out.Len() > 0 {
		if err := r.write(ctx, out); err != nil {
			return false, fmt.Errorf("epoch %d: %w", last, err)
		}
	}
	if err := r.sink.Commit(ctx, last); err != nil {
		return false, fmt.Errorf("sink %s: commit epoch %d: %w", r.name, last, err)
	}
	r.last.Store(last)
	r.deliveredRows.Add(rows)
	r.pendingRows.Add(-rows)
	r.pendingBytes.Add(-bytes)
	r.pendingEpochs.Add(-int64(len(done)))
	for i := range done {
		done[i].writer = r.writer
	}
	r.mu.Lock()
	r.mu.delivered = append(r.mu.delivered, done...)
	r.mu.Unlock()
	return true, nil
}

// deliverInto delivers the committed log entries after the last one it
// wrote into the target table: their rows, mapped to the table's columns,
// and the deletion of those entries go into the open epoch together, so each
// entry reaches the table exactly once (a crash before that epoch commits
// loses both, and the entries are read again). It does not wait for that
// epoch: the entries stay visible until it commits, and the scan starts after
// the last entry written. Once a scan finds nothing new or writes all it
// found, everything up to the scanned epoch is written (writtenThrough),
// which a coupled sink's actor and FLUSH wait for. A decoupled one is paced:
// one batch per epoch, sized by the barrier latency unless a FLUSH waits.
func (r *logReader) deliverInto(ctx context.Context) (bool, error) {
	committed := r.actx.Store.CommittedEpoch()
	maxRows := int64(deliverIntoMaxRows)
	paced := !r.coupled && r.actx.OpenEpoch != nil
	windowed := false // this batch's size is the window's
	if paced {
		r.win.judge(committed, r.actx.BarrierLatency)
		open := r.actx.OpenEpoch()
		if open == r.decided {
			return false, nil // one batch per epoch
		}
		r.decided = open
		if r.actx.Flushing != nil && r.actx.Flushing() {
			// A FLUSH waits for this backlog: the window keeps epochs
			// light, which must not keep the table stale meanwhile.
			maxRows = deliverIntoPacedMax
		} else {
			windowed = true
			r.win.open(r.actx.Foreground != nil && r.actx.Foreground())
			if maxRows = min(r.win.budget(), deliverIntoPacedMax); maxRows == 0 {
				r.win.seal(open, time.Now()) // a rest epoch: its latency is the baseline
				return false, nil
			}
		}
	}
	release, err := r.actx.Store.Pin(committed)
	if err != nil {
		return false, fmt.Errorf("sink %s: log store: %w", r.name, err)
	}
	_, upper := r.span(0)
	lower := r.intoLower()
	it, err := r.actx.Store.Scan(ctx, lower, upper, committed)
	if err != nil {
		release()
		return false, fmt.Errorf("sink %s: log store: %w", r.name, err)
	}
	var row []types.Datum
	var extra storage.Batch
	epochs, last, seq, rows, bytes := int64(0), uint64(0), int32(0), int64(0), int64(0)
	whole := false // every entry through committed is in this batch
	src := types.NewChunk(r.types, BackfillChunkRows)
	out := types.NewChunk(r.into.ColumnTypes(), BackfillChunkRows)
	for {
		err = it.Next()
		if errors.Is(err, io.EOF) {
			err, whole = nil, true
			break
		}
		if err != nil {
			break
		}
		if rows >= maxRows {
			break
		}
		if row, err = codec.DecodeRow(plan.LogStoreTypes, it.Value(), row); err != nil {
			break
		}
		if e := uint64(row[1].I); e != last {
			if epochs == deliverMaxEpochs {
				break
			}
			epochs, last = epochs+1, e
		}
		seq = int32(row[2].I)
		extra.Delete(bytesClone(it.Key()))
		bytes += int64(len(row[3].S))
		src.Reset()
		var n int64
		if n, err = decodePayload(r.types, []byte(row[3].S), src); err != nil {
			err = fmt.Errorf("sink %s: %w", r.name, err)
			break
		}
		rows += n
		r.mapInto(src, out)
	}
	it.Close()
	release()
	if err != nil {
		return false, fmt.Errorf("sink %s: log store: %w", r.name, err)
	}
	if epochs == 0 {
		r.writtenThrough.Store(committed)
		return false, nil
	}
	if err := r.limit.ready(ctx); err != nil {
		return false, err
	}
	r.limit.charge(int(rows))
	epoch, err := r.actx.SinkInto(ctx, r.into, out, &extra)
	if err != nil {
		return false, fmt.Errorf("sink %s into %s: %w", r.name, r.into.QualifiedName(), err)
	}
	if windowed {
		r.win.rows = rows
		r.win.seal(epoch, time.Now())
	}
	if paced {
		r.decided = max(r.decided, epoch)
	}
	r.intoEpoch, r.intoSeq = last, seq
	r.last.Store(last)
	if whole {
		// Caught up: a FLUSH need not wait for a scan that finds nothing,
		// which a source writing every epoch may not leave it.
		r.writtenThrough.Store(committed)
	}
	r.deliveredRows.Add(rows)
	r.pendingRows.Add(-rows)
	r.pendingBytes.Add(-bytes)
	if r.pendingRows.Load() <= 0 {
		// Epochs are counted as done once all their rows are (a batch may
		// end inside one).
		r.pendingEpochs.Store(0)
	} else if epochs > 1 {
		r.pendingEpochs.Add(-(epochs - 1))
	}
	return true, nil
}

// intoLower is the key just after the last entry written into the table.
func (r *logReader) intoLower() []byte {
	if r.intoEpoch == 0 {
		lower, _ := r.span(0)
		return lower
	}
	key := codec.AppendTablePrefix(nil, r.tableID, codec.VnodeOf(codec.HashRow(nil, nil, nil)))
	key = codec.AppendKey(key, plan.LogStoreTypes[:3], []types.Datum{types.DInt(int64(r.writer)), types.DInt(int64(r.intoEpoch)),
		types.DInt(int64(r.intoSeq))}, []int{0, 1, 2}, nil)
	return append(key, 0)
}

func bytesClone(b []byte) []byte { return append([]byte(nil), b...) }

// mapInto appends src's rows to out as the target table's rows.
func (r *logReader) mapInto(src, out *types.Chunk) {
	var srow []types.Datum
	trow := make([]types.Datum, len(r.intoMap))
	for i := 0; i < src.Len(); i++ {
		srow = src.Row(i, srow)
		for j, k := range r.intoMap {
			if k == plan.IntoNewRowID {
				trow[j] = types.DInt(expr.NextRowID())
			} else if k < 0 {
				trow[j] = r.intoDefaults[j]
			} else {
				trow[j] = srow[k]
			}
		}
		for j, e := range r.intoGenerated {
			if e == nil {
				continue
			}
			v, err := r.genEval.evalRow(&r.genCtx, e, trow)
			if err != nil {
				r.logger.Warn("sink into table: generated column", "sink", r.name, "column", r.into.Columns[j].Name, "err", err)
			}
			trow[j] = v
		}
		out.AppendRowOp(src.Op(i), trow)
	}
}

// decodePayload appends a log store entry's rows (with their ops) to out
// and returns how many.
func decodePayload(ts []types.T, p []byte, out *types.Chunk) (int64, error) {
	var row []types.Datum
	return eachPayloadRow(p, func(op types.Op, enc []byte) error {
		var err error
		if row, err = codec.DecodeRow(ts, enc, row); err != nil {
			return fmt.Errorf("log store row: %w", err)
		}
		out.AppendRowOp(op, row)
		return nil
	})
}

// eachPayloadRow calls fn with each row of a log store entry (op, encoded
// row; see logWriter.appendChunk) and returns how many it took.
func eachPayloadRow(p []byte, fn func(op types.Op, enc []byte) error) (int64, error) {
	var n int64
	for len(p) > 0 {
		if len(p) < 5 {
			return n, errors.New("log store entry truncated")
		}
		l := int(binary.BigEndian.Uint32(p[1:5]))
		if len(p) < 5+l {
			return n, errors.New("log store entry truncated")
		}
		if err := fn(types.Op(p[0]), p[5:5+l]); err != nil {
			return n, err
		}
		p = p[5+l:]
		n++
	}
	return n, nil
}

// write hands a chunk to the connector as the rate limit allows.
func (r *logReader) write(ctx context.Context, c *types.Chunk) error {
	return r.writeTo(ctx, r.sink, c)
}

// writeTo hands a chunk to sink as the rate limit allows.
func (r *logReader) writeTo(ctx context.Context, sink connector.Sink, c *types.Chunk) error {
	if err := r.limit.ready(ctx); err != nil {
		return err
	}
	r.limit.charge(c.Len())
	if err := sink.Write(ctx, c); err != nil {
		return fmt.Errorf("sink %s: %w", r.name, err)
	}
	return nil
}

// writePayload decodes one entry's changes into out, handing full chunks
// to the connector.
func (r *logReader) writePayload(ctx context.Context, p []byte, out *types.Chunk) (int64, error) {
	return r.writePayloadTo(ctx, r.sink, p, out)
}

// writePayloadTo is writePayload into sink.
func (r *logReader) writePayloadTo(ctx context.Context, sink connector.Sink, p []byte, out *types.Chunk) (int64, error) {
	var row []types.Datum
	return eachPayloadRow(p, func(op types.Op, enc []byte) error {
		var err error
		if row, err = codec.DecodeRow(r.types, enc, row); err != nil {
			return fmt.Errorf("sink %s: log store row: %w", r.name, err)
		}
		out.AppendRowOp(op, row)
		if out.Len() < BackfillChunkRows {
			return nil
		}
		if err := r.writeTo(ctx, sink, out); err != nil {
			return err
		}
		out.Reset()
		return nil
	})
}

// stats is the log store's current state.
func (r *logReader) stats() SinkLogStats {
	r.mu.Lock()
	lastErr := r.mu.lastErr
	r.mu.Unlock()
	return SinkLogStats{Sink: r.name, Actor: r.actx.ID, DeliveredEpoch: r.last.Load(), Failures: r.failures.Load(), DeliveredRows: r.deliveredRows.Load(),
		LastError: lastErr, PendingEpochs: r.pendingEpochs.Load(), PendingRows: r.pendingRows.Load(), PendingBytes: r.pendingBytes.Load(),
		Into: r.into != nil, WrittenThrough: r.writtenThrough.Load()}
}

// countLeft counts the committed entries a restart left in the log store:
// its own writer's, and the adopter the earlier builds' too.
func (r *logReader) countLeft(ctx context.Context) {
	lower, upper := r.span(0)
	committed := r.actx.Store.CommittedEpoch()
	if r.adopter && r.handoverOf != nil {
		if old, err := r.oldEntries(ctx, committed); err == nil {
			prev := uint64(0)
			for _, e := range old {
				v, found, err := r.actx.Store.Get(ctx, r.entryKey(e), committed, nil)
				if err != nil || !found {
					break
				}
				row, err := codec.DecodeRow(plan.LogStoreTypes, v, nil)
				if err != nil {
					break
				}
				if e.epoch != prev {
					r.pendingEpochs.Add(1)
					prev = e.epoch
				}
				r.pendingBytes.Add(int64(len(row[3].S)))
				r.pendingRows.Add(countPayloadRows([]byte(row[3].S)))
			}
		}
	}
	it, err := r.actx.Store.Scan(ctx, lower, upper, committed)
	if err != nil {
		return
	}
	defer it.Close()
	var row []types.Datum
	prev := uint64(0)
	for it.Next() == nil {
		if row, err = codec.DecodeRow(plan.LogStoreTypes, it.Value(), row); err != nil {
			return
		}
		if e := uint64(row[1].I); e != prev {
			r.pendingEpochs.Add(1)
			prev = e
		}
		r.pendingBytes.Add(int64(len(row[3].S)))
		r.pendingRows.Add(countPayloadRows([]byte(row[3].S)))
	}
}

func countPayloadRows(p []byte) int64 {
	n, _ := eachPayloadRow(p, func(types.Op, []byte) error { return nil })
	return n
}
