package state_test

import (
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/tributary/tributary/storage"
	"github.com/tributary/tributary/storage/badger"
	"github.com/tributary/tributary/storage/state"
)

// BenchmarkStateTableScan scans a committed 100k-row table (int64 pk, varchar, int32) on Badger,
// vnode by vnode, decoding every row; it reports rows/s.
func BenchmarkStateTableScan(b *testing.B) {
	const rows = 100_000
	kv, err := badger.Open(badger.Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer kv.Close()
	tb := mustNew(b, kv, userSchema(1))
	for i := int64(0); i < rows; i++ {
		if err := tb.Insert(row(i, fmt.Sprintf("user-%d", i), i%1000)); err != nil {
			b.Fatal(err)
		}
	}
	var batch storage.Batch
	tb.Flush(1, &batch)
	if err := kv.Commit(context.Background(), 1, &batch); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		it, err := tb.Iter(context.Background(), state.IterOptions{Vnode: state.AllVnodes})
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for {
			err := it.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if err := it.Close(); err != nil {
			b.Fatal(err)
		}
		if n != rows {
			b.Fatalf("scanned %d rows", n)
		}
	}
	b.ReportMetric(float64(rows*b.N)/b.Elapsed().Seconds(), "rows/s")
}
