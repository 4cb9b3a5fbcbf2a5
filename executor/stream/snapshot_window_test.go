package stream

import (
	"testing"
	"time"
)

// runEpoch opens an epoch, emits up to want rows within its budget, seals and
// judges it with the given latency; it returns the rows emitted.
func runEpoch(w *snapshotWindow, epoch uint64, busy bool, want int64, lat time.Duration) int64 {
	w.open(busy)
	n := min(want, w.budget())
	w.rows += n
	w.seal(epoch, time.Now())
	w.judge(epoch, func(e uint64) (time.Duration, bool) { return lat, e == epoch })
	return n
}

func TestSnapshotWindowBusyRestsAndFollowsBaseline(t *testing.T) {
	w := newSnapshotWindow()
	// The first busy epoch has no baseline: it emits nothing and measures one.
	if n := runEpoch(&w, 1, true, 1<<20, time.Millisecond); n != 0 {
		t.Fatalf("first busy epoch emitted %d rows, want 0", n)
	}
	if w.base != time.Millisecond {
		t.Fatalf("baseline %v, want 1ms", w.base)
	}
	// Epochs within 1.05x the baseline grow the window; every eighth rests.
	epoch, rests, last := uint64(2), 0, w.busy
	for i := 0; i < 40; i++ {
		if runEpoch(&w, epoch, true, 1<<20, 1040*time.Microsecond) == 0 {
			rests++
		}
		epoch++
	}
	if rests != 5 {
		t.Fatalf("%d resting epochs in 40, want 5 (one in %d)", rests, busyRestEvery)
	}
	if w.busy <= last {
		t.Fatalf("window %d did not grow from %d under a fast barrier", w.busy, last)
	}
	// Slow epochs halve it down to the floor, and at the floor one is sat out.
	for w.busy > busyWindowMin {
		before := w.busy
		n := runEpoch(&w, epoch, true, 1<<20, 5*time.Millisecond)
		epoch++
		if n > 0 && w.busy >= before {
			t.Fatalf("window %d did not shrink from %d under a slow barrier", w.busy, before)
		}
	}
	w.sinceRest = 0 // keep the scheduled rest out of the way
	runEpoch(&w, epoch, true, 1<<20, 5*time.Millisecond)
	epoch++
	if !w.restNext {
		t.Fatalf("a slow epoch at the floor did not make the next one rest")
	}
	if n := runEpoch(&w, epoch, true, 1<<20, time.Millisecond); n != 0 {
		t.Fatalf("the epoch after a slow one at the floor emitted %d rows", n)
	}
	// Busy chunks are no larger than the window.
	w.open(true)
	if got := w.chunkRows(); got != int(w.busy) {
		t.Fatalf("busy chunk rows %d, window %d", got, w.busy)
	}
}

func TestSnapshotWindowIdleDoublesAndHalves(t *testing.T) {
	w := newSnapshotWindow()
	start := w.idle
	runEpoch(&w, 1, false, 1<<30, 10*time.Millisecond)
	if w.idle != 2*start {
		t.Fatalf("idle window %d after a fast epoch, want %d", w.idle, 2*start)
	}
	runEpoch(&w, 2, false, 1<<30, time.Second)
	if w.idle != start {
		t.Fatalf("idle window %d after a slow epoch, want %d", w.idle, start)
	}
	// An epoch without rows says nothing about the window.
	runEpoch(&w, 3, false, 0, time.Second)
	if w.idle != start {
		t.Fatalf("idle window %d changed by an empty epoch", w.idle)
	}
	w.open(false)
	if w.chunkRows() != idleChunkRows {
		t.Fatalf("idle chunk rows %d, want %d", w.chunkRows(), idleChunkRows)
	}
}

func TestSnapshotWindowAsksForBarriers(t *testing.T) {
	w := newSnapshotWindow()
	w.open(false)
	if w.wantBarrier() {
		t.Fatalf("asked for a barrier with budget left")
	}
	w.rows = w.idle
	if !w.wantBarrier() || w.wantBarrier() {
		t.Fatalf("an idle full window must ask once")
	}
	w.base = time.Millisecond
	w.open(true)
	w.rows = w.busy
	if w.wantBarrier() {
		t.Fatalf("a busy full window asked before %v", busyBarrierGap)
	}
	w.opened = time.Now().Add(-busyBarrierGap)
	if !w.wantBarrier() {
		t.Fatalf("a busy full window did not ask after %v", busyBarrierGap)
	}
}
