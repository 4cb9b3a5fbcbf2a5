package plan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
)

// StreamNode is a node of a streaming job's plan (a materialized view's
// query, later a sink's). Its output is a change stream: chunks with ops,
// where StreamKey identifies a row so updates and deletes can find it.
type StreamNode interface {
	Schema() []Field
	// StreamKey lists the output columns that identify a row of the stream.
	StreamKey() []int
	Inputs() []StreamNode
	Describe() string
}

// StateTable is the layout of one state table of a stateful stream operator:
// rows of Types keyed by the PK columns (ascending unless PKDesc), placed in
// vnodes by the Dist columns (a prefix of the key's columns, or none for a
// singleton). ID is assigned by the planner and stored with the job, so a
// restart finds the same state.
type StateTable struct {
	ID     uint32
	Name   string // what it holds, for EXPLAIN ("agg result", "join left", ...)
	Types  []types.T
	PK     []int
	PKDesc []bool
	Dist   []int
}

func (s StateTable) String() string {
	return fmt.Sprintf("%s(id=%d pk=%v dist=%v)", s.Name, s.ID, s.PK, s.Dist)
}

// StatefulNode is implemented by stream nodes that keep state: StateLayouts
// gives the layouts (without ids) in a fixed order; the planner assigns ids
// and stores them with SetState.
type StatefulNode interface {
	StreamNode
	StateLayouts() []StateTable
	SetState([]StateTable)
	State() []StateTable
}

// StateInfo is embedded by stateful nodes.
type StateInfo struct{ Tables []StateTable }

// SetState implements StatefulNode.
func (s *StateInfo) SetState(t []StateTable) { s.Tables = t }

// State implements StatefulNode.
func (s *StateInfo) State() []StateTable { return s.Tables }

// DistKind is how a fragment's rows are spread over its parallel actors.
type DistKind uint8

// Distributions.
const (
	DistSingle DistKind = iota // one actor
	DistHash                   // by the vnode of Keys
	DistBroadcast
)

// StreamSource reads the change stream of an upstream table or
// materialized view (Relation), with all its columns (hidden ones too).
// With Backfill it first feeds the relation's existing rows (arrangement
// backfill), keeping its progress in its one state table.
type StreamSource struct {
	StateInfo
	Relation *catalog.Relation
	Out      []Field
	Backfill bool
	// Snapshot selects snapshot backfill (a fixed snapshot, then the change
	// log from storage versions) over arrangement backfill.
	Snapshot bool
}

// StateLayouts implements StatefulNode: a backfilling source's progress
// (one row: the key of the last snapshot row emitted, finished, rows read).
func (n *StreamSource) StateLayouts() []StateTable {
	switch {
	case !n.Backfill:
		return nil
	case n.Relation.Kind == catalog.KindSource:
		// A shared source's backfill, one row per split: split, phase,
		// offset, next position, row count, start position.
		return []StateTable{{Name: "source backfill progress", PK: []int{0},
			Types: []types.T{types.TVarchar, types.TInt32, types.TBytea, types.TInt64, types.TInt64, types.TInt64}}}
	case n.Snapshot:
		// One row per upstream vnode (and vnode -1 for the job): vnode, phase,
		// epoch, catch-up range end, position, row count, finished.
		return []StateTable{{Name: "snapshot backfill progress", PK: []int{0},
			Types: []types.T{types.TInt32, types.TInt64, types.TInt64, types.TInt64, types.TBytea, types.TInt64, types.TBool}}}
	}
	// One row per upstream vnode: vnode, current position, finished, row count.
	return []StateTable{{Name: "backfill progress", PK: []int{0}, Types: []types.T{types.TInt32, types.TBytea, types.TBool, types.TInt64}}}
}

// StreamValues emits constant rows once (a job with no upstream).
type StreamValues struct {
	Rows [][]expr.Expr
	Out  []Field
	Key  []int
}

// StreamExchange is a fragment boundary: its input's rows are redistributed.
type StreamExchange struct {
	Input StreamNode
	Dist  DistKind
	Keys  []int // for DistHash
}

