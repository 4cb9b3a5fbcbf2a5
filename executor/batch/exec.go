package batch

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage"
)

// Executor is a pull-based operator producing columnar chunks.
//
// Next returns the next non-empty chunk of rows, or io.EOF (and a nil chunk)
// once the rows are exhausted; after io.EOF or an error Next must not be
// called again. The returned chunk belongs to the executor: it stays valid
// only until the next call to Next or Close, and the caller must not keep
// references into it (copy what it keeps) nor modify it, except that it may
// set or change Vis. Chunks have Ops == nil; Vis may be nil (every row
// visible) or a mask: consumers skip invisible rows. Next checks ctx and
// returns a *types.Error of kind types.ErrQueryCanceled once it is done.
//
// Close releases the executor and its inputs. It must always be called, even
// after an error or before the end; it is idempotent. Schema returns the
// column types of every chunk Next returns.
type Executor interface {
	Schema() []types.T
	Next(ctx context.Context) (*types.Chunk, error)
	Close() error
}

// Env is what executors need from their statement: the expression context
// (parameters, now()), the store and snapshot epoch to read at, and the
// statement's tables (opened lazily, so DML reads its own pending writes).
type Env struct {
	Ctx    *expr.Ctx
	Store  storage.KV
	Epoch  uint64
	Tables *TableSet
	// IndexReady reports whether an index (by id) held every row of its
	// table at epoch and may answer lookups read at it (nil: no index may;
	// scans read tables).
	IndexReady func(id uint32, epoch uint64) bool
	// work are the WITH RECURSIVE work tables by plan id (recursive_union.go).
	work map[int]*workTable
}

// Build returns the executor of a query. Init plans are built now and run on
// the first Next, before the root, each storing its value into
// env.Ctx.Params[q.ParamBase+i].
func Build(env *Env, q *plan.Query) (Executor, error) {
	if env.Ctx == nil {
		env.Ctx = &expr.Ctx{}
	}
	root, err := build(env, q.Root)
	if err != nil {
		return nil, err
	}
	return withInitPlans(env, root, q.InitPlans, q.ParamBase)
}

