package plan

import (
	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/sql/expr"
)

// CopyFrom loads rows a client sends (COPY ... FROM STDIN) into Table as
// INSERT does. Each input row holds the Columns (indexes into
// Table.Columns, in input order, with their column types); Exprs compute
// every column of Table from an input row (the input column, or the column's
// default or a fresh row id), Out describing them.
type CopyFrom struct {
	Table   *catalog.Relation
	Columns []int
	Exprs   []expr.Expr
	Out     []Field
	// Generated[i], for a generated column i (nil for others), computes it
	// over the row Exprs made.
	Generated []expr.Expr
}
