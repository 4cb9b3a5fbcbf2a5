package storage

import (
	"slices"
	"sync"
)

// StagedEpochs tracks the epochs a store holds staged writes of (KV.Stage) that are neither
// committed nor dropped yet. Safe for concurrent use.
type StagedEpochs struct {
	mu     sync.Mutex
	epochs []uint64 // ascending
}

// Add notes that epoch has staged writes.
func (s *StagedEpochs) Add(epoch uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i, found := slices.BinarySearch(s.epochs, epoch); !found {
		s.epochs = slices.Insert(s.epochs, i, epoch)
	}
}

// Has reports whether epoch has staged writes not yet committed or dropped: reads at it are allowed.
func (s *StagedEpochs) Has(epoch uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, found := slices.BinarySearch(s.epochs, epoch)
	return found
}

// Abandoned returns the staged epochs below epoch: a Commit of epoch drops them.
func (s *StagedEpochs) Abandoned(epoch uint64) []uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, _ := slices.BinarySearch(s.epochs, epoch)
	return slices.Clone(s.epochs[:i])
}

// Forget removes every staged epoch at or below epoch (committed, or dropped by its commit).
func (s *StagedEpochs) Forget(epoch uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, found := slices.BinarySearch(s.epochs, epoch)
	if found {
		i++
	}
	s.epochs = slices.Delete(s.epochs, 0, i)
}

// ForgetBelow removes every staged epoch below epoch (dropped by a Commit of epoch).
func (s *StagedEpochs) ForgetBelow(epoch uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, _ := slices.BinarySearch(s.epochs, epoch)
	s.epochs = slices.Delete(s.epochs, 0, i)
}

// Max returns the highest staged epoch, 0 when none.
func (s *StagedEpochs) Max() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.epochs) == 0 {
		return 0
	}
	return s.epochs[len(s.epochs)-1]
}

// CheckRead is DiscardTracker.CheckRead allowing reads at a staged epoch too.
func (s *StagedEpochs) CheckRead(d *DiscardTracker, epoch, committed uint64) error {
	if epoch > committed && s.Has(epoch) {
		committed = epoch
	}
	return d.CheckRead(epoch, committed)
}
