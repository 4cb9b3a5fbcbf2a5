//go:build !unix

package badger

import "os"

// storedBytes is fi's size (no allocation figure here).
func storedBytes(fi os.FileInfo) int64 { return fi.Size() }