// StreamProject computes Exprs; Key is the output stream key (the binder's
// projection extended with the input key columns it would drop).
type StreamProject struct {
	Input StreamNode
	Exprs []expr.Expr
	Out   []Field
	Key   []int
}

// StreamFilter keeps rows where Cond is true; an update whose halves disagree
// becomes an insert or a delete.
type StreamFilter struct {
	Input StreamNode
	Cond  expr.Expr
}

// StreamAgg is hash aggregation (GroupBy non-empty, distributed by it) or
// simple aggregation (GroupBy empty: one actor, always one output row).
// Output: group columns, then one column per aggregate. Stream key: the group columns.
//
// With Merge, Input is the exchange over a StreamLocalAgg of the same Aggs
// (GroupBy its group columns): each input row adds its partials to its
// group's state and its weight to the group's row count; the aggregates'
// Args and Filter refer to the local aggregation's input and are not read.
type StreamAgg struct {
	StateInfo
	Input   StreamNode
	GroupBy []int
	Aggs    []AggCall
	Out     []Field
	Merge   bool
	// EmitOnWindowClose: a group's result is emitted once, as an insert,
	// when the watermark on group column WindowCol (an index into GroupBy)
	// passes its value, and its state is deleted then; rows of closed
	// groups are dropped as late (EMIT ON WINDOW CLOSE).
	EmitOnWindowClose bool
	WindowCol         int
	// AppendOnlyInput: the input only inserts, so min and max keep just
	// their current extreme in the group's state row, with no input table
	// (AggInputOf), and a DISTINCT aggregate's table counts a value once.
	// Set only on jobs planned with catalog.StateVersion 1 or later, and
	// only where there is a min, max or DISTINCT aggregate.
	AppendOnlyInput bool
	// ShareDistinct: DISTINCT aggregates over the same arguments share one
	// "agg distinct" table with a count per aggregate (AggTables), so an
	// input row reads one table per argument list, however many aggregates
	// (each with its FILTER) count it. Set only on jobs planned with
	// catalog.StateVersion 3 or later.
	ShareDistinct bool
	// ViewState, when set, is the table of the materialized view directly
	// above a hash aggregation whose view row of a group holds all its state
	// (StateInView): the aggregation reads its groups from that table and
	// writes none of its own, so a group costs one write an epoch, not two.
	// It is then the aggregation's only state table; ViewCols[j] is the view
	// column holding output column j (nil: column j, the view is the output
	// as it is; else a projection between them reorders the columns). Set
	// only on jobs planned with catalog.StateVersion 4 or later
	// (physical.AggStateInView).
	ViewState *StateTable
	ViewCols  []int
}

// StreamHashJoin is an equi-join (EqLeft[i] = EqRight[i]) with an optional
// extra condition over the concatenated row; each side's rows are kept in a
// state table keyed by (join key, side stream key).
type StreamHashJoin struct {
	StateInfo
	Kind            JoinKind // Inner, Left, Right, Full, Semi, Anti
	Left, Right     StreamNode
	EqLeft, EqRight []int
	Cond            expr.Expr
	// NestedLoop: the sides had no equality; the planner joins them on a
	// constant column it appends to each, so one actor compares every pair
	// (a nested-loop join over both sides' state tables).
	NestedLoop bool
}

// StreamTopN keeps the first Limit rows after Offset in OrderBy order, per
// group of GroupBy (group top-N; none: one group, one actor). WithRank, when
// set, appends a row_number/rank column (for "WHERE rn <= N" plans).
type StreamTopN struct {
	StateInfo
	Input   StreamNode
	OrderBy []SortKey
	Limit   int64
	Offset  int64
	GroupBy []int
	Rank    string // "" (no extra column), "row_number", "rank", "dense_rank"
	Out     []Field
	// AppendOnlyInput: the input only inserts, so a row ranked after the
	// top never enters it again: the state table keeps each group's top
	// alone. Set only on jobs planned with catalog.StateVersion 1 or later.
	AppendOnlyInput bool
}

