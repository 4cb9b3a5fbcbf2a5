package batch

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage/codec"
	"github.com/tributary/tributary/storage/state"
)

// BuildDML returns the executor of an INSERT, UPDATE or DELETE: stmt is a
// *plan.Insert, *plan.Update or *plan.Delete; inits and paramBase are the
// statement's init plans, as in plan.Query. On its first Next the executor
// reads its whole input (so it never sees its own writes), writes through
// env.Tables, then yields the RETURNING rows, or nothing (io.EOF) without
// RETURNING. rowsAffected reports the rows written once Next has returned
// io.EOF. env.Tables must be set; the caller flushes it and commits.
func BuildDML(env *Env, stmt any, inits []plan.InitPlan, paramBase int) (x Executor, rowsAffected func() int64, err error) {
	if env.Ctx == nil {
		env.Ctx = &expr.Ctx{}
	}
	if env.Tables == nil {
		return nil, nil, errorf("DML needs a TableSet")
	}
	var (
		rel       *catalog.Relation
		input     plan.Node
		returning []expr.Expr
		retOut    []plan.Field
		w         dmlWriter
		joined    bool
	)
	switch s := stmt.(type) {
	case *plan.Insert:
		rel, input, returning, retOut = s.Table, s.Input, s.Returning, s.RetOut
		w = &insertWriter{rel: rel, conflict: s.Conflict}
	case *plan.Update:
		rel, input, returning, retOut = s.Table, s.Input, s.Returning, s.RetOut
		w, joined = newUpdateWriter(env, s), s.Joined
	case *plan.Delete:
		rel, input, returning, retOut = s.Table, s.Input, s.Returning, s.RetOut
		w, joined = &deleteWriter{}, s.Joined
	default:
		return nil, nil, types.Errorf(types.ErrInternal, "batch: %T is not a DML statement", stmt)
	}
	in, err := build(env, input)
	if err != nil {
		return nil, nil, err
	}
	e := &dmlExec{env: env, rel: rel, input: input, in: in, w: w, returning: returning, ts: plan.Types(retOut), joined: joined}
	x, err = withInitPlans(env, e, inits, paramBase)
	if err != nil {
		return nil, nil, err
	}
	return x, func() int64 { return e.affected }, nil
}

// dmlWriter applies one statement's rows to its table and returns the rows
// RETURNING sees (inserted, new or deleted rows).
type dmlWriter interface {
	write(ctx context.Context, env *Env, tbl *state.Table, rel *catalog.Relation, rows *types.Chunk) (*types.Chunk, error)
}

// dmlExec drives a dmlWriter: read all input, write, then yield RETURNING rows.
type dmlExec struct {
	env       *Env
	rel       *catalog.Relation
	input     plan.Node
	in        Executor
	w         dmlWriter
	returning []expr.Expr
	ts        []types.T
	joined    bool // the input may hold a target row more than once (UPDATE ... FROM, DELETE ... USING)

	affected int64
	started  bool
	written  *types.Chunk // rows RETURNING is evaluated over
	pos      int
	slice    *types.Chunk // written[pos:pos+chunk]
	out      *types.Chunk
}

func (e *dmlExec) Schema() []types.T { return e.ts }

func (e *dmlExec) Next(ctx context.Context) (*types.Chunk, error) {
	if !e.started {
		e.started = true
		tbl, err := e.env.Tables.Table(e.rel)
		if err != nil {
			return nil, err
		}
		if e.streams() {
			if err := e.writeStreaming(ctx, tbl); err != nil {
				return nil, err
			}
			return e.next()
		}
		rows := types.NewChunk(e.in.Schema(), 0) // grows to what the input holds: a one-row INSERT allocates one row
		if err := drain(ctx, e.in, rows); err != nil {
			return nil, err
		}
		if len(rows.Cols) < len(e.rel.Columns) {
			return nil, types.Errorf(types.ErrInternal, "%s: input has %d columns, table %d", e.rel.Name, len(rows.Cols), len(e.rel.Columns))
		}
		if e.joined {
			rows = firstPerKey(rows, e.rel)
		}
		written, err := e.w.write(ctx, e.env, tbl, e.rel, rows)
		if err != nil {
			return nil, err
		}
		e.affected = int64(written.Len())
		e.written = written
	}
	if err := checkCtx(ctx); err != nil {
		return nil, err
	}
	return e.next()
}

