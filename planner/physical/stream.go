package physical

import (
	"slices"
	"strconv"
	"strings"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
)

// StreamQuery is a query planned for streaming: Root produces the change stream of the query's rows.
type StreamQuery struct {
	Root    plan.StreamNode
	Columns []plan.Field // the MV's columns: the query's visible columns, then hidden stream-key columns
	PK      []int        // indices into Columns forming the stream key (the MV's primary key)
}

// Stream plans a bound query for streaming. Every error is a *types.Error
// (ErrUnsupported for shapes streaming cannot maintain).
//
// Each bound node becomes stream nodes whose output starts with the bound
// node's columns in order, followed by hidden copies of stream-key columns
// the bound plan dropped; parents keep referring to the bound positions.
func Stream(q *plan.Query) (*StreamQuery, error) {
	for _, ip := range q.InitPlans {
		if ip.Kind != plan.ScalarSubquery {
			return nil, unsupported("EXISTS, IN and ANY/ALL over an uncorrelated subquery are not supported in materialized views outside a WHERE conjunct")
		}
	}
	p := &planner{ranks: map[*plan.Window]int64{}, inits: q.InitPlans}
	root, err := p.convert(q.Root)
	if err != nil {
		return nil, err
	}
	// The MV's columns: the visible ones, then the key columns not among them.
	var exprs []expr.Expr
	var out []plan.Field
	for i, f := range q.Root.Schema() {
		if !f.Hidden {
			exprs = append(exprs, expr.Column(i, f.Type))
			out = append(out, f)
		}
	}
	root = p.project(root, exprs, out)
	schema := root.Schema()
	cols := make([]plan.Field, len(schema))
	taken := map[string]bool{}
	for i := range out {
		cols[i] = plan.Field{Name: out[i].Name, Type: out[i].Type}
		taken[out[i].Name] = true
	}
	for i := len(out); i < len(schema); i++ {
		cols[i] = plan.Field{Name: hiddenName(schema[i], taken), Type: schema[i].Type, Hidden: true}
	}
	return &StreamQuery{Root: root, Columns: cols, PK: slices.Clone(root.StreamKey())}, nil
}

// hiddenName names a hidden key column uniquely among the MV's columns.
func hiddenName(f plan.Field, taken map[string]bool) string {
	name := f.Name
	if taken[name] && f.Table != "" {
		name = f.Table + "_" + f.Name
	}
	base := name
	for k := 2; taken[name]; k++ {
		name = base + "_" + strconv.Itoa(k)
	}
	taken[name] = true
	return name
}

// Materialize wraps sq.Root for the MV or index rel (rel.Columns == sq.Columns; rel.PK is sq.PK, or
// for an index the indexed columns and then sq.PK): an exchange hashing by rel's distribution key,
// then StreamMaterialize.
func Materialize(sq *StreamQuery, rel *catalog.Relation) plan.StreamNode {
	dist := rel.DistKey() // an index's indexed columns, else the pk
	in := exchange(sq.Root, plan.DistHash, dist)
	return &plan.StreamMaterialize{Input: in, Relation: rel, PK: slices.Clone(rel.PK), Dist: slices.Clone(dist)}
}

// Sink wraps sq.Root for the sink rel: an exchange hashing by the stream key
// (one actor when there is none), then StreamSink.
func Sink(sq *StreamQuery, rel *catalog.Relation, props map[string]string, appendOnly, decouple bool) *plan.StreamSink {
	in := exchange(sq.Root, plan.DistHash, sq.PK)
	return &plan.StreamSink{Input: in, Relation: rel, Props: props, AppendOnly: appendOnly, Decouple: decouple, RateLimit: -1}
}

// eowcBelow reports whether n's output comes from an aggregation emitting on
// window close through projections, filters and exchanges.
func eowcBelow(n plan.StreamNode) bool {
	for {
		switch x := n.(type) {
		case *plan.StreamProject, *plan.StreamFilter, *plan.StreamExchange:
			n = x.Inputs()[0]
		case *plan.StreamAgg:
			return x.EmitOnWindowClose
		default:
			return false
		}
	}
}

// AppendOnly reports whether a stream plan only ever inserts: its sources
// are append-only tables and no operator on the way retracts (aggregations,
// except those emitting on window close, top-N, joins and temporal filters
// may).
func AppendOnly(n plan.StreamNode) bool {
	switch n := n.(type) {
	case *plan.StreamSource:
		return n.Relation.AppendOnly
	case *plan.StreamChangelog:
		return true
	case *plan.StreamGapFill:
		return n.EmitOnWindowClose
	case *plan.StreamAgg:
		return n.EmitOnWindowClose // each group emitted once, when its window closes
	case *plan.StreamOverWindow:
		return n.EmitOnWindowClose // each row emitted once, when its outputs are final
	case *plan.StreamHashJoin:
		// An inner join over aggregations emitting on window close.
		return n.Kind == plan.InnerJoin && eowcBelow(n.Left) && eowcBelow(n.Right)
	case *plan.StreamValues, *plan.StreamExchange, *plan.StreamProject, *plan.StreamFilter,
		*plan.StreamUnion, *plan.StreamHopWindow, *plan.StreamWatermarkFilter, *plan.StreamUnnest,
		*plan.StreamTemporalJoin: // a temporal join retracts only what its left input retracts
		for _, in := range n.Inputs() {
			if !AppendOnly(in) {
				return false
			}
		}
		return true
	}
	return false
}

// AssignState walks root in a fixed (deterministic) order and gives every StatefulNode's layouts ids
// from next() - at creation the lead passes an allocator and records the ids in order; at recovery it
// replays the recorded ids. Layouts that already have an id (Materialize's) keep it.
//
// The order is pre-order (a node before its inputs, inputs left to right),
// layouts in StateLayouts order. Calling it again on the same tree keeps the
// ids assigned before.
func AssignState(root plan.StreamNode, next func() uint32) {
	if s, ok := root.(plan.StatefulNode); ok {
		layouts := s.StateLayouts()
		old := s.State()
		for i := range layouts {
			switch {
			case layouts[i].ID != 0:
			case i < len(old) && old[i].ID != 0:
				layouts[i].ID = old[i].ID
			default:
				layouts[i].ID = next()
			}
		}
		s.SetState(layouts)
	}
	for _, in := range root.Inputs() {
		AssignState(in, next)
	}
}

func unsupported(format string, args ...any) error {
	return types.Errorf(types.ErrUnsupported, format, args...)
}

// planner holds what one Stream call learns on the way down.
type planner struct {
	// ranks maps a Window node that a parent filter limits (WHERE rn <= N)
	// to N: the window becomes a group top-N.
	ranks map[*plan.Window]int64
	// inits are the query's uncorrelated scalar subqueries: a comparison
	// with one becomes a dynamic filter.
	inits []plan.InitPlan
}

