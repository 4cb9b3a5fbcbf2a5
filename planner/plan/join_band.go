package plan

import (
	"fmt"

	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
)

// JoinBand is a lower bound an inner join's condition puts on one side's
// timestamp column: a row of side Side (0 left, 1 right) matches only rows
// of the other side whose column Other is at most its column Col plus Delay
// (µs) - "Col >= Other - Delay". Once the other side's watermark on Other is
// W, no later row of the other side has Other below W, so the side's rows
// with Col below W - Delay can match no later row: an interval join's state
// cleaning (a.ts BETWEEN b.ts - INTERVAL '10 seconds' AND b.ts gives a band
// on a, a.ts >= b.ts - 10s, and one on b, b.ts >= a.ts - 0).
type JoinBand struct {
	Side  int
	Col   int
	Other int
	Delay int64
}

func (b JoinBand) String(nl int) string {
	col, other := b.Col, b.Other
	if b.Side == 0 {
		other += nl
	} else {
		col += nl
	}
	return fmt.Sprintf("$%d below watermark($%d) - %s", col, other, types.AppendInterval(nil, types.IntervalValue{Micros: b.Delay}))
}

// Bands returns the bands of an inner join's condition (none for outer
// joins, whose rows must stay to be retracted or padded).
func (n *StreamHashJoin) Bands() []JoinBand {
	if n.Kind != InnerJoin || n.Cond == nil {
		return nil
	}
	return BandsOf(n.Cond, n.Left.Schema(), n.Right.Schema())
}

// BandsOf returns the bands in the conjuncts of cond, an expression over a
// join's left columns followed by its right columns.
func BandsOf(cond expr.Expr, left, right []Field) []JoinBand {
	nl := len(left)
	var out []JoinBand
	// ge records x >= y when both are a timestamp column plus a constant,
	// from different sides.
	ge := func(x, y expr.Expr) {
		cx, ox, ok1 := bandTerm(x)
		cy, oy, ok2 := bandTerm(y)
		if !ok1 || !ok2 || (cx < nl) == (cy < nl) || cx >= nl+len(right) || cy >= nl+len(right) {
			return
		}
		// cx + ox >= cy + oy: cx >= cy - (ox - oy).
		b := JoinBand{Col: cx, Other: cy - nl, Delay: ox - oy}
		if cx >= nl {
			b = JoinBand{Side: 1, Col: cx - nl, Other: cy, Delay: ox - oy}
		}
		out = append(out, b)
	}
	var walk func(e expr.Expr)
	walk = func(e expr.Expr) {
		f, ok := e.(*expr.FuncExpr)
		if !ok {
			return
		}
		switch {
		case f.Name == "and" && len(f.Args) == 2:
			walk(f.Args[0])
			walk(f.Args[1])
		case (f.Name == ">=" || f.Name == ">") && len(f.Args) == 2:
			ge(f.Args[0], f.Args[1])
		case (f.Name == "<=" || f.Name == "<") && len(f.Args) == 2:
			ge(f.Args[1], f.Args[0])
		case f.Name == "between" && len(f.Args) == 3:
			ge(f.Args[0], f.Args[1])
			ge(f.Args[2], f.Args[0])
		}
	}
	walk(cond)
	return out
}

// bandTerm recognises a timestamp column plus or minus a constant interval
// of days and microseconds: the column and the offset in µs.
func bandTerm(e expr.Expr) (int, int64, bool) {
	switch x := e.(type) {
	case *expr.ColumnRef:
		if x.Typ.ID != types.Timestamp && x.Typ.ID != types.Timestamptz {
			return 0, 0, false
		}
		return x.Index, 0, true
	case *expr.FuncExpr:
		if (x.Name != "+" && x.Name != "-") || len(x.Args) != 2 {
			return 0, 0, false
		}
		c, ok := x.Args[1].(*expr.Const)
		if !ok || c.Typ.ID != types.Interval || c.Value.Null || c.Value.Iv.Months != 0 {
			return 0, 0, false
		}
		col, off, ok := bandTerm(x.Args[0])
		if !ok {
			return 0, 0, false
		}
		iv := int64(c.Value.Iv.Days)*86_400_000_000 + c.Value.Iv.Micros
		if x.Name == "-" {
			iv = -iv
		}
		return col, off + iv, true
	}
	return 0, 0, false
}
