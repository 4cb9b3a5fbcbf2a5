package badger_test

import (
	"context"
	"encoding/binary"
	"testing"

	"github.com/tributary/tributary/storage"
	"github.com/tributary/tributary/storage/badger"
)

// BenchmarkBadgerCommit commits epochs of 100k single-row keys (16-byte keys, 16-byte values) and
// reports rows/s.
func BenchmarkBadgerCommit(b *testing.B) {
	const rows = 100_000
	s, err := badger.Open(badger.Options{Dir: b.TempDir()}) // Badger's default memtable
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var batch storage.Batch
	key := make([]byte, 16)
	val := make([]byte, 16)
	ctx := context.Background()
	next := uint64(0)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		batch.Reset()
		for r := range rows {
			binary.BigEndian.PutUint64(key, uint64(i%4))
			binary.BigEndian.PutUint64(key[8:], uint64(r)*2654435761%rows)
			binary.BigEndian.PutUint64(val, uint64(i))
			batch.Put(key, val)
		}
		next++
		if err := s.Commit(ctx, next, &batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(rows*b.N)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkBadgerSmallCommit commits one-row epochs, synced (the default) or not, and reports
// the time per commit: the floor of a lone client's durable INSERT.
func BenchmarkBadgerSmallCommit(b *testing.B) {
	for _, noSync := range []bool{false, true} {
		name := "fsync"
		if noSync {
			name = "nosync"
		}
		b.Run(name, func(b *testing.B) {
			s, err := badger.Open(badger.Options{Dir: b.TempDir(), NoSync: noSync})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			var batch storage.Batch
			key := make([]byte, 16)
			ctx := context.Background()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				batch.Reset()
				binary.BigEndian.PutUint64(key, uint64(i))
				batch.Put(key, key)
				if err := s.Commit(ctx, uint64(i+1), &batch); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
