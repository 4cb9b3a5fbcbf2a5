package storage

import (
	"fmt"
	"sync"
	"time"
)

// DefaultMinFreeBytes is the free space below which stores refuse commits by default: Badger dies with
// SIGBUS when its filesystem fills up, so refusing writes early keeps the process alive.
const DefaultMinFreeBytes = 256 << 20

// CheckFreeSpace returns an error wrapping ErrDiskFull when the filesystem holding dir has fewer than
// minFree bytes available.
func CheckFreeSpace(dir string, minFree uint64) error {
	free, err := FreeBytes(dir)
	if err != nil {
		return err
	}
	if free < minFree {
		return fmt.Errorf("data dir %s has %d bytes free, below the minimum %d: %w", dir, free, minFree, ErrDiskFull)
	}
	return nil
}

// SpaceGuard is CheckFreeSpace for a store that checks before every commit: it asks the
// filesystem again only when its last answer is older than spaceRecheck, or when the bytes
// checked for since then (an upper bound on what the store wrote) bring the free space it
// last saw within spaceMargin of the minimum. A statfs per commit cost a single-row commit
// about 3% of its CPU. Space taken by other processes is noticed within spaceRecheck. The
// zero value is ready; it is safe for concurrent use.
type SpaceGuard struct {
	mu    sync.Mutex
	at    time.Time
	free  uint64 // at the last statfs
	asked uint64 // bytes checked for since then
	dirty bool   // at is set
}

const (
	spaceRecheck = 250 * time.Millisecond
	spaceMargin  = 64 << 20
)

// Check returns an error wrapping ErrDiskFull when dir's filesystem may have fewer than
// minFree+need bytes available once need more are written.
func (g *SpaceGuard) Check(dir string, minFree, need uint64) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.dirty && time.Since(g.at) < spaceRecheck && g.free >= g.asked+need+minFree+spaceMargin {
		g.asked += need
		return nil
	}
	free, err := FreeBytes(dir)
	if err != nil {
		return err
	}
	g.at, g.free, g.asked, g.dirty = time.Now(), free, 0, true
	if free < minFree+need {
		return fmt.Errorf("data dir %s has %d bytes free, below the minimum %d: %w", dir, free, minFree+need, ErrDiskFull)
	}
	g.asked = need
	return nil
}
