package coordinator

import (
	"sync"
	"time"
)

// BarrierStat is one committed epoch's barrier round trip: from the barrier's
// injection into the roots to the end of the epoch's commit to storage.
type BarrierStat struct {
	Epoch     uint64
	Injected  time.Time
	Committed time.Time
	Latency   time.Duration // Committed - Injected
	// ByWriter: the statement that wrote the epoch drove its barrier itself
	// (no other barrier was in flight), not the barrier loop.
	ByWriter bool
}

// barrierHistoryLen is how many committed epochs a BarrierLog keeps.
const barrierHistoryLen = 16384

// BarrierLog keeps the last barrierHistoryLen BarrierStats in a ring. One log
// may outlive a coordinator (Config.Barriers): recovery's new coordinator
// appends to the failed one's history.
type BarrierLog struct {
	mu struct {
		sync.Mutex
		ring []BarrierStat // grows to barrierHistoryLen, then is overwritten at next
		next int
		// watchers see every stat as it is recorded (Watch).
		watchers []func(BarrierStat)
	}
}

// NewBarrierLog returns an empty log.
func NewBarrierLog() *BarrierLog { return &BarrierLog{} }

// Watch calls fn with every stat recorded from now on, on the commit path:
// fn must be quick and must not call back into the log (metrics count
// epochs with it, which a scrape of the ring could miss once it wraps).
func (l *BarrierLog) Watch(fn func(BarrierStat)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mu.watchers = append(l.mu.watchers, fn)
}

func (l *BarrierLog) record(s BarrierStat) {
	l.mu.Lock()
	if len(l.mu.ring) < barrierHistoryLen {
		l.mu.ring = append(l.mu.ring, s)
	} else {
		l.mu.ring[l.mu.next] = s
		l.mu.next = (l.mu.next + 1) % barrierHistoryLen
	}
	watchers := l.mu.watchers
	l.mu.Unlock()
	for _, fn := range watchers {
		fn(s)
	}
}

// Stats returns a copy of the kept stats, oldest (lowest epoch) first.
func (l *BarrierLog) Stats() []BarrierStat {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]BarrierStat, 0, len(l.mu.ring))
	out = append(out, l.mu.ring[l.mu.next:]...)
	return append(out, l.mu.ring[:l.mu.next]...)
}

// Latency returns the barrier latency of a recently committed epoch (found
// false when the epoch is not among the last 256 committed, or failed).
func (l *BarrierLog) Latency(epoch uint64) (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(l.mu.ring)
	for i := 1; i <= min(n, 256); i++ {
		s := l.mu.ring[(l.mu.next-i+n)%n]
		if s.Epoch == epoch {
			return s.Latency, true
		}
		if s.Epoch < epoch {
			break
		}
	}
	return 0, false
}

// BarrierHistory returns the last committed epochs' barrier latencies
// (at most 16384), oldest first.
func (c *Coordinator) BarrierHistory() []BarrierStat { return c.cfg.Barriers.Stats() }
