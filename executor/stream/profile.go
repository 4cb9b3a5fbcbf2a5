package stream

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/tributary/tributary/sql/types"
)

// OpStats are one operator's counters in one actor, read while it runs
// (EXPLAIN ANALYZE of a running job, the dashboard): atomics, counted per
// message, never per row.
type OpStats struct {
	// RowsOut are the rows of the chunks the operator returned.
	RowsOut atomic.Int64
	// BusyNanos is the time spent in its Next, its inputs' included, less
	// the time the actor's merges waited for input meanwhile.
	BusyNanos atomic.Int64
	// CacheHits and CacheMisses count the lookups of a stateful operator's
	// in-memory state (groups, join keys, top-n groups) that found the entry
	// cached, or had to read it from the state table.
	CacheHits, CacheMisses atomic.Int64
	// Alone on its cache lines: the actors of a fragment run on different
	// cores, and counters sharing a line with another actor's would make
	// every add a cache miss (false sharing).
	_ [128 - 4*8]byte
}

// hit counts a cache lookup (st may be nil: not counted).
func (st *OpStats) hit(found bool) {
	if st == nil {
		return
	}
	if found {
		st.CacheHits.Add(1)
	} else {
		st.CacheMisses.Add(1)
	}
}

// OpCounter is implemented by operators that count more than the chunks
// they return: CountInto makes them count into st (stateful operators their
// cache lookups; a connector table's source the rows it writes into the
// table, which it does not return).
type OpCounter interface {
	CountInto(st *OpStats)
}

// Profile returns in counting into st; actor (may be nil) is the actor's
// counters, whose merge waits are not counted as busy time.
func Profile(in Executor, actor *ActorStats, st *OpStats) Executor {
	return &profiled{in: in, actor: actor, st: st}
}

type profiled struct {
	in    Executor
	actor *ActorStats
	st    *OpStats
}

// Schema implements Executor.
func (p *profiled) Schema() []types.T { return p.in.Schema() }

// Next implements Executor.
func (p *profiled) Next(ctx context.Context) (Message, error) {
	var w0 int64
	if p.actor != nil {
		w0 = p.actor.waited.Load()
	}
	t0 := time.Now()
	m, err := p.in.Next(ctx)
	d := int64(time.Since(t0))
	if p.actor != nil {
		d -= p.actor.waited.Load() - w0
	}
	if d > 0 {
		p.st.BusyNanos.Add(d)
	}
	if m.Chunk != nil {
		p.st.RowsOut.Add(int64(m.Chunk.Len()))
	}
	return m, err
}
