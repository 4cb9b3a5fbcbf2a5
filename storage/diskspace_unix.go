//go:build linux || darwin

package storage

import (
	"fmt"
	"syscall"
)

// FreeBytes returns the bytes available to unprivileged users on the filesystem holding dir.
func FreeBytes(dir string) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("statfs %s: %w", dir, err)
	}
	return uint64(st.Bavail) * uint64(st.Bsize), nil
}