// firstPerKey keeps, of rows holding one target row more than once (joined
// with several rows of UPDATE's FROM or DELETE's USING list), the first row
// of each primary key: PostgreSQL writes each target row once, an UPDATE
// with one of its matches (which one is unspecified).
func firstPerKey(rows *types.Chunk, rel *catalog.Relation) *types.Chunk {
	ts := rel.ColumnTypes()
	seen := make(map[string]struct{}, rows.Len())
	keep := make([]int, 0, rows.Len())
	var (
		row []types.Datum
		key []byte
	)
	for i := 0; i < rows.Len(); i++ {
		row = rows.Row(i, row)
		key = codec.AppendKey(key[:0], ts, row, rel.PK, nil)
		if _, dup := seen[string(key)]; dup {
			continue
		}
		seen[string(key)] = struct{}{}
		keep = append(keep, i)
	}
	if len(keep) == rows.Len() {
		return rows
	}
	out := types.NewChunk(rows.Types(), len(keep))
	for _, i := range keep {
		out.AppendFrom(rows, i)
	}
	return out
}

// streams reports whether the statement may write its input chunk by chunk
// as it reads it, so that a big INSERT ... SELECT does not hold all its rows
// in memory (the TableSet may spill them, MaybeSpill): an INSERT whose input
// does not read the table it writes (else the input would see the rows
// written before it: the statement reads all its input first instead).
func (e *dmlExec) streams() bool {
	if _, ok := e.w.(*insertWriter); !ok {
		return false
	}
	var readsTarget func(n plan.Node) bool
	readsTarget = func(n plan.Node) bool {
		if s, ok := n.(*plan.Scan); ok && s.Table.ID == e.rel.ID {
			return true
		}
		return slices.ContainsFunc(n.Children(), readsTarget)
	}
	return !readsTarget(e.input)
}

// writeStreaming writes the input chunk by chunk, keeping the written rows
// only for RETURNING, and lets the TableSet spill between chunks.
func (e *dmlExec) writeStreaming(ctx context.Context, tbl *state.Table) error {
	rows := types.NewChunk(e.in.Schema(), 0) // grows to the input chunks' size on first use
	if len(e.returning) > 0 {
		e.written = types.NewChunk(e.in.Schema(), 0)
	}
	for {
		if err := checkCtx(ctx); err != nil {
			return err
		}
		c, err := e.in.Next(ctx)
		if isEOF(err) {
			break
		}
		if err != nil {
			return err
		}
		in := c // the writers only read it, before the next Next
		if c.Vis != nil {
			rows.Reset()
			appendVisible(rows, c)
			in = rows
		}
		if len(in.Cols) < len(e.rel.Columns) {
			return types.Errorf(types.ErrInternal, "%s: input has %d columns, table %d", e.rel.Name, len(in.Cols), len(e.rel.Columns))
		}
		if lw, ok := e.w.(interface{ setLast(bool) }); ok {
			lw.setLast(len(e.returning) == 0 && inputDone(e.in))
		}
		written, err := e.w.write(ctx, e.env, tbl, e.rel, in)
		if err != nil {
			return err
		}
		e.affected += int64(written.Len())
		if e.written != nil {
			appendVisible(e.written, written)
		}
		if err := e.env.Tables.MaybeSpill(); err != nil {
			return err
		}
	}
	if e.written == nil {
		e.written = types.NewChunk(e.in.Schema(), 0)
	}
	return nil
}

// inputDone reports whether in has yielded its last chunk (an input that
// cannot tell: false).
func inputDone(in Executor) bool {
	d, ok := in.(interface{ done() bool })
	return ok && d.done()
}

// next yields the next chunk of RETURNING rows, io.EOF after the last.
func (e *dmlExec) next() (*types.Chunk, error) {
	if len(e.returning) == 0 || e.pos >= e.written.Len() {
		return nil, io.EOF
	}
	if e.slice == nil {
		e.slice = types.NewChunk(e.written.Types(), types.DefaultChunkSize)
		e.out = &types.Chunk{Cols: make([]types.Vector, len(e.returning))}
	}
	e.slice.Reset()
	end := min(e.written.Len(), e.pos+types.DefaultChunkSize)
	for i := e.pos; i < end; i++ {
		e.slice.AppendFrom(e.written, i)
	}
	e.pos = end
	for j, x := range e.returning {
		if err := evalInto(e.env, x, e.slice, &e.out.Cols[j]); err != nil {
			return nil, err
		}
	}
	e.out.SetLen(e.slice.Len())
	return e.out, nil
}

func (e *dmlExec) Close() error { return e.in.Close() }

// checkNotNull rejects a row with NULL in a NOT NULL or primary-key column.
func checkNotNull(rel *catalog.Relation, row []types.Datum) error {
	for i := range rel.Columns {
		if !row[i].Null {
			continue
		}
		if rel.Columns[i].NotNull || isPKCol(rel, i) {
			err := types.Errorf(types.ErrNotNullViolation, "null value in column %q of relation %q violates not-null constraint", rel.Columns[i].Name, rel.Name).(*types.Error)
			err.Detail = "Failing row contains (" + rowText(rel, row) + ")."
			return err
		}
	}
	return nil
}

