package stream

import (
	"slices"
	"time"
)

// snapshotWindow bounds the snapshot rows a snapshot backfill emits between
// two barriers. The new job's state changes of an epoch commit with every
// running job's, so what the backfill emits in an epoch is what it adds to
// everyone's barrier latency. The window adapts to the barrier latency the
// coordinator measured for each epoch (injection to commit), in one of two
// modes chosen per epoch:
//
//   - busy, while DML or a connector source wrote rows in the last second:
//     someone waits for each commit, so the backfill may not make barriers
//     slower than they are without it. Every eighth epoch emits nothing, and
//     the median latency of the last 15 such epochs is the baseline. An epoch
//     that emitted rows and committed within 1.05x the baseline
//     grows the window by a quarter; one that did not halves it, and at the
//     floor the next epoch emits nothing. Barriers come as often as the
//     writers commit, so the backfill asks for one only when its window is
//     full and none came for busyBarrierGap, and the readers read chunks no
//     larger than the window.
//   - idle: only the backfill's speed matters. The window doubles after an
//     epoch that committed within idleTarget and halves otherwise, and a full
//     window asks for the next barrier at once.
type snapshotWindow struct {
	idle, busy int64
	busyNow    bool            // the open epoch's mode
	rows       int64           // snapshot rows emitted in the open epoch
	asked      bool            // a barrier was requested in the open epoch
	opened     time.Time       // when the open epoch began
	resting    bool            // the open epoch emits nothing
	restNext   bool            // the next epoch emits nothing (even the floor was too much)
	sinceRest  int             // busy epochs since the last resting one
	base       time.Duration   // median of restLat
	restLat    []time.Duration // the last busyBaseSamples busy epochs without rows
	sealed     []sealedEpoch   // epochs not yet judged, oldest first
}

type sealedEpoch struct {
	epoch      uint64
	rows       int64
	busy, rest bool
	at         time.Time
}

const (
	idleWindowMin     = BackfillChunkRows
	idleWindowMax     = 1024 * BackfillChunkRows
	idleWindowInitial = 16 * BackfillChunkRows
	idleTarget        = 50 * time.Millisecond
	// idleChunkRows is the readers' chunk when only the backfill's speed
	// matters: every chunk is a hand-off from a reader to the actor (a
	// goroutine parked and woken on each side of the channel), and a 10M-row
	// GROUP BY view's backfill took 0.60-0.63 s with 4,096-row chunks against
	// 0.66-0.69 s with 1,024 (docs/benchmarks.md).
	idleChunkRows     = 4 * BackfillChunkRows
	busyWindowMin     = 32
	busyWindowMax     = 16 * BackfillChunkRows
	busyWindowInitial = 256
	// An epoch with snapshot rows may take this much longer than the baseline
	// (in percent) before the busy window shrinks.
	busyTolerancePercent = 105
	busyRestEvery        = 8
	busyBarrierGap       = 10 * time.Millisecond
	busyBaseSamples      = 15
)

// median returns the middle value of ds (which it does not modify).
func median(ds []time.Duration) time.Duration {
	sorted := slices.Clone(ds)
	slices.Sort(sorted)
	return sorted[len(sorted)/2]
}

func newSnapshotWindow() snapshotWindow {
	return snapshotWindow{idle: idleWindowInitial, busy: busyWindowInitial}
}

// open starts an epoch in the given mode.
func (w *snapshotWindow) open(busy bool) {
	w.rows, w.asked, w.busyNow, w.opened = 0, false, busy, time.Now()
	w.resting, w.restNext = w.restNext, false
	if busy {
		w.sinceRest++
		if w.base == 0 || w.sinceRest >= busyRestEvery {
			w.resting = true
		}
		if w.resting {
			w.sinceRest = 0
		}
	}
}

// seal records the rows of the epoch a barrier closed, to judge it once
// committed.
func (w *snapshotWindow) seal(epoch uint64, at time.Time) {
	if len(w.sealed) >= 64 { // never judged (unknown latencies): forget the oldest
		w.sealed = w.sealed[1:]
	}
	w.sealed = append(w.sealed, sealedEpoch{epoch: epoch, rows: w.rows, busy: w.busyNow, rest: w.resting, at: at})
}

// budget is how many more snapshot rows the open epoch may emit.
func (w *snapshotWindow) budget() int64 {
	if w.resting {
		return 0
	}
	win := w.idle
	if w.busyNow {
		win = w.busy
	}
	return max(win-w.rows, 0)
}

// wantBarrier reports whether the backfill should ask for the next barrier
// now (once per epoch): its window is full and, if busy, the epoch is old.
func (w *snapshotWindow) wantBarrier() bool {
	if w.asked || w.budget() > 0 || (w.busyNow && time.Since(w.opened) < busyBarrierGap) {
		return false
	}
	w.asked = true
	return true
}

// chunkRows is the size of the chunks the readers should read now.
func (w *snapshotWindow) chunkRows() int {
	if w.busyNow {
		return int(min(max(w.busy, busyWindowMin), BackfillChunkRows))
	}
	return idleChunkRows
}

// judge adjusts the windows by the committed epochs' barrier latencies
// (latency nil or unknown: the time from sealing to now).
func (w *snapshotWindow) judge(committed uint64, latency func(uint64) (time.Duration, bool)) {
	for len(w.sealed) > 0 && w.sealed[0].epoch <= committed {
		e := w.sealed[0]
		w.sealed = w.sealed[1:]
		lat, ok := time.Duration(0), false
		if latency != nil {
			lat, ok = latency(e.epoch)
		}
		if !ok {
			lat = time.Since(e.at)
		}
		w.judgeEpoch(e, lat)
	}
}

func (w *snapshotWindow) judgeEpoch(e sealedEpoch, lat time.Duration) {
	switch {
	case e.busy && e.rows == 0:
		if len(w.restLat) == busyBaseSamples {
			w.restLat = w.restLat[1:]
		}
		w.restLat = append(w.restLat, lat)
		w.base = median(w.restLat)
	case e.busy:
		if w.base == 0 {
			return
		}
		if lat*100 <= w.base*busyTolerancePercent {
			w.busy = min(w.busy+max(w.busy/4, busyWindowMin), busyWindowMax)
			return
		}
		w.restNext = w.busy == busyWindowMin
		w.busy = max(w.busy/2, busyWindowMin)
	case e.rows == 0:
	case lat <= idleTarget:
		w.idle = min(w.idle*2, idleWindowMax)
	default:
		w.restNext = w.idle == idleWindowMin
		w.idle = max(w.idle/2, idleWindowMin)
	}
}
