package plan

import (
	"fmt"
	"strings"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
)

// Field is one output column of a node.
type Field struct {
	Name  string
	Table string // qualifier the column can be referenced by ("" when none)
	Type  types.T
	// Hidden fields (the row id) are not expanded by *.
	Hidden bool
	// Rel and Col locate the column in a catalog relation when it is a plain column reference
	// (for RowDescription's table oid / attnum); 0 when computed.
	Rel uint32
	Col int16
}

// Node is a query plan node.
type Node interface {
	Schema() []Field
	Children() []Node
	// Describe returns the one-line EXPLAIN text of the node itself.
	Describe() string
}

// Types returns a schema's column types.
func Types(s []Field) []types.T {
	ts := make([]types.T, len(s))
	for i := range s {
		ts[i] = s[i].Type
	}
	return ts
}

// Scan reads a relation's rows (every column, in order) at the statement's snapshot.
type Scan struct {
	Table *catalog.Relation
	Alias string
	// Lookup, when set, restricts the scan to rows whose primary key equals these
	// expressions (constant or parameter): a point or prefix lookup. With Index
	// set, the values are of the index's leading columns, and the scan reads
	// the index (which holds Table's rows, in Table's columns).
	Lookup []expr.Expr
	Index  *catalog.Relation
	Out    []Field
	// ProcTime marks the right side of a temporal join (FOR SYSTEM_TIME AS
	// OF PROCTIME()): a streaming job looks its rows up as of processing
	// time (StreamTemporalJoin), reading Table or one of Indexes (indexes
	// of Table holding its columns); a batch query reads its snapshot.
	ProcTime bool
	Indexes  []*catalog.Relation
}

// Values produces constant rows.
type Values struct {
	Rows [][]expr.Expr
	Out  []Field
	// Lit, when set, holds more rows after Rows, already values of Out's types: an INSERT's
	// literal rows (the parser's Query.Rows) that bind to plain constants. Only batch
	// plans carry it.
	Lit *types.Chunk
}

// NumRows returns how many rows n produces.
func (n *Values) NumRows() int {
	if n.Lit != nil {
		return len(n.Rows) + n.Lit.Len()
	}
	return len(n.Rows)
}

// Series is generate_series(Start, Stop, Step): integers (Out's type int4 or
// int8) or timestamps stepped by an interval, in which case Add computes the
// next value from the row (current, step). Start, Stop and Step are evaluated
// once when execution starts (they may be parameters).
type Series struct {
	Start, Stop, Step expr.Expr
	Add               expr.Expr
	Out               []Field
}

// Unnest is unnest(Array): one row per element (NULLs included), and with
// Ordinality a bigint column numbering them from 1. Without Input (unnest in
// FROM over a constant or parameter) Array is evaluated once when execution
// starts; with Input (FROM t, unnest(t.a), or unnest(t.a) in the SELECT
// list) it is evaluated per input row and each output row is that row's
// columns, then the element (and ordinal). Outer keeps an input row whose
// array is NULL or empty, with a NULL element (LEFT JOIN LATERAL ... ON true).
type Unnest struct {
	Input      Node
	Array      expr.Expr
	Ordinality bool
	Outer      bool
	Out        []Field
}

// Filter keeps rows where Cond is true.
type Filter struct {
	Input Node
	Cond  expr.Expr
}

// Project computes Exprs over each input row.
type Project struct {
	Input Node
	Exprs []expr.Expr
	Out   []Field
}

// JoinKind is a join's kind.
type JoinKind uint8

// Join kinds. Semi and Anti output only the left side.
const (
	InnerJoin JoinKind = iota
	LeftJoin
	RightJoin
	FullJoin
	SemiJoin
	AntiJoin
)

func (k JoinKind) String() string {
	return [...]string{"Inner", "Left", "Right", "Full", "Semi", "Anti"}[k]
}

// Join combines Left and Right. EqLeft[i] = EqRight[i] are equi-join keys
// (column indices into each side); Cond is an extra condition over the
// concatenated row (left columns then right columns). No keys means a nested
// loop. NullAware marks a NOT IN anti join (a NULL key on the right side
// rejects everything; a NULL left key is never kept). MaxOneRow marks the
// left join of a correlated scalar subquery: a left row joining more than
// one right row is an error (21000).
type Join struct {
	Kind            JoinKind
	Left, Right     Node
	EqLeft, EqRight []int
	Cond            expr.Expr
	NullAware       bool
	MaxOneRow       bool
}

// AggCall is one aggregate: its function, argument columns of the input, an
// optional filter column (bool) and DISTINCT. OrderBy is the ORDER BY inside
// the call (string_agg(x, ',' ORDER BY y), first_value(x ORDER BY y)): the
// order in which the aggregate sees its group's rows.
type AggCall struct {
	Agg     *expr.Agg
	Args    []int
	Filter  int // -1 when none
	Name    string
	OrderBy []SortKey
}

