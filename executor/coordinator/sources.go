package coordinator

import (
	"sort"

	"github.com/tributary/tributary/connector"
	"strconv"
	"time"

	"github.com/tributary/tributary/executor/stream"
)

// SourceSplitStats is what a source's reader reported about one split.
type SourceSplitStats struct {
	Source string
	Split  string
	Actor  stream.ActorID
	// Next is the position after the last row read (committed with the
	// last barrier), Rows the rows read since the reader started.
	Next, Rows int64
	// Bytes is the size of the messages read since the reader started (0
	// when the connector does not tell).
	Bytes int64
	// BadMessages counts the messages skipped or read in part (values set
	// to NULL) since the server started; LastError is the last one's cause.
	BadMessages int64
	LastError   string
	// Lag is how many messages the split's newest is ahead of Next (Kafka:
	// the partition's high watermark less the next offset); -1 when the
	// source cannot tell. LagBytes is how far its committed position is
	// behind the end of the upstream's log (PostgreSQL CDC: WAL bytes); -1
	// when unknown.
	Lag, LagBytes int64
}

type splitKey struct{ source, split string }

// sourceEventGap is the least time between two event log entries of one
// source split and kind: a stream of bad messages is sampled, not copied.
const sourceEventGap = time.Second

// BadMessage implements stream.SourceMonitor: counted per source and split,
// sampled into the event log.
func (l *SinkLog) BadMessage(source, split string, actor stream.ActorID, position int64, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.splitLocked(source, split, actor)
	s.BadMessages++
	s.LastError = err.Error()
	l.sampleLocked(stream.SinkEvent{Type: "SOURCE_BAD_MESSAGE", Sink: source, Actor: actor,
		Err: "split " + split + " position " + strconv.FormatInt(position, 10) + ": " + err.Error()}, splitKey{source, split + "/bad"})
}

// Trouble implements stream.SourceMonitor: sampled into the event log.
func (l *SinkLog) Trouble(source string, actor stream.ActorID, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sampleLocked(stream.SinkEvent{Type: "SOURCE_ERROR", Sink: source, Actor: actor, Err: connector.Redact(err).Error()}, splitKey{source, "/trouble"})
}

// SplitState implements stream.SourceMonitor.
func (l *SinkLog) SplitState(source, split string, actor stream.ActorID, r stream.SplitStatus) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.splitLocked(source, split, actor)
	s.Next, s.Rows, s.Bytes, s.Lag, s.LagBytes = r.Next, r.Rows, r.Bytes, r.Lag, r.LagBytes
}

func (l *SinkLog) splitLocked(source, split string, actor stream.ActorID) *SourceSplitStats {
	if l.mu.splits == nil {
		l.mu.splits = map[splitKey]*SourceSplitStats{}
	}
	k := splitKey{source, split}
	s := l.mu.splits[k]
	if s == nil {
		s = &SourceSplitStats{Source: source, Split: split, Lag: -1, LagBytes: -1}
		l.mu.splits[k] = s
	}
	s.Actor = actor
	return s
}

func (l *SinkLog) sampleLocked(e stream.SinkEvent, k splitKey) {
	now := time.Now()
	if l.mu.sampled == nil {
		l.mu.sampled = map[splitKey]time.Time{}
	}
	if last, ok := l.mu.sampled[k]; ok && now.Sub(last) < sourceEventGap {
		return
	}
	l.mu.sampled[k] = now
	e.Time = now.UTC()
	l.eventLocked(e)
}

// SourceSplits returns every source split's stats, by source and split.
func (l *SinkLog) SourceSplits() []SourceSplitStats {
	l.mu.Lock()
	out := make([]SourceSplitStats, 0, len(l.mu.splits))
	for _, s := range l.mu.splits {
		out = append(out, *s)
	}
	l.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Source != b.Source {
			return a.Source < b.Source
		}
		return stream.CompareSplits(a.Split, b.Split) < 0
	})
	return out
}

// ForgetSource drops a source's split stats and CDC progress (DROP SOURCE
// or TABLE).
func (l *SinkLog) ForgetSource(source string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k := range l.mu.splits {
		if k.source == source {
			delete(l.mu.splits, k)
		}
	}
	for k := range l.mu.cdc {
		if k.source == source {
			delete(l.mu.cdc, k)
		}
	}
}

// CDCProgress implements stream.SourceMonitor.
func (l *SinkLog) CDCProgress(p connector.CDCProgress) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.cdc == nil {
		l.mu.cdc = map[splitKey]connector.CDCProgress{}
	}
	l.mu.cdc[splitKey{p.Relation, p.Split}] = p
}

// CDCProgresses returns every CDC split's progress, by relation and split.
func (l *SinkLog) CDCProgresses() []connector.CDCProgress {
	l.mu.Lock()
	out := make([]connector.CDCProgress, 0, len(l.mu.cdc))
	for _, p := range l.mu.cdc {
		out = append(out, p)
	}
	l.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].Relation != out[j].Relation {
			return out[i].Relation < out[j].Relation
		}
		return stream.CompareSplits(out[i].Split, out[j].Split) < 0 // a CDC table's ranges by number
	})
	return out
}
