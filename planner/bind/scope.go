package bind

import (
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/types"
)

// scope is the set of columns an expression can reference: a node's output
// fields, with the names and qualifiers they are known by.
type scope struct {
	fields []plan.Field
	// agg, above an aggregation, maps columns of its input to group keys
	// (for subqueries referencing grouped columns).
	agg *aggBinding
}

// resolve finds a column by optional table qualifier and name. Visible
// columns come first: after JOIN ... USING (id) or NATURAL JOIN, id is the
// merged column, not also the right side's hidden copy (which t2.id names).
func (s *scope) resolve(table, name string) (int, error) {
	if i, err := s.resolveIn(table, name, true); err != nil || i >= 0 {
		return i, err
	}
	return s.resolveIn(table, name, false)
}

// resolveIn is resolve over the visible columns only (visible) or all; it
// returns -1 and no error when nothing matches in visible mode.
func (s *scope) resolveIn(table, name string, visible bool) (int, error) {
	found := -1
	for i := range s.fields {
		f := &s.fields[i]
		if f.Name != name || (table != "" && f.Table != table) || (visible && f.Hidden) {
			continue
		}
		if found >= 0 {
			if table == "" {
				return -1, types.Errorf(types.ErrAmbiguousColumn, "column reference \"%s\" is ambiguous", name)
			}
			return -1, types.Errorf(types.ErrAmbiguousColumn, "column reference \"%s.%s\" is ambiguous", table, name)
		}
		found = i
	}
	if found < 0 && visible {
		return -1, nil
	}
	if found < 0 {
		if table != "" {
			if !s.hasTable(table) {
				return -1, types.Errorf(types.ErrUndefinedTable, "missing FROM-clause entry for table \"%s\"", table)
			}
			return -1, types.Errorf(types.ErrUndefinedColumn, "column %s.%s does not exist", table, name)
		}
		return -1, types.Errorf(types.ErrUndefinedColumn, "column \"%s\" does not exist", name)
	}
	return found, nil
}

func (s *scope) hasTable(t string) bool {
	for i := range s.fields {
		if s.fields[i].Table == t {
			return true
		}
	}
	return false
}

// requalify returns fields renamed to one table alias.
func requalify(fields []plan.Field, table string) []plan.Field {
	out := make([]plan.Field, len(fields))
	copy(out, fields)
	for i := range out {
		out[i].Table = table
	}
	return out
}
