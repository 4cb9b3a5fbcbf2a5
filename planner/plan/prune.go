package plan

import (
	"slices"

	"github.com/tributary/tributary/sql/expr"
)

// PruneJoinInputs returns n with each join's inputs narrowed to the columns
// something above the join reads: its keys, its condition and what the
// nodes over it use. A streaming join keeps every input row in its state, so
// a column nobody reads (a bid's url and padding under Nexmark q7) costs
// storage writes, compaction and cache memory for nothing. It rewrites
// projections, filters, joins, aggregations and window functions on the way
// down; below any other node it looks no further (correct, only not
// narrowed). n's output is unchanged. The nodes it returns are new where
// anything changed; n itself is not modified.
func PruneJoinInputs(n Node) Node {
	out, _ := prune(n, nil)
	return out
}

// prune rewrites n given which of its output columns are read (need; nil:
// all). It returns the rewrite and, per column of n's output, its position
// in the rewrite's output, or -1 for a column dropped (never one needed).
// The rewrite keeps the columns it keeps in their order.
func prune(n Node, need []bool) (Node, []int) {
	width := len(n.Schema())
	same := identity(width)
	needs := func(i int) bool { return need == nil || need[i] }
	switch x := n.(type) {
	case *Project:
		// Keep the outputs read (all of them when none is: a node over no
		// columns is not worth its own case).
		exprs, fields, out := x.Exprs, x.Out, same
		if need != nil && slices.Contains(need, true) && slices.Contains(need, false) {
			exprs, fields, out = nil, nil, make([]int, width)
			for i, e := range x.Exprs {
				out[i] = -1
				if need[i] {
					out[i] = len(exprs)
					exprs, fields = append(exprs, e), append(fields, x.Out[i])
				}
			}
		}
		in, ok := reads(len(x.Input.Schema()), exprs...)
		if !ok {
			return n, same
		}
		child, m := prune(x.Input, in)
		if child == x.Input && len(exprs) == len(x.Exprs) {
			return n, same
		}
		if exprs, ok = remapAll(exprs, m); !ok {
			return n, same
		}
		return &Project{Input: child, Exprs: exprs, Out: fields}, out
	case *Filter:
		in, ok := reads(width, x.Cond)
		if !ok {
			return n, same
		}
		for i := range in {
			in[i] = in[i] || needs(i)
		}
		child, m := prune(x.Input, in)
		if child == x.Input {
			return n, same
		}
		cond, ok := remapAll([]expr.Expr{x.Cond}, m)
		if !ok {
			return n, same
		}
		return &Filter{Input: child, Cond: cond[0]}, m
	case *Join:
		return pruneJoin(x, needs)
	case *Agg:
		if len(x.EmptySets) > 0 {
			return n, same
		}
		nin := len(x.Input.Schema())
		in := make([]bool, nin)
		mark(in, x.GroupBy...)
		for _, c := range x.Aggs {
			mark(in, c.Args...)
			if c.Filter >= 0 {
				mark(in, c.Filter)
			}
			for _, k := range c.OrderBy {
				mark(in, k.Col)
			}
		}
		child, m := prune(x.Input, in)
		if child == x.Input {
			return n, same
		}
		a := *x
		a.Input = child
		a.GroupBy = mapCols(x.GroupBy, m)
		a.Aggs = slices.Clone(x.Aggs)
		for i := range a.Aggs {
			c := &a.Aggs[i]
			c.Args = mapCols(c.Args, m)
			if c.Filter >= 0 {
				c.Filter = m[c.Filter]
			}
			c.OrderBy = mapKeys(c.OrderBy, m)
		}
		return &a, same
	case *Window:
		nin := len(x.Input.Schema())
		in := make([]bool, nin)
		for i := range nin {
			in[i] = needs(i)
		}
		for _, f := range x.Funcs {
			mark(in, f.Args...)
			mark(in, f.PartitionBy...)
			for _, k := range f.OrderBy {
				mark(in, k.Col)
			}
		}
		child, m := prune(x.Input, in)
		if child == x.Input {
			return n, same
		}
		w := &Window{Input: child, Funcs: slices.Clone(x.Funcs)}
		for i := range w.Funcs {
			f := &w.Funcs[i]
			f.Args, f.PartitionBy, f.OrderBy = mapCols(f.Args, m), mapCols(f.PartitionBy, m), mapKeys(f.OrderBy, m)
		}
		var out []int
		w.Out, out = appended(x.Out, nin, m)
		return w, out
	case *HopWindow:
		nin := len(x.Input.Schema())
		in := make([]bool, nin)
		for i := range nin {
			in[i] = needs(i)
		}
		mark(in, x.TimeCol)
		child, m := prune(x.Input, in)
		if child == x.Input {
			return n, same
		}
		h := *x
		h.Input, h.TimeCol = child, m[x.TimeCol]
		var out []int
		h.Out, out = appended(x.Out, nin, m)
		return &h, out
	case *Sort:
		if child, _ := prune(x.Input, nil); child != x.Input {
			s := *x
			s.Input = child
			return &s, same
		}
	case *Limit:
		if child, _ := prune(x.Input, nil); child != x.Input {
			l := *x
			l.Input = child
			return &l, same
		}
	case *Distinct:
		if child, _ := prune(x.Input, nil); child != x.Input {
			d := *x
			d.Input = child
			return &d, same
		}
	case *SetOp:
		var inputs []Node
		for i, c := range x.Inputs {
			if child, _ := prune(c, nil); child != c {
				if inputs == nil {
					inputs = slices.Clone(x.Inputs)
				}
				inputs[i] = child
			}
		}
		if inputs != nil {
			s := *x
			s.Inputs = inputs
			return &s, same
		}
	}
	return n, same
}