func (p *planner) convert(n plan.Node) (plan.StreamNode, error) {
	switch n := n.(type) {
	case *plan.Scan:
		return p.scan(n)
	case *plan.Values:
		return p.values(n, n.Rows, n.Out)
	case *plan.Series:
		return nil, unsupported("generate_series is not supported in materialized views")
	case *plan.Unnest:
		return p.unnest(n)
	case *plan.GapFill:
		in, err := p.convert(n.Input)
		if err != nil {
			return nil, err
		}
		if len(in.Schema()) != len(n.Out) {
			return nil, unsupported("GAP_FILL over this input is not supported in materialized views")
		}
		return &plan.StreamGapFill{Input: exchange(in, plan.DistSingle, nil), Fill: n, Out: n.Out}, nil
	case *plan.Changelog:
		in, err := p.convert(n.Input)
		if err != nil {
			return nil, err
		}
		return &plan.StreamChangelog{Input: in, Out: n.Out}, nil
	case *plan.Filter:
		return p.filter(n)
	case *plan.Project:
		if rows, ok := constRows(n); ok { // constant rows: one StreamValues
			return p.values(&plan.Values{}, rows, n.Out)
		}
		if df, err := p.crossDynamicFilter(n); err != nil || df != nil {
			return df, err
		}
		if input, exprs, err := p.attachInits(n.Input, n.Exprs); err != nil {
			return nil, err
		} else if input != n.Input {
			// Scalar subqueries in the list: joined in as one-row inputs.
			return p.convert(&plan.Project{Input: input, Exprs: exprs, Out: n.Out})
		}
		for _, e := range n.Exprs {
			if err := checkExpr(e); err != nil {
				return nil, err
			}
		}
		in, err := p.convert(n.Input)
		if err != nil {
			return nil, err
		}
		return p.project(in, n.Exprs, n.Out), nil
	case *plan.Join:
		return p.join(n)
	case *plan.Agg:
		return p.agg(n)
	case *plan.Expand:
		return nil, unsupported("GROUPING SETS, ROLLUP and CUBE are not supported in materialized views")
	case *plan.Sort:
		return p.convert(n.Input) // a materialized view has no order
	case *plan.Limit:
		return p.limit(n)
	case *plan.Distinct:
		if len(n.On) > 0 {
			return nil, unsupported("DISTINCT ON is not supported in materialized views yet")
		}
		in, err := p.convert(n.Input)
		if err != nil {
			return nil, err
		}
		return distinct(in, n.Schema()), nil
	case *plan.SetOp:
		return p.setOp(n)
	case *plan.Window:
		return p.window(n)
	case *plan.HopWindow:
		return p.hopWindow(n)
	case nil:
		return nil, types.Errorf(types.ErrInternal, "stream planner: nil plan node")
	}
	if _, ok := n.(*plan.RecursiveUnion); ok {
		return nil, unsupported("WITH RECURSIVE is not supported in materialized views and sinks (RisingWave does not support it either); run it as a batch query")
	}
	return nil, unsupported("%s is not supported in materialized views", n.Describe())
}

// scan reads an upstream table or materialized view's change stream.
func (p *planner) scan(n *plan.Scan) (plan.StreamNode, error) {
	rel := n.Table
	if n.ProcTime {
		return nil, errDanglingTemporal(rel)
	}
	if rel.Kind == catalog.KindSource {
		return p.sourceScan(n)
	}
	if len(rel.PK) == 0 {
		return nil, unsupported("%s %s has no primary key to stream by", rel.Kind, rel.QualifiedName())
	}
	var s plan.StreamNode = &plan.StreamSource{Relation: rel, Out: n.Out}
	if len(n.Lookup) > 0 {
		conds := make([]expr.Expr, 0, len(n.Lookup))
		for i, e := range n.Lookup {
			if err := checkExpr(e); err != nil {
				return nil, err
			}
			c := rel.PK[i]
			if n.Index != nil { // a job reads the table itself, not the index
				c = n.Index.Index.Columns[i]
			}
			eq, err := expr.Call("=", []expr.Expr{expr.Column(c, n.Out[c].Type), e})
			if err != nil {
				return nil, err
			}
			conds = append(conds, eq)
		}
		cond, err := expr.AndAll(conds)
		if err != nil {
			return nil, err
		}
		s = &plan.StreamFilter{Input: s, Cond: cond}
	}
	s, err := watermarkFilter(s, rel)
	if err != nil {
		return nil, err
	}
	return exchange(s, plan.DistHash, rel.PK), nil
}

// watermarkFilter puts the watermark generator of rel's WATERMARK FOR
// clause (if any) over in, a scan of rel.
func watermarkFilter(in plan.StreamNode, rel *catalog.Relation) (plan.StreamNode, error) {
	if rel.Watermark == nil {
		return in, nil
	}
	col := -1
	for i, f := range in.Schema() {
		if f.Name == rel.Watermark.Column && !f.Hidden {
			col = i
			break
		}
	}
	if col < 0 {
		return nil, types.Errorf(types.ErrInternal, "%s: the watermark column %q is not scanned", rel.QualifiedName(), rel.Watermark.Column)
	}
	delay, err := rel.Watermark.DelayInterval()
	if err != nil {
		return nil, err
	}
	return &plan.StreamWatermarkFilter{Input: in, Col: col, Delay: delay}, nil
}

// EmitOnWindowClose makes sq's aggregations emit each group once, when the
// watermark passes its window (EMIT ON WINDOW CLOSE), so the query's output
// only inserts: every aggregation must be grouped by a column that carries a
// watermark (window_start of TUMBLE or HOP over a source or table with a
// WATERMARK FOR clause, or a group column of such an aggregation below), and
// between them and the sources only projections, filters, hop windows,
// unions and inner joins may stand (their output, over insert-only inputs,
// only inserts). There must be at least one aggregation. Anything else is
// refused.
func EmitOnWindowClose(sq *StreamQuery) error {
	aggs := 0
	if err := eowc(sq.Root, &aggs); err != nil {
		return err
	}
	if aggs == 0 {
		return unsupported("EMIT ON WINDOW CLOSE is only supported on a windowed aggregation (GROUP BY window_start of TUMBLE or HOP over a source or table with WATERMARK FOR) or a window function ordered by a watermarked column")
	}
	return nil
}

// eowc marks the aggregations of the plan under n as emitting on window
// close, counting them, or refuses what cannot be.
func eowc(n plan.StreamNode, aggs *int) error {
	for _, in := range n.Inputs() {
		if err := eowc(in, aggs); err != nil {
			return err
		}
	}
	switch x := n.(type) {
	case *plan.StreamAgg:
		if len(x.GroupBy) == 0 {
			return unsupported("EMIT ON WINDOW CLOSE needs every aggregation grouped by a watermarked column (window_start of TUMBLE or HOP over a source or table with WATERMARK FOR), not a simple aggregation")
		}
		ws := plan.WatermarkCols(x.Input)
		for k, c := range x.GroupBy {
			if slices.Contains(ws, c) {
				x.EmitOnWindowClose, x.WindowCol = true, k
				*aggs++
				return nil
			}
		}
		return unsupported("EMIT ON WINDOW CLOSE needs a group column with a watermark: group by window_start of TUMBLE or HOP over a source or append-only table declared with WATERMARK FOR")
	case *plan.StreamGapFill:
		if !slices.Contains(plan.WatermarkCols(x.Input), x.Fill.TimeCol) {
			return unsupported("EMIT ON WINDOW CLOSE over GAP_FILL needs a watermark on its time column (an append-only table or source declared with WATERMARK FOR)")
		}
		x.EmitOnWindowClose = true
		*aggs++
		return nil
	case *plan.StreamOverWindow:
		if err := eowcOverWindow(x); err != nil {
			return err
		}
		*aggs++
		return nil
	case *plan.StreamHashJoin:
		if x.Kind != plan.InnerJoin {
			return unsupported("EMIT ON WINDOW CLOSE is not supported over a %s join (only inner joins keep the output insert-only)", strings.ToLower(x.Kind.String()))
		}
		return nil
	case *plan.StreamSource:
		if !x.Relation.AppendOnly {
			return unsupported("EMIT ON WINDOW CLOSE needs append-only inputs: %s %s is not", x.Relation.Kind, x.Relation.QualifiedName())
		}
		return nil
	case *plan.StreamProject, *plan.StreamFilter, *plan.StreamExchange, *plan.StreamHopWindow,
		*plan.StreamWatermarkFilter, *plan.StreamUnion, *plan.StreamValues, *plan.StreamSourceScan, *plan.StreamLocalAgg,
		*plan.StreamTemporalJoin:
		return nil
	}
	return unsupported("EMIT ON WINDOW CLOSE is not supported over %s", n.Describe())
}

