package stream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/tributary/tributary/connector"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage"
	"github.com/tributary/tributary/storage/codec"
)

// A decoupled sink's log store outlives its actors: entries are keyed by
// the writer (the first vnode of the actor that wrote them), and after a
// rescale or a restart the actors and their writers may differ. Every entry
// of an epoch through SinkHandover.Through was written by an earlier build
// of the sink. One actor of the new build, the adopter, delivers all of
// them in epoch order, whichever writer holds them (a key's changes of one
// epoch are all under one writer, so delivering epoch by epoch keeps each
// key's order), then closes Done; every actor delivers its own later
// entries only once Done is closed. Nothing is orphaned, and no key's new
// changes overtake its old ones. A crash during the handover leaves the
// undelivered old entries, which the next build hands over again.

// SinkHandover is shared by the actors of one build of a sink.
type SinkHandover struct {
	// Through is the committed epoch when the sink's actors were built:
	// entries of later epochs are this build's own.
	Through uint64
	done    chan struct{}
	once    sync.Once
}

// NewSinkHandover returns the handover for a build of a sink over the
// store committed through epoch through.
func NewSinkHandover(through uint64) *SinkHandover {
	return &SinkHandover{Through: through, done: make(chan struct{})}
}

func (h *SinkHandover) finish() { h.once.Do(func() { close(h.done) }) }

// oldEntry is one log store entry of an earlier build.
type oldEntry struct {
	writer int32
	epoch  uint64
	seq    int32
}

// handover runs before the reader's own deliveries: the adopter delivers
// the earlier builds' entries and lets the others go on; the others wait
// for that. False when ctx ended first.
func (r *logReader) handover(ctx context.Context) bool {
	h := r.handoverOf
	if h == nil {
		return true
	}
	if !r.adopter {
		select {
		case <-h.done:
			return true
		case <-ctx.Done():
			return false
		}
	}
	backoff := sinkRetryMin
	for ctx.Err() == nil {
		left, err := r.deliverOld(ctx)
		switch {
		case err == nil && !left:
			h.finish()
			return true
		case err != nil && ctx.Err() == nil:
			r.failures.Add(1)
			r.logger.Error("sink delivery of earlier actors' log failed; retrying", "sink", r.name, "actor", r.actx.ID, "retry_in", backoff, "err", err)
			r.mu.Lock()
			r.mu.lastErr = connector.Redact(err).Error() // the whole error is in the log
			r.mu.Unlock()
			if r.monitor != nil {
				r.monitor.Event(SinkEvent{Time: time.Now().UTC(), Sink: r.name, Actor: r.actx.ID, Err: connector.Redact(err).Error()})
			}
			if !sleepCtx(ctx, backoff) {
				return false
			}
			backoff = min(backoff*2, sinkRetryMax)
		case err == nil:
			backoff = sinkRetryMin
		}
	}
	return false
}

// oldEntries lists the committed entries of epochs through the handover's,
// by epoch, then writer and seq, skipping those already delivered.
func (r *logReader) oldEntries(ctx context.Context, committed uint64) ([]oldEntry, error) {
	prefix := codec.AppendTablePrefix(nil, r.tableID, codec.VnodeOf(codec.HashRow(nil, nil, nil)))
	upper := codec.PrefixEnd(prefix)
	it, err := r.actx.Store.Scan(ctx, prefix, upper, committed)
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var out []oldEntry
	var row []types.Datum
	for {
		err := it.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if row, err = codec.DecodeRow(plan.LogStoreTypes, it.Value(), row); err != nil {
			return nil, fmt.Errorf("log store entry: %w", err)
		}
		e := oldEntry{writer: int32(row[0].I), epoch: uint64(row[1].I), seq: int32(row[2].I)}
		if e.epoch > r.handoverOf.Through || r.oldDone[e] {
			continue
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b oldEntry) int {
		if a.epoch != b.epoch {
			return compareU64(a.epoch, b.epoch)
		}
		if a.writer != b.writer {
			return int(a.writer - b.writer)
		}
		return int(a.seq - b.seq)
	})
	return out, nil
}

func compareU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// entryKey is the log store key of an entry.
func (r *logReader) entryKey(e oldEntry) []byte {
	key := codec.AppendTablePrefix(nil, r.tableID, codec.VnodeOf(codec.HashRow(nil, nil, nil)))
	return codec.AppendKey(key, plan.LogStoreTypes[:3], []types.Datum{types.DInt(int64(e.writer)), types.DInt(int64(e.epoch)),
		types.DInt(int64(e.seq))}, []int{0, 1, 2}, nil)
}

