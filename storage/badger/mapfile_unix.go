//go:build linux || darwin

package badger

import (
	"os"
	"syscall"
)

// mapFile maps the first n bytes of f read-only.
func mapFile(f *os.File, n int64) ([]byte, func(), error) {
	data, err := syscall.Mmap(int(f.Fd()), 0, int(n), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	return data, func() { _ = syscall.Munmap(data) }, nil
}