// StreamUnion merges its inputs' streams (UNION ALL). Inputs have the same
// schema; the stream key is the inputs' key plus a hidden source column the
// planner adds to each input.
type StreamUnion struct {
	Ins []StreamNode
	Key []int
}

// StreamHopWindow expands each row into the windows containing TimeCol:
// HOP(t, col, slide, size); TUMBLE is slide = size. Output: the input
// columns, then window_start and window_end.
type StreamHopWindow struct {
	Input   StreamNode
	TimeCol int
	Slide   types.IntervalValue
	Size    types.IntervalValue
	Out     []Field
}

// StreamTemporalFilter keeps rows whose Col is above now() - Interval,
// retracting them as time passes (evaluated at each barrier's epoch time).
type StreamTemporalFilter struct {
	StateInfo
	Input    StreamNode
	Col      int
	Interval types.IntervalValue
	// Strict: col > bound (else >=).
	Strict bool
}

// StreamMaterialize writes its input into the materialized view's table
// (keyed by PK, the stream key) and forwards the change stream to
// downstream jobs.
type StreamMaterialize struct {
	StateInfo
	Input    StreamNode
	Relation *catalog.Relation
	PK       []int
	// Dist is the distribution key (a prefix of PK; nil: PK).
	Dist []int
}

// Schemas.
func (n *StreamSource) Schema() []Field         { return n.Out }
func (n *StreamValues) Schema() []Field         { return n.Out }
func (n *StreamExchange) Schema() []Field       { return n.Input.Schema() }
func (n *StreamProject) Schema() []Field        { return n.Out }
func (n *StreamFilter) Schema() []Field         { return n.Input.Schema() }
func (n *StreamAgg) Schema() []Field            { return n.Out }
func (n *StreamTopN) Schema() []Field           { return n.Out }
func (n *StreamUnion) Schema() []Field          { return n.Ins[0].Schema() }
func (n *StreamHopWindow) Schema() []Field      { return n.Out }
func (n *StreamTemporalFilter) Schema() []Field { return n.Input.Schema() }
func (n *StreamMaterialize) Schema() []Field    { return n.Input.Schema() }
func (n *StreamHashJoin) Schema() []Field {
	if n.SemiOrAnti() {
		return n.Left.Schema()
	}
	l, r := n.Left.Schema(), n.Right.Schema()
	return append(append(make([]Field, 0, len(l)+len(r)), l...), r...)
}

// Stream keys.
func (n *StreamSource) StreamKey() []int         { return n.Relation.PK }
func (n *StreamValues) StreamKey() []int         { return n.Key }
func (n *StreamExchange) StreamKey() []int       { return n.Input.StreamKey() }
func (n *StreamProject) StreamKey() []int        { return n.Key }
func (n *StreamFilter) StreamKey() []int         { return n.Input.StreamKey() }
func (n *StreamTemporalFilter) StreamKey() []int { return n.Input.StreamKey() }
func (n *StreamMaterialize) StreamKey() []int    { return n.PK }
func (n *StreamUnion) StreamKey() []int          { return n.Key }
func (n *StreamAgg) StreamKey() []int            { return identity(len(n.GroupBy)) }

// StreamKey of a top-N is the input key plus the group columns: a key must
// determine the actor a row comes from (the group decides it), or an Insert
// and a Delete of one key from two actors could arrive out of order.
func (n *StreamTopN) StreamKey() []int { return appendMissing(n.Input.StreamKey(), n.GroupBy) }

// appendMissing returns key followed by the columns of extra it lacks.
func appendMissing(key, extra []int) []int {
	out := append([]int(nil), key...)
	for _, c := range extra {
		found := false
		for _, k := range out {
			if k == c {
				found = true
			}
		}
		if !found {
			out = append(out, c)
		}
	}
	return out
}
func (n *StreamHopWindow) StreamKey() []int {
	// A row appears once per window: its key plus the window start.
	return append(append([]int(nil), n.Input.StreamKey()...), len(n.Input.Schema()))
}

