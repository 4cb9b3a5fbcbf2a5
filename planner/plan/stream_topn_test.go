package plan

import (
	"fmt"
	"testing"

	"github.com/tributary/tributary/sql/types"
)

func TestStreamTopNStateRow(t *testing.T) {
	in := func(key ...int) StreamNode {
		fs := []Field{{Name: "a", Type: types.TInt64}, {Name: "b", Type: types.TVarchar}, {Name: "c", Type: types.TInt64}}
		return &StreamValues{Out: fs, Key: key}
	}
	for _, tc := range []struct {
		n    StreamTopN
		want string
	}{
		// ORDER BY c LIMIT 3 over key a: order then key; no group, no distribution.
		{StreamTopN{Input: in(0), OrderBy: []SortKey{{Col: 2}}, Limit: 3},
			"types=3 pk=[2 0] desc=[false false] dist=[] flags=[-1] const=-1 orderEnd=1"},
		// Group b, ORDER BY c DESC (NULLs first, the encoding's), a ASC NULLS FIRST (flag column 3).
		{StreamTopN{Input: in(0), GroupBy: []int{1}, OrderBy: []SortKey{{Col: 2, Desc: true, NullsFirst: true}, {Col: 0, NullsFirst: true}}, Limit: 1},
			"types=4 pk=[1 2 3 0] desc=[false true false false] dist=[1] flags=[-1 3] const=-1 orderEnd=4"},
		// An order key repeating a group column is constant in the group; DESC NULLS LAST needs a flag.
		{StreamTopN{Input: in(0, 1), GroupBy: []int{1}, OrderBy: []SortKey{{Col: 1}, {Col: 2, Desc: true}}, Limit: 1},
			"types=4 pk=[1 3 2 0] desc=[false false true false] dist=[1] flags=[-1 3] const=-1 orderEnd=3"},
		// No key at all (a stream of at most one row): a constant column.
		{StreamTopN{Input: in(), Limit: 1},
			"types=4 pk=[3] desc=[false] dist=[] flags=[] const=3 orderEnd=0"},
	} {
		l := tc.n.StateRow()
		got := fmt.Sprintf("types=%d pk=%v desc=%v dist=%v flags=%v const=%d orderEnd=%d",
			len(l.Types), l.PK, l.PKDesc, l.Dist, l.NullFlag, l.Const, l.OrderEnd)
		if got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.n.Describe(), got, tc.want)
		}
		st := tc.n.StateLayouts()
		if len(st) != 1 || len(st[0].Types) != len(l.Types) || fmt.Sprint(st[0].PK) != fmt.Sprint(l.PK) {
			t.Errorf("%s: StateLayouts %v disagree with StateRow", tc.n.Describe(), st)
		}
	}
}
