package types

import (
	"fmt"
	"testing"
)

// TestAppendRange: appending row ranges of a vector, with NULLs among them, gives the rows
// AppendFrom of each gives, for every physical layout (two ranges, so a misplaced NULL flag
// of the first shows in the second).
func TestAppendRange(t *testing.T) {
	for _, ty := range []T{TInt64, TFloat64, TVarchar, TNumeric, TInterval} {
		src := NewVector(ty, 8)
		for i := range 8 {
			d := Datum{Null: i%3 == 0, I: int64(i), F: float64(i) + 0.5, S: fmt.Sprint("s", i), Iv: IntervalValue{Days: int32(i)}}
			d.Dec.SetInt64(int64(i))
			if d.Null {
				d = NullDatum
			}
			src.Append(&d)
		}
		got, want := NewVector(ty, 0), NewVector(ty, 0)
		got.AppendRange(src, 1, 4)
		got.AppendRange(src, 4, 8)
		for i := 1; i < 8; i++ {
			want.AppendFrom(src, i)
		}
		if got.Len() != want.Len() {
			t.Fatalf("%s: %d rows, want %d", ty, got.Len(), want.Len())
		}
		for i := range want.Len() {
			g, w := got.Get(i), want.Get(i)
			if Compare(ty, &g, &w) != 0 || g.Null != w.Null {
				t.Errorf("%s row %d: %v, want %v", ty, i, g, w)
			}
		}
	}
}