// pruneJoin narrows j's inputs to the columns read above it, its keys and
// its condition.
func pruneJoin(j *Join, needs func(int) bool) (Node, []int) {
	nl, nr := len(j.Left.Schema()), len(j.Right.Schema())
	width := len(j.Schema())
	same := identity(width)
	both, ok := reads(nl+nr, j.Cond)
	if !ok {
		return j, same
	}
	for i := range width { // Semi and Anti output the left side only
		both[i] = both[i] || needs(i)
	}
	needL, needR := both[:nl], both[nl:]
	mark(needL, j.EqLeft...)
	mark(needR, j.EqRight...)
	left, mL := narrow(j.Left, needL)
	right, mR := narrow(j.Right, needR)
	if left == j.Left && right == j.Right {
		return j, same
	}
	nl2 := len(left.Schema())
	m := slices.Clone(mL)
	for _, p := range mR {
		if p >= 0 {
			p += nl2
		}
		m = append(m, p)
	}
	var cond expr.Expr
	if j.Cond != nil {
		c, ok := remapAll([]expr.Expr{j.Cond}, m)
		if !ok {
			return j, same
		}
		cond = c[0]
	}
	out := &Join{Kind: j.Kind, Left: left, Right: right, EqLeft: mapCols(j.EqLeft, mL), EqRight: mapCols(j.EqRight, mR),
		Cond: cond, NullAware: j.NullAware, MaxOneRow: j.MaxOneRow}
	if j.Kind == SemiJoin || j.Kind == AntiJoin {
		return out, mL
	}
	return out, m
}

// narrow prunes a join input and then projects away the columns it still
// has that nobody reads. A subtree with a ProcTime scan (a temporal join's
// side, whose shape the stream planner matches) is left as it is.
func narrow(n Node, need []bool) (Node, []int) {
	if hasProcTimeScan(n) {
		return n, identity(len(need))
	}
	child, m := prune(n, need)
	fields := child.Schema()
	var exprs []expr.Expr
	var out []Field
	pos := make([]int, len(fields)) // child column -> narrowed position
	for i := range pos {
		pos[i] = -1
	}
	for i, p := range m {
		if p >= 0 && need[i] {
			pos[p] = 0
		}
	}
	for p := range fields {
		if pos[p] < 0 {
			continue
		}
		pos[p] = len(exprs)
		exprs = append(exprs, expr.Column(p, fields[p].Type))
		out = append(out, fields[p])
	}
	if len(exprs) == len(fields) {
		return child, m
	}
	mm := make([]int, len(m))
	for i, p := range m {
		mm[i] = -1
		if p >= 0 {
			mm[i] = pos[p]
		}
	}
	return &Project{Input: child, Exprs: exprs, Out: out}, mm
}

func hasProcTimeScan(n Node) bool {
	if s, ok := n.(*Scan); ok && s.ProcTime {
		return true
	}
	return slices.ContainsFunc(n.Children(), hasProcTimeScan)
}

// appended is the output of a node appending columns to its input's (Out,
// nin input columns) over an input pruned as m says: its fields, and the
// position of each former output column.
func appended(out []Field, nin int, m []int) ([]Field, []int) {
	var fields []Field
	pos := make([]int, len(out))
	for i := range nin {
		pos[i] = -1
		if m[i] >= 0 {
			pos[i] = len(fields)
			fields = append(fields, out[i])
		}
	}
	for i := nin; i < len(out); i++ {
		pos[i] = len(fields)
		fields = append(fields, out[i])
	}
	return fields, pos
}

// reads marks the columns (of n) es read; false when one holds an
// expression whose columns are unknown.
func reads(n int, es ...expr.Expr) ([]bool, bool) {
	in := make([]bool, n)
	for _, e := range es {
		if e == nil {
			continue
		}
		cols, ok := ColumnsOf(e)
		if !ok {
			return nil, false
		}
		mark(in, cols...)
	}
	return in, true
}

func mark(in []bool, cols ...int) {
	for _, c := range cols {
		in[c] = true
	}
}

// identity returns 0, 1, ..., n-1.
func identity(n int) []int {
	m := make([]int, n)
	for i := range m {
		m[i] = i
	}
	return m
}

func isIdentity(m []int) bool {
	for i, p := range m {
		if p != i {
			return false
		}
	}
	return true
}

func mapCols(cols []int, m []int) []int {
	if cols == nil {
		return nil
	}
	out := make([]int, len(cols))
	for i, c := range cols {
		out[i] = m[c]
	}
	return out
}

func mapKeys(keys []SortKey, m []int) []SortKey {
	if keys == nil {
		return nil
	}
	out := slices.Clone(keys)
	for i := range out {
		out[i].Col = m[out[i].Col]
	}
	return out
}

// remapAll rewrites es's column references by m; false when one cannot be
// rebuilt.
func remapAll(es []expr.Expr, m []int) ([]expr.Expr, bool) {
	if isIdentity(m) {
		return es, true
	}
	out := make([]expr.Expr, len(es))
	for i, e := range es {
		r, ok := RewriteCols(e, func(c *expr.ColumnRef) expr.Expr {
			if m[c.Index] < 0 {
				return nil
			}
			return expr.Column(m[c.Index], c.Typ)
		})
		if !ok {
			return nil, false
		}
		out[i] = r
	}
	return out, true
}
