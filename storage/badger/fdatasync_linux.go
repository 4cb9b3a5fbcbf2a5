package badger

import (
	"os"
	"syscall"
)

// fdatasync writes f's data (and the metadata needed to read it) to the disk.
func fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
