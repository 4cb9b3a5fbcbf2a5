package batch

import (
	"context"
	"io"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/types"
)

// Bounds of one WITH RECURSIVE evaluation: past them the query fails (54000)
// instead of running until memory runs out, as an endless recursion would.
const (
	maxRecursionRounds = 100000
	maxRecursionRows   = 10_000_000
)

// workTable holds the rows the last round of a recursive union added, read
// by the WorkTableScans with its id.
type workTable struct {
	rows *types.Chunk
}

// recursiveUnionExec evaluates plan.RecursiveUnion iteratively: it returns
// the base term's rows, then, round after round, builds the recursive term
// over the work table (the previous round's new rows) and returns what it
// adds, until a round adds nothing. Without All, rows already returned are
// dropped (UNION).
type recursiveUnionExec struct {
	env    *Env
	n      *plan.RecursiveUnion
	base   Executor
	cur    Executor // the running round's recursive term (nil between rounds)
	work   *workTable
	next   *types.Chunk // the rows the running round added
	seen   *keyTable    // without All: every row returned
	out    *types.Chunk // the chunk last returned
	vis    *types.Chunk // scratch for visible rows
	cols   []int
	rows   int
	rounds int
	done   bool
}

func newRecursiveUnion(env *Env, n *plan.RecursiveUnion, base Executor) *recursiveUnionExec {
	ts := plan.Types(n.Out)
	e := &recursiveUnionExec{env: env, n: n, base: base, work: &workTable{rows: types.NewChunk(ts, types.DefaultChunkSize)},
		next: types.NewChunk(ts, types.DefaultChunkSize), cols: seq(len(ts))}
	if !n.All {
		e.seen = newKeyTable(ts)
	}
	if env.work == nil {
		env.work = map[int]*workTable{}
	}
	env.work[n.ID] = e.work
	return e
}

func (e *recursiveUnionExec) Schema() []types.T { return plan.Types(e.n.Out) }

// add keeps c's new rows (all of c with All) for the next round and
// returns them, or nil when none is new.
func (e *recursiveUnionExec) add(c *types.Chunk) (*types.Chunk, error) {
	if e.seen != nil {
		c = dedup(c, e.cols, e.seen, &e.out)
		if c == nil {
			return nil, nil
		}
	}
	e.rows += c.Len()
	if e.rows > maxRecursionRows {
		return nil, types.Errorf(types.ErrProgramLimit, "WITH RECURSIVE query \"%s\" produced more than %d rows; stopped (is its recursion endless?)", e.n.Name, maxRecursionRows)
	}
	for i := 0; i < c.Len(); i++ {
		e.next.AppendFrom(c, i)
	}
	return c, nil
}

func (e *recursiveUnionExec) Next(ctx context.Context) (*types.Chunk, error) {
	for !e.done {
		if err := checkCtx(ctx); err != nil {
			return nil, err
		}
		if e.base != nil {
			c, err := e.base.Next(ctx)
			if err == io.EOF {
				err = e.base.Close()
				e.base = nil
				if err != nil {
					return nil, err
				}
				continue
			}
			if err != nil {
				return nil, err
			}
			if out, err := e.add(visibleRows(c, &e.vis)); out != nil || err != nil {
				return out, err
			}
			continue
		}
		if e.cur == nil {
			// A new round over the rows the last one added.
			if e.next.Len() == 0 {
				e.done = true
				break
			}
			if e.rounds++; e.rounds > maxRecursionRounds {
				return nil, types.Errorf(types.ErrProgramLimit, "WITH RECURSIVE query \"%s\" recursed more than %d times; stopped (is its recursion endless?)", e.n.Name, maxRecursionRounds)
			}
			e.work.rows, e.next = e.next, e.work.rows
			e.next.Reset()
			cur, err := build(e.env, e.n.Recursive)
			if err != nil {
				return nil, err
			}
			e.cur = cur
		}
		c, err := e.cur.Next(ctx)
		if err == io.EOF {
			err = e.cur.Close()
			e.cur = nil
			if err != nil {
				return nil, err
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		if out, err := e.add(visibleRows(c, &e.vis)); out != nil || err != nil {
			return out, err
		}
	}
	return nil, io.EOF
}

func (e *recursiveUnionExec) Close() error {
	var err error
	if e.base != nil {
		err = e.base.Close()
		e.base = nil
	}
	if e.cur != nil {
		if cerr := e.cur.Close(); err == nil {
			err = cerr
		}
		e.cur = nil
	}
	e.done = true
	return err
}

// workTableScanExec returns the rows of its recursive union's work table
// (as they are when its round starts), DefaultChunkSize rows at a time.
type workTableScanExec struct {
	n    *plan.WorkTableScan
	work *workTable
	pos  int
	out  *types.Chunk
}

func newWorkTableScan(env *Env, n *plan.WorkTableScan) (*workTableScanExec, error) {
	w, ok := env.work[n.ID]
	if !ok {
		return nil, errorf("work table of %s not found", n.Name)
	}
	return &workTableScanExec{n: n, work: w}, nil
}

func (e *workTableScanExec) Schema() []types.T { return plan.Types(e.n.Out) }

func (e *workTableScanExec) Next(ctx context.Context) (*types.Chunk, error) {
	rows := e.work.rows
	if e.pos >= rows.Len() {
		return nil, io.EOF
	}
	if err := checkCtx(ctx); err != nil {
		return nil, err
	}
	// A copy: the consumer may set Vis, and the work table outlives it.
	if e.out == nil {
		e.out = types.NewChunk(rows.Types(), types.DefaultChunkSize)
	}
	e.out.Reset()
	for ; e.pos < rows.Len() && e.out.Len() < types.DefaultChunkSize; e.pos++ {
		e.out.AppendFrom(rows, e.pos)
	}
	return e.out, nil
}

func (e *workTableScanExec) Close() error { return nil }