// StreamKey of a join is both sides' keys plus the join key columns: a
// NULL-padded row of an outer join must not share its key with the same
// side row padded under another join key (another actor).
func (n *StreamHashJoin) StreamKey() []int {
	if n.SemiOrAnti() {
		// Left rows only, each once: the left key (and the join key, which
		// decides the actor).
		return appendMissing(n.Left.StreamKey(), n.EqLeft)
	}
	nl := len(n.Left.Schema())
	k := append([]int(nil), n.Left.StreamKey()...)
	for _, c := range n.Right.StreamKey() {
		k = append(k, nl+c)
	}
	if n.NestedLoop {
		// One join key (a constant): the sides' keys identify a row.
		return k
	}
	right := make([]int, len(n.EqRight))
	for i, c := range n.EqRight {
		right[i] = nl + c
	}
	return appendMissing(appendMissing(k, n.EqLeft), right)
}

// Inputs.
func (n *StreamSource) Inputs() []StreamNode         { return nil }
func (n *StreamValues) Inputs() []StreamNode         { return nil }
func (n *StreamExchange) Inputs() []StreamNode       { return []StreamNode{n.Input} }
func (n *StreamProject) Inputs() []StreamNode        { return []StreamNode{n.Input} }
func (n *StreamFilter) Inputs() []StreamNode         { return []StreamNode{n.Input} }
func (n *StreamAgg) Inputs() []StreamNode            { return []StreamNode{n.Input} }
func (n *StreamTopN) Inputs() []StreamNode           { return []StreamNode{n.Input} }
func (n *StreamUnion) Inputs() []StreamNode          { return n.Ins }
func (n *StreamHopWindow) Inputs() []StreamNode      { return []StreamNode{n.Input} }
func (n *StreamTemporalFilter) Inputs() []StreamNode { return []StreamNode{n.Input} }
func (n *StreamMaterialize) Inputs() []StreamNode    { return []StreamNode{n.Input} }
func (n *StreamHashJoin) Inputs() []StreamNode       { return []StreamNode{n.Left, n.Right} }

