package blackhole

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tributary/tributary/sql/types"
)

// Name is the connector option value.
const Name = "blackhole"

// Config is a blackhole sink's options.
type Config struct {
	// Delay is slept in every Commit (blackhole.delay_ms): a slow sink.
	Delay time.Duration
}

// Parse reads the blackhole options of props (keys case-insensitive); other
// blackhole.* keys are refused.
func Parse(props map[string]string) (Config, error) {
	var cfg Config
	for k, v := range props {
		k = strings.ToLower(k)
		if !strings.HasPrefix(k, "blackhole.") {
			continue
		}
		switch k {
		case "blackhole.delay_ms":
			ms, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil || ms < 0 {
				return cfg, types.Errorf(types.ErrInvalidParameter, "blackhole.delay_ms must be a non-negative integer, got %q", v)
			}
			cfg.Delay = time.Duration(ms) * time.Millisecond
		default:
			return cfg, types.Errorf(types.ErrInvalidParameter, "unknown blackhole sink option %q (known: blackhole.delay_ms)", k)
		}
	}
	return cfg, nil
}

// Sink counts and discards rows.
type Sink struct {
	cfg       Config
	rows      int64 // visible rows written
	committed int64 // rows written before the last Commit
}

// New returns a blackhole sink.
func New(cfg Config) *Sink { return &Sink{cfg: cfg} }

// Write implements connector.Sink.
func (s *Sink) Write(_ context.Context, c *types.Chunk) error {
	s.rows += int64(c.NumVisible())
	return nil
}

// Commit implements connector.Sink: it waits Delay, then forgets the epoch.
func (s *Sink) Commit(ctx context.Context, epoch uint64) error {
	if s.cfg.Delay > 0 {
		t := time.NewTimer(s.cfg.Delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return fmt.Errorf("blackhole commit of epoch %d: %w", epoch, ctx.Err())
		}
	}
	s.committed = s.rows
	return nil
}

// Rows returns the rows written and the rows committed so far.
func (s *Sink) Rows() (written, committed int64) { return s.rows, s.committed }

// Close implements connector.Sink.
func (s *Sink) Close() error { return nil }

// CommitsEpochsTogether implements connector.MultiEpochCommitter: a decoupled
// blackhole catches up in large commits (each still sleeping Delay once).
func (s *Sink) CommitsEpochsTogether() bool { return true }
