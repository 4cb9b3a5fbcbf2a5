package batch

import (
	"context"
	"io"
	"slices"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
)

// hashAggExec groups its whole input by the GroupBy columns and yields, per
// group in order of first appearance, the group columns then one value per
// aggregate. Without GroupBy it yields exactly one row, even for no input.
// DISTINCT aggregates dedup inside their expr.AggState.
type hashAggExec struct {
	hashAggConfig
	in    Executor
	run   hashAggRun
	built bool
}

// hashAggConfig is the fixed part of the operator.
type hashAggConfig struct {
	env     *Env
	groupBy []int
	aggs    []plan.AggCall
	ts      []types.T // output types
	// emptySets and gid: plan.Agg's EmptySets and GID.
	emptySets []int64
	gid       int
}

// hashAggRun is the per-run state.
type hashAggRun struct {
	groups  *keyTable       // nil without GROUP BY (one group)
	states  []expr.AggState // group g, aggregate a at g*len(aggs)+a
	args    [][]types.Datum // per aggregate: argument scratch
	scratch *types.Chunk    // visible rows of an input chunk
	out     *types.Chunk
	next    int // next group to yield
}

func newHashAgg(env *Env, n *plan.Agg, in Executor) *hashAggExec {
	e := &hashAggExec{hashAggConfig: hashAggConfig{env: env, groupBy: n.GroupBy, aggs: n.Aggs, ts: plan.Types(n.Out), emptySets: n.EmptySets, gid: n.GID}, in: in}
	return e
}

func (e *hashAggExec) Schema() []types.T { return e.ts }

func (e *hashAggExec) Next(ctx context.Context) (*types.Chunk, error) {
	if !e.built {
		e.built = true
		if err := e.build(ctx); err != nil {
			return nil, err
		}
	}
	if err := checkCtx(ctx); err != nil {
		return nil, err
	}
	return e.emit()
}

func (e *hashAggExec) numGroups() int {
	if e.run.groups == nil {
		return 1
	}
	return e.run.groups.Len()
}

func (e *hashAggExec) build(ctx context.Context) error {
	r := &e.run
	r.args = make([][]types.Datum, len(e.aggs))
	for a := range e.aggs {
		r.args[a] = make([]types.Datum, len(e.aggs[a].Args))
	}
	if len(e.groupBy) > 0 {
		kts := make([]types.T, len(e.groupBy))
		for i, c := range e.groupBy {
			kts[i] = e.in.Schema()[c]
		}
		r.groups = newKeyTable(kts)
	} else {
		e.newGroup()
	}
	for {
		if err := checkCtx(ctx); err != nil {
			return err
		}
		c, err := e.in.Next(ctx)
		if isEOF(err) {
			if r.groups != nil && r.groups.Len() == 0 && len(e.emptySets) > 0 {
				e.addEmptySets()
			}
			return nil
		}
		if err != nil {
			return err
		}
		if err := e.add(visibleRows(c, &r.scratch)); err != nil {
			return err
		}
	}
}

// addEmptySets makes, over no input, the groups of the empty grouping
// sets: their keys NULL but the set's id, their aggregates fed nothing.
func (e *hashAggExec) addEmptySets() {
	c := types.NewChunk(e.in.Schema(), len(e.emptySets))
	for _, id := range e.emptySets {
		for j := range c.Cols {
			if j == e.gid {
				d := types.DInt(id)
				c.Cols[j].Append(&d)
			} else {
				c.Cols[j].AppendNull()
			}
		}
	}
	c.SetLen(len(e.emptySets))
	e.run.groups.hash(c, e.groupBy)
	for i := range e.emptySets {
		if _, inserted := e.run.groups.findOrInsert(c, e.groupBy, i); inserted {
			e.newGroup()
		}
	}
}

func (e *hashAggExec) newGroup() {
	for a := range e.aggs {
		call := &e.aggs[a]
		var s expr.AggState
		if len(call.OrderBy) > 0 {
			s = newOrderedAggState(call, e.in.Schema())
		} else {
			s = call.Agg.NewState()
		}
		e.run.states = append(e.run.states, s)
	}
}

