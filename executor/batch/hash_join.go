package batch

import (
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/types"
)

// newHashJoin returns a join on equal keys (EqLeft[i] = EqRight[i]): the right
// input is indexed by a hash table whose chains list the right rows with the
// same key hash; rows with a NULL key never match (NOT IN semantics aside, see
// plan.Join.NullAware). The probe loop is joinExec's (join.go).
func newHashJoin(env *Env, n *plan.Join, left, right Executor) (Executor, error) {
	if len(n.EqLeft) != len(n.EqRight) {
		return nil, types.Errorf(types.ErrInternal, "hash join: %d left keys but %d right keys", len(n.EqLeft), len(n.EqRight))
	}
	lts, rts := left.Schema(), right.Schema()
	for i := range n.EqLeft {
		lt, rt := lts[n.EqLeft[i]], rts[n.EqRight[i]]
		if lt.Physical() != rt.Physical() {
			return nil, types.Errorf(types.ErrInternal, "hash join: key %d compares %s with %s", i, lt, rt)
		}
	}
	return newJoin(env, n, left, right), nil
}

// index builds the hash table over the build side. Chains list rows in
// ascending order; rows with a NULL key stay out of the table.
func (e *joinExec) index() {
	r := &e.run
	n := r.build.Len()
	hs := hashRows(r.build, e.eqR, nil)
	r.heads = make(map[uint64]int32, n)
	r.next = make([]int32, n)
	for b := n - 1; b >= 0; b-- {
		if anyNull(r.build, e.eqR, b) {
			r.nullKey = append(r.nullKey, int32(b))
			r.next[b] = -1
			continue
		}
		head, ok := r.heads[hs[b]]
		if !ok {
			head = -1
		}
		r.next[b] = head
		r.heads[hs[b]] = int32(b)
	}
}