// sourceScan reads a source: a shared source's stream (from its reader job,
// backfilled per split), or a generator source's connector in the job
// itself, one actor; redistributed by the hidden row id that keys its rows.
func (p *planner) sourceScan(n *plan.Scan) (plan.StreamNode, error) {
	rel := n.Table
	if len(n.Lookup) > 0 {
		return nil, unsupported("a key lookup on source %s", rel.QualifiedName())
	}
	if rel.Connector == nil {
		return nil, unsupported("source %s has no connector", rel.QualifiedName())
	}
	var s plan.StreamNode
	if rel.Connector.Shared {
		s = &plan.StreamSource{Relation: rel, Out: n.Out}
	} else {
		s = &plan.StreamSourceScan{Source: rel, Out: n.Out, RateLimit: rel.Connector.RateLimit}
	}
	s, err := watermarkFilter(s, rel)
	if err != nil {
		return nil, err
	}
	return exchange(s, plan.DistHash, rel.PK), nil
}

// values emits constant rows once. A hidden row number keys them (rows may repeat).
func (p *planner) values(n *plan.Values, rows [][]expr.Expr, out []plan.Field) (plan.StreamNode, error) {
	for _, f := range n.Out {
		if f.Rel != 0 {
			return nil, unsupported("system tables are not supported in materialized views")
		}
	}
	w := len(out)
	sv := &plan.StreamValues{Out: append(slices.Clone(out), plan.Field{Name: "_row", Type: types.TInt64, Hidden: true}), Key: []int{w}}
	for j := range out {
		if out[j].Type.ID == types.Unknown { // a bare string literal: text, as a query's output would be
			sv.Out[j].Type = types.TVarchar
		}
	}
	for i, r := range rows {
		row := make([]expr.Expr, 0, w+1)
		for j, e := range r {
			if err := checkExpr(e); err != nil {
				return nil, err
			}
			if e.Type() != sv.Out[j].Type {
				c, err := expr.Cast(e, sv.Out[j].Type)
				if err != nil {
					return nil, err
				}
				if e, err = expr.Fold(c); err != nil {
					return nil, err
				}
			}
			row = append(row, e)
		}
		sv.Rows = append(sv.Rows, append(row, expr.Literal(types.DInt(int64(i)), types.TInt64)))
	}
	return sv, nil
}

// filter splits the condition: a rank limit over a window (group top-N),
// equalities pushed into an inner join, temporal filters, and the rest.
func (p *planner) filter(n *plan.Filter) (plan.StreamNode, error) {
	conds := expr.Conjuncts(n.Cond)
	if dyn, rest := p.splitDynamic(conds); len(dyn) > 0 {
		// The other conjuncts first, then one dynamic filter per comparison
		// with a scalar subquery.
		var in plan.Node = n.Input
		if len(rest) > 0 {
			cond, err := expr.AndAll(rest)
			if err != nil {
				return nil, err
			}
			in = &plan.Filter{Input: n.Input, Cond: cond}
		}
		s, err := p.convert(in)
		if err != nil {
			return nil, err
		}
		for _, d := range dyn {
			if s, err = p.dynamicFilter(s, d); err != nil {
				return nil, err
			}
		}
		return s, nil
	}
	for i, c := range conds {
		if w, limit, ok := rankLimit(n.Input, c); ok {
			if old, seen := p.ranks[w]; !seen || limit < old {
				p.ranks[w] = limit
			}
			conds = slices.Delete(slices.Clone(conds), i, i+1)
			break
		}
	}
	if j, ok := n.Input.(*plan.Join); ok && j.Kind != plan.InnerJoin {
		if pushed, rest, err := pushIntoPreserved(j, conds); err != nil || pushed != nil {
			if err != nil || len(rest) == 0 {
				return p.convertOrErr(pushed, err)
			}
			cond, err := expr.AndAll(rest)
			if err != nil {
				return nil, err
			}
			return p.convert(&plan.Filter{Input: pushed, Cond: cond})
		}
	}
	if j, ok := n.Input.(*plan.Join); ok && j.Kind == plan.InnerJoin {
		if reordered, ok := reorderJoins(j, conds); ok {
			return p.convert(reordered)
		}
		pushed, rest, err := pushIntoJoin(j, conds)
		if err != nil {
			return nil, err
		}
		if pushed != nil {
			if len(rest) == 0 {
				return p.convert(pushed)
			}
			cond, err := expr.AndAll(rest)
			if err != nil {
				return nil, err
			}
			return p.convert(&plan.Filter{Input: pushed, Cond: cond})
		}
	}
	if input, moved, err := p.attachInits(n.Input, conds); err != nil {
		return nil, err
	} else if input != n.Input {
		// Scalar subqueries read otherwise than compared with the row: joined
		// in as one-row inputs, their columns dropped after the filter.
		cond, err := expr.AndAll(moved)
		if err != nil {
			return nil, err
		}
		fields := n.Input.Schema()
		exprs := make([]expr.Expr, len(fields))
		for i, f := range fields {
			exprs[i] = expr.Column(i, f.Type)
		}
		return p.convert(&plan.Project{Input: &plan.Filter{Input: input, Cond: cond}, Exprs: exprs, Out: slices.Clone(fields)})
	}
	var rest []expr.Expr
	var temporal []*plan.StreamTemporalFilter
	for _, c := range conds {
		tf, ok, err := temporalFilter(c)
		if err != nil {
			return nil, err
		}
		if ok {
			temporal = append(temporal, tf)
			continue
		}
		if err := checkExpr(c); err != nil {
			return nil, err
		}
		rest = append(rest, c)
	}
	in, err := p.convert(n.Input)
	if err != nil {
		return nil, err
	}
	if len(rest) > 0 {
		cond, err := expr.AndAll(rest)
		if err != nil {
			return nil, err
		}
		in = &plan.StreamFilter{Input: in, Cond: cond}
	}
	for _, tf := range temporal {
		tf.Input = in
		in = tf
	}
	return in, nil
}

func (p *planner) convertOrErr(n plan.Node, err error) (plan.StreamNode, error) {
	if err != nil {
		return nil, err
	}
	return p.convert(n)
}

