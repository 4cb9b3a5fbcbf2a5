//go:build !linux

package badger

import "os"

// fdatasync writes f to the disk (fsync where fdatasync is not available).
func fdatasync(f *os.File) error { return f.Sync() }
