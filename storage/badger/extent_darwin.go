package badger

import "os"

// dataExtentEnd returns size: holes are not looked for here.
func dataExtentEnd(_ *os.File, size int64) int64 { return size }
