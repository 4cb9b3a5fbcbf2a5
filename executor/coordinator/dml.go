package coordinator

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/executor/batch"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage"
)

// DML runs fn with exclusive access to the tables' pending state for the
// open epoch: fn's reads see every earlier statement of the epoch, its
// writes go into that epoch together with the change chunks it produced
// (sent to the tables' streaming jobs), and DML returns once the epoch is
// committed. If fn fails its writes are discarded.
func (c *Coordinator) DML(ctx context.Context, fn func(tables *batch.TableSet, snapshot uint64) error) error {
	c.foreground.Store(time.Now().UnixNano())
	if c.kv.CommittedEpoch() < c.firstEpoch {
		// A failed coordinator before this one may have left writes staged
		// in an epoch that never committed; a statement that stages reads
		// its own epoch, where they would show, until this coordinator's
		// first commit drops them. Only the first statements wait for it.
		c.RequestBarrier()
		if err := c.WaitCommitted(ctx, c.firstEpoch); err != nil {
			if c.Failed() != nil {
				return ErrRecovering
			}
			return err
		}
	}
	c.mu.Lock()
	if c.mu.stopped {
		c.mu.Unlock()
		return ErrStopped
	}
	if c.mu.failed != nil {
		c.mu.Unlock()
		return ErrRecovering
	}
	tables := c.mu.tables
	epoch := c.mu.epoch
	staged := false
	gcPercent := -2 // not changed
	tables.SetSpill(c.spillRows(), func() error {
		if !staged {
			// The statement's rows pass through memory piece by piece: its
			// live heap stays small, but at GOGC=100 the heap grows to twice
			// what was live at the last collection between collections, and
			// every piece and Badger memtable is new garbage. Collect more
			// often while it runs.
			gcPercent = debug.SetGCPercent(stagingGCPercent)
		}
		if err := c.stageLocked(ctx, epoch, tables, !staged); err != nil {
			return err
		}
		staged = true
		return nil
	})
	sentEarly := false
	tables.SetSendEarly(func() error {
		sentEarly = true
		return c.sendChangesLocked(tables)
	})
	err := c.underLock(func() error { return fn(tables, c.kv.CommittedEpoch()) })
	tables.SetSendEarly(nil)
	tables.SetSpill(0, nil)
	if gcPercent != -2 {
		debug.SetGCPercent(gcPercent)
	}
	if err != nil {
		tables.Discard()
		c.mu.Unlock()
		if staged || sentEarly {
			// Part of the statement is in the store at epoch or its
			// changes went to the streaming jobs: the epoch cannot commit
			// without it. Fail the epoch; recovery rebuilds the jobs from the
			// last committed epoch, the store drops what was staged at the
			// next commit, and the epoch's other statements are retried.
			// (A statement sends its changes early only when nothing after
			// can fail but a panic or a broken invariant.)
			what := "had staged its writes"
			if !staged {
				what = "had sent its changes to the streaming jobs"
			}
			c.failOnce.Do(func() { close(c.failedCh) })
			c.fail(epoch, fmt.Errorf("%w: a statement that %s in epoch %d failed: %v", ErrRecovering, what, epoch, err))
		}
		return err
	}
	tables.Flush(epoch, &c.mu.batch)
	if err := c.sendChangesLocked(tables); err != nil {
		c.mu.Unlock()
		return err
	}
	c.mu.Unlock()
	return c.commitEpoch(ctx, epoch)
}

// underLock runs fn, a statement's work done with c.mu held, turning a panic
// into an error (its stack logged): the caller then discards the work and
// unlocks c.mu. A panic that went past it would leave c.mu locked when the
// connection's handler recovers it, and every later statement and barrier
// would wait forever.
func (c *Coordinator) underLock(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			c.cfg.Logger.Error("a statement panicked", "panic", r, "stack", string(debug.Stack()))
			err = fmt.Errorf("internal error: %v", r)
		}
	}()
	return fn()
}

// stagingGCPercent is the garbage collector's target while a statement
// stages its writes (debug.SetGCPercent; the previous value comes back after).
const stagingGCPercent = 25

// DefaultSpillRows is how many rows a DML statement writes before they are
// staged into the store (Coordinator.stageLocked) instead of held in memory.
const DefaultSpillRows = 65536

func (c *Coordinator) spillRows() int {
	if c.cfg.SpillRows > 0 {
		return c.cfg.SpillRows
	}
	return DefaultSpillRows
}

// stageLocked moves a running DML statement's pending writes out of memory:
// into the store at the open epoch (storage.KV.Stage), invisible to readers
// until the epoch commits, and its change chunks on to the tables' streaming
// jobs, which see them in that epoch as they would at the statement's end.
// The first time in a statement, the epoch's earlier writes (its batch, and
// the tables' flushed layers) are staged first, so the statement's writes
// stay the newest and the tables can read everything at epoch from the
// store. The caller holds c.mu.
func (c *Coordinator) stageLocked(ctx context.Context, epoch uint64, tables *batch.TableSet, first bool) error {
	b := new(storage.Batch)
	if first {
		b.Append(&c.mu.batch)
		c.mu.batch.Reset()
	}
	tables.Stage(epoch, b)
	n := b.Len() // b belongs to the store once staged
	if err := c.kv.Stage(ctx, epoch, b); err != nil {
		return fmt.Errorf("stage the statement's writes in epoch %d: %w", epoch, err)
	}
	c.mu.stagedRows += n
	return c.sendChangesLocked(tables)
}