// Describe is the call's name in EXPLAIN: its output name, and its ORDER BY.
func (c *AggCall) Describe() string {
	if len(c.OrderBy) == 0 {
		return c.Name
	}
	return c.Name + " order by " + keyList(c.OrderBy)
}

// Agg groups its input by the GroupBy columns and computes Aggs per group.
// Output: group columns, then one column per AggCall. No GroupBy means one
// output row even for empty input.
type Agg struct {
	Input   Node
	GroupBy []int
	Aggs    []AggCall
	Out     []Field
	// EmptySets are, below an Expand, the ids of its empty grouping sets:
	// over no input rows, each still yields one row (the keys NULL, input
	// column GID the id), as an aggregation without GROUP BY does.
	EmptySets []int64
	GID       int
}

// SortKey orders by one input column.
type SortKey struct {
	Col        int
	Desc       bool
	NullsFirst bool
}

// Sort orders its input.
type Sort struct {
	Input Node
	Keys  []SortKey
}

// Limit skips Offset rows then passes at most Count (-1 = unlimited). Count and
// Offset are expressions (constants or parameters) evaluated at start. Ties,
// when set (FETCH FIRST n ROWS WITH TIES), are the ORDER BY keys (columns of
// Input, which is sorted by them): the rows after the Count-th that equal it
// on them pass too.
type Limit struct {
	Input  Node
	Count  expr.Expr // nil = no limit
	Offset expr.Expr // nil = 0
	Ties   []SortKey
}

// Distinct removes duplicate rows (all columns); with On set, keeps the first
// row per distinct On-columns value (DISTINCT ON), in input order.
type Distinct struct {
	Input Node
	On    []int
}

// SetOpKind is UNION, INTERSECT or EXCEPT.
type SetOpKind uint8

// Set operations.
const (
	Union SetOpKind = iota
	Intersect
	Except
)

// SetOp combines inputs with the same column count and types.
type SetOp struct {
	Kind   SetOpKind
	All    bool
	Inputs []Node
	Out    []Field
}

// WindowFunc is one window function over the rows of its partition in
// OrderBy order: a ranking function (row_number, rank, dense_rank,
// percent_rank, cume_dist, ntile), an offset function (lag, lead), a value
// function over the frame (first_value, last_value, nth_value), or an
// aggregate over the frame (Agg set). Args are input columns (evaluated per
// row, as PostgreSQL does). Frame is always set: the binder fills in
// PostgreSQL's default (RANGE UNBOUNDED PRECEDING .. CURRENT ROW, which is the
// whole partition without ORDER BY).
type WindowFunc struct {
	Name        string
	Agg         *expr.Agg
	Args        []int
	PartitionBy []int
	OrderBy     []SortKey
	Frame       Frame
	Type        types.T
}

// Window appends one column per function to each input row.
type Window struct {
	Input Node
	Funcs []WindowFunc
	Out   []Field
}

// Schema implementations.
func (n *Scan) Schema() []Field     { return n.Out }
func (n *Values) Schema() []Field   { return n.Out }
func (n *Series) Schema() []Field   { return n.Out }
func (n *Unnest) Schema() []Field   { return n.Out }
func (n *Filter) Schema() []Field   { return n.Input.Schema() }
func (n *Project) Schema() []Field  { return n.Out }
func (n *Agg) Schema() []Field      { return n.Out }
func (n *Sort) Schema() []Field     { return n.Input.Schema() }
func (n *Limit) Schema() []Field    { return n.Input.Schema() }
func (n *Distinct) Schema() []Field { return n.Input.Schema() }
func (n *SetOp) Schema() []Field    { return n.Out }
func (n *Window) Schema() []Field   { return n.Out }
func (n *Join) Schema() []Field {
	l := n.Left.Schema()
	if n.Kind == SemiJoin || n.Kind == AntiJoin {
		return l
	}
	r := n.Right.Schema()
	out := make([]Field, 0, len(l)+len(r))
	return append(append(out, l...), r...)
}

// Children implementations.
func (n *Scan) Children() []Node   { return nil }
func (n *Values) Children() []Node { return nil }
func (n *Series) Children() []Node { return nil }
func (n *Unnest) Children() []Node {
	if n.Input == nil {
		return nil
	}
	return []Node{n.Input}
}
func (n *Filter) Children() []Node   { return []Node{n.Input} }
func (n *Project) Children() []Node  { return []Node{n.Input} }
func (n *Agg) Children() []Node      { return []Node{n.Input} }
func (n *Sort) Children() []Node     { return []Node{n.Input} }
func (n *Limit) Children() []Node    { return []Node{n.Input} }
func (n *Distinct) Children() []Node { return []Node{n.Input} }
func (n *SetOp) Children() []Node    { return n.Inputs }
func (n *Window) Children() []Node   { return []Node{n.Input} }
func (n *Join) Children() []Node     { return []Node{n.Left, n.Right} }

