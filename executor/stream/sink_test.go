package stream

import (
	"testing"

	"github.com/tributary/tributary/sql/types"
)

func TestSinkAppendOnlyView(t *testing.T) {
	c := types.NewChunk([]types.T{types.TInt64}, 4)
	ops := []types.Op{types.OpInsert, types.OpDelete, types.OpUpdateDelete, types.OpUpdateInsert}
	for i, op := range ops {
		c.AppendRowOp(op, []types.Datum{types.DInt(int64(i))})
	}
	s := &sinkExec{appendOnly: true}
	v := s.inserts(c)
	var kept []int64
	for i := 0; i < v.Len(); i++ {
		if v.Visible(i) {
			if v.Op(i) != types.OpInsert {
				t.Errorf("row %d: op %v in an append-only view", i, v.Op(i))
			}
			kept = append(kept, v.Cols[0].Get(i).I)
		}
	}
	if len(kept) != 2 || kept[0] != 0 || kept[1] != 3 {
		t.Errorf("visible rows %v, want the insert and the update's new row [0 3]", kept)
	}
	if c.Op(1) != types.OpDelete || c.Vis != nil {
		t.Errorf("the input chunk was modified")
	}
}