// build is the one type switch from plan nodes to executors.
func build(env *Env, n plan.Node) (Executor, error) {
	switch n := n.(type) {
	case *plan.Scan:
		if n.Table.Kind == catalog.KindSource {
			return nil, types.Errorf(types.ErrUnsupported, "cannot read source %s in a query: its rows are not stored; create a materialized view or a table on it", n.Table.QualifiedName())
		}
		return newScan(env, n)
	case *plan.Values:
		return newValues(env, n), nil
	case *plan.GapFill:
		in, err := build(env, n.Input)
		if err != nil {
			return nil, err
		}
		return newGapFill(n, in), nil
	case *plan.Changelog:
		in, err := build(env, n.Input)
		if err != nil {
			return nil, err
		}
		return newChangelog(n, in), nil
	case *plan.Unnest:
		if n.Input == nil {
			return newUnnest(env, n), nil
		}
		in, err := build(env, n.Input)
		if err != nil {
			return nil, err
		}
		return newUnnestRows(env, n, in), nil
	case *plan.Series:
		return newSeries(env, n), nil
	case *plan.Filter:
		in, err := build(env, n.Input)
		if err != nil {
			return nil, err
		}
		return newFilter(env, n, in), nil
	case *plan.Project:
		in, err := build(env, n.Input)
		if err != nil {
			return nil, err
		}
		return newProject(env, n, in), nil
	case *plan.Join:
		left, err := build(env, n.Left)
		if err != nil {
			return nil, err
		}
		right, err := build(env, n.Right)
		if err != nil {
			left.Close()
			return nil, err
		}
		var j Executor
		if len(n.EqLeft) > 0 {
			j, err = newHashJoin(env, n, left, right)
		} else {
			j, err = newNestedLoopJoin(env, n, left, right)
		}
		if err != nil {
			left.Close()
			right.Close()
		}
		return j, err
	case *plan.Agg:
		in, err := build(env, n.Input)
		if err != nil {
			return nil, err
		}
		return newHashAgg(env, n, in), nil
	case *plan.Sort:
		in, err := build(env, n.Input)
		if err != nil {
			return nil, err
		}
		return newSort(n, in), nil
	case *plan.Limit:
		in, err := build(env, n.Input)
		if err != nil {
			return nil, err
		}
		return newLimit(env, n, in), nil
	case *plan.Expand:
		in, err := build(env, n.Input)
		if err != nil {
			return nil, err
		}
		return newExpand(n, in), nil
	case *plan.Distinct:
		in, err := build(env, n.Input)
		if err != nil {
			return nil, err
		}
		return newDistinct(n, in), nil
	case *plan.SetOp:
		ins := make([]Executor, 0, len(n.Inputs))
		for _, c := range n.Inputs {
			in, err := build(env, c)
			if err != nil {
				closeAll(ins)
				return nil, err
			}
			ins = append(ins, in)
		}
		return newSetOp(n, ins), nil
	case *plan.HopWindow:
		in, err := build(env, n.Input)
		if err != nil {
			return nil, err
		}
		return newHopWindow(n, in), nil
	case *plan.Window:
		in, err := build(env, n.Input)
		if err != nil {
			return nil, err
		}
		w, err := newWindow(env, n, in)
		if err != nil {
			in.Close()
		}
		return w, err
	case *plan.RecursiveUnion:
		base, err := build(env, n.Base)
		if err != nil {
			return nil, err
		}
		return newRecursiveUnion(env, n, base), nil
	case *plan.WorkTableScan:
		return newWorkTableScan(env, n)
	case nil:
		return nil, types.Errorf(types.ErrInternal, "batch: nil plan node")
	}
	return nil, types.Errorf(types.ErrInternal, "batch: unsupported plan node %T", n)
}

// closeAll closes every executor and returns the first error.
func closeAll(es []Executor) error {
	var first error
	for _, e := range es {
		if e == nil {
			continue
		}
		if err := e.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// checkCtx turns a done context into the user-facing cancel error.
func checkCtx(ctx context.Context) error {
	err := ctx.Err()
	if err == nil {
		return nil
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return types.Errorf(types.ErrQueryCanceled, "canceling statement due to statement timeout")
	}
	return types.Errorf(types.ErrQueryCanceled, "canceling statement due to user request")
}

// visibleRows returns in itself when every row is visible, else a copy of
// its visible rows in *scratch (allocated on first use, reused after).
func visibleRows(in *types.Chunk, scratch **types.Chunk) *types.Chunk {
	if in.Vis == nil {
		return in
	}
	if *scratch == nil {
		*scratch = types.NewChunk(in.Types(), types.DefaultChunkSize)
	}
	s := *scratch
	s.Reset()
	for i := 0; i < in.Len(); i++ {
		if in.Vis[i] {
			s.AppendFrom(in, i)
		}
	}
	return s
}

// drain reads every chunk of in into one chunk of all its visible rows.
func drain(ctx context.Context, in Executor, into *types.Chunk) error {
	for {
		if err := checkCtx(ctx); err != nil {
			return err
		}
		c, err := in.Next(ctx)
		if err != nil {
			if isEOF(err) {
				return nil
			}
			return err
		}
		appendVisible(into, c)
	}
}

// appendVisible appends c's visible rows to dst.
func appendVisible(dst, c *types.Chunk) {
	for i := 0; i < c.Len(); i++ {
		if c.Visible(i) {
			dst.AppendFrom(c, i)
		}
	}
}

// errorf wraps an internal (non-user) failure with context.
func errorf(format string, args ...any) error { return fmt.Errorf("batch: "+format, args...) }

func isEOF(err error) bool { return err == io.EOF }