// pushIntoPreserved moves a filter's conjuncts that read only the left
// input of a left, semi or anti join below it, onto the left input (whose
// rows the join passes on unchanged, matched or not): a decorrelated
// subquery's join then sits over the FROM list's joins with their WHERE
// equalities. It returns the new join (nil when nothing moved) and the
// conjuncts that stay above.
func pushIntoPreserved(j *plan.Join, conds []expr.Expr) (plan.Node, []expr.Expr, error) {
	switch j.Kind {
	case plan.LeftJoin, plan.SemiJoin, plan.AntiJoin:
	default:
		return nil, conds, nil
	}
	nl := len(j.Left.Schema())
	var left, rest []expr.Expr
	for _, c := range conds {
		cols, ok := columnsOf(c)
		if !ok || len(cols) == 0 || hasTimeFunc(c) || slices.ContainsFunc(cols, func(i int) bool { return i >= nl }) {
			rest = append(rest, c)
			continue
		}
		left = append(left, c)
	}
	if len(left) == 0 {
		return nil, conds, nil
	}
	cond, err := expr.AndAll(left)
	if err != nil {
		return nil, nil, err
	}
	nj := *j
	nj.Left = &plan.Filter{Input: j.Left, Cond: cond}
	return &nj, rest, nil
}

// rankLimit recognises "rn <= N" (also <, = 1 and the mirrored forms) where
// rn is, through projections and filters, the row_number/rank/dense_rank
// column of a single-function Window: the group top-N pattern.
func rankLimit(in plan.Node, c expr.Expr) (*plan.Window, int64, bool) {
	f, ok := c.(*expr.FuncExpr)
	if !ok || len(f.Args) != 2 {
		return nil, 0, false
	}
	op := f.Name
	colSide, kSide := f.Args[0], f.Args[1]
	if _, ok := columnIndex(colSide); !ok {
		colSide, kSide = kSide, colSide
		op = map[string]string{"<=": ">=", "<": ">", ">=": "<=", ">": "<", "=": "="}[op]
	}
	col, ok := columnIndex(colSide)
	if !ok || !expr.IsConst(kSide) || !kSide.Type().IsInteger() {
		return nil, 0, false
	}
	kd, err := kSide.EvalRow(nil, nil)
	if err != nil || kd.Null {
		return nil, 0, false
	}
	var limit int64
	switch {
	case op == "<=":
		limit = kd.I
	case op == "<":
		limit = kd.I - 1
	case op == "=" && kd.I == 1:
		limit = 1
	default:
		return nil, 0, false
	}
	if limit < 1 {
		return nil, 0, false
	}
	for {
		switch x := in.(type) {
		case *plan.Project:
			if col, ok = columnIndex(x.Exprs[col]); !ok {
				return nil, 0, false
			}
			in = x.Input
		case *plan.Filter:
			in = x.Input
		case *plan.Window:
			w := len(x.Input.Schema())
			if len(x.Funcs) != 1 || col != w {
				return nil, 0, false
			}
			switch x.Funcs[0].Name {
			case "row_number", "rank", "dense_rank":
				return x, limit, true
			}
			return nil, 0, false
		default:
			return nil, 0, false
		}
	}
}

// columnIndex returns the input column an expression reads when it is a bare
// column reference. The binder's window-function references are their own
// type; they print as "$n" like a column reference, and read column n.
func columnIndex(e expr.Expr) (int, bool) {
	if c, ok := e.(*expr.ColumnRef); ok {
		return c.Index, true
	}
	switch e.(type) {
	case *expr.Const, *expr.ParamRef, *expr.FuncExpr, *expr.CastExpr, *expr.CaseExpr:
		return 0, false
	}
	s := e.String()
	if len(s) < 2 || s[0] != '$' {
		return 0, false
	}
	i, err := strconv.Atoi(s[1:])
	return i, err == nil
}

// pushIntoJoin moves a filter's conjuncts over an inner join into it:
// left-only and right-only conditions into filters on each side, and
// column equalities across the sides into equi-join keys. It returns a new
// join (nil when nothing moved) and the conjuncts that stay above.
func pushIntoJoin(j *plan.Join, conds []expr.Expr) (plan.Node, []expr.Expr, error) {
	nl := len(j.Left.Schema())
	var left, right, rest, bands, cross []expr.Expr
	eqL, eqR := slices.Clone(j.EqLeft), slices.Clone(j.EqRight)
	moved := false
	for _, c := range conds {
		cols, ok := columnsOf(c)
		if !ok {
			rest = append(rest, c)
			continue
		}
		allLeft, allRight := true, true
		for _, i := range cols {
			if i < nl {
				allRight = false
			} else {
				allLeft = false
			}
		}
		switch {
		case allLeft && len(cols) > 0:
			left = append(left, c)
			moved = true
		case allRight && len(cols) > 0:
			r, ok := rewriteCols(c, func(ref *expr.ColumnRef) expr.Expr { return expr.Column(ref.Index-nl, ref.Typ) })
			if !ok {
				rest = append(rest, c)
				continue
			}
			right = append(right, r)
			moved = true
		default:
			l, r, ok := equiKey(c, nl)
			if ok && j.Left.Schema()[l].Type.Base() == j.Right.Schema()[r].Type.Base() {
				eqL, eqR = append(eqL, l), append(eqR, r)
				moved = true
				continue
			}
			if len(plan.BandsOf(c, j.Left.Schema(), j.Right.Schema())) > 0 && !hasTimeFunc(c) {
				// A time band between the sides (an interval join): in the join's
				// condition, where watermarks let the join clean its state.
				bands = append(bands, c)
				moved = true
				continue
			}
			if hasTimeFunc(c) {
				rest = append(rest, c)
				continue
			}
			cross = append(cross, c)
		}
	}
	if len(eqL) == 0 && len(cross) > 0 {
		// No equality: the join compares every pair of rows, with these
		// conditions (a nested-loop join).
		bands = append(bands, cross...)
		moved = true
	} else {
		rest = append(rest, cross...)
	}
	if !moved {
		return nil, conds, nil
	}
	nj := *j
	nj.EqLeft, nj.EqRight = eqL, eqR
	if len(bands) > 0 {
		if j.Cond != nil {
			bands = append([]expr.Expr{j.Cond}, bands...)
		}
		cond, err := expr.AndAll(bands)
		if err != nil {
			return nil, nil, err
		}
		nj.Cond = cond
	}
	if len(left) > 0 {
		cond, err := expr.AndAll(left)
		if err != nil {
			return nil, nil, err
		}
		nj.Left = &plan.Filter{Input: j.Left, Cond: cond}
	}
	if len(right) > 0 {
		cond, err := expr.AndAll(right)
		if err != nil {
			return nil, nil, err
		}
		nj.Right = &plan.Filter{Input: j.Right, Cond: cond}
	}
	return &nj, rest, nil
}

// equiKey recognises "$l = $r" with l on the left side and r on the right.
func equiKey(e expr.Expr, nl int) (int, int, bool) {
	call, ok := e.(*expr.FuncExpr)
	if !ok || call.Name != "=" || len(call.Args) != 2 {
		return 0, 0, false
	}
	a, ok1 := call.Args[0].(*expr.ColumnRef)
	c, ok2 := call.Args[1].(*expr.ColumnRef)
	if !ok1 || !ok2 {
		return 0, 0, false
	}
	switch {
	case a.Index < nl && c.Index >= nl:
		return a.Index, c.Index - nl, true
	case c.Index < nl && a.Index >= nl:
		return c.Index, a.Index - nl, true
	}
	return 0, 0, false
}

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

