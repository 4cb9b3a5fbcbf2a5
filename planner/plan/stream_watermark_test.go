package plan

import (
	"testing"

	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
)

// TestWatermarkSource: a view's column is followed down through its
// materialize, exchanges, filters and projections of the column to the
// watermark filter on it; a computed column, another column or a column out
// of range has none.
func TestWatermarkSource(t *testing.T) {
	scan := &StreamValues{Out: []Field{{Name: "id", Type: types.TInt64}, {Name: "ts", Type: types.TTimestamp}}, Key: []int{0}}
	wf := &StreamWatermarkFilter{Input: scan, Col: 1}
	five, err := expr.Call("+", []expr.Expr{expr.Column(0, types.TInt64), expr.Literal(types.DInt(5), types.TInt64)})
	if err != nil {
		t.Fatal(err)
	}
	proj := &StreamProject{Input: &StreamFilter{Input: wf}, Exprs: []expr.Expr{expr.Column(1, types.TTimestamp), five, expr.Column(0, types.TInt64)},
		Out: []Field{{Name: "ts", Type: types.TTimestamp}, {Name: "x", Type: types.TInt64}, {Name: "id", Type: types.TInt64}}}
	root := &StreamMaterialize{Input: &StreamExchange{Input: proj}}
	if got := WatermarkSource(root, 0); got != wf {
		t.Errorf("column 0: got %v, want the watermark filter", got)
	}
	for _, col := range []int{1, 2, -1, 3} {
		if got := WatermarkSource(root, col); got != nil {
			t.Errorf("column %d: got %s, want none", col, got.Describe())
		}
	}
}
