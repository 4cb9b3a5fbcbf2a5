package coordinator

import (
	"errors"

	"github.com/tributary/tributary/executor/stream"
	"github.com/tributary/tributary/sql/types"
)

// root is a barrier entry point: a table's DML source (chunks and barriers on
// one channel) or a constant source (barriers only).
type root struct {
	msgs     chan stream.Message
	barriers chan *stream.Barrier
	// For a table's DML source (table set; outputs under the coordinator's
	// mu): outputs counts its dispatcher's outputs (the jobs reading the
	// table), as the barriers sent so far leave them. A source with no
	// outputs gets no chunks (sendChunk) and has nothing to pass on: barriers
	// without mutations skip it (a lone writer's commit then waits for no
	// actor). Outputs change only with a mutation, so a source skipped that
	// way had none for the whole epoch and was sent nothing in it.
	table   bool
	outputs int
}

// idle reports whether barrier b may skip r (the caller holds the
// coordinator's mu).
func (r *root) idle(b *stream.Barrier) bool {
	return r.table && r.outputs == 0 && b.Mutation == nil
}

// reads reports whether chunks sent to r reach a reader (sendChunk drops
// them otherwise).
func (r *root) reads() bool { return !r.table || r.outputs > 0 }

// sendChunk sends a change chunk to a table's DML source (the caller holds
// the coordinator's mu). It blocks until the actor takes it, or fails with
// the engine. A source with no outputs would drop the chunk: it is not sent
// (outputs change only at barriers, which follow the epoch's chunks, so a job
// attached by the next barrier reads these rows from the snapshot), and the
// epoch's commit then waits for no actor of the table. A nil chunk (rows
// not captured: the table had no reader) is not sent either.
func (r *root) sendChunk(chunk *types.Chunk, stop, failed <-chan struct{}) error {
	if chunk == nil || !r.reads() {
		return nil
	}
	select {
	case r.msgs <- stream.ChunkMsg(chunk):
		return nil
	case <-failed:
		return ErrRecovering
	case <-stop:
		return ErrStopped
	}
}

// countOutputs applies the output changes of barrier b's mutations to the
// roots' output counts (the caller holds the coordinator's mu).
func countOutputs(roots map[stream.ActorID]*root, b *stream.Barrier) {
	b.ForEachMutation(func(m stream.Mutation) {
		switch x := m.(type) {
		case *stream.AddOutputs:
			for id, outs := range x.Outputs {
				if r := roots[id]; r != nil {
					r.outputs += len(outs)
				}
			}
		case *stream.RemoveOutputs:
			for id, outs := range x.Outputs {
				if r := roots[id]; r != nil {
					r.outputs -= len(outs)
				}
			}
		}
	})
}

var errActorFailed = errors.New("an actor failed")

func (r *root) sendBarrier(b *stream.Barrier, stop, failed <-chan struct{}) error {
	if r.msgs != nil {
		select {
		case r.msgs <- stream.BarrierMsg(b):
			return nil
		case <-stop:
			return ErrStopped
		case <-failed:
			return errActorFailed
		}
	}
	select {
	case r.barriers <- b:
		return nil
	case <-stop:
		return ErrStopped
	case <-failed:
		return errActorFailed
	}
}
