package batch

import (
	"context"
	"io"
	"strings"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/types"
)

// windowExec reads its whole input and appends one column per window
// function. Each function sorts the rows by its PARTITION BY then ORDER BY
// columns and walks each partition: row_number, rank and dense_rank count
// rows and peer groups (rows equal on ORDER BY); an aggregate covers the whole
// partition without ORDER BY, and with one the rows up to the current row's
// last peer (RANGE UNBOUNDED PRECEDING .. CURRENT ROW). Rows are yielded in
// the last function's window order, as PostgreSQL does.
type windowExec struct {
	env   *Env
	funcs []plan.WindowFunc
	kinds []windowKind // per function
	in    Executor
	ts    []types.T
	all   *types.Chunk   // every input row
	res   []types.Vector // per function: its value for every row of all
	perm  []int32
	pos   int
	done  bool
	out   *types.Chunk
}

type windowKind uint8

const (
	windowAgg windowKind = iota
	windowRowNumber
	windowRank
	windowDenseRank
)

func newWindow(env *Env, n *plan.Window, in Executor) (*windowExec, error) {
	e := &windowExec{env: env, funcs: n.Funcs, in: in, ts: plan.Types(n.Out), kinds: make([]windowKind, len(n.Funcs))}
	for i, f := range n.Funcs {
		switch name := strings.ToLower(f.Name); {
		case f.Agg != nil:
			e.kinds[i] = windowAgg
		case name == "row_number":
			e.kinds[i] = windowRowNumber
		case name == "rank":
			e.kinds[i] = windowRank
		case name == "dense_rank":
			e.kinds[i] = windowDenseRank
		default:
			return nil, types.Errorf(types.ErrUnsupported, "window function %s is not supported", f.Name)
		}
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
	res := &e.res[fi]
	res.Init(f.Type, n)
	for i := 0; i < n; i++ {
		res.AppendNull()
	}
	var args []types.Datum
	if f.Agg != nil {
		args = make([]types.Datum, len(f.Args))
	}
	for ps := 0; ps < n; {
		pe := ps + 1
		for pe < n && e.same(f.PartitionBy, e.perm[pe-1], e.perm[pe]) {
			pe++
		}
		if err := e.partition(f, e.kinds[fi], res, args, ps, pe); err != nil {
			return err
		}
		ps = pe
	}
	return nil
}

// partition computes f over perm[ps:pe], one partition in window order.
func (e *windowExec) partition(f *plan.WindowFunc, kind windowKind, res *types.Vector, args []types.Datum, ps, pe int) error {
	perm := e.perm
	orderCols := make([]int, len(f.OrderBy))
	for i, k := range f.OrderBy {
		orderCols[i] = k.Col
	}
	if kind != windowAgg {
		var rank, dense int64
		for k := ps; k < pe; k++ {
			if k == ps || !e.same(orderCols, perm[k-1], perm[k]) {
				rank = int64(k-ps) + 1
				dense++
			}
			var d types.Datum
			switch kind {
			case windowRowNumber:
				d = types.DInt(int64(k-ps) + 1)
			case windowRank:
				d = types.DInt(rank)
			default:
				d = types.DInt(dense)
			}
			res.Set(int(perm[k]), &d)
		}
		return nil
	}
	st := f.Agg.NewState()
	add := func(k int) error {
		for a, col := range f.Args {
			e.all.Cols[col].GetInto(int(perm[k]), &args[a])
		}
		return st.Add(args)
	}
	if len(f.OrderBy) == 0 {
		for k := ps; k < pe; k++ {
			if err := add(k); err != nil {
				return err
			}
		}
		d := st.Result()
		for k := ps; k < pe; k++ {
			res.Set(int(perm[k]), &d)
		}
		return nil
	}
	for gs := ps; gs < pe; {
		ge := gs + 1
		for ge < pe && e.same(orderCols, perm[ge-1], perm[ge]) {
			ge++
		}
		for k := gs; k < ge; k++ {
			if err := add(k); err != nil {
				return err
			}
		}
		d := st.Result()
		for k := gs; k < ge; k++ {
			res.Set(int(perm[k]), &d)
		}
		gs = ge
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
	e.all, e.res = nil, nil
	return e.in.Close()
}
