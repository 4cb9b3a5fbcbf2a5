package expr

import (
	"sync/atomic"
	"time"
)

// lastRowID is the last hidden row id handed out (tables without a primary
// key): ids are microseconds since 1970 shifted left by 10, bumped to stay
// unique and increasing within the process. Restarts move to a later clock,
// so ids never repeat.
var lastRowID atomic.Int64

// NextRowID returns a new unique row id.
func NextRowID() int64 {
	for {
		prev := lastRowID.Load()
		next := time.Now().UnixMicro() << 10
		if next <= prev {
			next = prev + 1
		}
		if lastRowID.CompareAndSwap(prev, next) {
			return next
		}
	}
}
