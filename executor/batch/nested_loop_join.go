package batch

import (
	"github.com/tributary/tributary/planner/plan"
)

// newNestedLoopJoin returns a join without equi keys (cross joins and
// non-equi conditions): every left row is paired with every right row and
// the pairs are filtered by Cond in batches. The probe loop is joinExec's
// (join.go); the right input is held in memory.
func newNestedLoopJoin(env *Env, n *plan.Join, left, right Executor) (Executor, error) {
	return newJoin(env, n, left, right), nil
}
