package stream

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/tributary/tributary/connector"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage/state"
)

// SinkOpener opens one connector instance for a sink actor.
type SinkOpener func(ctx context.Context, t connector.SinkTarget) (connector.Sink, error)

// sinkOpenTimeout bounds opening a connector (connecting to its system).
const sinkOpenTimeout = 30 * time.Second

// OpenSink validates a sink's WITH options and FORMAT ... ENCODE clause
// (empty when absent) and returns its opener.
func OpenSink(props map[string]string, format, encode string) (SinkOpener, error) {
	lower := make(map[string]string, len(props))
	for k, v := range props {
		lower[strings.ToLower(k)] = v
	}
	_, o, err := connector.ParseSink(lower, format, encode)
	if err != nil {
		return nil, err
	}
	return o.Open, nil
}

// SinkDecoupled reports whether a sink of the connector props names writes
// through a log store by default.
func SinkDecoupled(props map[string]string) bool {
	c, err := connector.LookupSink(props)
	return err == nil && c.Decoupled
}

// SinkTargetOf describes a sink for its connector: its visible columns, the
// names of its stream key (nil if a key column is hidden), and a writer.
func SinkTargetOf(n *plan.StreamSink, writer int) connector.SinkTarget {
	t := connector.SinkTarget{Sink: n.Relation.QualifiedName(), Writer: writer}
	for _, c := range n.Relation.Columns {
		if !c.Hidden {
			t.Columns = append(t.Columns, connector.Column{Name: c.Name, Type: c.Type})
		}
	}
	for _, k := range n.Input.StreamKey() {
		c := n.Relation.Columns[k]
		if c.Hidden {
			t.Key = nil
			return t
		}
		t.Key = append(t.Key, c.Name)
	}
	return t
}

// CheckSink asks the connector to check its target: a CREATE SINK finds a
// wrong one (an unreachable system, a missing table or topic) before it
// starts.
func CheckSink(ctx context.Context, n *plan.StreamSink) error {
	_, o, err := connector.ParseSink(n.Props, n.Format, n.Encode)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, sinkOpenTimeout)
	defer cancel()
	return o.Check(ctx, SinkTargetOf(n, 0))
}

// visibleOnly hands a connector chunks without the sink's hidden columns.
type visibleOnly struct {
	connector.Sink
	keep []int
	view types.Chunk
}

func (v *visibleOnly) Write(ctx context.Context, c *types.Chunk) error {
	v.view.Cols = v.view.Cols[:0]
	for _, i := range v.keep {
		v.view.Cols = append(v.view.Cols, c.Cols[i])
	}
	v.view.Ops, v.view.Vis = c.Ops, c.Vis
	v.view.SetLen(c.Len())
	return v.Sink.Write(ctx, &v.view)
}

// sinkExec hands its input's chunks to a connector sink and commits the sink
// at every barrier; it passes barriers and watermarks on, never chunks.
type sinkExec struct {
	name       string
	in         Executor
	sink       connector.Sink // nil when decoupled: the log's reader owns it
	log        *logWriter
	actor      ActorID
	coupled    bool   // hold each barrier until the log before it is delivered
	lastPrev   uint64 // the epoch the previous barrier sealed
	appendOnly bool
	ops        []types.Op // the append-only view's ops and visibility, reused
	vis        []bool
	view       types.Chunk
}

// NewSink returns the executor of a StreamSink and its closer. A decoupled
// sink writes to its log store, and a reader goroutine (stopped by the
// closer) delivers to the connector.
//
// h is the log store's handover from the sink's earlier builds, shared by
// the actors of this build, and adopter says whether this actor delivers
// their entries (sink_handover.go).
func NewSink(actx *ActorContext, n *plan.StreamSink, in Executor, actors int, h *SinkHandover, adopter bool) (Executor, func(), error) {
	if n.Into != nil {
		return newSinkInto(actx, n, in, actors, h, adopter)
	}
	open, err := OpenSink(n.Props, n.Format, n.Encode)
	if err != nil {
		return nil, nil, fmt.Errorf("sink %s: %w", n.Relation.QualifiedName(), err)
	}
	writer := 0
	if len(actx.Vnodes) > 0 {
		writer = int(actx.Vnodes[0])
	}
	octx, cancel := context.WithTimeout(context.Background(), sinkOpenTimeout)
	sink, err := open(octx, SinkTargetOf(n, writer))
	cancel()
	if err != nil {
		return nil, nil, fmt.Errorf("sink %s: %w", n.Relation.QualifiedName(), err)
	}
	var keep []int
	for i, c := range n.Relation.Columns {
		if !c.Hidden {
			keep = append(keep, i)
		}
	}
	if len(keep) < len(n.Relation.Columns) {
		sink = &visibleOnly{Sink: sink, keep: keep}
	}
	openWriter := func(ctx context.Context, w int) (connector.Sink, error) {
		s, err := open(ctx, SinkTargetOf(n, w))
		if err != nil || len(keep) == len(n.Relation.Columns) {
			return s, err
		}
		return &visibleOnly{Sink: s, keep: keep}, nil
	}
	s := &sinkExec{name: n.Relation.QualifiedName(), in: in, sink: sink, appendOnly: n.AppendOnly}
	if !n.Decouple {
		return s, func() { _ = sink.Close() }, nil
	}
	if len(n.State()) != 1 {
		_ = sink.Close()
		return nil, nil, fmt.Errorf("sink %s: no log store table assigned", s.name)
	}
	st := n.State()[0]
	t, err := actx.NewTable(state.Schema{TableID: st.ID, Types: st.Types, PK: st.PK})
	if err != nil {
		_ = sink.Close()
		return nil, nil, fmt.Errorf("sink %s: log store: %w", s.name, err)
	}
	r := &logReader{actx: actx, name: s.name, tableID: st.ID, writer: int32(writer), types: plan.Types(n.Input.Schema()),
		sink: sink, limit: newRateLimiter(ShareRate(n.RateLimit, actors)), monitor: actx.Sinks, logger: slog.Default(),
		handoverOf: h, adopter: adopter, openWriter: openWriter, oldDone: map[oldEntry]bool{}}
	s.actor = actx.ID
	s.sink, s.log = nil, &logWriter{table: t, types: r.types, writer: int32(writer), reader: r}
	r.start()
	return s, func() {
		r.stop()
		_ = sink.Close()
	}, nil
}

