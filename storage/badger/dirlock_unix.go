//go:build linux || darwin

package badger

import (
	"fmt"
	"os"
	"syscall"
)

// withDirLock runs fn holding the same exclusive flock Badger takes on the
// data directory, so fn never races a running server. It returns ErrInUse
// when another process holds the lock.
func withDirLock(dir string, fn func() error) error {
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("lock data dir %s: %w", dir, err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return fmt.Errorf("data dir %s is in use by another process: %w", dir, ErrInUse)
	}
	defer syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return fn()
}
