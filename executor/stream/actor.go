package stream

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/tributary/tributary/storage"
)

// Collected is an actor's report that a barrier passed it: the epoch it
// sealed and the state writes of that epoch (nil when none).
type Collected struct {
	Actor   ActorID
	Barrier *Barrier
	Writes  *storage.Batch
	// Err is set when the actor failed; the coordinator then recovers.
	Err error
}

// Actor runs one chain of executors in its own goroutine and sends its
// output through a dispatcher.
type Actor struct {
	Ctx        *ActorContext
	Root       Executor
	Dispatcher *Dispatcher
	// Report receives a Collected for every barrier and for a failure. It must not block for long.
	Report func(Collected)
	// Closers run when the actor ends (executors holding goroutines, e.g. an Aligner).
	Closers []func()
}

// safeNext is e.Next with a panic turned into an error (its stack logged),
// for the goroutines that run executors outside Actor.Run (an aligner's or a
// backfill's input pumps): an unrecovered panic there ends the process.
func safeNext(ctx context.Context, e Executor) (m Message, err error) {
	defer func() {
		if r := recover(); r != nil {
			slog.Error("stream: executor panicked", "panic", r, "stack", string(debug.Stack()))
			m, err = Message{}, fmt.Errorf("executor panicked: %v", r)
		}
	}()
	return e.Next(ctx)
}

// Run pulls from the root until a barrier stops the actor, ctx ends, or an
// executor fails. Every barrier is dispatched downstream first, then the
// actor's state writes for the sealed epoch are reported with it.
func (a *Actor) Run(ctx context.Context) (err error) {
	defer func() {
		for _, c := range a.Closers {
			c()
		}
		a.Ctx.Release()
	}()
	defer func() {
		if r := recover(); r != nil {
			slog.Error("stream: actor panicked", "actor", a.Ctx.ID, "panic", r, "stack", string(debug.Stack()))
			err = fmt.Errorf("actor %d panicked: %v", a.Ctx.ID, r)
		}
		if err != nil && ctx.Err() == nil {
			a.Report(Collected{Actor: a.Ctx.ID, Err: err})
		}
	}()
	st := a.Ctx.Stats
	for {
		var t0 time.Time
		var waited int64
		if st != nil {
			t0, waited = time.Now(), st.waited.Load()
		}
		m, err := a.Root.Next(ctx)
		if err != nil {
			return fmt.Errorf("actor %d: %w", a.Ctx.ID, err)
		}
		var t1 time.Time
		if st != nil {
			t1 = time.Now()
			// Waits of the actor's other goroutines (a backfill's or a
			// join's input pumps) overlap this one's: never count less
			// than nothing, so the counter only grows.
			if busy := int64(t1.Sub(t0)) - (st.waited.Load() - waited); busy > 0 {
				st.BusyNanos.Add(busy)
			}
			if m.Chunk != nil {
				st.RowsOut.Add(int64(m.Chunk.Len()))
			}
		}
		if a.Dispatcher != nil {
			if err := a.Dispatcher.Dispatch(ctx, a.Ctx.ID, m); err != nil {
				return fmt.Errorf("actor %d dispatch: %w", a.Ctx.ID, err)
			}
			if st != nil {
				st.BlockedNanos.Add(int64(time.Since(t1)))
			}
		}
		if b := m.Barrier; b != nil {
			a.Ctx.Flush(b.Epoch.Prev)
			a.Report(Collected{Actor: a.Ctx.ID, Barrier: b, Writes: a.Ctx.TakeWrites()})
			if b.Stops(a.Ctx.ID) {
				return nil
			}
		}
	}
}
