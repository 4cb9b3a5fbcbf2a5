package plan

import (
	"fmt"
	"testing"

	"github.com/tributary/tributary/sql/types"
)

func TestStreamHashJoinStateLayouts(t *testing.T) {
	side := func(key ...int) StreamNode {
		fs := []Field{{Name: "a", Type: types.TInt64}, {Name: "b", Type: types.TVarchar}, {Name: "c", Type: types.TInt32}}
		return &StreamValues{Out: fs, Key: key}
	}
	for _, tc := range []struct {
		n    StreamHashJoin
		want string
	}{
		// Inner: no degree columns; pk = join key then the stream key.
		{StreamHashJoin{Kind: InnerJoin, Left: side(0), Right: side(0), EqLeft: []int{2}, EqRight: []int{1}},
			"join left(id=0 pk=[2 0] dist=[2]) 3 cols; join right(id=0 pk=[1 0] dist=[1]) 3 cols"},
		// Left: the left side keeps a degree; a stream key column already in the join key is not repeated.
		{StreamHashJoin{Kind: LeftJoin, Left: side(0, 1), Right: side(2), EqLeft: []int{1}, EqRight: []int{1}},
			"join left(id=0 pk=[1 0] dist=[1]) 4 cols; join right(id=0 pk=[1 2] dist=[1]) 3 cols"},
		{StreamHashJoin{Kind: RightJoin, Left: side(0), Right: side(0), EqLeft: []int{0, 2}, EqRight: []int{2, 0}},
			"join left(id=0 pk=[0 2] dist=[0 2]) 3 cols; join right(id=0 pk=[2 0] dist=[2 0]) 4 cols"},
		{StreamHashJoin{Kind: FullJoin, Left: side(), Right: side(1), EqLeft: []int{0}, EqRight: []int{0}},
			"join left(id=0 pk=[0] dist=[0]) 4 cols; join right(id=0 pk=[0 1] dist=[0]) 4 cols"},
	} {
		ls := tc.n.StateLayouts()
		got := fmt.Sprintf("%s %d cols; %s %d cols", ls[0], len(ls[0].Types), ls[1], len(ls[1].Types))
		if got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.n.Describe(), got, tc.want)
		}
		for _, l := range ls {
			if len(l.Types) == 4 && l.Types[3] != types.TInt64 {
				t.Errorf("%s: degree column is %s", l.Name, l.Types[3])
			}
		}
	}
}