// add feeds every row of c (all visible) to its group's states.
func (e *hashAggExec) add(c *types.Chunk) error {
	r := &e.run
	if r.groups != nil {
		r.groups.hash(c, e.groupBy)
	}
	na := len(e.aggs)
	for i := 0; i < c.Len(); i++ {
		g := 0
		if r.groups != nil {
			var inserted bool
			g, inserted = r.groups.findOrInsert(c, e.groupBy, i)
			if inserted {
				e.newGroup()
			}
		}
		for a := range e.aggs {
			call := &e.aggs[a]
			if call.Filter >= 0 {
				f := &c.Cols[call.Filter]
				if f.Nulls[i] || f.I64[i] == 0 {
					continue
				}
			}
			args := r.args[a]
			for k, col := range call.Args {
				c.Cols[col].GetInto(i, &args[k])
			}
			st := r.states[g*na+a]
			if o, ok := st.(*orderedAggState); ok {
				o.addRow(c, i, args)
				continue
			}
			if err := st.Add(args); err != nil {
				return err
			}
		}
	}
	return nil
}

func (e *hashAggExec) emit() (*types.Chunk, error) {
	r := &e.run
	n := e.numGroups()
	if r.next >= n {
		return nil, io.EOF
	}
	if r.out == nil {
		r.out = types.NewChunk(e.ts, min(n, types.DefaultChunkSize))
	}
	out := r.out
	out.Reset()
	nk, na := len(e.groupBy), len(e.aggs)
	end := min(n, r.next+types.DefaultChunkSize)
	for g := r.next; g < end; g++ {
		for k := 0; k < nk; k++ {
			out.Cols[k].AppendFrom(&r.groups.keys.Cols[k], g)
		}
		for a := 0; a < na; a++ {
			st := r.states[g*na+a]
			if o, ok := st.(*orderedAggState); ok {
				if err := o.feed(); err != nil {
					return nil, err
				}
			}
			d := st.Result()
			out.Cols[nk+a].Append(&d)
		}
	}
	out.SetLen(end - r.next)
	r.next = end
	return out, nil
}

func (e *hashAggExec) Close() error {
	e.run = hashAggRun{}
	return e.in.Close()
}

// orderedAggState is an aggregate with an ORDER BY inside its call: it keeps
// its group's rows (arguments and sort keys) and, before the result is read,
// feeds them to the aggregate sorted (stably, so ties keep input order).
type orderedAggState struct {
	inner expr.AggState
	agg   *expr.Agg
	keys  []plan.SortKey // Col indexes the key columns of rows
	kts   []types.T
	cols  []int // input columns of the keys
	nargs int
	rows  [][]types.Datum // arguments, then sort keys
	fed   bool
}

func newOrderedAggState(call *plan.AggCall, in []types.T) *orderedAggState {
	s := &orderedAggState{agg: call.Agg, nargs: len(call.Args)}
	for i, k := range call.OrderBy {
		s.cols = append(s.cols, k.Col)
		s.kts = append(s.kts, in[k.Col])
		s.keys = append(s.keys, plan.SortKey{Col: i, Desc: k.Desc, NullsFirst: k.NullsFirst})
	}
	return s
}

func (s *orderedAggState) addRow(c *types.Chunk, i int, args []types.Datum) {
	row := make([]types.Datum, 0, s.nargs+len(s.cols))
	for k := range args {
		row = append(row, args[k].Copy())
	}
	for _, col := range s.cols {
		var d types.Datum
		c.Cols[col].GetInto(i, &d)
		row = append(row, d.Copy())
	}
	s.rows = append(s.rows, row)
}

// feed sorts the rows and adds them to a new inner state (once).
func (s *orderedAggState) feed() error {
	if s.fed {
		return nil
	}
	s.fed = true
	slices.SortStableFunc(s.rows, func(a, b []types.Datum) int {
		for i, k := range s.keys {
			x, y := &a[s.nargs+i], &b[s.nargs+i]
			var r int
			switch {
			case x.Null && y.Null:
				continue
			case x.Null || y.Null:
				if x.Null == k.NullsFirst {
					return -1
				}
				return 1
			default:
				r = types.CompareNonNull(s.kts[i], x, y)
			}
			if k.Desc {
				r = -r
			}
			if r != 0 {
				return r
			}
		}
		return 0
	})
	s.inner = s.agg.NewState()
	for _, row := range s.rows {
		if err := s.inner.Add(row[:s.nargs]); err != nil {
			return err
		}
	}
	s.rows = nil
	return nil
}

func (s *orderedAggState) Add(args []types.Datum) error {
	return types.Errorf(types.ErrInternal, "ordered aggregate %s fed without its sort keys", s.agg.Name)
}

func (s *orderedAggState) Retract(args []types.Datum) error {
	return types.Errorf(types.ErrInternal, "ordered aggregate %s cannot retract", s.agg.Name)
}

func (s *orderedAggState) Result() types.Datum {
	if s.inner == nil {
		return s.agg.NewState().Result()
	}
	return s.inner.Result()
}