// Descriptions.
func (n *StreamSource) Describe() string {
	s := fmt.Sprintf("StreamSource %s %s", n.Relation.Kind, n.Relation.QualifiedName())
	if n.Backfill {
		kind := "Arrangement"
		if n.Snapshot {
			kind = "Snapshot"
		}
		s = "Stream" + kind + "Backfill " + s[len("StreamSource "):]
	}
	return s
}
func (n *StreamValues) Describe() string { return fmt.Sprintf("StreamValues %d rows", len(n.Rows)) }
func (n *StreamExchange) Describe() string {
	switch n.Dist {
	case DistHash:
		return "StreamExchange Hash" + colList(n.Keys)
	case DistBroadcast:
		return "StreamExchange Broadcast"
	}
	return "StreamExchange Single"
}
func (n *StreamProject) Describe() string { return "StreamProject " + exprList(n.Exprs) }
func (n *StreamFilter) Describe() string  { return "StreamFilter " + n.Cond.String() }
func (n *StreamAgg) Describe() string {
	parts := make([]string, 0, len(n.Aggs))
	for _, a := range n.Aggs {
		parts = append(parts, a.Describe())
	}
	kind := "StreamHashAgg group by " + colList(n.GroupBy)
	if len(n.GroupBy) == 0 {
		kind = "StreamSimpleAgg"
	}
	s := fmt.Sprintf("%s aggs [%s]", kind, strings.Join(parts, ", "))
	if n.AppendOnlyInput {
		s += " append-only input"
	}
	if n.EmitOnWindowClose {
		s += fmt.Sprintf(" emit on window close $%d (state cleaned below the watermark)", n.WindowCol)
	}
	return s
}
func (n *StreamHashJoin) Describe() string {
	pairs := make([]string, len(n.EqLeft))
	for i := range n.EqLeft {
		pairs[i] = fmt.Sprintf("$%d = $%d", n.EqLeft[i], len(n.Left.Schema())+n.EqRight[i])
	}
	s := fmt.Sprintf("StreamHashJoin %s on %s", n.Kind, strings.Join(pairs, " and "))
	if n.NestedLoop {
		s = fmt.Sprintf("StreamNestedLoopJoin %s", n.Kind)
	}
	if n.Cond != nil {
		s += " cond " + n.Cond.String()
	}
	if ws := WatermarkCols(n); len(ws) > 0 {
		s += fmt.Sprintf(" (state cleaned below the watermark on %s)", colList(ws))
	}
	nl := len(n.Left.Schema())
	sides := [2][]int{WatermarkCols(n.Left), WatermarkCols(n.Right)}
	for _, b := range n.Bands() {
		if slices.Contains(sides[b.Side], b.Col) && slices.Contains(sides[1-b.Side], b.Other) {
			s += " (state cleaned: " + b.String(nl) + ")"
		}
	}
	return s
}
func (n *StreamTopN) Describe() string {
	s := fmt.Sprintf("StreamTopN order by %s limit %d offset %d", keyList(n.OrderBy), n.Limit, n.Offset)
	if len(n.GroupBy) > 0 {
		s = "StreamGroupTopN group by " + colList(n.GroupBy) + " " + s[len("StreamTopN "):]
	}
	if n.Rank != "" {
		s += " with " + n.Rank
	}
	if n.AppendOnlyInput {
		s += " append-only input"
	}
	var ws []int // group columns with a watermark: the executor cleans below it
	for _, c := range WatermarkCols(n.Input) {
		if slices.Contains(n.GroupBy, c) {
			ws = append(ws, c)
		}
	}
	if len(ws) > 0 {
		s += fmt.Sprintf(" (state cleaned below the watermark on %s)", colList(ws))
	}
	return s
}
func (n *StreamUnion) Describe() string { return "StreamUnion All" }
func (n *StreamHopWindow) Describe() string {
	return fmt.Sprintf("StreamHopWindow time $%d slide %s size %s", n.TimeCol,
		types.AppendInterval(nil, n.Slide), types.AppendInterval(nil, n.Size))
}
func (n *StreamTemporalFilter) Describe() string {
	op := ">="
	if n.Strict {
		op = ">"
	}
	return fmt.Sprintf("StreamTemporalFilter $%d %s now() - %s", n.Col, op, types.AppendInterval(nil, n.Interval))
}
func (n *StreamMaterialize) Describe() string {
	return fmt.Sprintf("StreamMaterialize %s pk %s", n.Relation.QualifiedName(), colList(n.PK))
}

// ExplainStream prints a stream plan as a tree with each node's stream key
// and state tables; exchanges are where fragments begin.
func ExplainStream(n StreamNode) string {
	var b strings.Builder
	var walk func(n StreamNode, depth int)
	walk = func(n StreamNode, depth int) {
		b.WriteString(strings.Repeat("  ", depth))
		if depth > 0 {
			b.WriteString("└─")
		}
		b.WriteString(n.Describe())
		fmt.Fprintf(&b, " { stream key: %s", colList(n.StreamKey()))
		if ws := WatermarkCols(n); len(ws) > 0 {
			fmt.Fprintf(&b, ", watermark: %s", colList(ws))
		}
		if s, ok := n.(StatefulNode); ok && len(s.State()) > 0 {
			parts := make([]string, len(s.State()))
			for i, t := range s.State() {
				parts[i] = t.String()
			}
			fmt.Fprintf(&b, ", state: [%s]", strings.Join(parts, ", "))
		}
		b.WriteString(" }\n")
		for _, c := range n.Inputs() {
			walk(c, depth+1)
		}
	}
	walk(n, 0)
	return strings.TrimRight(b.String(), "\n")
}

// StateLayouts implements StatefulNode: the materialized view's own table,
// keyed by its primary key (its id is the relation's).
func (n *StreamMaterialize) StateLayouts() []StateTable {
	dist, name := n.Dist, "materialized view"
	if dist == nil {
		dist = n.PK
	}
	if n.Relation.Kind == catalog.KindIndex {
		name = "index"
	}
	return []StateTable{{ID: n.Relation.ID, Name: name, Types: n.Relation.ColumnTypes(), PK: n.PK, Dist: dist}}
}
