package batch

import (
	"context"
	"io"
	"slices"

	"github.com/tributary/tributary/executor/window"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/types"
)

// windowExec reads its whole input and appends one column per window
// function. Each function sorts the rows by its PARTITION BY then ORDER BY
// columns and computes each partition with window.Func. Rows are yielded in
// the last function's window order, as PostgreSQL does.
type windowExec struct {
	env   *Env
	funcs []plan.WindowFunc
	fns   []*window.Func
	cols  []int // the input columns the functions read, in e.rows' order
	in    Executor
	ts    []types.T
	all   *types.Chunk    // every input row
	rows  [][]types.Datum // the same rows as datums, built once
	res   []types.Vector  // per function: its value for every row of all
	perm  []int32
	pos   int
	done  bool
	out   *types.Chunk
}

func newWindow(env *Env, n *plan.Window, in Executor) (*windowExec, error) {
	e := &windowExec{env: env, funcs: n.Funcs, in: in, ts: plan.Types(n.Out)}
	// The functions read only their arguments and ORDER BY columns: rows are
	// built of those alone (e.cols), and each function's copy refers to them.
	at := map[int]int{}
	use := func(c int) int {
		if k, ok := at[c]; ok {
			return k
		}
		at[c] = len(e.cols)
		e.cols = append(e.cols, c)
		return at[c]
	}
	inTypes := in.Schema()
	for _, f := range n.Funcs {
		f.Args = slices.Clone(f.Args)
		for i, c := range f.Args {
			f.Args[i] = use(c)
		}
		f.OrderBy = slices.Clone(f.OrderBy)
		for i := range f.OrderBy {
			f.OrderBy[i].Col = use(f.OrderBy[i].Col)
		}
		f.PartitionBy = nil // partitions are cut here
		ts := make([]types.T, len(e.cols))
		for k, c := range e.cols {
			ts[k] = inTypes[c]
		}
		fn, err := window.New(f, ts)
		if err != nil {
			return nil, err
		}
		e.fns = append(e.fns, fn)
	}
	return e, nil
}

func (e *windowExec) Schema() []types.T { return e.ts }

func (e *windowExec) Next(ctx context.Context) (*types.Chunk, error) {
	if !e.done {
		e.done = true
		e.all = types.NewChunk(e.in.Schema(), types.DefaultChunkSize)
		if err := drain(ctx, e.in, e.all); err != nil {
			return nil, err
		}
		e.res = make([]types.Vector, len(e.funcs))
		for i := range e.funcs {
			if err := checkCtx(ctx); err != nil {
				return nil, err
			}
			if err := e.compute(i); err != nil {
				return nil, err
			}
		}
		if len(e.funcs) == 0 {
			e.perm = sortedPerm(e.all, nil, e.perm)
		}
		e.out = types.NewChunk(e.ts, types.DefaultChunkSize)
	}
	if err := checkCtx(ctx); err != nil {
		return nil, err
	}
	if e.pos >= len(e.perm) {
		return nil, io.EOF
	}
	e.out.Reset()
	nin := len(e.all.Cols)
	end := min(len(e.perm), e.pos+types.DefaultChunkSize)
	for _, r := range e.perm[e.pos:end] {
		for j := 0; j < nin; j++ {
			e.out.Cols[j].AppendFrom(&e.all.Cols[j], int(r))
		}
		for f := range e.res {
			e.out.Cols[nin+f].AppendFrom(&e.res[f], int(r))
		}
	}
	e.out.SetLen(end - e.pos)
	e.pos = end
	return e.out, nil
}

// compute fills e.res[fi] and leaves e.perm in the function's window order.
func (e *windowExec) compute(fi int) error {
	f := &e.funcs[fi]
	keys := make([]plan.SortKey, 0, len(f.PartitionBy)+len(f.OrderBy))
	for _, c := range f.PartitionBy {
		keys = append(keys, plan.SortKey{Col: c})
	}
	keys = append(keys, f.OrderBy...)
	e.perm = sortedPerm(e.all, keys, e.perm)
	n := len(e.perm)
	if e.rows == nil {
		nc := len(e.cols)
		flat := make([]types.Datum, n*nc)
		e.rows = make([][]types.Datum, n)
		for r := 0; r < n; r++ {
			row := flat[r*nc : (r+1)*nc : (r+1)*nc]
			for k, c := range e.cols {
				e.all.Cols[c].GetInto(r, &row[k])
			}
			e.rows[r] = row
		}
	}
	res := &e.res[fi]
	res.Init(f.Type, n)
	for i := 0; i < n; i++ {
		res.AppendNull()
	}
	var part [][]types.Datum
	var vals []types.Datum
	for ps := 0; ps < n; {
		pe := ps + 1
		for pe < n && e.same(f.PartitionBy, e.perm[pe-1], e.perm[pe]) {
			pe++
		}
		part, vals = part[:0], vals[:0]
		for _, r := range e.perm[ps:pe] {
			part = append(part, e.rows[r])
			vals = append(vals, types.Datum{})
		}
		if err := e.fns[fi].Eval(part, vals); err != nil {
			return err
		}
		for k, r := range e.perm[ps:pe] {
			res.Set(int(r), &vals[k])
		}
		ps = pe
	}
	return nil
}

// same reports whether rows a and b of all agree on cols (NULLs equal).
func (e *windowExec) same(cols []int, a, b int32) bool {
	for _, c := range cols {
		v := &e.all.Cols[c]
		if !eqVal(v, int(a), v, int(b)) {
			return false
		}
	}
	return true
}

func (e *windowExec) Close() error {
	e.all, e.res, e.rows = nil, nil, nil
	return e.in.Close()
}