// checkExpr refuses what a stream operator cannot evaluate consistently:
// the clock (outside temporal filters), volatile functions (a retraction
// must see the value the insert saw) and parameters.
func checkExpr(e expr.Expr) error {
	var err error
	expr.Walk(e, func(x expr.Expr) bool {
		switch y := x.(type) {
		case *expr.FuncExpr:
			switch {
			case isTimeFunc(y):
				err = errNow()
			case y.Volatility == expr.Volatile:
				err = unsupported("volatile function %s is not supported in materialized views", y.Name)
			}
		case *expr.ParamRef:
			err = unsupported("parameters are not supported in materialized views")
		case initPlanRef:
			err = unsupported("a scalar subquery in a materialized view is only supported compared with an expression over the row in a WHERE or HAVING conjunct (a dynamic filter), or correlated")
		}
		return err == nil
	})
	return err
}

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

// project computes exprs over in, appending hidden copies of in's stream-key
// columns the projection drops, so the output has a stream key. Projections
// over projections are merged when that costs no recomputation, and an
// identity projection disappears.
func (p *planner) project(in plan.StreamNode, exprs []expr.Expr, out []plan.Field) plan.StreamNode {
	if ip, ok := in.(*plan.StreamProject); ok {
		if merged, ok := composeProject(ip, exprs); ok {
			return p.project(ip.Input, merged, out)
		}
	}
	inFields := in.Schema()
	exprs, out = slices.Clone(exprs), slices.Clone(out)
	key := make([]int, 0, len(in.StreamKey()))
	for _, k := range in.StreamKey() {
		pos := -1
		for j, e := range exprs {
			if c, ok := e.(*expr.ColumnRef); ok && c.Index == k {
				pos = j
				break
			}
		}
		if pos < 0 {
			f := inFields[k]
			f.Hidden = true
			exprs = append(exprs, expr.Column(k, f.Type))
			out = append(out, f)
			pos = len(exprs) - 1
		}
		key = append(key, pos)
	}
	if isIdentity(exprs, inFields) {
		return in
	}
	return &plan.StreamProject{Input: in, Exprs: exprs, Out: out, Key: key}
}

// composeProject rewrites exprs (over ip's output) over ip's input, when
// either side is only column references.
func composeProject(ip *plan.StreamProject, exprs []expr.Expr) ([]expr.Expr, bool) {
	out := make([]expr.Expr, len(exprs))
	if allColumns(exprs) {
		for i, e := range exprs {
			out[i] = ip.Exprs[e.(*expr.ColumnRef).Index]
		}
		return out, true
	}
	if !allColumns(ip.Exprs) {
		return nil, false
	}
	for i, e := range exprs {
		r, ok := rewriteCols(e, func(c *expr.ColumnRef) expr.Expr { return ip.Exprs[c.Index] })
		if !ok {
			return nil, false
		}
		out[i] = r
	}
	return out, true
}

func allColumns(es []expr.Expr) bool {
	for _, e := range es {
		if _, ok := e.(*expr.ColumnRef); !ok {
			return false
		}
	}
	return true
}

func isIdentity(exprs []expr.Expr, in []plan.Field) bool {
	if len(exprs) != len(in) {
		return false
	}
	for i, e := range exprs {
		c, ok := e.(*expr.ColumnRef)
		if !ok || c.Index != i || c.Typ != in[i].Type {
			return false
		}
	}
	return true
}

// reorder permutes n's columns (order lists every column once).
func (p *planner) reorder(n plan.StreamNode, order []int) plan.StreamNode {
	fields := n.Schema()
	exprs := make([]expr.Expr, len(order))
	out := make([]plan.Field, len(order))
	for i, c := range order {
		exprs[i] = expr.Column(c, fields[c].Type)
		out[i] = fields[c]
	}
	return p.project(n, exprs, out)
}

// span appends lo, lo+1, ..., hi-1 to s.
func span(s []int, lo, hi int) []int {
	for i := lo; i < hi; i++ {
		s = append(s, i)
	}
	return s
}

func hidden(fs []plan.Field) []plan.Field {
	out := slices.Clone(fs)
	for i := range out {
		out[i].Hidden = true
	}
	return out
}

// join plans an equi-join: both sides hashed by their join keys. A semi or
// anti join (EXISTS, IN and their negations, decorrelated) without an
// equality, and NOT IN's null-aware anti join, join on a constant instead:
// one actor compares every pair.
func (p *planner) join(n *plan.Join) (plan.StreamNode, error) {
	if n.MaxOneRow {
		return nil, unsupported("a correlated scalar subquery in a materialized view must return at most one row per outer row: aggregate (e.g. max(...) or count(*)), use LIMIT 1, or correlate on a primary key")
	}
	if r, ok, found := asTemporalRight(n.Right); ok {
		return p.temporalJoin(n, r)
	} else if found {
		return nil, errDanglingTemporal(r.scan.Table)
	}
	semi := n.Kind == plan.SemiJoin || n.Kind == plan.AntiJoin
	left, err := p.convert(n.Left)
	if err != nil {
		return nil, err
	}
	right, err := p.convert(n.Right)
	if err != nil {
		return nil, err
	}
	// Without an equality every pair of rows is compared (a nested-loop
	// join): refused, as RisingWave does, when there is no condition at all
	// and neither side has at most one row.
	nested := len(n.EqLeft) == 0 && !semi
	if nested && n.Cond == nil && !oneRow(left) && !oneRow(right) {
		return nil, errNestedLoop()
	}
	nl, nr := len(n.Left.Schema()), len(n.Right.Schema())
	nl2, nr2 := len(left.Schema()), len(right.Schema())
	var cond expr.Expr
	if n.Cond != nil {
		if err := checkExpr(n.Cond); err != nil {
			return nil, err
		}
		var ok bool
		cond, ok = rewriteCols(n.Cond, func(c *expr.ColumnRef) expr.Expr {
			if c.Index >= nl {
				return expr.Column(c.Index-nl+nl2, c.Typ)
			}
			return c
		})
		if !ok {
			return nil, unsupported("join condition %s is not supported in materialized views", n.Cond)
		}
	}
	eqL, eqR := slices.Clone(n.EqLeft), slices.Clone(n.EqRight)
	if n.NullAware {
		// NOT IN: a right row rejects a left row when the keys are equal or either is NULL.
		var conds []expr.Expr
		for i := range eqL {
			lc, rc := left.Schema()[eqL[i]], right.Schema()[eqR[i]]
			eq, err := expr.Call("=", []expr.Expr{expr.Column(eqL[i], lc.Type), expr.Column(nl2+eqR[i], rc.Type)})
			if err != nil {
				return nil, err
			}
			if eq, err = expr.Call("is_not_false", []expr.Expr{eq}); err != nil {
				return nil, err
			}
			conds = append(conds, eq)
		}
		if cond != nil {
			conds = append(conds, cond)
		}
		if cond, err = expr.AndAll(conds); err != nil {
			return nil, err
		}
		eqL, eqR = nil, nil
	}
	if len(eqL) == 0 {
		left, right = p.withConstKey(left), p.withConstKey(right)
		eqL, eqR = []int{nl2}, []int{nr2}
		if cond != nil {
			// The right side's columns moved one to the right.
			cond, _ = rewriteCols(cond, func(c *expr.ColumnRef) expr.Expr {
				if c.Index >= nl2 {
					return expr.Column(c.Index+1, c.Typ)
				}
				return c
			})
		}
	}
	j := &plan.StreamHashJoin{Kind: n.Kind,
		Left: exchange(left, plan.DistHash, eqL), Right: exchange(right, plan.DistHash, eqR),
		EqLeft: eqL, EqRight: eqR, Cond: cond, NestedLoop: nested}
	if nested {
		// Every row has the one key: one actor.
		j.Left, j.Right = exchange(left, plan.DistSingle, nil), exchange(right, plan.DistSingle, nil)
	}
	if semi {
		if len(j.Schema()) > nl2 { // drop the constant key
			exprs := make([]expr.Expr, nl2)
			fs := j.Schema()
			for i := range exprs {
				exprs[i] = expr.Column(i, fs[i].Type)
			}
			return p.project(j, exprs, slices.Clone(fs[:nl2])), nil
		}
		return j, nil
	}
	if nested {
		// Drop the constant keys; restore the bound layout.
		order := span(nil, 0, nl)
		order = span(order, nl2+1, nl2+1+nr)
		order = span(order, nl, nl2)
		order = span(order, nl2+1+nr, nl2+1+nr2)
		fs := j.Schema()
		exprs := make([]expr.Expr, len(order))
		out := make([]plan.Field, len(order))
		for i, c := range order {
			exprs[i], out[i] = expr.Column(c, fs[c].Type), fs[c]
		}
		return p.project(j, exprs, out), nil
	}
	if nl2 == nl {
		return j, nil
	}
	// Restore the bound layout: left columns, right columns, then the hidden keys of both.
	order := span(nil, 0, nl)
	order = span(order, nl2, nl2+nr)
	order = span(order, nl, nl2)
	order = span(order, nl2+nr, nl2+nr2)
	return p.reorder(j, order), nil
}

