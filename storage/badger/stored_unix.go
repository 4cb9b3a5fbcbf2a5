//go:build unix

package badger

import (
	"os"
	"syscall"
)

// storedBytes is the disk space fi's file takes: its allocated blocks, not its apparent size
// (Badger preallocates its newest value-log file sparse, to twice its size), and never more
// than its size.
func storedBytes(fi os.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return min(fi.Size(), st.Blocks*512)
	}
	return fi.Size()
}
