package storage

import "time"

// epochPhysicalShift is the number of low bits of an epoch left for bumps within one millisecond.
const epochPhysicalShift = 16

// NextEpoch returns a new epoch strictly greater than prev: the current wall-clock time in milliseconds
// shifted left by 16 bits, or prev+1 when the clock has not moved past prev (same millisecond, or a
// clock behind the stored epochs after a restart).
func NextEpoch(prev uint64) uint64 {
	e := uint64(time.Now().UnixMilli()) << epochPhysicalShift
	if e <= prev {
		return prev + 1
	}
	return e
}

// EpochTime returns the wall-clock time an epoch was generated at (millisecond precision).
func EpochTime(epoch uint64) time.Time {
	return time.UnixMilli(int64(epoch >> epochPhysicalShift))
}
