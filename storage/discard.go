package storage

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// DiscardTracker computes a store's effective discard epoch from the epoch requested by
// SetDiscardEpoch and the live pins. KV implementations embed one; its zero value has discard epoch 0.
// It is safe for concurrent use.
type DiscardTracker struct {
	effective atomic.Uint64
	mu        struct {
		sync.Mutex
		requested uint64
		pins      map[uint64]int // epoch -> number of live pins
	}
}

// Init sets the requested and effective discard epoch of a freshly opened store.
func (d *DiscardTracker) Init(epoch uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.mu.requested = epoch
	d.effective.Store(epoch)
}

// Effective returns the effective discard epoch.
func (d *DiscardTracker) Effective() uint64 { return d.effective.Load() }

// Set implements KV.SetDiscardEpoch given the store's committed epoch.
func (d *DiscardTracker) Set(epoch, committed uint64) error {
	if epoch > committed {
		return fmt.Errorf("set discard epoch %d above committed epoch %d: %w", epoch, committed, ErrEpochNotCommitted)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if epoch > d.mu.requested {
		d.mu.requested = epoch
		d.updateLocked()
	}
	return nil
}

// Pin implements KV.Pin.
func (d *DiscardTracker) Pin(epoch uint64) (release func(), err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if eff := d.effective.Load(); epoch < eff {
		return nil, fmt.Errorf("pin epoch %d below discard epoch %d: %w", epoch, eff, ErrEpochDiscarded)
	}
	if d.mu.pins == nil {
		d.mu.pins = make(map[uint64]int)
	}
	d.mu.pins[epoch]++
	var once sync.Once
	return func() {
		once.Do(func() {
			d.mu.Lock()
			defer d.mu.Unlock()
			if d.mu.pins[epoch]--; d.mu.pins[epoch] == 0 {
				delete(d.mu.pins, epoch)
			}
			d.updateLocked()
		})
	}, nil
}

func (d *DiscardTracker) updateLocked() {
	eff := d.mu.requested
	for e := range d.mu.pins {
		eff = min(eff, e)
	}
	// The effective epoch never moves back: a pin is only granted at or above it.
	if eff > d.effective.Load() {
		d.effective.Store(eff)
	}
}

// CheckRead returns an error unless a read at epoch is allowed: the effective discard epoch <= epoch
// <= committed.
func (d *DiscardTracker) CheckRead(epoch, committed uint64) error {
	if epoch > committed {
		return fmt.Errorf("read at epoch %d above committed epoch %d: %w", epoch, committed, ErrEpochNotCommitted)
	}
	if eff := d.effective.Load(); epoch < eff {
		return fmt.Errorf("read at epoch %d below discard epoch %d: %w", epoch, eff, ErrEpochDiscarded)
	}
	return nil
}