// deliverOld delivers the oldest epoch of earlier builds' entries (all its
// writers) and reports whether any such entries are left after it.
func (r *logReader) deliverOld(ctx context.Context) (bool, error) {
	committed := r.actx.Store.CommittedEpoch()
	release, err := r.actx.Store.Pin(committed)
	if err != nil {
		return true, fmt.Errorf("sink %s: log store: %w", r.name, err)
	}
	defer release()
	entries, err := r.oldEntries(ctx, committed)
	if err != nil {
		return true, fmt.Errorf("sink %s: log store: %w", r.name, err)
	}
	if len(entries) == 0 {
		return false, nil
	}
	epoch := entries[0].epoch
	n := 0
	for n < len(entries) && entries[n].epoch == epoch {
		n++
	}
	batch, rest := entries[:n], len(entries) > n
	if r.into != nil {
		return rest, r.deliverOldInto(ctx, committed, batch)
	}
	// Per writer, in its own connector instance (a sink that names its
	// output by writer and epoch rewrites the same output), committed as
	// the epoch.
	var row []types.Datum
	var rows, bytes int64
	for lo := 0; lo < len(batch); {
		w := batch[lo].writer
		hi := lo
		for hi < len(batch) && batch[hi].writer == w {
			hi++
		}
		sink, err := r.oldSink(ctx, w)
		if err != nil {
			return true, err
		}
		out := types.NewChunk(r.types, BackfillChunkRows)
		for _, e := range batch[lo:hi] {
			v, found, err := r.actx.Store.Get(ctx, r.entryKey(e), committed, nil)
			if err != nil || !found {
				return true, fmt.Errorf("sink %s: log store entry %d/%d/%d (found %v): %w", r.name, e.writer, e.epoch, e.seq, found, err)
			}
			if row, err = codec.DecodeRow(plan.LogStoreTypes, v, row); err != nil {
				return true, fmt.Errorf("sink %s: log store entry: %w", r.name, err)
			}
			k, err := r.writePayloadTo(ctx, sink, []byte(row[3].S), out)
			if err != nil {
				return true, err
			}
			rows += k
			bytes += int64(len(row[3].S))
		}
		if out.Len() > 0 {
			if err := r.writeTo(ctx, sink, out); err != nil {
				return true, fmt.Errorf("epoch %d: %w", epoch, err)
			}
		}
		if err := sink.Commit(ctx, epoch); err != nil {
			return true, fmt.Errorf("sink %s: commit epoch %d (writer %d): %w", r.name, epoch, w, err)
		}
		r.mu.Lock()
		r.mu.delivered = append(r.mu.delivered, delivered{writer: w, epoch: epoch, seqs: int32(hi - lo)})
		r.mu.Unlock()
		lo = hi
	}
	for _, e := range batch {
		r.oldDone[e] = true // deleted with the actor's next barrier
	}
	r.pendingRows.Add(-rows)
	r.pendingBytes.Add(-bytes)
	r.pendingEpochs.Add(-1)
	return rest, nil
}

// deliverOldInto writes one epoch of earlier builds' entries into the
// target table, deleting them in the same epoch (exactly once).
func (r *logReader) deliverOldInto(ctx context.Context, committed uint64, batch []oldEntry) error {
	var row []types.Datum
	var extra storage.Batch
	var rows, bytes int64
	src := types.NewChunk(r.types, BackfillChunkRows)
	out := types.NewChunk(r.into.ColumnTypes(), BackfillChunkRows)
	for _, e := range batch {
		key := r.entryKey(e)
		v, found, err := r.actx.Store.Get(ctx, key, committed, nil)
		if err != nil || !found {
			return fmt.Errorf("sink %s: log store entry %d/%d/%d (found %v): %w", r.name, e.writer, e.epoch, e.seq, found, err)
		}
		if row, err = codec.DecodeRow(plan.LogStoreTypes, v, row); err != nil {
			return fmt.Errorf("sink %s: log store entry: %w", r.name, err)
		}
		extra.Delete(key)
		bytes += int64(len(row[3].S))
		src.Reset()
		n, err := decodePayload(r.types, []byte(row[3].S), src)
		if err != nil {
			return fmt.Errorf("sink %s: %w", r.name, err)
		}
		rows += n
		r.mapInto(src, out)
	}
	if err := r.limit.ready(ctx); err != nil {
		return err
	}
	r.limit.charge(int(rows))
	if _, err := r.actx.SinkInto(ctx, r.into, out, &extra); err != nil {
		return fmt.Errorf("sink %s into %s: %w", r.name, r.into.QualifiedName(), err)
	}
	// The entries are gone once that epoch commits; until then a scan still
	// sees them (if it never commits, a new build hands them over again).
	for _, e := range batch {
		r.oldDone[e] = true
	}
	r.pendingRows.Add(-rows)
	r.pendingBytes.Add(-bytes)
	r.pendingEpochs.Add(-1)
	return nil
}

// oldSink returns the connector instance delivering writer w's entries:
// the reader's own for its writer, else one opened for w and kept until the
// reader stops.
func (r *logReader) oldSink(ctx context.Context, w int32) (connector.Sink, error) {
	if w == r.writer {
		return r.sink, nil
	}
	if s, ok := r.oldSinks[w]; ok {
		return s, nil
	}
	octx, cancel := context.WithTimeout(ctx, sinkOpenTimeout)
	defer cancel()
	s, err := r.openWriter(octx, int(w))
	if err != nil {
		return nil, fmt.Errorf("sink %s: open for writer %d: %w", r.name, w, err)
	}
	if r.oldSinks == nil {
		r.oldSinks = map[int32]connector.Sink{}
	}
	r.oldSinks[w] = s
	return s, nil
}

// closeOldSinks closes the instances oldSink opened.
func (r *logReader) closeOldSinks() {
	for _, s := range r.oldSinks {
		_ = s.Close()
	}
	r.oldSinks = nil
}