// withConstKey appends a hidden constant column to n: a join key every row shares.
func (p *planner) withConstKey(n plan.StreamNode) plan.StreamNode {
	fs := n.Schema()
	exprs := make([]expr.Expr, 0, len(fs)+1)
	for i, f := range fs {
		exprs = append(exprs, expr.Column(i, f.Type))
	}
	exprs = append(exprs, expr.Literal(types.DInt(1), types.TInt32))
	out := append(slices.Clone(fs), plan.Field{Name: "?const?", Type: types.TInt32, Hidden: true})
	return p.project(n, exprs, out)
}

// unnest plans unnest of an input column (FROM t, unnest(t.a), or unnest in
// the SELECT list) as a StreamUnnest; its position column, hidden unless
// asked for, makes the stream key unique. unnest of a constant in FROM is
// refused.
func (p *planner) unnest(n *plan.Unnest) (plan.StreamNode, error) {
	if n.Input == nil {
		return nil, unsupported("unnest of a constant in FROM is not supported in materialized views")
	}
	if err := checkExpr(n.Array); err != nil {
		return nil, err
	}
	in, err := p.convert(n.Input)
	if err != nil {
		return nil, err
	}
	out := slices.Clone(n.Out)
	if !n.Ordinality {
		out = append(out, plan.Field{Name: "ordinality", Type: types.TInt64, Hidden: true})
	}
	key := append(slices.Clone(in.StreamKey()), len(out)-1)
	return &plan.StreamUnnest{Input: in, Array: n.Array, Outer: n.Outer, Out: out, Key: key}, nil
}

// agg plans hash aggregation (hashed by the group) or simple aggregation (one actor).
func (p *planner) agg(n *plan.Agg) (plan.StreamNode, error) {
	for i := range n.Aggs {
		c := &n.Aggs[i]
		if c.Agg.Distinct && (c.Agg.Kind == expr.AggFirstValue || c.Agg.Kind == expr.AggLastValue) {
			return nil, unsupported("%s(DISTINCT ...) is not supported in materialized views", c.Agg.Name)
		}
		if !c.Agg.Distinct || len(c.OrderBy) == 0 || c.Agg.Kind == expr.AggMin || c.Agg.Kind == expr.AggMax {
			continue
		}
		// string_agg(DISTINCT x, ... ORDER BY x) and array_agg(DISTINCT x [ORDER BY x]) read their distinct table, in x order.
		if (c.Agg.Kind != expr.AggStringAgg && c.Agg.Kind != expr.AggArrayAgg) || len(c.OrderBy) != 1 || c.OrderBy[0].Col != c.Args[0] || c.OrderBy[0].Desc {
			return nil, unsupported("%s with both DISTINCT and ORDER BY (other than ascending by its argument) is not supported in materialized views", c.Agg.Name)
		}
	}
	in, err := p.convert(n.Input)
	if err != nil {
		return nil, err
	}
	if local := localAgg(in, n.GroupBy, n.Aggs); local != nil {
		return &plan.StreamAgg{Input: exchange(local, plan.DistHash, span(nil, 0, len(n.GroupBy))),
			GroupBy: span(nil, 0, len(n.GroupBy)), Aggs: slices.Clone(n.Aggs), Out: slices.Clone(n.Out), Merge: true}, nil
	}
	return &plan.StreamAgg{Input: exchange(in, plan.DistHash, n.GroupBy), GroupBy: slices.Clone(n.GroupBy),
		Aggs: slices.Clone(n.Aggs), Out: slices.Clone(n.Out)}, nil
}

// localAgg returns the first phase of a two-phase aggregation of in (a
// StreamLocalAgg, in in's actors), or nil when in is already distributed by
// the group (no exchange to save) or an aggregate has no partial form.
func localAgg(in plan.StreamNode, groupBy []int, aggs []plan.AggCall) plan.StreamNode {
	dist := plan.DistHash
	if len(groupBy) == 0 {
		dist = plan.DistSingle
	}
	if d, ks, ok := distOf(in); ok && d == dist && (dist != plan.DistHash || slices.Equal(ks, groupBy)) {
		return nil
	}
	out, ok := plan.LocalAggOut(in.Schema(), groupBy, aggs)
	if !ok {
		return nil
	}
	if e, isEx := in.(*plan.StreamExchange); isEx {
		in = e.Input
	}
	skipStatelessExchange(in) // the exchange after the local phase redistributes
	return &plan.StreamLocalAgg{Input: in, GroupBy: slices.Clone(groupBy), Aggs: slices.Clone(aggs), Out: out}
}

// distinct groups by the first len(fields) columns with no aggregates.
func distinct(in plan.StreamNode, fields []plan.Field) plan.StreamNode {
	group := span(nil, 0, len(fields))
	if local := localAgg(in, group, nil); local != nil {
		return &plan.StreamAgg{Input: exchange(local, plan.DistHash, group), GroupBy: group, Out: slices.Clone(fields), Merge: true}
	}
	return &plan.StreamAgg{Input: exchange(in, plan.DistHash, group), GroupBy: group, Out: slices.Clone(fields)}
}

