package plan

import (
	"fmt"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/sql/expr"
)

// Query is a bound query: its root node and the init plans it needs first.
// InitPlans run before Root, each producing one value (a scalar subquery or
// EXISTS) stored in the evaluation context's Params at index ParamBase+i.
type Query struct {
	Root      Node
	InitPlans []InitPlan
	// ParamBase is the number of user parameters ($1..$n).
	ParamBase int
}

// InitPlanKind is what an init plan computes.
type InitPlanKind uint8

// Init plan kinds.
const (
	ScalarSubquery InitPlanKind = iota // first column of the single row (NULL for none; >1 row is an error)
	ExistsSubquery                     // whether any row exists
	// ListSubquery collects the first column of every row into the evaluation
	// context's Lists[i] (i = the init plan's index), for IN / ANY / ALL.
	ListSubquery
)

// InitPlan is an uncorrelated subquery evaluated once.
type InitPlan struct {
	Kind InitPlanKind
	Plan Node
}

// Insert writes Input's rows (already in the table's full column order, cast
// to column types, defaults filled) into Table. Returning, when set, is
// evaluated over each written row.
type Insert struct {
	Table     *catalog.Relation
	Input     Node
	Returning []expr.Expr
	RetOut    []Field
	// Conflict is ON CONFLICT's action (nil: a key the table holds fails
	// with 23505, or as the table's own ON CONFLICT says).
	Conflict *InsertConflict
}

// InsertConflict is INSERT ... ON CONFLICT's action on a row whose primary
// key the table holds: nothing, or the stored row updated: Set[k] is the
// new value of column Cols[k], evaluated over the stored row followed by
// the proposed one (EXCLUDED), when Where (nil: always) holds; Generated[i]
// recomputes generated column i over the new row.
type InsertConflict struct {
	DoNothing bool
	Cols      []int
	Set       []expr.Expr
	Where     expr.Expr
	Generated []expr.Expr
}

// Update rewrites the rows of Input (which yields the old row, full table
// columns) with Set[i] = new value of column Cols[i], evaluated over the old row.
type Update struct {
	Table     *catalog.Relation
	Input     Node
	Cols      []int
	Set       []expr.Expr
	Returning []expr.Expr
	RetOut    []Field
	// Generated[i], for a generated column i (nil for others), computes it
	// over the new row.
	Generated []expr.Expr
	// Joined: Input joins other relations (UPDATE ... FROM), so a target
	// row may come more than once; it is updated once, by its first row.
	Joined bool
}

// Delete removes Input's rows (full table columns) from Table.
type Delete struct {
	Table     *catalog.Relation
	Input     Node
	Returning []expr.Expr
	RetOut    []Field
	// Joined: Input joins other relations (DELETE ... USING), so a target
	// row may come more than once; it is deleted once.
	Joined bool
}

// ExplainDML prints a DML plan.
func ExplainDML(op string, table *catalog.Relation, input Node) string {
	return fmt.Sprintf("%s %s\n%s", op, table.QualifiedName(), indent(Explain(input)))
}

func indent(s string) string {
	out := "  └─"
	for _, c := range s {
		out += string(c)
		if c == '\n' {
			out += "  "
		}
	}
	return out
}
