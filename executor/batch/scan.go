package batch

import (
	"context"
	"io"

	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage/codec"
	"github.com/tributary/tributary/storage/state"
)

// scanExec reads a relation's rows from its state table at env.Epoch (merged
// with the statement's own pending writes): every row, or with Lookup the
// rows whose primary key equals (or starts with) the lookup values.
type scanExec struct {
	env  *Env
	node *plan.Scan
	ts   []types.T
	tbl  *state.Table
	it   state.RowIterator
	out  *types.Chunk
	open bool
	done bool
	row  []types.Datum
	// filterCols and filterVals keep only the rows with these values (an
	// index lookup answered from the table).
	filterCols []int
	filterVals []types.Datum
}

func newScan(env *Env, n *plan.Scan) (*scanExec, error) {
	if n.Index != nil {
		if n.Index.Index == nil || len(n.Lookup) == 0 || len(n.Lookup) > len(n.Index.Index.Columns) {
			return nil, types.Errorf(types.ErrInternal, "scan %s: bad lookup of index %s", n.Table.QualifiedName(), n.Index.Name)
		}
		return &scanExec{env: env, node: n, ts: plan.Types(n.Out)}, nil
	}
	if len(n.Lookup) > len(n.Table.PK) {
		return nil, types.Errorf(types.ErrInternal, "scan %s: %d lookup values for a key of %d columns", n.Table.QualifiedName(), len(n.Lookup), len(n.Table.PK))
	}
	return &scanExec{env: env, node: n, ts: plan.Types(n.Out)}, nil
}

func (e *scanExec) Schema() []types.T { return e.ts }

func (e *scanExec) Next(ctx context.Context) (*types.Chunk, error) {
	if err := checkCtx(ctx); err != nil {
		return nil, err
	}
	if !e.open {
		e.open = true
		if err := e.start(ctx); err != nil {
			return nil, err
		}
	}
	if e.it == nil { // a point lookup (or none at all): out holds its result
		if e.done || e.out.Len() == 0 {
			e.done = true
			return nil, io.EOF
		}
		e.done = true
		return e.out, nil
	}
	if e.done {
		return nil, io.EOF
	}
	e.out.Reset()
	for e.out.Len() < types.DefaultChunkSize {
		err := e.it.Next()
		if err == io.EOF {
			e.done = true
			if err := e.Close(); err != nil { // release the snapshot early
				return nil, err
			}
			break
		}
		if err != nil {
			return nil, errorf("scan %s: %w", e.node.Table.QualifiedName(), err)
		}
		if row := e.it.Row(); e.match(row) {
			e.out.AppendRow(row)
		}
	}
	if e.out.Len() == 0 {
		return nil, io.EOF
	}
	return e.out, nil
}

// match reports whether a row of the table has the index lookup's values
// (the table read instead of the index: filterCols set).
func (e *scanExec) match(row []types.Datum) bool {
	for i, c := range e.filterCols {
		if types.Compare(e.ts[c], &row[c], &e.filterVals[i]) != 0 {
			return false
		}
	}
	return true
}

// startIndex starts an index lookup: a key-range read of the index (on one
// vnode when the values cover its distribution key), or, when the index
// cannot answer (the statement's transaction wrote the table, or the index
// is still being built or was dropped since the statement was planned), a
// read of the whole table keeping the rows with the values.
func (e *scanExec) startIndex(ctx context.Context) error {
	idx := e.node.Index
	key := make([]types.Datum, len(e.node.Lookup))
	if err := evalRow(e.env.Ctx, e.node.Lookup, nil, key); err != nil {
		return err
	}
	e.out = types.NewChunk(e.ts, types.DefaultChunkSize)
	for i := range key {
		if key[i].Null { // = NULL matches nothing
			return nil
		}
	}
	usable := e.env.IndexReady != nil && e.env.IndexReady(idx.ID, e.env.Epoch)
	if usable && e.env.Tables != nil {
		if tbl, err := e.env.Tables.Table(e.node.Table); err == nil && tbl.Overlays() {
			usable = false
		}
	}
	rel := idx
	opts := state.IterOptions{Vnode: state.AllVnodes, Epoch: e.env.Epoch}
	if usable {
		n := len(key)
		pkTypes := make([]types.T, n)
		for i := range pkTypes {
			pkTypes[i] = idx.Columns[idx.PK[i]].Type
		}
		if d := idx.Index.DistLen; n >= d {
			opts.Vnode = int(codec.VnodeOf(codec.HashRow(pkTypes[:d], key[:d], seq(d))))
		}
		start := codec.AppendKey(nil, pkTypes, key, seq(n), nil)
		opts.Range = state.KeyRange{Start: start, End: codec.PrefixEnd(start)}
	} else {
		rel = e.node.Table
		e.filterCols, e.filterVals = idx.Index.Columns[:len(key)], key
	}
	tbl, err := e.env.table(rel)
	if err != nil {
		return err
	}
	e.tbl = tbl
	it, err := tbl.Iter(ctx, opts)
	if err != nil {
		return errorf("scan %s: %w", rel.QualifiedName(), err)
	}
	e.it = it
	return nil
}

// start opens the iteration, or for a point lookup reads the one row.
func (e *scanExec) start(ctx context.Context) error {
	if e.node.Index != nil {
		return e.startIndex(ctx)
	}
	rel := e.node.Table
	tbl, err := e.env.table(rel)
	if err != nil {
		return err
	}
	e.tbl = tbl
	e.out = types.NewChunk(e.ts, types.DefaultChunkSize)
	opts := state.IterOptions{Vnode: state.AllVnodes, Epoch: e.env.Epoch}
	if n := len(e.node.Lookup); n > 0 {
		key := make([]types.Datum, n)
		if err := evalRow(e.env.Ctx, e.node.Lookup, nil, key); err != nil {
			return err
		}
		for i := range key {
			if key[i].Null { // = NULL matches nothing
				return nil
			}
		}
		if n == len(rel.PK) {
			row, found, err := tbl.GetAt(ctx, e.env.Epoch, key, e.row)
			if err != nil {
				return errorf("scan %s: %w", rel.QualifiedName(), err)
			}
			e.row = row
			if found {
				e.out.AppendRow(row)
			}
			return nil
		}
		pkTypes := make([]types.T, n)
		for i := range pkTypes {
			pkTypes[i] = rel.Columns[rel.PK[i]].Type
		}
		start := codec.AppendKey(nil, pkTypes, key, seq(n), nil)
		opts.Range = state.KeyRange{Start: start, End: codec.PrefixEnd(start)}
	}
	it, err := tbl.Iter(ctx, opts)
	if err != nil {
		return errorf("scan %s: %w", rel.QualifiedName(), err)
	}
	e.it = it
	return nil
}

func (e *scanExec) Close() error {
	if e.it == nil {
		return nil
	}
	it := e.it
	e.it = nil
	if err := it.Close(); err != nil {
		return errorf("scan %s: %w", e.node.Table.QualifiedName(), err)
	}
	return nil
}