// limit plans ORDER BY .. LIMIT (or LIMIT alone, ordered by the stream key)
// as a top-N on one actor.
func (p *planner) limit(n *plan.Limit) (plan.StreamNode, error) {
	count, hasCount, err := constInt(n.Count, "LIMIT")
	if err != nil {
		return nil, err
	}
	offset, hasOffset, err := constInt(n.Offset, "OFFSET")
	if err != nil {
		return nil, err
	}
	if !hasCount {
		if hasOffset && offset > 0 {
			return nil, unsupported("OFFSET without LIMIT is not supported in materialized views")
		}
		return p.convert(n.Input)
	}
	input := n.Input
	var order []plan.SortKey
	if s, ok := input.(*plan.Sort); ok {
		order, input = slices.Clone(s.Keys), s.Input
	}
	if n.Ties != nil {
		// FETCH FIRST n ROWS WITH TIES keeps the rows whose rank is at most n.
		if !slices.Equal(order, n.Ties) {
			return nil, unsupported("WITH TIES over DISTINCT ON is not supported in materialized views")
		}
		if offset > 0 {
			return nil, unsupported("OFFSET with FETCH ... WITH TIES is not supported in materialized views")
		}
		in, err := p.convert(input)
		if err != nil {
			return nil, err
		}
		in = exchange(in, plan.DistSingle, nil)
		fields := in.Schema()
		topn := &plan.StreamTopN{Input: in, OrderBy: order, Limit: count, Rank: "rank",
			Out: append(slices.Clone(fields), plan.Field{Name: "rank", Type: types.TInt64, Hidden: true})}
		exprs := make([]expr.Expr, len(fields))
		for i, f := range fields {
			exprs[i] = expr.Column(i, f.Type)
		}
		return p.project(topn, exprs, slices.Clone(fields)), nil
	}
	in, err := p.convert(input)
	if err != nil {
		return nil, err
	}
	if order == nil {
		for _, k := range in.StreamKey() {
			order = append(order, plan.SortKey{Col: k})
		}
	}
	in = exchange(in, plan.DistSingle, nil)
	return &plan.StreamTopN{Input: in, OrderBy: order, Limit: count, Offset: offset, Out: slices.Clone(in.Schema())}, nil
}

// constInt evaluates a LIMIT or OFFSET expression, which must be constant.
func constInt(e expr.Expr, what string) (int64, bool, error) {
	if e == nil {
		return 0, false, nil
	}
	if !expr.IsConst(e) {
		return 0, false, unsupported("%s in a materialized view must be a constant", what)
	}
	d, err := e.EvalRow(nil, nil)
	if err != nil {
		return 0, false, err
	}
	if d.Null {
		return 0, false, nil
	}
	if d.I < 0 {
		kind := types.ErrInvalidLimit
		if what == "OFFSET" {
			kind = types.ErrInvalidOffset
		}
		return 0, false, types.Errorf(kind, "%s must not be negative", what)
	}
	return d.I, true, nil
}

// window plans a ranking window limited by a parent filter as a group top-N
// with a rank column; any other window as over-window operators.
func (p *planner) window(n *plan.Window) (plan.StreamNode, error) {
	limit, ok := p.ranks[n]
	if !ok {
		return p.overWindow(n)
	}
	f := n.Funcs[0]
	in, err := p.convert(n.Input)
	if err != nil {
		return nil, err
	}
	in = exchange(in, plan.DistHash, f.PartitionBy)
	fields := in.Schema()
	w, w2 := len(n.Input.Schema()), len(fields)
	out := append(slices.Clone(fields), plan.Field{Name: f.Name, Type: f.Type})
	topn := &plan.StreamTopN{Input: in, OrderBy: slices.Clone(f.OrderBy), Limit: limit,
		GroupBy: slices.Clone(f.PartitionBy), Rank: f.Name, Out: out}
	if w2 == w {
		return topn, nil
	}
	// The rank column goes where the bound plan expects it, before the hidden keys.
	return p.reorder(topn, append(append(span(nil, 0, w), w2), span(nil, w, w2)...)), nil
}

func (p *planner) hopWindow(n *plan.HopWindow) (plan.StreamNode, error) {
	in, err := p.convert(n.Input)
	if err != nil {
		return nil, err
	}
	fields := in.Schema()
	w, w2 := len(n.Input.Schema()), len(fields)
	out := append(slices.Clone(fields), n.Out[w], n.Out[w+1])
	hw := &plan.StreamHopWindow{Input: in, TimeCol: n.TimeCol, Slide: n.Slide, Size: n.Size, Out: out}
	if w2 == w {
		return hw, nil
	}
	return p.reorder(hw, append(span(nil, 0, w), append([]int{w2, w2 + 1}, span(nil, w, w2)...)...)), nil
}

// setOp plans UNION ALL as a stream union whose inputs carry a hidden
// constant input number in their key, and UNION as that plus a distinct.
func (p *planner) setOp(n *plan.SetOp) (plan.StreamNode, error) {
	if n.Kind != plan.Union {
		return nil, unsupported("INTERSECT and EXCEPT are not supported in materialized views")
	}
	var u plan.StreamNode
	if rows, ok := unionRows(n); ok {
		var err error
		if u, err = p.values(&plan.Values{}, rows, n.Out); err != nil {
			return nil, err
		}
	} else {
		var err error
		if u, err = p.unionAll(n); err != nil {
			return nil, err
		}
	}
	if n.All {
		return u, nil
	}
	return distinct(u, n.Out), nil
}

func (p *planner) unionAll(n *plan.SetOp) (plan.StreamNode, error) {
	w := len(n.Out)
	ins := make([]plan.StreamNode, len(n.Inputs))
	for i, c := range n.Inputs {
		s, err := p.convert(c)
		if err != nil {
			return nil, err
		}
		ins[i] = s
	}
	// Layout of every input: the union's columns, then one slot per input's
	// hidden key columns (NULL in the other inputs), then the input number.
	slot := make([]int, len(ins)) // where input i's hidden columns start
	next := w
	var extras []plan.Field
	for i, s := range ins {
		slot[i] = next
		fs := s.Schema()[w:]
		extras = append(extras, hidden(fs)...)
		next += len(fs)
	}
	src := next
	var key []int
	for i, s := range ins {
		for _, k := range s.StreamKey() {
			if k >= w {
				k = slot[i] + k - w
			}
			if !slices.Contains(key, k) {
				key = append(key, k)
			}
		}
	}
	key = append(key, src)
	slices.Sort(key)
	out := append(append(slices.Clone(n.Out), extras...), plan.Field{Name: "_union_input", Type: types.TInt32, Hidden: true})
	projected := make([]plan.StreamNode, len(ins))
	for i, s := range ins {
		fs := s.Schema()
		exprs := make([]expr.Expr, 0, len(out))
		for j := 0; j < w; j++ {
			var e expr.Expr = expr.Column(j, fs[j].Type)
			if fs[j].Type != n.Out[j].Type {
				c, err := expr.Cast(e, n.Out[j].Type)
				if err != nil {
					return nil, err
				}
				e = c
			}
			exprs = append(exprs, e)
		}
		for k, s2 := range ins {
			for j := w; j < len(s2.Schema()); j++ {
				if k == i {
					exprs = append(exprs, expr.Column(j, fs[j].Type))
				} else {
					exprs = append(exprs, expr.Literal(types.NullDatum, s2.Schema()[j].Type))
				}
			}
		}
		exprs = append(exprs, expr.Literal(types.DInt(int64(i)), types.TInt32))
		if ip, ok := s.(*plan.StreamProject); ok {
			if merged, ok := composeProject(ip, exprs); ok {
				s, exprs = ip.Input, merged
			}
		}
		proj := &plan.StreamProject{Input: s, Exprs: exprs, Out: out, Key: key}
		projected[i] = exchange(proj, plan.DistHash, key)
	}
	return &plan.StreamUnion{Ins: projected, Key: key}, nil
}

