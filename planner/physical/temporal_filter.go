package physical

import (
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
)

// timeFuncs read the statement's clock: in a materialized view only a
// temporal filter may use them.
var timeFuncs = map[string]bool{
	"now": true, "current_timestamp": true, "transaction_timestamp": true, "statement_timestamp": true,
	"localtimestamp": true, "current_date": true, "clock_timestamp": true,
}

func isTimeFunc(f *expr.FuncExpr) bool {
	return timeFuncs[f.Name] || (f.Name == "age" && len(f.Args) == 1)
}

func errNow() error { return unsupported("now() is only supported in temporal filters") }

func hasTimeFunc(e expr.Expr) bool {
	found := false
	expr.Walk(e, func(x expr.Expr) bool {
		if f, ok := x.(*expr.FuncExpr); ok && isTimeFunc(f) {
			found = true
		}
		return !found
	})
	return found
}

func isTimestamp(t types.T) bool { return t.ID == types.Timestamp || t.ID == types.Timestamptz }

// stripTimestampCasts removes casts between timestamp and timestamptz (the
// same instant while the session time zone is UTC), keeping any other.
func stripTimestampCasts(e expr.Expr) expr.Expr {
	for {
		c, ok := e.(*expr.CastExpr)
		if !ok || !isTimestamp(c.To) || !isTimestamp(c.Input.Type()) {
			return e
		}
		e = c.Input
	}
}

// temporalFilter recognises "col > now() - INTERVAL" (>=, the mirrored
// "now() - INTERVAL < col", and now() alone); any other use of now() is an
// error. The node's Input is left for the caller.
func temporalFilter(c expr.Expr) (*plan.StreamTemporalFilter, bool, error) {
	if !hasTimeFunc(c) {
		return nil, false, nil
	}
	f, ok := c.(*expr.FuncExpr)
	if !ok || len(f.Args) != 2 {
		return nil, false, errNow()
	}
	var colSide, bound expr.Expr
	switch f.Name {
	case ">", ">=":
		colSide, bound = f.Args[0], f.Args[1]
	case "<", "<=":
		colSide, bound = f.Args[1], f.Args[0]
	default:
		return nil, false, errNow()
	}
	if hasTimeFunc(colSide) { // now() on the greater side: rows would enter over time
		return nil, false, errNow()
	}
	col, ok := stripTimestampCasts(colSide).(*expr.ColumnRef)
	if !ok || !isTimestamp(col.Typ) {
		return nil, false, unsupported("temporal filters compare a timestamp or timestamptz column with now() - INTERVAL, not %s", colSide)
	}
	bound = stripTimestampCasts(bound)
	var iv types.IntervalValue
	if b, ok := bound.(*expr.FuncExpr); ok && b.Name == "-" && len(b.Args) == 2 {
		k := b.Args[1]
		if !expr.IsConst(k) || k.Type().ID != types.Interval {
			return nil, false, errNow()
		}
		d, err := k.EvalRow(nil, nil)
		if err != nil {
			return nil, false, err
		}
		if d.Null {
			return nil, false, errNow()
		}
		iv = d.Iv
		bound = stripTimestampCasts(b.Args[0])
	}
	if b, ok := bound.(*expr.FuncExpr); !ok || len(b.Args) != 0 || !timeFuncs[b.Name] || b.Name == "current_date" {
		return nil, false, errNow()
	}
	if iv.Months != 0 {
		return nil, false, unsupported("temporal filter intervals with months are not supported")
	}
	strict := f.Name == ">" || f.Name == "<"
	return &plan.StreamTemporalFilter{Col: col.Index, Interval: iv, Strict: strict}, true, nil
}
