package stream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage"
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
// log). Then it catches up: for an epoch range (E, X] it emits, for every
// key that changed, the row as of E as a Delete and the row as of X as an
// Insert, and moves E to X. Live changes after X are held in memory from the
// start of a range until the range is emitted (across barriers if need be)
// and then released: the job follows its upstream directly. Progress (phase,
// E, the range end, the positions in the snapshot and in the range) commits
// with each epoch, so a restart resumes; held changes are lost in a crash, so
// a resumed range does not go live but starts another range from its end,
// which covers them.
type snapshotBackfillExec struct {
	actx     *ActorContext
	upstream Executor
	relID    uint32
	types    []types.T
	progress *state.Table
	report   Progress
	limit    *rateLimiter

	started, loaded bool
	phase           int64
	epoch           uint64 // E
	target          uint64 // X of the catch-up range in progress (0: none)
	pos             []byte // snapshot position
	dpos            []byte // position within the catch-up range
	rows            int64
	unpin           func()
	holding         bool // collecting live chunks after the range end
	held            []*types.Chunk
	queue           []Message

	pump *backfillExec // reuses the arrangement backfill's upstream pump
	row  []types.Datum
}

// NewSnapshotBackfill returns the snapshot-backfilling source of a StreamSource.
func NewSnapshotBackfill(actx *ActorContext, n *plan.StreamSource, upstream Executor, report Progress, rowsPerSecond int64) (Executor, func(), error) {
	if len(n.State()) == 0 {
		return nil, nil, fmt.Errorf("snapshot backfill %s: no progress table assigned", n.Relation.QualifiedName())
	}
	st := n.State()[0]
	t, err := actx.NewTable(state.Schema{TableID: st.ID, Types: st.Types, PK: st.PK, DistKey: st.Dist})
	if err != nil {
		return nil, nil, fmt.Errorf("snapshot backfill %s: %w", n.Relation.QualifiedName(), err)
	}
	if report == nil {
		report = func(int64, bool) {}
	}
	s := &snapshotBackfillExec{actx: actx, upstream: upstream, relID: n.Relation.ID, types: n.Relation.ColumnTypes(),
		progress: t, report: report, limit: newRateLimiter(rowsPerSecond)}
	s.pump = &backfillExec{upstream: upstream}
	return s, s.close, nil
}

func (s *snapshotBackfillExec) Schema() []types.T { return s.upstream.Schema() }

func (s *snapshotBackfillExec) close() {
	s.pump.close()
	if s.unpin != nil {
		s.unpin()
	}
}

// SnapshotProgressTypes is the layout of a snapshot backfill's progress row:
// phase, E, range end X, snapshot position, range position, rows read.
var SnapshotProgressTypes = []types.T{types.TInt64, types.TInt64, types.TInt64, types.TBytea, types.TBytea, types.TInt64}

func bytesOrNull(b []byte) types.Datum {
	if b == nil {
		return types.NullDatum
	}
	return types.DString(string(b))
}

func (s *snapshotBackfillExec) save() error {
	return s.progress.Insert([]types.Datum{types.DInt(s.phase), types.DInt(int64(s.epoch)), types.DInt(int64(s.target)),
		bytesOrNull(s.pos), bytesOrNull(s.dpos), types.DInt(s.rows)})
}

// pinAt holds the versions at epoch (and releases the previous pin).
func (s *snapshotBackfillExec) pinAt(epoch uint64) error {
	release, err := s.actx.Store.Pin(epoch)
	if err != nil {
		return fmt.Errorf("snapshot backfill: pin epoch %d: %w", epoch, err)
	}
	if s.unpin != nil {
		s.unpin()
	}
	s.unpin = release
	return nil
}

