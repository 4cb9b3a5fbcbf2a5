package plan

import (
	"fmt"

	"github.com/tributary/tributary/sql/types"
)

// HopWindow expands each input row into the time windows containing its
// TimeCol value: HOP(t, col, slide, size), and TUMBLE(t, col, size) as
// slide = size. Output: the input columns, then window_start and window_end
// (TimeCol's type). Windows start at multiples of Slide (counted from
// 1970-01-01 00:00 in microseconds); a row is in Size/Slide windows, emitted
// in ascending window_start order. A row whose TimeCol is NULL is in no window.
type HopWindow struct {
	Input   Node
	TimeCol int
	Slide   types.IntervalValue
	Size    types.IntervalValue
	Out     []Field
}

func (n *HopWindow) Schema() []Field  { return n.Out }
func (n *HopWindow) Children() []Node { return []Node{n.Input} }
func (n *HopWindow) Describe() string {
	return fmt.Sprintf("HopWindow time $%d slide %s size %s", n.TimeCol,
		types.AppendInterval(nil, n.Slide), types.AppendInterval(nil, n.Size))
}

// WindowMicros is a month-free window interval's length in microseconds (a
// day counts 24 hours). The binder only accepts month-free, positive
// intervals of at most MaxWindowDays days.
func WindowMicros(iv types.IntervalValue) int64 {
	return int64(iv.Days)*86_400_000_000 + iv.Micros
}

// MaxWindowDays bounds a window interval's days so WindowMicros cannot overflow.
const MaxWindowDays = 10_000_000

// FirstWindow returns the start of the earliest window of length size
// (microseconds, a positive multiple of slide) containing time t, and how
// many windows contain it: they start at first, first+slide, ...
func FirstWindow(t, slide, size int64) (first int64, count int) {
	last := t - t%slide
	if t%slide < 0 {
		last -= slide
	}
	n := size / slide
	return last - (n-1)*slide, int(n)
}
