package plan

import (
	"fmt"
	"strings"
)

// Expand serves GROUP BY GROUPING SETS | ROLLUP | CUBE: each input row comes
// out once per grouping set s, with the group key columns 0..Keys-1 that s
// does not hold set to NULL and column GID set to s's index (a bigint), so
// that one aggregation grouped by the keys and GID computes every set.
type Expand struct {
	Input Node
	Keys  int
	Sets  [][]int // each set's key columns
	GID   int
}

func (n *Expand) Schema() []Field  { return n.Input.Schema() }
func (n *Expand) Children() []Node { return []Node{n.Input} }
func (n *Expand) Describe() string {
	sets := make([]string, len(n.Sets))
	for i, s := range n.Sets {
		sets[i] = "(" + strings.TrimSuffix(strings.TrimPrefix(colList(s), "["), "]") + ")"
	}
	return fmt.Sprintf("Expand grouping sets %s id $%d", strings.Join(sets, ", "), n.GID)
}
