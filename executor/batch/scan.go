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
}

func newScan(env *Env, n *plan.Scan) (*scanExec, error) {
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
		e.out.AppendRow(e.it.Row())
	}
	if e.out.Len() == 0 {
		return nil, io.EOF
	}
	return e.out, nil
}

// start opens the iteration, or for a point lookup reads the one row.
func (e *scanExec) start(ctx context.Context) error {
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
