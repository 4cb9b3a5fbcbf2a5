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

// MultiEpochCommitter is implemented by sinks whose Commit may cover the
// changes of several epochs at once (committed as the last of them): a
// decoupled sink's reader then catches up in fewer, larger commits. Sinks
// whose output is named by epoch (files) do not, so that a replayed epoch
// rewrites the same output.
type MultiEpochCommitter interface {
	CommitsEpochsTogether() bool
}

// Column is one column of the rows a sink receives.
type Column struct {
	Name string
	Type types.T
	// Hidden columns (a generated row id) are part of the rows but not of
	// what the sink shows.
	Hidden bool
}

// SinkTarget is what a sink connector instance is opened for: the sink's
// columns, its key, and the writer number of the actor that owns it (stable
// across restarts, distinct among the sink's actors).
type SinkTarget struct {
	Sink    string // the sink's qualified name
	Columns []Column
	// Key names the columns that identify a row of the sink's stream (nil
	// when they are not all visible: an upsert then needs primary_key).
	Key    []string
	Writer int
}
