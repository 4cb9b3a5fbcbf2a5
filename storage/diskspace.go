package storage

import "fmt"

// DefaultMinFreeBytes is the free space below which stores refuse commits by default: Badger dies with
// SIGBUS when its filesystem fills up, so refusing writes early keeps the process alive.
const DefaultMinFreeBytes = 256 << 20

// CheckFreeSpace returns an error wrapping ErrDiskFull when the filesystem holding dir has fewer than
// minFree bytes available.
func CheckFreeSpace(dir string, minFree uint64) error {
	free, err := FreeBytes(dir)
	if err != nil {
		return err
	}
	if free < minFree {
		return fmt.Errorf("data dir %s has %d bytes free, below the minimum %d: %w", dir, free, minFree, ErrDiskFull)
	}
	return nil
}
