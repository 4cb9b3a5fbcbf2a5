package coordinator

import (
	"context"
	"fmt"
	"sync"

	"github.com/tributary/tributary/storage"
)

// Coordinator hands out epochs and commits write sets atomically.
type Coordinator struct {
	kv storage.KV
	mu struct {
		sync.Mutex
		last  uint64 // last epoch handed out
		batch storage.Batch
	}
}

// New returns a coordinator over kv; epochs continue above anything stored.
func New(kv storage.KV) *Coordinator {
	c := &Coordinator{kv: kv}
	c.mu.last = kv.MaxVersion()
	return c
}

// CommittedEpoch is the snapshot readers use.
func (c *Coordinator) CommittedEpoch() uint64 { return c.kv.CommittedEpoch() }

// Write runs fn with exclusive write access: fn reads at snapshot (the
// committed epoch when fn starts), fills the batch with writes for epoch, and
// Write commits it. If fn fails nothing is written. Writers are serialised,
// so a read-check-write inside fn (a primary-key check) is not raced by
// another writer.
func (c *Coordinator) Write(ctx context.Context, fn func(snapshot, epoch uint64, b *storage.Batch) error) (uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.batch.Reset()
	epoch := storage.NextEpoch(max(c.mu.last, c.kv.MaxVersion()))
	if err := fn(c.kv.CommittedEpoch(), epoch, &c.mu.batch); err != nil {
		return 0, err
	}
	if err := c.kv.Commit(ctx, epoch, &c.mu.batch); err != nil {
		return 0, fmt.Errorf("commit epoch %d: %w", epoch, err)
	}
	c.mu.last = epoch
	c.mu.batch.Reset()
	return epoch, nil
}
