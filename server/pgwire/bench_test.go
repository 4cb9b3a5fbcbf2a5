package pgwire

import (
	"testing"

	"github.com/tributary/tributary/sql/types"
)

// BenchmarkDataRow measures DataRow encoding of one row of every type (15 columns),
// 1024 rows per chunk, in text and in binary format.
func BenchmarkDataRow(b *testing.B) {
	row := typesRow()
	rows := make([][]types.Datum, types.DefaultChunkSize)
	for i := range rows {
		rows[i] = row
	}
	ch := chunkOf(typesCols, rows...)
	binary := make([]int16, len(typesCols))
	for i := range binary {
		binary[i] = formatBinary
	}
	for _, bc := range []struct {
		name    string
		formats []int16
	}{{"text", nil}, {"binary", binary}} {
		b.Run(bc.name, func(b *testing.B) {
			var e rowEncoder
			buf := make([]byte, 0, 1<<20)
			b.ReportAllocs()
			var err error
			for b.Loop() {
				buf = buf[:0]
				for i := 0; i < ch.Len(); i++ {
					if buf, err = e.appendDataRow(buf, ch, i, typesCols, bc.formats); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*ch.Len()), "ns/row")
			b.ReportMetric(float64(len(buf))/float64(ch.Len()), "bytes/row")
		})
	}
}
