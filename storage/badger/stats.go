package badger

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	bdg "github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/ristretto/v2"
)

// Stats are the store's sizes and Badger's health, read by /metrics.
type Stats struct {
	// LSMBytes and VlogBytes are the sizes of the LSM tree's tables and of
	// the value log files (the disk space they take: the newest file is
	// preallocated sparse).
	LSMBytes, VlogBytes int64
	// Levels are the LSM levels from L0 down.
	Levels []LevelStats
	// L0StallTables is the L0 table count at which Badger stalls writes.
	L0StallTables int
	// WriteStalls counts the writes Badger held for over a second because
	// L0 was full, and WriteStallTime their total wait; SlowCompactions the
	// compactions that took over two seconds (Badger reports no others).
	WriteStalls     int64
	WriteStallTime  time.Duration
	SlowCompactions int64
}

// LevelStats is one LSM level.
type LevelStats struct {
	Level, Tables int
	Bytes         int64
}

// badgerEvents counts what Badger's info log tells of stalls and slow
// compactions (it keeps its own counts private).
type badgerEvents struct {
	stalls, stallNanos, slowCompactions atomic.Int64
}

// note counts one info message of Badger (its format and arguments).
func (e *badgerEvents) note(format string, args []any) {
	switch {
	case strings.HasPrefix(format, "L0 was stalled for"):
		e.stalls.Add(1)
		if len(args) > 0 {
			if d, ok := args[0].(time.Duration); ok {
				e.stallNanos.Add(int64(d))
			}
		}
	case strings.Contains(format, "LOG Compact"):
		e.slowCompactions.Add(1)
	}
}

// Stats returns the store's current sizes and counters.
func (s *Store) Stats() Stats {
	st := Stats{L0StallTables: s.l0Stall}
	if s.events != nil {
		st.WriteStalls = s.events.stalls.Load()
		st.WriteStallTime = time.Duration(s.events.stallNanos.Load())
		st.SlowCompactions = s.events.slowCompactions.Load()
	}
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closeMu.closed {
		return st
	}
	for _, l := range s.db.Levels() {
		st.Levels = append(st.Levels, LevelStats{Level: l.Level, Tables: l.NumTables, Bytes: l.Size})
		st.LSMBytes += l.Size
	}
	// The value log's size is what its files take on disk (Badger counts it
	// only with its expvar metrics on, which we leave off).
	if files, err := filepath.Glob(filepath.Join(s.dir, "*.vlog")); err == nil {
		for _, f := range files {
			if fi, err := os.Stat(f); err == nil {
				st.VlogBytes += storedBytes(fi)
			}
		}
	}
	return st
}

// MemoryStats are Badger's memory settings and what its caches hold.
type MemoryStats struct {
	// Sizes are the settings, the caches at their current (possibly
	// shrunk) sizes.
	Sizes MemorySizes
	// BlockCacheUsed and IndexCacheUsed are the bytes the caches hold, as
	// their counters of bytes added and evicted tell.
	BlockCacheUsed, IndexCacheUsed int64
}

// Memory returns Badger's memory settings and its caches' use.
func (s *Store) Memory() MemoryStats {
	m := MemoryStats{Sizes: s.sizes}
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closeMu.closed {
		return m
	}
	if n, err := s.db.CacheMaxCost(bdg.BlockCache, -1); err == nil {
		m.Sizes.BlockCacheSize = n
	}
	if n, err := s.db.CacheMaxCost(bdg.IndexCache, -1); err == nil {
		m.Sizes.IndexCacheSize = n
	}
	held := func(mt *ristretto.Metrics) int64 {
		if mt == nil {
			return 0
		}
		return max(int64(mt.CostAdded())-int64(mt.CostEvicted()), 0)
	}
	m.BlockCacheUsed = held(s.db.BlockCacheMetrics())
	m.IndexCacheUsed = held(s.db.IndexCacheMetrics())
	return m
}

// ScaleCaches sets the block and index caches to scale (0 < scale <= 1)
// times their sizes as opened; they evict down to it as entries are added.
// The memtables keep their size (Badger cannot change it while open).
func (s *Store) ScaleCaches(scale float64) {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closeMu.closed {
		return
	}
	scale = min(max(scale, 0), 1)
	_, _ = s.db.CacheMaxCost(bdg.BlockCache, max(int64(float64(s.sizes.BlockCacheSize)*scale), minCacheSize))
	_, _ = s.db.CacheMaxCost(bdg.IndexCache, max(int64(float64(s.sizes.IndexCacheSize)*scale), minCacheSize))
}
