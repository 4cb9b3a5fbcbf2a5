package badger

import (
	"os"
	"syscall"
)

// openDirect opens path again for writes that bypass the page cache and are
// on stable storage when they return (O_DIRECT|O_DSYNC: PostgreSQL's
// open_datasync). nil where the filesystem refuses it (tmpfs).
func openDirect(path string) *os.File {
	f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_DIRECT|syscall.O_DSYNC, 0)
	if err != nil {
		return nil
	}
	return f
}