// Describe implementations.
func (n *Scan) Describe() string {
	s := "Scan " + n.Table.QualifiedName()
	switch {
	case n.Index != nil:
		s += " using index " + n.Index.Name + " lookup = (" + exprList(n.Lookup) + ")"
	case len(n.Lookup) > 0:
		s += " lookup pk = (" + exprList(n.Lookup) + ")"
	}
	if n.ProcTime {
		s += " for system_time as of proctime()"
	}
	return s
}
func (n *Values) Describe() string { return fmt.Sprintf("Values %d rows", n.NumRows()) }
func (n *Series) Describe() string {
	return fmt.Sprintf("Series %s to %s step %s", n.Start, n.Stop, n.Step)
}
func (n *Unnest) Describe() string {
	if n.Ordinality {
		return "Unnest " + n.Array.String() + " with ordinality"
	}
	return "Unnest " + n.Array.String()
}
func (n *Filter) Describe() string { return "Filter " + n.Cond.String() }
func (n *Project) Describe() string {
	return "Project " + exprList(n.Exprs)
}
func (n *Agg) Describe() string {
	parts := make([]string, 0, len(n.Aggs))
	for _, a := range n.Aggs {
		parts = append(parts, a.Describe())
	}
	return fmt.Sprintf("HashAgg group by %v aggs [%s]", colList(n.GroupBy), strings.Join(parts, ", "))
}
func (n *Sort) Describe() string { return "Sort " + keyList(n.Keys) }
func (n *Limit) Describe() string {
	s := "Limit"
	if n.Count != nil {
		s += " " + n.Count.String()
	}
	if n.Offset != nil {
		s += " offset " + n.Offset.String()
	}
	if n.Ties != nil {
		s += " with ties on " + keyList(n.Ties)
	}
	return s
}
func (n *Distinct) Describe() string {
	if len(n.On) > 0 {
		return "Distinct on " + colList(n.On)
	}
	return "Distinct"
}
func (n *SetOp) Describe() string {
	s := [...]string{"Union", "Intersect", "Except"}[n.Kind]
	if n.All {
		s += " All"
	}
	return s
}
func (n *Window) Describe() string {
	parts := make([]string, 0, len(n.Funcs))
	for _, f := range n.Funcs {
		p := f.Name
		if len(f.Args) > 0 {
			p += colList(f.Args)
		}
		p += fmt.Sprintf(" partition by %s order by %s", colList(f.PartitionBy), keyList(f.OrderBy))
		if f.UsesFrame() && !f.Frame.IsDefault() {
			p += " " + f.Frame.String()
		}
		parts = append(parts, p)
	}
	return "Window " + strings.Join(parts, "; ")
}
func (n *Join) Describe() string {
	s := n.Kind.String() + "Join"
	if len(n.EqLeft) > 0 {
		s = "Hash" + s
		pairs := make([]string, len(n.EqLeft))
		for i := range n.EqLeft {
			pairs[i] = fmt.Sprintf("$%d = $%d", n.EqLeft[i], len(n.Left.Schema())+n.EqRight[i])
		}
		s += " on " + strings.Join(pairs, " and ")
	} else {
		s = "NestedLoop" + s
	}
	if n.Cond != nil {
		s += " cond " + n.Cond.String()
	}
	if n.MaxOneRow {
		s += " max one row"
	}
	return s
}

func exprList(es []expr.Expr) string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.String()
	}
	return strings.Join(parts, ", ")
}

func colList(cols []int) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = fmt.Sprintf("$%d", c)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func keyList(keys []SortKey) string {
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("$%d", k.Col)
		if k.Desc {
			parts[i] += " desc"
		}
		if k.NullsFirst != k.Desc {
			if k.NullsFirst {
				parts[i] += " nulls first"
			} else {
				parts[i] += " nulls last"
			}
		}
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// Explain prints a node tree, one node per line, children indented.
func Explain(n Node) string {
	var b strings.Builder
	var walk func(n Node, depth int)
	walk = func(n Node, depth int) {
		b.WriteString(strings.Repeat("  ", depth))
		if depth > 0 {
			b.WriteString("└─")
		}
		b.WriteString(n.Describe())
		b.WriteByte('\n')
		for _, c := range n.Children() {
			walk(c, depth+1)
		}
	}
	walk(n, 0)
	return strings.TrimRight(b.String(), "\n")
}
