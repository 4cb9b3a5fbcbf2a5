package bind

import (
	"slices"
	"strings"
	"testing"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/parser"
)

// TestDMLFromJoinKeys: the WHERE's equalities between an UPDATE's or
// DELETE's target and its FROM | USING list become the join's keys.
func TestDMLFromJoinKeys(t *testing.T) {
	cat := testCatalog(t)
	for _, sql := range []string{
		"UPDATE t SET v = u.amount FROM u WHERE u.t_id = t.id AND u.amount > 1",
		"DELETE FROM t USING u WHERE t.id = u.t_id AND t.v > 1",
	} {
		stmts, err := parser.Parse(sql)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		q := stmts[0].(*parser.Query)
		var input plan.Node
		var joined bool
		b := New(cat, nil)
		if strings.HasPrefix(sql, "UPDATE") {
			up, _, err := b.Update(q)
			if err != nil {
				t.Fatalf("%s: %v", sql, err)
			}
			input, joined = up.Input, up.Joined
		} else {
			del, _, err := b.Delete(q)
			if err != nil {
				t.Fatalf("%s: %v", sql, err)
			}
			input, joined = del.Input, del.Joined
		}
		j, ok := input.(*plan.Join)
		if !joined || !ok || len(j.EqLeft) != 1 || j.EqLeft[0] != 0 || j.EqRight[0] != 1 || j.Cond == nil {
			t.Errorf("%s: want a join on t.id = u.t_id with a residual condition, got (joined %v)\n%s", sql, joined, plan.Explain(input))
		}
		// The FROM | USING relation needs the SELECT privilege.
		u, err := cat.Lookup("", "u")
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(b.Referenced(), u.ID) {
			t.Errorf("%s: u is not among the relations read: %v", sql, b.Referenced())
		}
	}
}
