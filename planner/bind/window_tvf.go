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

// gapFill binds RisingWave's GAP_FILL(relation, time_col, step, fills...,
// [PARTITION_BY(cols)]) into a plan.GapFill: each fill is INTERPOLATE(col),
// LOCF(col) or KEEPNULL(col) (the default for unnamed columns); INTERPOLATE
// takes numeric columns.
func (b *Binder) gapFill(tf *parser.TableFunc, alias string) (plan.Node, error) {
	if len(tf.Args) < 3 {
		return nil, types.Errorf(types.ErrUndefinedFunction, "function gap_fill with %d arguments does not exist", len(tf.Args))
	}
	relArg, ok := tf.Args[0].(*ast.ColumnNameExpr)
	if !ok || relArg.Name.Schema.O != "" {
		return nil, types.Errorf(types.ErrUnsupported, "the first argument of gap_fill must be a table or materialized view name")
	}
	in, err := b.bindTableName(&ast.TableName{Schema: relArg.Name.Table, Name: relArg.Name.Name}, "")
	if err != nil {
		return nil, err
	}
	inFields := in.Schema()
	if (alias == "" || alias == tf.Name) && len(inFields) > 0 {
		alias = inFields[0].Table
	}
	c := &exprCtx{scope: &scope{fields: inFields}, clause: "FROM"}
	column := func(what string, a ast.ExprNode) (int, error) {
		e, err := b.bindExpr(c, a)
		if err != nil {
			return 0, err
		}
		col, ok := e.(*expr.ColumnRef)
		if !ok {
			return 0, types.Errorf(types.ErrUnsupported, "the %s of gap_fill must be a column", what)
		}
		return col.Index, nil
	}
	timeCol, err := column("time argument", tf.Args[1])
	if err != nil {
		return nil, err
	}
	if tt := inFields[timeCol].Type; tt.ID != types.Timestamp && tt.ID != types.Timestamptz {
		return nil, types.Errorf(types.ErrDatatypeMismatch, "the time column of gap_fill must be timestamp or timestamptz, not %s", tt)
	}
	step, err := b.windowInterval("gap_fill", tf.Args[2])
	if err != nil {
		return nil, err
	}
	n := &plan.GapFill{Input: in, TimeCol: timeCol, Step: step, Fills: make([]plan.FillKind, len(inFields))}
	named := make([]bool, len(inFields))
	for _, a := range tf.Args[3:] {
		fc, ok := a.(*ast.FuncCallExpr)
		if !ok {
			return nil, types.Errorf(types.ErrSyntax, "gap_fill takes fill strategies INTERPOLATE(col), LOCF(col), KEEPNULL(col) and PARTITION_BY(cols) after its interval")
		}
		if fc.FnName.L == "partition_by" {
			if n.PartitionBy != nil || len(fc.Args) == 0 {
				return nil, types.Errorf(types.ErrSyntax, "gap_fill takes one PARTITION_BY with at least one column")
			}
			for _, pa := range fc.Args {
				col, err := column("PARTITION_BY list", pa)
				if err != nil {
					return nil, err
				}
				n.PartitionBy = append(n.PartitionBy, col)
			}
			continue
		}
		var kind plan.FillKind
		switch fc.FnName.L {
		case "interpolate":
			kind = plan.FillInterpolate
		case "locf":
			kind = plan.FillLOCF
		case "keepnull":
			kind = plan.FillNull
		default:
			return nil, types.Errorf(types.ErrSyntax, "unknown gap_fill strategy %s: INTERPOLATE, LOCF or KEEPNULL", fc.FnName.O)
		}
		if len(fc.Args) != 1 {
			return nil, types.Errorf(types.ErrSyntax, "%s takes one column", fc.FnName.O)
		}
		col, err := column(fc.FnName.O+" argument", fc.Args[0])
		if err != nil {
			return nil, err
		}
		if col == timeCol || named[col] {
			return nil, types.Errorf(types.ErrSyntax, "column \"%s\" has more than one gap_fill strategy, or is the time column", inFields[col].Name)
		}
		if kind == plan.FillInterpolate && !inFields[col].Type.IsNumeric() {
			return nil, types.Errorf(types.ErrDatatypeMismatch, "INTERPOLATE takes a numeric column, not %s (%s)", inFields[col].Name, inFields[col].Type)
		}
		named[col] = true
		n.Fills[col] = kind
	}
	for _, p := range n.PartitionBy {
		if p == timeCol || named[p] {
			return nil, types.Errorf(types.ErrSyntax, "the PARTITION_BY column \"%s\" cannot be filled or be the time column", inFields[p].Name)
		}
	}
	n.Out = requalify(inFields, alias)
	var node plan.Node = n
	if len(tf.ColumnAliases) > 0 {
		node = renamed(node, alias, tf.ColumnAliases)
	}
	return node, nil
}
