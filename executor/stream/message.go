package stream

import (
	"fmt"

	"github.com/tributary/tributary/sql/types"
)

// Epoch is a barrier's epoch pair: data before the barrier belongs to Prev,
// which the barrier seals; data after it belongs to Curr.
type Epoch struct {
	Curr, Prev uint64
}

// Mutation is control carried by a barrier and applied by each executor
// exactly when the barrier passes through it.
type Mutation interface{ isMutation() }

// AddOutputs attaches new downstream outputs to actors' dispatchers: the
// barrier carrying it is the first message the new outputs receive.
type AddOutputs struct {
	Outputs map[ActorID][]*Output
}

// RemoveOutputs detaches downstream outputs (by id) once the barrier carrying
// it has been sent to them.
type RemoveOutputs struct {
	Outputs map[ActorID][]OutputID
}

// StopActors makes the listed actors forward this barrier and then end.
type StopActors struct {
	Actors map[ActorID]bool
}

// SetRateLimit changes a rate limit of the listed actors' executors online.
type SetRateLimit struct {
	Actors map[ActorID]bool
	// RowsPerSecond < 0 means unlimited; 0 pauses.
	RowsPerSecond int64
	// Backfill: the job's backfill rate (backfill_rate_limit), which a
	// connector source with a finite first part (a CDC table's copy)
	// applies to that part alone; else the source's rate.
	Backfill bool
}

// SetSinkRate changes the delivery rate of the listed actors' decoupled
// sinks online (rows per second; < 0 unlimited, 0 paused).
type SetSinkRate struct {
	Actors        map[ActorID]bool
	RowsPerSecond int64
}

// Mutations bundles several mutations in one barrier.
type Mutations []Mutation

func (*AddOutputs) isMutation()    {}
func (*RemoveOutputs) isMutation() {}
func (*StopActors) isMutation()    {}
func (*SetRateLimit) isMutation()  {}
func (*SetSinkRate) isMutation()   {}
func (Mutations) isMutation()      {}

// Barrier separates epochs in every stream. Checkpoint barriers make the
// sealed epoch durable (every barrier is one today: checkpoint frequency 1).
type Barrier struct {
	Epoch      Epoch
	Checkpoint bool
	Mutation   Mutation
}

// Stops reports whether the barrier stops actor id.
func (b *Barrier) Stops(id ActorID) bool {
	return forEachMutation(b.Mutation, func(m Mutation) bool {
		s, ok := m.(*StopActors)
		return ok && s.Actors[id]
	})
}

// forEachMutation calls fn on every mutation (flattening Mutations) and
// reports whether fn returned true for any.
func forEachMutation(m Mutation, fn func(Mutation) bool) bool {
	switch x := m.(type) {
	case nil:
		return false
	case Mutations:
		found := false
		for _, y := range x {
			if forEachMutation(y, fn) {
				found = true
			}
		}
		return found
	default:
		return fn(m)
	}
}

// ForEachMutation calls fn on every mutation a barrier carries.
func (b *Barrier) ForEachMutation(fn func(Mutation)) {
	forEachMutation(b.Mutation, func(m Mutation) bool { fn(m); return false })
}

func (b *Barrier) String() string {
	return fmt.Sprintf("barrier(prev=%d curr=%d)", b.Epoch.Prev, b.Epoch.Curr)
}

// Watermark says no later row of column Col will be below Val.
type Watermark struct {
	Col int
	Val types.Datum
}

// Message is exactly one of a chunk of changes, a barrier or a watermark.
// A chunk in a message is immutable from the moment it is sent: the sender
// never reuses it and receivers never modify it (except by building new
// chunks), so it may cross goroutines and be broadcast.
type Message struct {
	Chunk     *types.Chunk
	Barrier   *Barrier
	Watermark *Watermark
	// Split names the source split every row of Chunk was read from, when
	// the executor that read them says (a source reader's output, which a
	// watermark filter reads per split); "" otherwise.
	Split string
	// Partial marks a chunk of a local aggregation's partial rows that a
	// snapshot backfill's readers folded for it (fuseLocalAgg): the
	// projections between them pass it on as it is, and the aggregation
	// sends it as its own output.
	Partial bool
}

// ChunkMsg, BarrierMsg and WatermarkMsg build messages.
func ChunkMsg(c *types.Chunk) Message   { return Message{Chunk: c} }
func BarrierMsg(b *Barrier) Message     { return Message{Barrier: b} }
func WatermarkMsg(w *Watermark) Message { return Message{Watermark: w} }

// popQueued takes the first message of an executor's output queue (the
// slot is cleared so the queue does not keep it alive); false when empty.
func popQueued(q *[]Message) (Message, bool) {
	if len(*q) == 0 {
		return Message{}, false
	}
	m := (*q)[0]
	(*q)[0] = Message{}
	*q = (*q)[1:]
	return m, true
}