// newSinkInto is NewSink for a sink into a table: always decoupled, its log
// store's reader writes into the table through the coordinator.
func newSinkInto(actx *ActorContext, n *plan.StreamSink, in Executor, actors int, h *SinkHandover, adopter bool) (Executor, func(), error) {
	name := n.Relation.QualifiedName()
	if !n.Decouple || len(n.State()) != 1 {
		return nil, nil, fmt.Errorf("sink %s: a sink into a table needs its log store", name)
	}
	if actx.SinkInto == nil || actx.WaitCommitted == nil {
		return nil, nil, fmt.Errorf("sink %s: no way to write into %s", name, n.Into.QualifiedName())
	}
	st := n.State()[0]
	t, err := actx.NewTable(state.Schema{TableID: st.ID, Types: st.Types, PK: st.PK})
	if err != nil {
		return nil, nil, fmt.Errorf("sink %s: log store: %w", name, err)
	}
	writer := int32(0)
	if len(actx.Vnodes) > 0 {
		writer = int32(actx.Vnodes[0])
	}
	r := &logReader{actx: actx, name: name, tableID: st.ID, writer: writer, types: plan.Types(n.Input.Schema()),
		limit: newRateLimiter(ShareRate(n.RateLimit, actors)), monitor: actx.Sinks, logger: slog.Default(),
		into: n.Into, intoMap: n.IntoMap, intoDefaults: n.IntoDefaults, intoGenerated: n.IntoGenerated, genEval: newLenientEval(actx), coupled: n.Coupled, win: newSnapshotWindow(),
		handoverOf: h, adopter: adopter, oldDone: map[oldEntry]bool{}}
	s := &sinkExec{name: name, in: in, appendOnly: n.AppendOnly, actor: actx.ID, coupled: n.Coupled,
		log: &logWriter{table: t, types: r.types, writer: writer, reader: r}}
	r.start()
	return s, r.stop, nil
}

// ShareRate is one of n actors' share of a rate limit (rows per second,
// rounded up; < 0 unlimited and 0 paused stay as they are).
func ShareRate(rate int64, n int) int64 {
	if rate <= 0 || n <= 1 {
		return rate
	}
	return (rate + int64(n) - 1) / int64(n)
}

func (s *sinkExec) Schema() []types.T { return s.in.Schema() }

func (s *sinkExec) Next(ctx context.Context) (Message, error) {
	for {
		m, err := s.in.Next(ctx)
		if err != nil {
			return m, err
		}
		switch {
		case m.Chunk != nil:
			c := m.Chunk
			if s.appendOnly {
				c = s.inserts(c)
			}
			if s.log != nil {
				if err := s.log.appendChunk(c); err != nil {
					return Message{}, fmt.Errorf("sink %s: log store: %w", s.name, err)
				}
				continue
			}
			if err := s.sink.Write(ctx, c); err != nil {
				return Message{}, fmt.Errorf("sink %s: %w", s.name, err)
			}
			continue
		case m.Barrier != nil && s.log != nil:
			m.Barrier.ForEachMutation(func(mu Mutation) {
				if r, ok := mu.(*SetSinkRate); ok && r.Actors[s.actor] {
					s.log.reader.limit.Set(r.RowsPerSecond)
				}
			})
			if s.coupled {
				if err := s.waitWritten(ctx); err != nil {
					return Message{}, err
				}
				s.lastPrev = m.Barrier.Epoch.Prev
			}
			if err := s.log.barrier(m.Barrier); err != nil {
				return Message{}, fmt.Errorf("sink %s: log store: %w", s.name, err)
			}
		case m.Barrier != nil:
			if err := s.sink.Commit(ctx, m.Barrier.Epoch.Prev); err != nil {
				return Message{}, fmt.Errorf("sink %s: commit epoch %d: %w", s.name, m.Barrier.Epoch.Prev, err)
			}
		}
		return m, nil
	}
}

// waitWritten waits until the log store's reader has written every entry of
// the epochs before the previous barrier's (committed by now) into the table.
func (s *sinkExec) waitWritten(ctx context.Context) error {
	for s.log.reader.writtenThrough.Load() < s.lastPrev {
		t := time.NewTimer(time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

// inserts returns c seen as an append-only stream: deletes hidden and
// updates' new rows as inserts (the columns are shared, not copied).
func (s *sinkExec) inserts(c *types.Chunk) *types.Chunk {
	if c.Ops == nil {
		return c
	}
	n := c.Len()
	s.ops, s.vis = s.ops[:0], s.vis[:0]
	for i := 0; i < n; i++ {
		s.ops = append(s.ops, types.OpInsert)
		s.vis = append(s.vis, c.Visible(i) && c.Ops[i].IsInsert())
	}
	s.view = types.Chunk{Cols: c.Cols, Ops: s.ops, Vis: s.vis}
	s.view.SetLen(n)
	return &s.view
}
