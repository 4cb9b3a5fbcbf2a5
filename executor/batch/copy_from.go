package batch

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage/codec"
	"github.com/tributary/tributary/storage/keyfilter"
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

	// checked is set once the first Write looked whether the table had any
	// row at the snapshot (with the statement's pending writes); fresh when
	// it had none. Then a key can only clash with one this COPY wrote, and
	// every key written goes into written: a key the filter has never seen
	// is new without a lookup in storage, where the COPY's earlier rows are
	// staged (a point get there costs more than the rest of the row's work).
	checked, fresh bool
	written        keyfilter.Filter
	ts             []types.T
	// probe answers the conflict checks of a chunk into a table that had
	// rows, with one ordered read of the chunk's keys.
	probe keyProbe
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
	if !w.checked {
		if w.fresh, err = tableEmpty(ctx, w.tbl, w.env.Epoch); err != nil {
			return -1, fmt.Errorf("COPY into %s: %w", rel.QualifiedName(), err)
		}
		w.checked, w.ts = true, rel.ColumnTypes()
	}
	probed := !w.fresh && rel.OnConflict == ""
	if probed {
		if err := w.probe.load(ctx, w.env, w.tbl, rel, full, 0, full.Len()); err != nil {
			return -1, err
		}
	}
	for i := 0; i < full.Len(); i++ {
		at := i
		if idx != nil {
			at = idx[i]
		}
		w.row = full.Row(i, w.row)[:nc]
		if err := checkNotNull(rel, w.row); err != nil {
			return at, err
		}
		var h uint64
		if w.fresh {
			h = codec.HashRow(w.ts, w.row, rel.PK)
			if !w.written.MayContain(h) {
				if err := w.tbl.Insert(w.row); err != nil {
					return at, errorf("insert into %s: %w", rel.QualifiedName(), err)
				}
				w.env.Tables.record(rel, types.OpInsert, w.row)
				w.written.Add(h)
				w.rows++
				continue
			}
		}
		if probed {
			if err := w.probe.check(w.env, w.tbl, rel, w.row, i); err != nil {
				return at, err
			}
			if err := w.tbl.Insert(w.row); err != nil {
				return at, errorf("insert into %s: %w", rel.QualifiedName(), err)
			}
			w.env.Tables.record(rel, types.OpInsert, w.row)
			w.rows++
			continue
		}
		var inserted bool
		if inserted, w.scratch, err = insertRow(ctx, w.env, w.tbl, rel, w.row, w.pk, w.scratch); err != nil {
			return at, err
		}
		if inserted {
			w.rows++
		}
		if w.fresh {
			w.written.Add(h)
		}
	}
	return -1, w.env.Tables.MaybeSpill()
}

// tableEmpty reports whether tbl has no row at epoch, merged with its pending writes.
func tableEmpty(ctx context.Context, tbl *state.Table, epoch uint64) (bool, error) {
	it, err := tbl.Iter(ctx, state.IterOptions{Vnode: state.AllVnodes, Epoch: epoch})
	if err != nil {
		return false, err
	}
	err = it.Next()
	cerr := it.Close()
	switch {
	case errors.Is(err, io.EOF):
		return true, cerr
	case err != nil:
		return false, err
	}
	return false, cerr
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