// sendChangesLocked sends the tables' captured changes to their streaming
// jobs (the caller holds c.mu). The writes are in the epoch already: the
// chunks must follow them, so a cancel does not stop a send; only a failed
// or stopped engine does (the epoch then never commits).
func (c *Coordinator) sendChangesLocked(tables *batch.TableSet) error {
	for id, chunk := range tables.TakeChanges() {
		delete(c.mu.fresh, id) // DML wrote it: a generated key may now exist
		src, ok := c.mu.sources[id]
		if !ok {
			continue
		}
		if err := c.mu.roots[src].sendChunk(chunk, c.stop, c.failedCh); err != nil {
			return err
		}
	}
	return nil
}

// tableWriter writes a connector source's rows into its table in the open
// epoch, as DML does (stream.TableWriter).
type tableWriter struct {
	c   *Coordinator
	rel *catalog.Relation
}

func (w *tableWriter) Write(ctx context.Context, epoch uint64, chunk *types.Chunk, fresh string) (bool, error) {
	return w.write(ctx, epoch, func(tables *batch.TableSet) error {
		if fresh != "" || w.c.mu.fresh[w.rel.ID] {
			return tables.InsertNew(ctx, w.rel, fresh, chunk)
		}
		return tables.Upsert(ctx, w.rel, batch.Committed, chunk)
	})
}

// Truncate deletes every row of the table (those in says, when not nil)
// in the open epoch (an upstream TRUNCATE), its deletes going to the
// table's streaming jobs as DML's do (stream.TableWriter).
func (w *tableWriter) Truncate(ctx context.Context, epoch uint64, in func(row []types.Datum) bool) (bool, error) {
	return w.write(ctx, epoch, func(tables *batch.TableSet) error {
		return tables.DeleteAll(ctx, w.rel, w.c.kv.CommittedEpoch(), in)
	})
}

// write runs fn on the tables' pending state for the open epoch (with c.mu
// held) and sends the table's changes to its streaming jobs; false when
// epoch is no longer open or the table is being dropped.
func (w *tableWriter) write(ctx context.Context, epoch uint64, fn func(tables *batch.TableSet) error) (bool, error) {
	c := w.c
	c.foreground.Store(time.Now().UnixNano())
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.stopped || c.mu.failed != nil || c.mu.epoch != epoch {
		return false, nil
	}
	if _, ok := c.mu.sources[w.rel.ID]; !ok {
		return false, nil // the table is being dropped
	}
	tables := c.mu.tables
	if err := c.underLock(func() error { return fn(tables) }); err != nil {
		tables.Discard()
		return false, err
	}
	tables.Flush(epoch, &c.mu.batch)
	for id, changes := range tables.TakeChanges() {
		src, ok := c.mu.sources[id]
		if !ok {
			continue
		}
		// As in DML: the writes are in the epoch, the chunk must follow them.
		if err := c.mu.roots[src].sendChunk(changes, c.stop, c.failedCh); err != nil {
			return false, err
		}
	}
	return true, nil
}

// WriteSinkRows applies a sink's change rows to table rel (TableSet.Apply) in
// the open epoch, together with extra (the sink's log store truncation), so
// both commit or neither: exactly once. The table's change chunks go to its
// streaming jobs as DML's do. It returns the epoch; the caller waits for it.
func (c *Coordinator) WriteSinkRows(ctx context.Context, rel *catalog.Relation, rows *types.Chunk, extra *storage.Batch) (uint64, error) {
	// A sink's log reader starts when its job is built, which during
	// recovery is before Start: the table's source actor does not run yet,
	// and a send to it below would block with c.mu held (every later AddJob,
	// and so the restart, then waits forever).
	select {
	case <-c.startedCh:
	case <-c.stop:
		return 0, ErrStopped
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.stopped {
		return 0, ErrStopped
	}
	if c.mu.failed != nil {
		return 0, ErrRecovering
	}
	src, ok := c.mu.sources[rel.ID]
	if !ok {
		return 0, fmt.Errorf("sink into %s: the table has no running stream", rel.QualifiedName())
	}
	tables := c.mu.tables
	if err := c.underLock(func() error { return tables.Apply(ctx, rel, batch.Committed, rows) }); err != nil {
		tables.Discard()
		return 0, err
	}
	epoch := c.mu.epoch
	tables.Flush(epoch, &c.mu.batch)
	c.mu.batch.Append(extra)
	delete(c.mu.fresh, rel.ID)
	for id, changes := range tables.TakeChanges() {
		if id != rel.ID {
			continue
		}
		// As in DML: the writes are in the epoch, the chunk must follow them.
		if err := c.mu.roots[src].sendChunk(changes, c.stop, c.failedCh); err != nil {
			return 0, err
		}
	}
	c.RequestBarrier()
	return epoch, nil
}

// Write adds catalog or cleanup writes to the open epoch (fn may read at
// snapshot) and waits for the epoch to commit.
func (c *Coordinator) Write(ctx context.Context, fn func(snapshot, epoch uint64, b *storage.Batch) error) (uint64, error) {
	c.mu.Lock()
	if c.mu.stopped {
		c.mu.Unlock()
		return 0, ErrStopped
	}
	if c.mu.failed != nil {
		c.mu.Unlock()
		return 0, ErrRecovering
	}
	var local storage.Batch
	epoch := c.mu.epoch
	if err := c.underLock(func() error { return fn(c.kv.CommittedEpoch(), epoch, &local) }); err != nil {
		c.mu.Unlock()
		return 0, err
	}
	c.mu.batch.Append(&local)
	c.mu.Unlock()
	return epoch, c.commitEpoch(ctx, epoch)
}