// load reads the persisted progress, or starts at the sealed epoch.
func (s *snapshotBackfillExec) load(ctx context.Context, sealed uint64) error {
	s.loaded = true
	row, found, err := s.progress.Get(ctx, nil, nil)
	if err != nil {
		return err
	}
	if !found {
		s.phase, s.epoch = phaseSnapshot, sealed
	} else {
		s.phase, s.epoch, s.target, s.rows = row[0].I, uint64(row[1].I), uint64(row[2].I), row[5].I
		if !row[3].Null {
			s.pos = []byte(row[3].S)
		}
		if !row[4].Null {
			s.dpos = []byte(row[4].S)
		}
	}
	s.report(s.rows, s.phase == phaseDone)
	if s.phase == phaseDone {
		return nil
	}
	return s.pinAt(s.epoch)
}

func (s *snapshotBackfillExec) Next(ctx context.Context) (Message, error) {
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
			return s.pump.take(ctx)
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
		if c, err := s.work(ctx); err != nil {
			return Message{}, err
		} else if c != nil {
			return ChunkMsg(c), nil
		}
		select {
		case pm := <-s.pump.pump.ch:
			if err := s.handle(ctx, pm); err != nil {
				return Message{}, err
			}
		case <-time.After(2 * time.Millisecond):
		case <-ctx.Done():
			return Message{}, ctx.Err()
		}
	}
}

// handle takes an upstream message: live chunks are dropped (or held while a
// final range may finish); a barrier saves progress and may start a range.
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
		if pm.msg.Watermark != nil {
			s.queue = append(s.queue, pm.msg)
		}
		return nil
	}
	b.ForEachMutation(func(m Mutation) {
		if r, ok := m.(*SetRateLimit); ok && r.Actors[s.actx.ID] {
			s.limit.Set(r.RowsPerSecond)
		}
	})
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
	s.queue = append(s.queue, pm.msg)
	return nil
}

// work emits the next snapshot chunk or catch-up chunk, if any is due.
func (s *snapshotBackfillExec) work(ctx context.Context) (*types.Chunk, error) {
	if !s.loaded {
		return nil, nil
	}
	switch s.phase {
	case phaseSnapshot:
		if s.actx.Store.CommittedEpoch() < s.epoch || !s.limit.allow(BackfillChunkRows) {
			return nil, nil
		}
		return s.readSnapshot(ctx)
	case phaseCatchUp:
		if s.target == 0 || s.actx.Store.CommittedEpoch() < s.target {
			return nil, nil
		}
		return s.readRange(ctx)
	}
	return nil, nil
}

func (s *snapshotBackfillExec) readSnapshot(ctx context.Context) (*types.Chunk, error) {
	out, eof, err := scanAfter(ctx, s.actx.Store, s.relID, s.types, s.epoch, &s.pos, &s.row)
	if err != nil {
		return nil, fmt.Errorf("snapshot backfill of %d: %w", s.relID, err)
	}
	if eof {
		s.phase = phaseCatchUp // the next barrier starts the first range
	}
	s.rows += int64(out.Len())
	s.report(s.rows, false)
	if out.Len() == 0 {
		return nil, nil
	}
	return out, nil
}

// readRange emits the changes of the keys that changed in (E, X].
func (s *snapshotBackfillExec) readRange(ctx context.Context) (*types.Chunk, error) {
	lower, upper := spanAfter(s.relID, s.dpos)
	it, err := s.actx.Store.ChangedKeys(ctx, lower, upper, s.epoch, s.target)
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
		for i, e := range []uint64{s.epoch, s.target} {
			v, found, err := s.actx.Store.Get(ctx, key, e, buf[:0])
			if err != nil {
				return nil, fmt.Errorf("snapshot backfill catch-up of %d: %w", s.relID, err)
			}
			buf = v
			if !found {
				continue
			}
			if s.row, err = codec.DecodeRow(s.types, v, s.row); err != nil {
				return nil, fmt.Errorf("snapshot backfill catch-up of %d: %w", s.relID, err)
			}
			out.AppendRowOp([]types.Op{types.OpDelete, types.OpInsert}[i], s.row)
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
		if s.unpin != nil {
			s.unpin()
			s.unpin = nil
		}
		s.report(s.rows, true)
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

var _ = storage.ErrEpochNotCommitted
