package stream

import (
	"sync/atomic"
	"time"
)

// ActorStats are an actor's running counters, which /metrics reads while
// the actor runs (atomics; waited is the actor goroutine's own).
type ActorStats struct {
	// RowsIn are the rows it received through its exchanges (merges), RowsOut
	// the rows of the chunks it sent on.
	RowsIn, RowsOut atomic.Int64
	// BusyNanos is the time spent in its executors, less the time they
	// waited for input; BlockedNanos the time its output waited for
	// downstream actors to take it (backpressure).
	BusyNanos, BlockedNanos atomic.Int64
	// waited is the time its merges waited for input so far.
	waited atomic.Int64
	_      [128 - 5*8]byte // alone on its cache lines, as OpStats
}

// waitedFor adds a merge's wait for input.
func (s *ActorStats) waitedFor(d time.Duration) {
	if s != nil {
		s.waited.Add(int64(d))
	}
}

// received counts a merge's received chunk.
func (s *ActorStats) received(m Message) {
	if s != nil && m.Chunk != nil {
		s.RowsIn.Add(int64(m.Chunk.Len()))
	}
}

// waitedFor adds an executor's wait (for a barrier, a rate limit, an
// external system) to its actor's; a nil context or stats count nothing.
func (a *ActorContext) waitedFor(d time.Duration) {
	if a != nil {
		a.Stats.waitedFor(d)
	}
}
