package coordinator

import (
	"sort"
	"sync"

	"github.com/tributary/tributary/executor/stream"
)

// sinkEventsLen is how many sink failures a SinkLog keeps.
const sinkEventsLen = 1024

// SinkLog keeps what decoupled sinks report: each log store's latest state
// and the last sinkEventsLen failures. Like BarrierLog it may outlive a
// coordinator (Config.Sinks).
type SinkLog struct {
	mu struct {
		sync.Mutex
		stores map[storeKey]stream.SinkLogStats
		events []stream.SinkEvent // ring, next is the oldest once full
		next   int
	}
}

type storeKey struct {
	sink  string
	actor stream.ActorID
}

// NewSinkLog returns an empty log.
func NewSinkLog() *SinkLog {
	l := &SinkLog{}
	l.mu.stores = map[storeKey]stream.SinkLogStats{}
	return l
}

// LogStore implements stream.SinkMonitor.
func (l *SinkLog) LogStore(s stream.SinkLogStats) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mu.stores[storeKey{s.Sink, s.Actor}] = s
}

// Event implements stream.SinkMonitor.
func (l *SinkLog) Event(e stream.SinkEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.mu.events) < sinkEventsLen {
		l.mu.events = append(l.mu.events, e)
		return
	}
	l.mu.events[l.mu.next] = e
	l.mu.next = (l.mu.next + 1) % sinkEventsLen
}

// Forget drops the log store states of a sink (dropped, or rebuilt).
func (l *SinkLog) Forget(sink string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k := range l.mu.stores {
		if k.sink == sink {
			delete(l.mu.stores, k)
		}
	}
}

// Stores returns every log store's latest state, by sink and actor.
func (l *SinkLog) Stores() []stream.SinkLogStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]stream.SinkLogStats, 0, len(l.mu.stores))
	for _, s := range l.mu.stores {
		out = append(out, s)
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
