package bind

import (
	"fmt"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/parser"
	"github.com/tributary/tributary/sql/types"
)

// Binder binds one statement. It is not reused across statements.
type Binder struct {
	cat          catalog.Reader
	params       []types.T
	initPlans    []plan.InitPlan
	tableFuncs   map[string]*parser.TableFunc
	aliasColumns map[string][]string
	ctes         []map[string]*cte
	systemRows   SystemRows
	deps         []uint32
	setting      func(name string) (string, error)
	outer        []*scope  // enclosing queries' scopes while a subquery binds
	applyLeft    plan.Node // the input a correlated subquery being decorrelated joins (correlate.go)
	// unnestLeft is the left side of a join whose right side, unnest(...)
	// in FROM, is being bound: its argument may read the left's columns.
	unnestLeft plan.Node
	// srfCols maps unnest(...) calls of a SELECT list to the column the
	// query's input computes for them (see bindSelectUnnest).
	srfCols map[ast.ExprNode]expr.Expr
	system  bool // the statement read a system table (rows fixed at bind time)
	// declared holds every WITH list enclosing the current point, complete,
	// while ctes holds only what may be referenced there.
	declared  []map[string]*cte
	exprDepth int // bindExpr calls on the stack
	nesting   int // query blocks and joins on the stack
	relations int // relation references bound (a WITH query counts at each use)
	// direct are the relations the statement names (Referenced); inView
	// counts the views being expanded.
	direct []uint32
	inView int
	// refs pin the names of the stored definition being bound (its
	// relation's catalog.Refs; nil: names resolve in the catalog); seen
	// collects the statement's own name resolutions (Refs).
	refs []catalog.Ref
	seen []catalog.Ref
	// ties holds the ORDER BY clauses of FETCH ... WITH TIES queries
	// (withTies takes the parser's marker out of the clause).
	ties map[*ast.OrderByClause]bool
	// fnStack are the user function bodies being inlined (function.go);
	// funcs the user functions the statement calls.
	fnStack []*fnFrame
	funcs   []uint32
	inlined int // user function calls inlined so far
	// workTables counts the WITH RECURSIVE work tables handed out;
	// recursing are the recursive WITH queries whose terms are binding.
	workTables int
	recursing  map[string]*recState
	// pendingFn is the function CREATE FUNCTION checks (CheckFunction),
	// which its own body may call.
	pendingFn *catalog.Function
}

// maxRelations bounds the relation references of one statement: a WITH query
// is expanded at each reference, so a chain of WITH queries each reading the
// previous one twice would otherwise grow exponentially.
const maxRelations = 10000

// nest counts one more query block or join on the stack; unnest undoes it.
// Past types.MaxNesting it refuses with 54001, as Go cannot survive a stack
// overflow.
func (b *Binder) nest() error {
	if b.nesting >= types.MaxNesting {
		return types.StackDepthError(types.MaxNesting, "queries and joins")
	}
	b.nesting++
	return nil
}

func (b *Binder) unnest() { b.nesting-- }

// checkPlanDepth refuses plans deeper than types.MaxExprDepth nodes (a long
// UNION list builds one level per query), without recursing.
func checkPlanDepth(root plan.Node) error {
	type item struct {
		n plan.Node
		d int
	}
	stack := []item{{root, 1}}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if it.d > types.MaxExprDepth {
			return types.StackDepthError(types.MaxExprDepth, "plan nodes")
		}
		for _, c := range it.n.Children() {
			if c != nil {
				stack = append(stack, item{c, it.d + 1})
			}
		}
	}
	return nil
}

// ReadsSystemTables reports whether the plan holds system-table rows, which
// are taken when binding: a prepared statement must bind again to see news.
func (b *Binder) ReadsSystemTables() bool { return b.system }

// WithSettings lets current_setting('name') read session variables.
func (b *Binder) WithSettings(f func(name string) (string, error)) *Binder {
	b.setting = f
	return b
}

