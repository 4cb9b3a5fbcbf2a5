package badger

import (
	"errors"
	"io"
	"os"
	"syscall"
)

// dataExtentEnd returns the end of the last data extent of f (preallocated files end in a hole),
// or size where the filesystem cannot tell.
func dataExtentEnd(f *os.File, size int64) int64 {
	const seekData, seekHole = 3, 4 // SEEK_DATA, SEEK_HOLE on Linux
	end := int64(0)
	for off := int64(0); off < size; {
		d, err := f.Seek(off, seekData)
		if errors.Is(err, syscall.ENXIO) {
			break // no data after off
		}
		if err != nil {
			return size // no SEEK_DATA here
		}
		h, err := f.Seek(d, seekHole)
		if err != nil {
			return size
		}
		end, off = h, h
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return size
	}
	return min(end, size)
}
