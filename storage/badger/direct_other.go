//go:build !linux

package badger

import "os"

// openDirect: direct synchronous writes are used on Linux only.
func openDirect(string) *os.File { return nil }