// unionRows returns the rows of a UNION whose inputs are all constant rows
// (the binder's form of a multi-row VALUES), so they make one StreamValues.
func unionRows(n *plan.SetOp) ([][]expr.Expr, bool) {
	var rows [][]expr.Expr
	for _, in := range n.Inputs {
		r, ok := constRows(in)
		if !ok {
			return nil, false
		}
		rows = append(rows, r...)
	}
	return rows, true
}

// constRows returns the rows of Values under projections, with the
// projections substituted and folded.
func constRows(n plan.Node) ([][]expr.Expr, bool) {
	switch n := n.(type) {
	case *plan.Values:
		for _, f := range n.Out {
			if f.Rel != 0 {
				return nil, false
			}
		}
		return n.Rows, true
	case *plan.Project:
		rows, ok := constRows(n.Input)
		if !ok {
			return nil, false
		}
		out := make([][]expr.Expr, len(rows))
		for i, r := range rows {
			out[i] = make([]expr.Expr, len(n.Exprs))
			for j, e := range n.Exprs {
				s, ok := rewriteCols(e, func(c *expr.ColumnRef) expr.Expr {
					if c.Index >= len(r) {
						return nil
					}
					return r[c.Index]
				})
				if !ok {
					return nil, false
				}
				if f, err := expr.Fold(s); err == nil {
					s = f
				}
				out[i][j] = s
			}
		}
		return out, true
	}
	return nil, false
}

// exchange redistributes n's rows (Hash on keys; Single for no keys),
// unless n is already distributed that way. An exchange directly over
// another replaces it.
func exchange(n plan.StreamNode, dist plan.DistKind, keys []int) plan.StreamNode {
	if dist == plan.DistHash && len(keys) == 0 {
		dist = plan.DistSingle
	}
	if d, ks, ok := distOf(n); ok && d == dist && (dist != plan.DistHash || slices.Equal(ks, keys)) {
		return n
	}
	if e, ok := n.(*plan.StreamExchange); ok {
		n = e.Input
	}
	skipStatelessExchange(n)
	return &plan.StreamExchange{Input: n, Dist: dist, Keys: slices.Clone(keys)}
}

// skipStatelessExchange removes the exchange under a chain of projections and
// filters that a new exchange is about to redistribute: stateless operators
// run as well below it, and every row then crosses one exchange, not two.
func skipStatelessExchange(n plan.StreamNode) {
	for {
		var in *plan.StreamNode
		switch m := n.(type) {
		case *plan.StreamProject:
			in = &m.Input
		case *plan.StreamFilter:
			in = &m.Input
		default:
			return
		}
		if e, ok := (*in).(*plan.StreamExchange); ok {
			*in = e.Input
			return
		}
		n = *in
	}
}

// distOf reports how n's output is distributed over actors, when known.
func distOf(n plan.StreamNode) (plan.DistKind, []int, bool) {
	switch n := n.(type) {
	case *plan.StreamExchange:
		return n.Dist, n.Keys, true
	case *plan.StreamValues:
		return plan.DistSingle, nil, true
	case *plan.StreamAgg:
		if len(n.GroupBy) == 0 {
			return plan.DistSingle, nil, true
		}
		return plan.DistHash, span(nil, 0, len(n.GroupBy)), true
	case *plan.StreamTopN:
		if len(n.GroupBy) == 0 {
			return plan.DistSingle, nil, true
		}
		return distOf(n.Input)
	case *plan.StreamOverWindow:
		if len(n.PartitionBy()) == 0 {
			return plan.DistSingle, nil, true
		}
		return distOf(n.Input)
	case *plan.StreamFilter:
		return distOf(n.Input)
	case *plan.StreamUnnest:
		return distOf(n.Input) // the input's columns keep their positions
	case *plan.StreamGapFill:
		return plan.DistSingle, nil, true
	case *plan.StreamChangelog:
		// The input's columns keep their positions, but its hidden key columns
		// after them are dropped.
		d, ks, ok := distOf(n.Input)
		for _, k := range ks {
			if k >= len(n.Out)-2 {
				return 0, nil, false
			}
		}
		return d, ks, ok
	case *plan.StreamTemporalFilter:
		return distOf(n.Input)
	case *plan.StreamWatermarkFilter:
		return distOf(n.Input)
	case *plan.StreamHopWindow:
		return distOf(n.Input)
	case *plan.StreamMaterialize:
		return distOf(n.Input)
	case *plan.StreamTemporalJoin:
		return distOf(n.Left) // the left columns keep their positions
	case *plan.StreamSink:
		return distOf(n.Input)
	case *plan.StreamSourceScan:
		return plan.DistSingle, nil, true
	case *plan.StreamProject:
		d, ks, ok := distOf(n.Input)
		if !ok || d != plan.DistHash {
			return d, ks, ok
		}
		mapped := make([]int, len(ks))
		for i, k := range ks {
			mapped[i] = -1
			for j, e := range n.Exprs {
				if c, ok := e.(*expr.ColumnRef); ok && c.Index == k {
					mapped[i] = j
					break
				}
			}
			if mapped[i] < 0 {
				return 0, nil, false
			}
		}
		return d, mapped, true
	}
	return 0, nil, false
}

// rewriteCols rebuilds e with every column reference replaced by f's result.
// It fails (false) on expression kinds it cannot rebuild or when f returns nil.
func rewriteCols(e expr.Expr, f func(*expr.ColumnRef) expr.Expr) (expr.Expr, bool) {
	switch x := e.(type) {
	case *expr.ColumnRef:
		r := f(x)
		return r, r != nil
	case *expr.Const, *expr.ParamRef:
		return e, true
	case *expr.CastExpr:
		in, ok := rewriteCols(x.Input, f)
		if !ok {
			return nil, false
		}
		c := *x
		c.Input = in
		return &c, true
	case *expr.FuncExpr:
		args, ok := rewriteAll(x.Args, f)
		if !ok {
			return nil, false
		}
		c := *x
		c.Args = args
		return &c, true
	case *expr.CaseExpr:
		c := *x
		var ok bool
		if c.Operand != nil {
			if c.Operand, ok = rewriteCols(c.Operand, f); !ok {
				return nil, false
			}
		}
		if c.Whens, ok = rewriteAll(c.Whens, f); !ok {
			return nil, false
		}
		if c.Thens, ok = rewriteAll(c.Thens, f); !ok {
			return nil, false
		}
		if c.Else != nil {
			if c.Else, ok = rewriteCols(c.Else, f); !ok {
				return nil, false
			}
		}
		return &c, true
	}
	return nil, false
}

func rewriteAll(es []expr.Expr, f func(*expr.ColumnRef) expr.Expr) ([]expr.Expr, bool) {
	out := make([]expr.Expr, len(es))
	for i, e := range es {
		r, ok := rewriteCols(e, f)
		if !ok {
			return nil, false
		}
		out[i] = r
	}
	return out, true
}

// columnsOf lists the columns e reads; false when e holds an expression
// kind whose inputs are unknown.
func columnsOf(e expr.Expr) ([]int, bool) {
	var cols []int
	ok := true
	expr.Walk(e, func(x expr.Expr) bool {
		switch y := x.(type) {
		case *expr.ColumnRef:
			cols = append(cols, y.Index)
		case *expr.Const, *expr.ParamRef, *expr.CastExpr, *expr.FuncExpr, *expr.CaseExpr:
		default:
			ok = false
		}
		return ok
	})
	return cols, ok
}
