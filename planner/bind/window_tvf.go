package bind

import (
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/parser"
	"github.com/tributary/tributary/sql/types"
)

// windowTVF binds RisingWave's time window table functions:
//
//	TUMBLE(relation, time_col, size)
//	HOP(relation, time_col, slide, size)
//
// into a plan.HopWindow over the relation (TUMBLE is slide = size). The
// output is the relation's columns, then window_start and window_end of
// time_col's type. Intervals must be positive constants without months
// (a month has no fixed length), and HOP's size a multiple of its slide.
func (b *Binder) windowTVF(tf *parser.TableFunc, alias string) (plan.Node, error) {
	want := 3
	if tf.Name == "hop" {
		want = 4
	}
	switch {
	case len(tf.Args) == want+1:
		return nil, types.Errorf(types.ErrUnsupported, "%s with an offset argument is not supported", tf.Name)
	case len(tf.Args) != want:
		return nil, types.Errorf(types.ErrUndefinedFunction, "function %s with %d arguments does not exist", tf.Name, len(tf.Args))
	}
	relArg, ok := tf.Args[0].(*ast.ColumnNameExpr)
	if !ok || relArg.Name.Schema.O != "" {
		return nil, types.Errorf(types.ErrUnsupported, "the first argument of %s must be a table or materialized view name", tf.Name)
	}
	tn := &ast.TableName{Schema: relArg.Name.Table, Name: relArg.Name.Name}
	in, err := b.bindTableName(tn, "")
	if err != nil {
		return nil, err
	}
	inFields := in.Schema()
	if (alias == "" || alias == tf.Name) && len(inFields) > 0 {
		// Unaliased (the parser names the call after the function): its
		// columns keep the relation's name, as in RisingWave (HOP(bid, ...)
		// gives bid.auction).
		alias = inFields[0].Table
	}
	c := &exprCtx{scope: &scope{fields: inFields}, clause: "FROM"}
	timeExpr, err := b.bindExpr(c, tf.Args[1])
	if err != nil {
		return nil, err
	}
	col, ok := timeExpr.(*expr.ColumnRef)
	if !ok {
		return nil, types.Errorf(types.ErrUnsupported, "the second argument of %s must be a column", tf.Name)
	}
	tt := inFields[col.Index].Type
	if tt.ID != types.Timestamp && tt.ID != types.Timestamptz {
		return nil, types.Errorf(types.ErrDatatypeMismatch, "the time column of %s must be timestamp or timestamptz, not %s", tf.Name, tt)
	}
	ivs := make([]types.IntervalValue, 0, 2)
	for _, a := range tf.Args[2:] {
		iv, err := b.windowInterval(tf.Name, a)
		if err != nil {
			return nil, err
		}
		ivs = append(ivs, iv)
	}
	slide, size := ivs[0], ivs[len(ivs)-1]
	if plan.WindowMicros(size)%plan.WindowMicros(slide) != 0 {
		return nil, types.Errorf(types.ErrInvalidParameter, "invalid arguments for %s: window size %s is not a multiple of slide %s",
			tf.Name, types.AppendInterval(nil, size), types.AppendInterval(nil, slide))
	}
	out := requalify(inFields, alias)
	out = append(out,
		plan.Field{Name: "window_start", Table: alias, Type: tt},
		plan.Field{Name: "window_end", Table: alias, Type: tt})
	var node plan.Node = &plan.HopWindow{Input: in, TimeCol: col.Index, Slide: slide, Size: size, Out: out}
	if len(tf.ColumnAliases) > 0 {
		if len(tf.ColumnAliases) > len(visible(out)) {
			return nil, types.Errorf(types.ErrInvalidColumnRef, "table \"%s\" has %d columns available but %d columns specified", alias, len(visible(out)), len(tf.ColumnAliases))
		}
		node = renamed(node, alias, tf.ColumnAliases)
	}
	return node, nil
}

// windowInterval binds a window size or slide: a positive constant interval
// without months.
func (b *Binder) windowInterval(fn string, n ast.ExprNode) (types.IntervalValue, error) {
	e, err := b.bindExpr(&exprCtx{scope: &scope{}, clause: "FROM"}, n)
	if err != nil {
		return types.IntervalValue{}, err
	}
	if e, err = b.cast(e, types.TInterval); err != nil {
		return types.IntervalValue{}, err
	}
	if !expr.IsConst(e) {
		return types.IntervalValue{}, types.Errorf(types.ErrUnsupported, "the window sizes of %s must be constants", fn)
	}
	d, err := e.EvalRow(nil, nil)
	if err != nil {
		return types.IntervalValue{}, err
	}
	if d.Null {
		return types.IntervalValue{}, types.Errorf(types.ErrInvalidParameter, "the window sizes of %s must not be NULL", fn)
	}
	if d.Iv.Months != 0 {
		return types.IntervalValue{}, types.Errorf(types.ErrUnsupported, "%s windows with months (%s) are not supported", fn, types.AppendInterval(nil, d.Iv))
	}
	if d.Iv.Days > plan.MaxWindowDays || d.Iv.Days < -plan.MaxWindowDays {
		return types.IntervalValue{}, types.Errorf(types.ErrInvalidParameter, "the window sizes of %s are out of range", fn)
	}
	if plan.WindowMicros(d.Iv) <= 0 {
		return types.IntervalValue{}, types.Errorf(types.ErrInvalidParameter, "the window sizes of %s must be positive, not %s", fn, types.AppendInterval(nil, d.Iv))
	}
	return d.Iv, nil
}
