package bind

import (
	"fmt"
	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/parser"
	"github.com/tributary/tributary/sql/types"
)

// CopyFrom binds COPY table [(columns)] FROM: the target table (checked as
// INSERT's is), the columns the data carries (every visible column when none
// are named) and how each table column is computed from an input row.
func (b *Binder) CopyFrom(name parser.ObjectName, columns []string) (*plan.CopyFrom, error) {
	rel, err := b.cat.Lookup(name.Schema, name.Name)
	if err != nil {
		return nil, err
	}
	if rel.Kind != catalog.KindTable {
		return nil, types.Errorf(types.ErrWrongObjectType, "cannot copy to %s \"%s\"", rel.Kind, rel.Name)
	}
	if rel.Connector != nil && rel.Connector.ReadOnly {
		return nil, types.Errorf(types.ErrWrongObjectType, "cannot change table \"%s\": it mirrors an upstream table (connector %s); change the upstream", rel.Name, rel.Connector.Name())
	}
	target, err := copyColumns(rel, columns)
	if err != nil {
		return nil, err
	}
	exprs := make([]expr.Expr, len(rel.Columns))
	for i := range rel.Columns {
		col := &rel.Columns[i]
		if col.Hidden && col.Name == catalog.RowIDColumn {
			exprs[i] = rowIDExpr{}
			continue
		}
		if exprs[i], err = b.DefaultExpr(col); err != nil {
			return nil, err
		}
	}
	for k, c := range target {
		if exprs[c], err = assignCast(expr.Column(k, rel.Columns[c].Type), &rel.Columns[c]); err != nil {
			return nil, err
		}
	}
	gen, err := b.generatedExprs(rel)
	if err != nil {
		return nil, err
	}
	return &plan.CopyFrom{Table: rel, Columns: target, Exprs: exprs, Out: relFields(rel, rel.Name), Generated: gen}, nil
}

// copyColumns resolves a COPY column list (nil: every visible column).
func copyColumns(rel *catalog.Relation, columns []string) ([]int, error) {
	var target []int
	if len(columns) == 0 {
		for i, c := range rel.Columns {
			if !c.Hidden && c.Generated == "" { // COPY leaves generated columns out
				target = append(target, i)
			}
		}
		return target, nil
	}
	seen := map[int]bool{}
	for _, name := range columns {
		idx := rel.ColumnIndex(name)
		if idx < 0 || rel.Columns[idx].Hidden {
			return nil, types.Errorf(types.ErrUndefinedColumn, "column \"%s\" of relation \"%s\" does not exist", name, rel.Name)
		}
		if seen[idx] {
			return nil, types.Errorf(types.ErrDuplicateColumn, "column \"%s\" specified more than once", name)
		}
		if rel.Columns[idx].Generated != "" {
			return nil, &types.Error{Kind: types.ErrGeneratedAlways, Msg: fmt.Sprintf("column \"%s\" is a generated column", name),
				Detail: "Generated columns cannot be used in COPY."}
		}
		seen[idx] = true
		target = append(target, idx)
	}
	return target, nil
}
