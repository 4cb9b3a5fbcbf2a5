package session

import (
	"context"
	"fmt"
	"io"

	"github.com/tributary/tributary/executor/batch"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/server/pgwire"
	"github.com/tributary/tributary/sql/types"
)

// columnsOf converts plan fields (skipping hidden ones) to wire columns.
func columnsOf(fields []plan.Field) []pgwire.Column {
	cols := make([]pgwire.Column, 0, len(fields))
	for _, f := range fields {
		if f.Hidden {
			continue
		}
		cols = append(cols, pgwire.Column{Name: f.Name, Type: f.Type, TableOID: f.Rel, ColumnAttr: f.Col})
	}
	return cols
}

// execResult streams an executor's chunks.
type execResult struct {
	cols    []pgwire.Column
	exec    batch.Executor
	rows    int64
	tag     func(rows int64) string
	onDone  func(err error)
	release func() // unpins the snapshot
	closed  bool
}

func (r *execResult) Columns() []pgwire.Column { return r.cols }

func (r *execResult) Next(ctx context.Context) (*types.Chunk, error) {
	c, err := r.exec.Next(ctx)
	if err != nil {
		if err != io.EOF && r.onDone != nil {
			r.onDone(err)
		}
		return nil, err
	}
	r.rows += int64(c.NumVisible())
	return c, nil
}

func (r *execResult) Tag() string {
	if r.tag != nil {
		return r.tag(r.rows)
	}
	return fmt.Sprintf("SELECT %d", r.rows)
}

func (r *execResult) Close() {
	if !r.closed {
		r.closed = true
		r.exec.Close()
		if r.release != nil {
			r.release()
		}
	}
}

// staticResult returns rows computed up front (SHOW, RETURNING, EXPLAIN) or none.
type staticResult struct {
	cols  []pgwire.Column
	chunk *types.Chunk
	done  bool
	tag   string
}

func (r *staticResult) Columns() []pgwire.Column { return r.cols }

func (r *staticResult) Next(ctx context.Context) (*types.Chunk, error) {
	if r.done || r.chunk == nil || r.chunk.Len() == 0 {
		return nil, io.EOF
	}
	r.done = true
	return r.chunk, nil
}

func (r *staticResult) Tag() string { return r.tag }
func (r *staticResult) Close()      {}

// tagOnly is a result without rows.
func tagOnly(tag string) pgwire.Result { return &staticResult{tag: tag} }

// textRows builds a static result of text columns.
func textRows(names []string, rows [][]string, tag string) pgwire.Result {
	cols := make([]pgwire.Column, len(names))
	ts := make([]types.T, len(names))
	for i, n := range names {
		cols[i] = pgwire.Column{Name: n, Type: types.TVarchar}
		ts[i] = types.TVarchar
	}
	c := types.NewChunk(ts, len(rows))
	row := make([]types.Datum, len(names))
	for _, r := range rows {
		for i := range row {
			row[i] = types.DString(r[i])
		}
		c.AppendRow(row)
	}
	if tag == "" {
		tag = fmt.Sprintf("SHOW %d", len(rows))
	}
	return &staticResult{cols: cols, chunk: c, tag: tag}
}

func textColumns(names ...string) []pgwire.Column {
	cols := make([]pgwire.Column, len(names))
	for i, n := range names {
		cols[i] = pgwire.Column{Name: n, Type: types.TVarchar}
	}
	return cols
}
