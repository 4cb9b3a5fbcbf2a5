package connector

import (
	"context"

	"github.com/tributary/tributary/sql/types"
)

// Sink delivers a streaming job's changes to an external system, epoch by
// epoch. One Sink serves one actor; it is not used concurrently.
type Sink interface {
	// Write takes one chunk of the open epoch's changes (its visible rows, with
	// their ops).
	Write(ctx context.Context, c *types.Chunk) error
	// Commit ends the epoch: what was written since the last Commit is
	// delivered when it returns.
	Commit(ctx context.Context, epoch uint64) error
	// Close releases the sink's resources.
	Close() error
}
