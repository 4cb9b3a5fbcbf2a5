package batch

import (
	"context"
	"io"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage/state"
)

// CopyWriter writes the rows of a COPY FROM into its table as INSERT does
// (defaults, NOT NULL and primary-key checks, changes captured for the
// table's streaming job), one input chunk at a time, so the caller streams
// its input rather than holding it. Its writes are pending in env.Tables
// until the caller commits them.
type CopyWriter struct {
	env  *Env
	node *plan.CopyFrom
	tbl  *state.Table
	feed *chunkFeed
	proj *projectExec

	row, pk, scratch []types.Datum
	rows             int64
}

// NewCopyWriter returns a writer for n over env (which needs Tables).
func NewCopyWriter(env *Env, n *plan.CopyFrom) (*CopyWriter, error) {
	if env.Tables == nil {
		return nil, errorf("COPY needs a TableSet")
	}
	tbl, err := env.Tables.Table(n.Table)
	if err != nil {
		return nil, err
	}
	ts := make([]types.T, len(n.Columns))
	for k, c := range n.Columns {
		ts[k] = n.Table.Columns[c].Type
	}
	feed := &chunkFeed{ts: ts}
	proj := newProject(env, &plan.Project{Exprs: n.Exprs, Out: n.Out}, feed)
	return &CopyWriter{env: env, node: n, tbl: tbl, feed: feed, proj: proj, pk: make([]types.Datum, len(n.Table.PK))}, nil
}

// Write inserts in's visible rows (the node's Columns, in order). On an error
// it returns the index in in of the row at fault (-1 when none is).
func (w *CopyWriter) Write(ctx context.Context, in *types.Chunk) (int, error) {
	if err := checkCtx(ctx); err != nil {
		return -1, err
	}
	if len(in.Cols) != len(w.feed.ts) {
		return -1, errorf("COPY into %s: input has %d columns, want %d", w.node.Table.Name, len(in.Cols), len(w.feed.ts))
	}
	// The projection sees only visible rows: map its rows back to in's.
	var idx []int
	if in.Vis != nil {
		for i := 0; i < in.Len(); i++ {
			if in.Visible(i) {
				idx = append(idx, i)
			}
		}
	}
	w.feed.next = in
	full, err := w.proj.Next(ctx)
	if err == io.EOF {
		return -1, nil
	}
	if err != nil {
		return -1, err
	}
	if err := applyGenerated(w.env, w.node.Generated, full); err != nil {
		return -1, err
	}
	rel := w.node.Table
	nc := len(rel.Columns)
	for i := 0; i < full.Len(); i++ {
		at := i
		if idx != nil {
			at = idx[i]
		}
		w.row = full.Row(i, w.row)[:nc]
		if err := checkNotNull(rel, w.row); err != nil {
			return at, err
		}
		var inserted bool
		if inserted, w.scratch, err = insertRow(ctx, w.env, w.tbl, rel, w.row, w.pk, w.scratch); err != nil {
			return at, err
		}
		if inserted {
			w.rows++
		}
	}
	return -1, w.env.Tables.MaybeSpill()
}

// Rows returns the number of rows written.
func (w *CopyWriter) Rows() int64 { return w.rows }

// chunkFeed is an executor yielding the one chunk put in next, then io.EOF.
type chunkFeed struct {
	ts   []types.T
	next *types.Chunk
}

func (f *chunkFeed) Schema() []types.T { return f.ts }

func (f *chunkFeed) Next(context.Context) (*types.Chunk, error) {
	c := f.next
	f.next = nil
	if c == nil {
		return nil, io.EOF
	}
	return c, nil
}

func (f *chunkFeed) Close() error { return nil }
