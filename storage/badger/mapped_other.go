//go:build !linux

package badger

// MappedTables returns the bytes of the store's table files resident in the process's memory:
// 0 where the system cannot tell (mapped_linux.go).
func (s *Store) MappedTables() (int64, error) { return 0, nil }

// TrimMapped hands back resident pages of the store's table files: nothing to do where
// MappedTables cannot tell (mapped_linux.go).
func (s *Store) TrimMapped(limit int64) (before, after int64, err error) { return 0, 0, nil }