func isPKCol(rel *catalog.Relation, c int) bool {
	for _, k := range rel.PK {
		if k == c {
			return true
		}
	}
	return false
}

// checkNoConflict fails with a unique violation when a row with row's primary
// key exists (committed, or written earlier in this statement).
func checkNoConflict(ctx context.Context, env *Env, tbl *state.Table, rel *catalog.Relation, row, pk, scratch []types.Datum) ([]types.Datum, error) {
	for i, c := range rel.PK {
		pk[i] = row[c]
	}
	scratch, found, err := tbl.GetAt(ctx, env.Epoch, pk, scratch)
	if err != nil {
		return scratch, fmt.Errorf("%s: check primary key: %w", rel.QualifiedName(), err)
	}
	if !found {
		return scratch, nil
	}
	return scratch, uniqueViolation(rel, row)
}

// uniqueViolation is the error of inserting row, whose primary key rel holds.
func uniqueViolation(rel *catalog.Relation, row []types.Datum) error {
	names := make([]string, len(rel.PK))
	vals := make([]string, len(rel.PK))
	for i, c := range rel.PK {
		names[i] = rel.Columns[c].Name
		vals[i] = types.FormatText(rel.Columns[c].Type, &row[c])
	}
	e := types.Errorf(types.ErrUniqueViolation, "duplicate key value violates unique constraint %q", rel.Name+"_pkey").(*types.Error)
	e.Detail = fmt.Sprintf("Key (%s)=(%s) already exists.", strings.Join(names, ", "), strings.Join(vals, ", "))
	return e
}

// insertRow inserts row into rel (tbl), checking its primary key as rel's
// ON CONFLICT says: a conflict fails with 23505 (the default), replaces the
// row (overwrite), keeps the old one (ignore: inserted is false), or
// replaces the old row's columns where the new row's are not NULL.
func insertRow(ctx context.Context, env *Env, tbl *state.Table, rel *catalog.Relation, row, pk, scratch []types.Datum) (inserted bool, _ []types.Datum, err error) {
	if rel.OnConflict == "" {
		if scratch, err = checkNoConflict(ctx, env, tbl, rel, row, pk, scratch); err != nil {
			return false, scratch, err
		}
		if err := tbl.Insert(row); err != nil {
			return false, scratch, errorf("insert into %s: %w", rel.QualifiedName(), err)
		}
		env.Tables.record(rel, types.OpInsert, row)
		return true, scratch, nil
	}
	for i, c := range rel.PK {
		pk[i] = row[c]
	}
	var found bool
	if scratch, found, err = tbl.GetAt(ctx, env.Epoch, pk, scratch); err != nil {
		return false, scratch, fmt.Errorf("%s: check primary key: %w", rel.QualifiedName(), err)
	}
	switch {
	case !found:
		if err := tbl.Insert(row); err != nil {
			return false, scratch, errorf("insert into %s: %w", rel.QualifiedName(), err)
		}
		env.Tables.record(rel, types.OpInsert, row)
		return true, scratch, nil
	case rel.OnConflict == "ignore":
		return false, scratch, nil
	case olderVersion(rel, row, scratch):
		return false, scratch, nil // an older version of the stored row: ignored
	}
	old := slices.Clone(scratch[:len(row)])
	upd := row
	if rel.OnConflict == "do_update_if_not_null" {
		upd = slices.Clone(old)
		for i := range row {
			if !row[i].Null {
				upd[i] = row[i]
			}
		}
	}
	if err := tbl.Update(old, upd); err != nil {
		return false, scratch, errorf("insert into %s: %w", rel.QualifiedName(), err)
	}
	env.Tables.record(rel, types.OpUpdateDelete, old)
	env.Tables.record(rel, types.OpUpdateInsert, upd)
	return true, scratch, nil
}

// rowText prints a row's visible columns as PostgreSQL's "Failing row contains" detail does.
func rowText(rel *catalog.Relation, row []types.Datum) string {
	var parts []string
	for i := range rel.Columns {
		if rel.Columns[i].Hidden {
			continue
		}
		if row[i].Null {
			parts = append(parts, "null")
		} else {
			parts = append(parts, types.FormatText(rel.Columns[i].Type, &row[i]))
		}
	}
	return strings.Join(parts, ", ")
}

// olderVersion reports whether row's version columns (ON CONFLICT ... WITH
// VERSION COLUMN), compared in order, are lower than the stored row's.
func olderVersion(rel *catalog.Relation, row, stored []types.Datum) bool {
	for _, c := range rel.VersionColumns {
		t := rel.Columns[c].Type
		if cmp := types.Compare(t, &row[c], &stored[c]); cmp != 0 {
			return cmp < 0
		}
	}
	return false
}
