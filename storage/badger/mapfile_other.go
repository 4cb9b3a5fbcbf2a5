//go:build !(linux || darwin)

package badger

import (
	"io"
	"os"
)

// mapFile reads the first n bytes of f.
func mapFile(f *os.File, n int64) ([]byte, func(), error) {
	data := make([]byte, n)
	if _, err := io.ReadFull(io.NewSectionReader(f, 0, n), data); err != nil {
		return nil, nil, err
	}
	return data, func() {}, nil
}

// dataExtentEnd returns size: holes are not looked for here.
func dataExtentEnd(_ *os.File, size int64) int64 { return size }
