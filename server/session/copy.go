package session

import (
	"context"
	"errors"
	"io"
	"strconv"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/tributary/tributary/executor/batch"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/server/pgwire"
	"github.com/tributary/tributary/sql/parser"
	"github.com/tributary/tributary/sql/types"
)

// describeCopy binds COPY: FROM STDIN loads a table through the DML path
// (pgwire decodes the data), TO STDOUT runs a query over the table or the
// given query (pgwire encodes the rows). Server-side files and programs are
// refused as PostgreSQL refuses them to an unprivileged role.
func (s *Session) describeCopy(st *statement, n *parser.Copy) error {
	if n.Program {
		return privilegeError("must be superuser or have privileges of the pg_execute_server_program role to COPY to or from an external program")
	}
	if n.File != "" {
		if n.From {
			return privilegeError("must be superuser or have privileges of the pg_read_server_files role to COPY from a file")
		}
		return privilegeError("must be superuser or have privileges of the pg_write_server_files role to COPY to a file")
	}
	if n.From {
		return s.describeCopyFrom(st, n)
	}
	return s.describeCopyTo(st, n)
}

func privilegeError(msg string) error {
	e := types.Errorf(types.ErrInsufficientPrivilege, "%s", msg).(*types.Error)
	e.Hint = "Anyone can COPY to stdout or from stdin. psql's \\copy command also works for anyone."
	return e
}

func copyOptions(n *parser.Copy) []pgwire.CopyOption {
	out := make([]pgwire.CopyOption, len(n.Options))
	for i, o := range n.Options {
		out[i] = pgwire.CopyOption{Key: o.Key, Value: o.Value, Columns: o.Columns, All: o.All}
	}
	return out
}

func (s *Session) describeCopyFrom(st *statement, n *parser.Copy) error {
	cp, err := s.binder(nil).CopyFrom(n.Table, n.Columns)
	if err != nil {
		return err
	}
	if err := s.checkPriv(cp.Table, "insert"); err != nil {
		return err
	}
	cols := make([]pgwire.Column, len(cp.Columns))
	names := make([]string, len(cp.Columns))
	for k, c := range cp.Columns {
		col := &cp.Table.Columns[c]
		cols[k] = pgwire.Column{Name: col.Name, Type: col.Type, TableOID: cp.Table.ID, ColumnAttr: int16(c + 1)}
		names[k] = col.Name
	}
	opts, err := pgwire.NewCopyOptions(copyOptions(n), names, true)
	if err != nil {
		return err
	}
	spec := pgwire.CopySpec{Table: cp.Table.Name, Columns: cols, Options: opts}
	st.run = func(ctx context.Context, _ []types.Datum) (pgwire.Result, error) {
		return &copyInResult{s: s, plan: cp, spec: spec}, nil
	}
	return nil
}

// copyInResult is COPY FROM STDIN's result: pgwire feeds it the decoded rows.
type copyInResult struct {
	s    *Session
	plan *plan.CopyFrom
	spec pgwire.CopySpec
	rows int64
}

func (r *copyInResult) Columns() []pgwire.Column                   { return nil }
func (r *copyInResult) Next(context.Context) (*types.Chunk, error) { return nil, io.EOF }
func (r *copyInResult) Tag() string                                { return "COPY " + strconv.FormatInt(r.rows, 10) }
func (r *copyInResult) Close()                                     {}
func (r *copyInResult) CopyIn() pgwire.CopySpec                    { return r.spec }

// Load writes every row of src in one DML statement, so in one epoch: the
// rows are decoded and written a chunk at a time (the input is never held
// whole), and past the coordinator's spill size the pending writes move into
// storage, invisible until the epoch commits, as for INSERT ... SELECT.
func (r *copyInResult) Load(ctx context.Context, src pgwire.CopySource) error {
	s := r.s
	attempt := 0
	err := s.write(ctx, func(tables *batch.TableSet, snapshot uint64) error {
		if attempt++; attempt > 1 { // run again after a recovery: from the first row
			if err := src.Rewind(); err != nil {
				return err
			}
		}
		env := &batch.Env{Ctx: s.exprCtx(nil), Store: s.eng.Store, Epoch: snapshot, Tables: tables}
		w, err := batch.NewCopyWriter(env, r.plan)
		if err != nil {
			return err
		}
		for {
			ch, err := src.Next(ctx)
			if err == io.EOF {
				break
			}
			if err != nil {
				if ctx.Err() != nil {
					return types.Errorf(types.ErrQueryCanceled, "canceling statement due to user request")
				}
				return err
			}
			if i, err := w.Write(ctx, ch); err != nil {
				return src.RowError(i, err)
			}
		}
		r.rows = w.Rows()
		return nil
	})
	if err != nil {
		if errors.Is(err, context.Canceled) {
			err = types.Errorf(types.ErrQueryCanceled, "canceling statement due to user request")
		}
		s.failed()
	}
	return err
}

func (s *Session) describeCopyTo(st *statement, n *parser.Copy) error {
	q := n.Query
	if q == nil {
		rel, err := s.lookup(n.Table.Schema, n.Table.Name)
		if err != nil {
			return err
		}
		list := "*"
		if len(n.Columns) > 0 {
			quoted := make([]string, len(n.Columns))
			for i, c := range n.Columns {
				if rel.ColumnIndex(c) < 0 {
					return types.Errorf(types.ErrUndefinedColumn, "column \"%s\" of relation \"%s\" does not exist", c, rel.Name)
				}
				quoted[i] = quoteIdent(c)
			}
			list = strings.Join(quoted, ", ")
		}
		stmts, err := parser.Parse("SELECT " + list + " FROM " + quoteIdent(rel.Schema) + "." + quoteIdent(rel.Name))
		if err != nil {
			return err
		}
		q = stmts[0].(*parser.Query)
	}
	switch q.Node.(type) {
	case *ast.InsertStmt, *ast.UpdateStmt, *ast.DeleteStmt:
		return types.Errorf(types.ErrUnsupported, "COPY (INSERT | UPDATE | DELETE ...) TO is not supported")
	}
	inner := &statement{s: s, ast: q, sql: st.sql, declared: st.declared}
	if err := s.describeQuery(inner, q); err != nil {
		return err
	}
	names := make([]string, len(inner.cols))
	for i, c := range inner.cols {
		names[i] = c.Name
	}
	opts, err := pgwire.NewCopyOptions(copyOptions(n), names, false)
	if err != nil {
		return err
	}
	table := n.Table.Name
	spec := pgwire.CopySpec{Table: table, Columns: inner.cols, Options: opts}
	st.params = inner.params
	st.run = func(ctx context.Context, params []types.Datum) (pgwire.Result, error) {
		res, err := inner.run(ctx, params)
		if err != nil {
			return nil, err
		}
		return &copyOutResult{Result: res, spec: spec}, nil
	}
	return nil
}

// copyOutResult is COPY TO STDOUT's result: the query's rows, counted.
type copyOutResult struct {
	pgwire.Result
	spec pgwire.CopySpec
	rows int64
}

func (r *copyOutResult) Columns() []pgwire.Column { return nil }
func (r *copyOutResult) CopyOut() pgwire.CopySpec { return r.spec }
func (r *copyOutResult) Tag() string              { return "COPY " + strconv.FormatInt(r.rows, 10) }

func (r *copyOutResult) Next(ctx context.Context) (*types.Chunk, error) {
	c, err := r.Result.Next(ctx)
	if err == nil {
		r.rows += int64(c.NumVisible())
	}
	return c, err
}

// quoteIdent quotes an identifier for SQL text.
func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
