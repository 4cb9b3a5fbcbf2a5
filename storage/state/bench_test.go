package state_test

import (
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/tributary/tributary/sql/types"
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

// BenchmarkConflictCheck checks 1000 new keys (above every stored one, as an ascending-id bulk
// insert has) against a committed 300k-row Badger table: point reads (get) or one ordered read
// (stored-keys). It reports ns per key.
func BenchmarkConflictCheck(b *testing.B) {
	const rows, batch = 300_000, 1000
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
	var bt storage.Batch
	tb.Flush(1, &bt)
	if err := kv.Commit(context.Background(), 1, &bt); err != nil {
		b.Fatal(err)
	}
	keys := make([][]byte, batch)
	pks := make([][]types.Datum, batch)
	for i := range keys {
		r := row(rows+int64(i), "", 0)
		keys[i], pks[i] = tb.RowKey(nil, r), r[:1]
	}
	found := make([]bool, batch)
	ctx := context.Background()
	b.Run("get", func(b *testing.B) {
		var dst []types.Datum
		for i := 0; i < b.N; i++ {
			for _, pk := range pks {
				var ok bool
				if dst, ok, err = tb.GetAt(ctx, 1, pk, dst); err != nil || ok {
					b.Fatal(ok, err)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/key")
	})
	b.Run("stored-keys", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if err := tb.StoredKeys(ctx, 1, keys, found); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/key")
	})
}
