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

// AppendOnly reports whether a stream plan only ever inserts: its sources
// are append-only tables and no operator on the way retracts (aggregations,
// except those emitting on window close, top-N, joins and temporal filters
// may).
func AppendOnly(n plan.StreamNode) bool {
	switch n := n.(type) {
	case *plan.StreamSource:
		return n.Relation.AppendOnly
	case *plan.StreamSourceScan:
		return n.Source.AppendOnly // a source's connector only inserts (FORMAT UPSERT needs a table)
	case *plan.StreamChangelog:
		return true
	case *plan.StreamGapFill:
		return n.EmitOnWindowClose
	case *plan.StreamAgg:
		return n.EmitOnWindowClose // each group emitted once, when its window closes
	case *plan.StreamOverWindow:
		return n.EmitOnWindowClose // each row emitted once, when its outputs are final
	case *plan.StreamHashJoin:
		// An inner join of inputs that only insert matches new rows only.
		return n.Kind == plan.InnerJoin && AppendOnly(n.Left) && AppendOnly(n.Right)
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
		if n.Lit != nil {
			return nil, types.Errorf(types.ErrInternal, "stream planner: VALUES with bound literal rows")
		}
		return p.values(n, n.Rows, n.Out)
	case *plan.Series:
		return p.series(n)
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
		return p.expand(n)
	case *plan.Sort:
		return p.convert(n.Input) // a materialized view has no order
	case *plan.Limit:
		return p.limit(n)
	case *plan.Distinct:
		if len(n.On) > 0 {
			return p.distinctOn(n)
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
