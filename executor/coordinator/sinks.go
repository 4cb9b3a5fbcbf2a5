package coordinator

import (
	"sort"
	"sync"
	"time"

	"github.com/tributary/tributary/connector"
	"github.com/tributary/tributary/executor/stream"
)

// sinkEventsLen is how many sink failures a SinkLog keeps.
const sinkEventsLen = 1024

// SinkLog keeps what decoupled sinks report: each running log store reader's
// state function and the last sinkEventsLen failures. Like BarrierLog it may
// outlive a coordinator (Config.Sinks).
type SinkLog struct {
	mu struct {
		sync.Mutex
		stores map[storeKey]*registration
		events []stream.SinkEvent // ring, next is the oldest once full
		next   int
		// sources' split stats and when each kind of event was last logged
		splits  map[splitKey]*SourceSplitStats
		sampled map[splitKey]time.Time
		cdc     map[splitKey]connector.CDCProgress
	}
}

type storeKey struct {
	sink  string
	actor stream.ActorID
}

type registration struct{ stats func() stream.SinkLogStats }

// NewSinkLog returns an empty log.
func NewSinkLog() *SinkLog {
	l := &SinkLog{}
	l.mu.stores = map[storeKey]*registration{}
	return l
}

// Register implements stream.SinkMonitor. A later registration of the same
// sink and actor (a rebuilt job) replaces the earlier one.
func (l *SinkLog) Register(sink string, actor stream.ActorID, stats func() stream.SinkLogStats) func() {
	k, reg := storeKey{sink, actor}, &registration{stats: stats}
	l.mu.Lock()
	l.mu.stores[k] = reg
	l.mu.Unlock()
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.mu.stores[k] == reg {
			delete(l.mu.stores, k)
		}
	}
}

// Event implements stream.SinkMonitor.
func (l *SinkLog) Event(e stream.SinkEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.eventLocked(e)
}

func (l *SinkLog) eventLocked(e stream.SinkEvent) {
	if len(l.mu.events) < sinkEventsLen {
		l.mu.events = append(l.mu.events, e)
		return
	}
	l.mu.events[l.mu.next] = e
	l.mu.next = (l.mu.next + 1) % sinkEventsLen
}

// Stores returns every running log store's current state, by sink and actor.
func (l *SinkLog) Stores() []stream.SinkLogStats {
	l.mu.Lock()
	regs := make([]*registration, 0, len(l.mu.stores))
	for _, r := range l.mu.stores {
		regs = append(regs, r)
	}
	l.mu.Unlock()
	out := make([]stream.SinkLogStats, 0, len(regs))
	for _, r := range regs {
		out = append(out, r.stats())
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Sink != out[j].Sink {
			return out[i].Sink < out[j].Sink
		}
		return out[i].Actor < out[j].Actor
	})
	return out
}

// Events returns the kept failures, oldest first.
func (l *SinkLog) Events() []stream.SinkEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]stream.SinkEvent, 0, len(l.mu.events))
	out = append(out, l.mu.events[l.mu.next:]...)
	return append(out, l.mu.events[:l.mu.next]...)
}
