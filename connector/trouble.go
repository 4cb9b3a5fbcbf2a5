package connector

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// TroubleEvery is the least time between two reports of a TroubleLog.
const TroubleEvery = 5 * time.Second

// TroubleLog passes a reader's errors to a ReaderEnv's Trouble: the first,
// then at most one per TroubleEvery (saying how many were left out), one at
// a time, and none once closed. The zero value with Fn set is ready.
type TroubleLog struct {
	Fn     func(error)
	closed atomic.Bool
	mu     struct {
		sync.Mutex
		last    time.Time
		skipped int
	}
}

// Close stops the reports.
func (t *TroubleLog) Close() { t.closed.Store(true) }

// Report passes err on unless one was passed on within TroubleEvery.
func (t *TroubleLog) Report(err error) { t.send(err, false) }

// ReportNow passes err on in any case (data lost: every one counts).
func (t *TroubleLog) ReportNow(err error) { t.send(err, true) }

func (t *TroubleLog) send(err error, now bool) {
	if t.Fn == nil || t.closed.Load() {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	at := time.Now()
	if !now && !t.mu.last.IsZero() && at.Sub(t.mu.last) < TroubleEvery {
		t.mu.skipped++
		return
	}
	if t.mu.skipped > 0 {
		err = fmt.Errorf("%w (and %d more errors since the last report)", err, t.mu.skipped)
	}
	t.mu.last, t.mu.skipped = at, 0
	t.Fn(err)
}
