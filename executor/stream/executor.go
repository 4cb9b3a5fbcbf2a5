package stream

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage"
	"github.com/tributary/tributary/storage/memory"
	"github.com/tributary/tributary/storage/state"
)

// ActorID identifies an actor within the server.
type ActorID uint32

// Executor is a pull-based stream operator.
//
// Next returns the next message. Chunks carry row ops (Insert, Delete,
// UpdateDelete, UpdateInsert; an UpdateDelete is immediately followed by its
// UpdateInsert in the same chunk) and may have a visibility mask (invisible
// rows are not part of the stream). An executor handles the messages it owns
// and forwards the rest: on a Barrier it first emits everything the sealed
// epoch produced, flushes its state tables into its ActorContext (Flush), and
// then returns the barrier. Next returns io.EOF after the barrier that stops
// its actor (Barrier.Stops) and on every later call; any other error fails
// the actor. Executors are used by one goroutine (their actor's).
type Executor interface {
	// Schema returns the column types of the chunks Next returns.
	Schema() []types.T
	Next(ctx context.Context) (Message, error)
}

// ActorContext is what an actor's executors share: the store to read state
// from, the batch collecting the state writes of the epoch being sealed, and
// the actor's identity and vnode ownership.
type ActorContext struct {
	ID    ActorID
	Store storage.KV
	// Stats are the actor's counters (nil: not counted).
	Stats *ActorStats
	// Vnodes lists the vnodes this actor owns for hash-distributed state (nil: all).
	Vnodes []uint16
	// CacheRows bounds how many rows a stateful executor keeps in memory
	// (beyond it, state is read back from storage). 0 means a default.
	CacheRows int
	// RequestBarrier asks the coordinator for the next barrier soon (nil: no
	// one to ask); a backfill that has emitted its share of an epoch calls it.
	RequestBarrier func()
	// Foreground reports whether running pipelines are busy with writes
	// (nil: never); backfills then keep their share of each epoch small.
	Foreground func() bool
	// BarrierLatency returns a recently committed epoch's barrier latency,
	// from injection to commit (nil or not found: unknown).
	BarrierLatency func(epoch uint64) (time.Duration, bool)
	// Sinks collects decoupled sinks' log store state and failures (nil: not
	// collected).
	Sinks SinkMonitor
	// SinkInto writes a sink's change rows into a table in the open epoch,
	// with extra writes in the same epoch, and returns the epoch;
	// WaitCommitted waits for an epoch to commit (nil: no sinks into tables).
	SinkInto      func(ctx context.Context, rel *catalog.Relation, rows *types.Chunk, extra *storage.Batch) (uint64, error)
	WaitCommitted func(ctx context.Context, epoch uint64) error
	// OpenEpoch returns the epoch writes go into now (nil: unknown).
	OpenEpoch func() uint64
	// Flushing reports whether a FLUSH waits for the sinks into tables to
	// write their entries (nil: never); a paced one then writes as fast as
	// a coupled one.
	Flushing func() bool
	// EvalErrors receives the job's runtime expression errors, which make
	// values NULL instead of failing the job (nil: discarded).
	EvalErrors *EvalErrors
	// Memory is the byte budget the stateful executors' caches share with
	// every other actor's (nil: bounded by CacheRows only); Job labels the
	// actor's accounts in rw_memory.
	Memory *memory.Pool
	Job    uint32

	mu       sync.Mutex
	writes   storage.Batch
	tables   []*state.Table
	shared   []*state.Table // opened with SharedTable
	accounts []*memory.Account
}

// cacheAccount opens an account of the actor's memory pool for one cache
// (nil without a pool); Release closes it.
func (a *ActorContext) cacheAccount(name string) *memory.Account {
	acct := a.Memory.Open(memory.Label{Name: name, Job: a.Job, Actor: uint32(a.ID)})
	if acct != nil {
		a.mu.Lock()
		a.accounts = append(a.accounts, acct)
		a.mu.Unlock()
	}
	return acct
}

// Release returns the memory the actor's caches hold to its pool. The actor
// calls it when it ends; whoever builds executors on a context and never
// runs them calls it instead.
func (a *ActorContext) Release() {
	a.mu.Lock()
	accts := a.accounts
	a.accounts = nil
	a.mu.Unlock()
	for _, acct := range accts {
		acct.Close()
	}
}

// NewTable opens a state table for one of the actor's executors and
// registers it, so Flush seals its writes with every barrier.
func (a *ActorContext) NewTable(s state.Schema) (*state.Table, error) {
	t, err := state.New(a.Store, s)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	a.tables = append(a.tables, t)
	a.mu.Unlock()
	return t, nil
}

// SharedTable opens the state table s for executors of the actor that share it: the first
// call opens and registers it (NewTable), later ones return the same table, so each sees the
// others' pending writes (a materialized view's table holding its aggregation's groups,
// plan.StreamAgg.ViewState). Every call must give the same schema.
func (a *ActorContext) SharedTable(s state.Schema) (*state.Table, error) {
	a.mu.Lock()
	for _, t := range a.shared {
		if t.Schema().TableID == s.TableID {
			a.mu.Unlock()
			if !sameSchema(t.Schema(), s) {
				return nil, fmt.Errorf("state table %d: opened twice with different schemas", s.TableID)
			}
			return t, nil
		}
	}
	a.mu.Unlock()
	t, err := a.NewTable(s)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	a.shared = append(a.shared, t)
	a.mu.Unlock()
	return t, nil
}

func sameSchema(a, b state.Schema) bool {
	return a.TableID == b.TableID && slices.Equal(a.Types, b.Types) && slices.Equal(a.PK, b.PK) &&
		slices.Equal(a.PKDesc, b.PKDesc) && slices.Equal(a.DistKey, b.DistKey) && a.Blocks == b.Blocks
}

// Flush moves the epoch's writes of every registered table into the actor's
// batch. Executors need not call it: the actor does, when the barrier leaves
// its root executor (all executors of the actor have seen it by then).
func (a *ActorContext) Flush(epoch uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, t := range a.tables {
		t.Flush(epoch, &a.writes)
	}
}

// TakeWrites returns the collected writes as a new batch and empties the
// actor's batch.
func (a *ActorContext) TakeWrites() *storage.Batch {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.writes.Len() == 0 {
		return nil
	}
	// Hand the batch over rather than copy it: an epoch's writes can be
	// hundreds of MB, and a kept batch would keep the largest epoch's capacity.
	out := new(storage.Batch)
	*out = a.writes
	a.writes = storage.Batch{}
	return out
}

// DefaultCacheRows is the per-executor row cache when ActorContext.CacheRows is 0.
const DefaultCacheRows = 1 << 16