type cte struct {
	query   ast.ResultSetNode
	columns []string
	// visible is what its query may reference: the WITH lists around it and
	// the queries before it in its own list (all of it with RECURSIVE).
	visible []map[string]*cte
	// recursive: declared WITH RECURSIVE and naming itself; inRecursive:
	// declared WITH RECURSIVE; active while its query binds (a WITH
	// RECURSIVE query reached again through another is mutual recursion).
	recursive, inRecursive, active bool
}

// New returns a binder over cat. paramTypes are the client's declared
// parameter types (TUnknown where undeclared); more are added as $n appear.
func New(cat catalog.Reader, paramTypes []types.T) *Binder {
	return &Binder{cat: cat, params: append([]types.T(nil), paramTypes...)}
}

// ParamTypes returns the parameter types after binding; parameters whose type
// could not be inferred are text.
func (b *Binder) ParamTypes() []types.T {
	out := make([]types.T, len(b.params))
	for i, t := range b.params {
		if t.ID == types.Unknown {
			t = types.TVarchar
		}
		out[i] = t
	}
	return out
}

// Query binds a SELECT / set operation / VALUES.
func (b *Binder) Query(q *parser.Query) (*plan.Query, error) {
	b.tableFuncs, b.aliasColumns = q.TableFuncs, q.AliasColumns
	rs, ok := q.Node.(ast.ResultSetNode)
	if !ok {
		return nil, fmt.Errorf("bind: %T is not a query", q.Node)
	}
	root, err := b.bindResultSet(rs)
	if err != nil {
		return nil, err
	}
	root = finalizeOutput(root)
	return b.finish(root), nil
}

func (b *Binder) finish(root plan.Node) *plan.Query {
	return &plan.Query{Root: root, InitPlans: b.initPlans, ParamBase: len(b.params)}
}

// Dependencies returns the ids of the user relations the statement read.
func (b *Binder) Dependencies() []uint32 { return b.deps }

// WithRefs makes the statement's names resolve as refs pin them (a stored
// definition's catalog.Relation.Refs): the relation by id, its columns by
// position under the names the definition knew. It returns b.
func (b *Binder) WithRefs(refs []catalog.Ref) *Binder {
	b.refs = refs
	return b
}

// Refs returns how the statement's own relation names resolved (not those
// inside the views it reads), for catalog.Relation.Refs.
func (b *Binder) Refs() []catalog.Ref { return b.seen }

// Referenced returns the relations the statement names itself (not those
// only a view it reads names): whose privileges its user needs.
func (b *Binder) Referenced() []uint32 { return b.direct }

// NumParams returns how many parameters the statement uses (the highest $n).
func (b *Binder) NumParams() int { return len(b.params) }

// finalizeOutput turns columns of unknown type (bare string literals) into text.
func finalizeOutput(n plan.Node) plan.Node {
	fields := n.Schema()
	need := false
	for _, f := range fields {
		if f.Type.ID == types.Unknown {
			need = true
		}
	}
	if !need {
		return n
	}
	exprs := make([]expr.Expr, len(fields))
	out := make([]plan.Field, len(fields))
	for i, f := range fields {
		exprs[i] = expr.Column(i, f.Type)
		out[i] = f
		if f.Type.ID == types.Unknown {
			e, err := expr.Cast(exprs[i], types.TVarchar)
			if err == nil {
				exprs[i] = e
			}
			out[i].Type = types.TVarchar
		}
	}
	return &plan.Project{Input: n, Exprs: exprs, Out: out}
}

// NextRowID returns a new unique hidden row id (expr.NextRowID).
func NextRowID() int64 { return expr.NextRowID() }

// rowIDExpr generates a fresh row id per row.
type rowIDExpr struct{}

func (rowIDExpr) Type() types.T  { return types.TInt64 }
func (rowIDExpr) String() string { return "_row_id()" }
func (rowIDExpr) Eval(ctx *expr.Ctx, in *types.Chunk, out *types.Vector) error {
	for i := 0; i < in.Len(); i++ {
		out.I64 = append(out.I64, NextRowID())
		out.Nulls = append(out.Nulls, false)
	}
	return nil
}
func (rowIDExpr) EvalRow(ctx *expr.Ctx, row []types.Datum) (types.Datum, error) {
	return types.DInt(NextRowID()), nil
}
