package plan

import "github.com/tributary/tributary/sql/types"

// Join state layout (StreamHashJoin.StateLayouts): one table per side, in the
// order left, right. A side's table holds that side's full rows keyed by
// (join key columns, the side's stream key columns not already in the join
// key) and distributed by the join key, so all rows of one join key live in
// one vnode and are read with one prefix scan. A side whose unmatched rows are
// kept (left for Left/Full, right for Right/Full) has one more column, its
// degree: the number of rows of the other side it currently joins with
// (equal keys and Cond true), so the join knows when a row switches between
// matched and NULL-padded. The left side of a semi or anti join keeps a
// degree too: a left row is output while its degree is above 0 (semi) or 0
// (anti); the output is the left side's columns only.

// LeftOuter reports whether unmatched left rows are emitted NULL-padded.
func (n *StreamHashJoin) LeftOuter() bool { return n.Kind == LeftJoin || n.Kind == FullJoin }

// RightOuter reports whether unmatched right rows are emitted NULL-padded.
func (n *StreamHashJoin) RightOuter() bool { return n.Kind == RightJoin || n.Kind == FullJoin }

// SemiOrAnti reports whether the join outputs left rows with (semi) or
// without (anti) a matching right row.
func (n *StreamHashJoin) SemiOrAnti() bool { return n.Kind == SemiJoin || n.Kind == AntiJoin }

// StateLayouts implements StatefulNode: "join left" then "join right".
func (n *StreamHashJoin) StateLayouts() []StateTable {
	return []StateTable{
		joinSideLayout("join left", n.Left, n.EqLeft, n.LeftOuter() || n.SemiOrAnti()),
		joinSideLayout("join right", n.Right, n.EqRight, n.RightOuter()),
	}
}

func joinSideLayout(name string, side StreamNode, eq []int, degree bool) StateTable {
	fs := side.Schema()
	ts := make([]types.T, len(fs), len(fs)+1)
	for i, f := range fs {
		ts[i] = f.Type
	}
	if degree {
		ts = append(ts, types.TInt64)
	}
	pk := JoinStatePK(eq, side.StreamKey())
	return StateTable{Name: name, Types: ts, PK: pk, Dist: append([]int(nil), eq...)}
}

// JoinStatePK is the primary key of a join side's state table: the join key
// columns, then the stream key columns not among them.
func JoinStatePK(eq, streamKey []int) []int {
	pk := append(make([]int, 0, len(eq)+len(streamKey)), eq...)
	for _, c := range streamKey {
		dup := false
		for _, k := range pk {
			if k == c {
				dup = true
				break
			}
		}
		if !dup {
			pk = append(pk, c)
		}
	}
	return pk
}
