package stream

import (
	"testing"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage/memkv"
)

// TestUnnest expands rows by the array their text column casts to: an
// update of a row replaces its elements (the old ones deleted, the new
// inserted, whatever their number), a delete removes them, an empty or NULL
// array gives no row, or one with NULLs when outer.
func TestUnnest(t *testing.T) {
	for _, outer := range []bool{false, true} {
		i64 := types.TInt64
		src := NewMockSource([]types.T{i64, types.TVarchar},
			stBarrier(1, 2),
			ChunkMsg(stChunk(t, `
				 I T
				 + 1 {5,6}
				 + 2 {}
				 + 3 .
				 + 4 {7,NULL,7}`)),
			stBarrier(2, 3),
			ChunkMsg(stChunk(t, `
				 I T
				U- 1 {5,6}
				U+ 1 {8}
				U- 2 {}
				U+ 2 {9}
				 - 4 {7,NULL,7}`)),
			stStop(3, 4, 1))
		arr, err := expr.Cast(expr.Column(1, types.TVarchar), types.ArrayOf(types.TInt32))
		if err != nil {
			t.Fatal(err)
		}
		in := []plan.Field{{Name: "id", Type: i64}, {Name: "a", Type: types.TVarchar}}
		n := &plan.StreamUnnest{Array: arr, Outer: outer,
			Out: append(in, plan.Field{Name: "x", Type: types.TInt32}, plan.Field{Name: "ord", Type: i64})}
		n.Input = &plan.StreamValues{Out: in}
		e := NewUnnest(stActx(memkv.New()), n, src)
		snaps := stDrive(t, e, stActx(memkv.New()), NewRowSet([]int{0, 3}))
		if !outer {
			stWant(t, snaps, "",
				"1 {5,6} 5 1\n1 {5,6} 6 2\n4 {7,NULL,7} . 2\n4 {7,NULL,7} 7 1\n4 {7,NULL,7} 7 3",
				"1 {8} 8 1\n2 {9} 9 1")
			continue
		}
		stWant(t, snaps, "",
			"1 {5,6} 5 1\n1 {5,6} 6 2\n2 {} . .\n3 . . .\n4 {7,NULL,7} . 2\n4 {7,NULL,7} 7 1\n4 {7,NULL,7} 7 3",
			"1 {8} 8 1\n2 {9} 9 1\n3 . . .")
	}
}
