package physical

import (
	"slices"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
)

// reorderJoins reorders a tree of cross joins (FROM a, b, c) under a
// filter when, in the written order, a relation joins those before it
// without any equality from the filter while another order has one
// (TPC-H q2: FROM part, supplier, partsupp): a left-deep tree where each
// next relation is the first one with an equality to those already
// joined, so no join between them needs a nested loop. It returns the
// filter over the new tree under a projection restoring the columns'
// order, or false when the written order is kept.
func reorderJoins(j *plan.Join, conds []expr.Expr) (plan.Node, bool) {
	var leaves []plan.Node
	var offsets []int
	var flatten func(n plan.Node, off int)
	flatten = func(n plan.Node, off int) {
		if x, ok := n.(*plan.Join); ok && x.Kind == plan.InnerJoin && len(x.EqLeft) == 0 && x.Cond == nil && !x.MaxOneRow {
			flatten(x.Left, off)
			flatten(x.Right, off+len(x.Left.Schema()))
			return
		}
		leaves, offsets = append(leaves, n), append(offsets, off)
	}
	flatten(j, 0)
	if len(leaves) < 3 {
		return nil, false
	}
	leafOf := func(col int) int {
		i, _ := slices.BinarySearch(offsets, col+1)
		return i - 1
	}
	// links[i] lists the leaves leaf i has an equality with.
	links := make([][]int, len(leaves))
	for _, c := range conds {
		f, ok := c.(*expr.FuncExpr)
		if !ok || f.Name != "=" || len(f.Args) != 2 {
			continue
		}
		a, ok1 := f.Args[0].(*expr.ColumnRef)
		b, ok2 := f.Args[1].(*expr.ColumnRef)
		if !ok1 || !ok2 {
			continue
		}
		la, lb := leafOf(a.Index), leafOf(b.Index)
		if la != lb {
			links[la], links[lb] = append(links[la], lb), append(links[lb], la)
		}
	}
	linked := func(i int, set []int) bool {
		return slices.ContainsFunc(links[i], func(k int) bool { return slices.Contains(set, k) })
	}
	written := true
	for i := 1; i < len(leaves); i++ {
		if !linked(i, span(nil, 0, i)) {
			written = false
		}
	}
	if written {
		return nil, false
	}
	order := []int{0}
	for len(order) < len(leaves) {
		next := -1
		for i := range leaves {
			if !slices.Contains(order, i) && linked(i, order) {
				next = i
				break
			}
		}
		if next < 0 {
			for i := range leaves {
				if !slices.Contains(order, i) {
					next = i
					break
				}
			}
		}
		order = append(order, next)
	}
	if slices.Equal(order, span(nil, 0, len(leaves))) {
		return nil, false // no better order
	}
	// newPos maps a column of the written tree to the reordered one.
	total := len(j.Schema())
	newPos := make([]int, total)
	var tree plan.Node
	at := 0
	for _, i := range order {
		w := len(leaves[i].Schema())
		for c := 0; c < w; c++ {
			newPos[offsets[i]+c] = at + c
		}
		at += w
		if tree == nil {
			tree = leaves[i]
		} else {
			tree = &plan.Join{Kind: plan.InnerJoin, Left: tree, Right: leaves[i]}
		}
	}
	moved := make([]expr.Expr, len(conds))
	for k, c := range conds {
		r, ok := plan.RewriteCols(c, func(ref *expr.ColumnRef) expr.Expr { return expr.Column(newPos[ref.Index], ref.Typ) })
		if !ok {
			return nil, false
		}
		moved[k] = r
	}
	cond, err := expr.AndAll(moved)
	if err != nil {
		return nil, false
	}
	fields := j.Schema()
	exprs := make([]expr.Expr, total)
	for c := range exprs {
		exprs[c] = expr.Column(newPos[c], fields[c].Type)
	}
	return &plan.Project{Input: &plan.Filter{Input: tree, Cond: cond}, Exprs: exprs, Out: slices.Clone(fields)}, true
}

// errNestedLoop is RisingWave's refusal of a join that would compare every
// pair of rows of two unbounded inputs without any condition.
func errNestedLoop() error {
	return &types.Error{Kind: types.ErrUnsupported, Msg: "streaming nested-loop join",
		Hint: "A join without any condition between its sides (a cross join) keeps and pairs every row of both sides. " +
			"Add a join condition, or compare with a one-row subquery (a dynamic filter)."}
}
