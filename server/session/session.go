package session

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/server/pgwire"
	"github.com/tributary/tributary/server/psqlcat"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/parser"
	"github.com/tributary/tributary/sql/types"
)

// Session is one connection's SQL engine.
type Session struct {
	eng *Engine
	// prepared are the statements PREPARE named (prepare.go).
	prepared map[string]*statement
	notifier pgwire.Notifier
	user     string
	pid      int32
	// database is the session's database: the startup one, or the one SET
	// database chose (database.go).
	database string
	vars     *vars
	// currval holds the last value nextval gave this session, by sequence name.
	currval map[string]int64
	// tookNextval is set when a statement took a sequence value (the query
	// path then commits the reservation before it ends).
	tookNextval atomic.Bool
	// tx is the transaction status: 'I' idle, 'T' in a block, 'E' failed block.
	tx byte
	// txn is the block's snapshot and pending writes (txn.go), from its
	// first statement on tables.
	txn *txn
	// savepoints are the block's open savepoints, oldest first (txn.go).
	savepoints []savepoint
	// role is the role SET ROLE chose ("": the session's user).
	role string
}

var _ pgwire.Session = (*Session)(nil)

// TxStatus implements pgwire.Session.
func (s *Session) TxStatus() byte {
	if s.tx == 0 {
		return 'I'
	}
	return s.tx
}

// Close implements pgwire.Session: an open transaction block is rolled back.
func (s *Session) Close() {
	s.endTxn()
	s.eng.attached.remove(s.pid)
}

// StatementTimeout implements pgwire.Timeouts: statement_timeout.
func (s *Session) StatementTimeout() time.Duration { return s.vars.millisSetting("statement_timeout") }

// IdleInTransactionTimeout implements pgwire.Timeouts:
// idle_in_transaction_session_timeout.
func (s *Session) IdleInTransactionTimeout() time.Duration {
	return s.vars.millisSetting("idle_in_transaction_session_timeout")
}

// Parse implements pgwire.Session.
func (s *Session) Parse(ctx context.Context, sql string, paramTypes []types.T) ([]pgwire.Statement, error) {
	// psql's \d family sends catalog queries our SQL engine cannot run (arrays,
	// correlated subqueries); psqlcat recognises and answers them.
	if cols, rows, ok, err := psqlcat.Answer(catalogWithRoles{s.cat(), s.eng}, sql); ok {
		if err != nil {
			s.failed()
			return nil, err
		}
		st := &statement{s: s, sql: sql, described: true}
		s.describeStatic(st, cols, rows)
		return []pgwire.Statement{st}, nil
	}
	stmts, notices, err := parser.ParseNotices(sql)
	if err != nil {
		s.failed()
		return nil, err
	}
	for _, n := range notices {
		s.notifier.Notice("NOTICE", n.Code, n.Msg)
	}
	out := make([]pgwire.Statement, len(stmts))
	for i, st := range stmts {
		out[i] = &statement{s: s, ast: st, sql: sql, declared: paramTypes}
	}
	return out, nil
}

// Recovered implements pgwire.Recoverer: a statement that panicked failed.
func (s *Session) Recovered() { s.failed() }

var _ pgwire.Recoverer = (*Session)(nil)

// failed moves an open transaction block to the failed state.
func (s *Session) failed() {
	if s.tx == 'T' {
		s.tx = 'E'
	}
}

func (s *Session) exprCtx(params []types.Datum) *expr.Ctx {
	user := s.user
	if user == "" {
		user = "root"
	}
	current := user
	if s.role != "" {
		current = s.role
	}
	ctx := &expr.Ctx{Params: params, Now: time.Now().UnixMicro(), User: current, SessionUser: user, Database: s.db(), BackendPID: s.pid}
	if s.eng.Backends != nil {
		ctx.Backends = backendGuard{s}
	}
	if s.eng.seqs != nil {
		ctx.Sequences = sessionSeqs{s}
	}
	ctx.Comments = comments{s.eng.Catalog}
	return ctx
}

// statement is one parsed statement; Describe binds it and keeps a runner.
type statement struct {
	s        *Session
	ast      parser.Statement
	sql      string
	declared []types.T

	described bool
	params    []types.T
	cols      []pgwire.Column
	run       func(ctx context.Context, params []types.Datum) (pgwire.Result, error)
}

// Describe implements pgwire.Statement.
func (st *statement) Describe(ctx context.Context) ([]types.T, []pgwire.Column, error) {
	if st.described {
		return st.params, st.cols, nil
	}
	if err := st.s.checkTx(st.ast); err != nil {
		return nil, nil, err
	}
	if err := st.s.describe(ctx, st); err != nil {
		st.s.failed()
		return nil, nil, err
	}
	st.described = true
	return st.params, st.cols, nil
}

// Run implements pgwire.Statement.
func (st *statement) Run(ctx context.Context, params []types.Datum) (pgwire.Result, error) {
	if _, _, err := st.Describe(ctx); err != nil {
		return nil, err
	}
	if what := ddlName(st.ast); what != "" {
		if err := st.s.refuseInTxn(what); err != nil {
			st.s.failed()
			return nil, err
		}
	}
	res, err := st.run(ctx, params)
	if err != nil {
		if errors.Is(err, context.Canceled) || ctx.Err() != nil {
			err = types.Errorf(types.ErrQueryCanceled, "canceling statement due to user request")
		}
		st.s.failed()
		return nil, err
	}
	if er, ok := res.(*execResult); ok {
		er.onDone = func(error) { st.s.failed() }
	}
	return res, nil
}

// checkTx refuses statements in a failed transaction block.
func (s *Session) checkTx(st parser.Statement) error {
	if s.tx != 'E' {
		return nil
	}
	switch st.(type) {
	case *parser.Rollback, *parser.Commit:
		return nil
	}
	return types.Errorf(types.ErrInFailedTx, "current transaction is aborted, commands ignored until end of transaction block")
}

// describe binds st and installs its runner.
func (s *Session) describe(ctx context.Context, st *statement) error {
	switch st.ast.(type) {
	case *parser.Set, *parser.Rollback, *parser.Commit, *parser.DropDatabase, *parser.CreateDatabase:
	default:
		if err := s.checkDatabase(); err != nil {
			return err
		}
		if n, ok := foreignName(st.ast, s.db()); ok {
			return types.Errorf(types.ErrUnsupported, "cross-database references are not implemented: \"%s\"", n.QualifiedString())
		}
	}
	switch n := st.ast.(type) {
	case *parser.Query:
		return s.describeQuery(st, n)
	case *parser.ExplainAnalyze:
		st.cols = explainAnalyzeColumns
		st.run = func(ctx context.Context, _ []types.Datum) (pgwire.Result, error) { return s.explainAnalyze(ctx, n) }
		return nil
	case *parser.Explain:
		st.cols = textColumns("QUERY PLAN")
		st.run = func(ctx context.Context, _ []types.Datum) (pgwire.Result, error) { return s.explain(n) }
		return nil
	case *parser.Begin:
		tag := "BEGIN"
		if n.Start {
			tag = "START TRANSACTION"
		}
		st.run = func(ctx context.Context, _ []types.Datum) (pgwire.Result, error) {
			if s.tx != 0 && s.tx != 'I' {
				s.notifier.Notice("WARNING", "25001", "there is already a transaction in progress")
				return tagOnly(tag), nil
			}
			if iso := strings.ToLower(strings.Join(strings.Fields(n.Isolation), " ")); iso != "" && iso != "repeatable read" {
				s.notifier.Notice("NOTICE", "00000", isolationIgnored(iso))
			}
			s.tx = 'T'
			return tagOnly(tag), nil
		}
		return nil
	case *parser.Commit:
		st.run = func(ctx context.Context, _ []types.Datum) (pgwire.Result, error) {
			switch s.tx {
			case 'E':
				s.endTxn()
				return tagOnly("ROLLBACK"), nil
			case 'T':
				err := s.commitTxn(ctx)
				s.endTxn()
				if err != nil {
					return nil, err
				}
			default:
				s.notifier.Notice("WARNING", "25P01", "there is no transaction in progress")
			}
			return tagOnly("COMMIT"), nil
		}
		return nil
	case *parser.Rollback:
		if n.ToSavepoint != "" {
			st.run = func(ctx context.Context, _ []types.Datum) (pgwire.Result, error) {
				if err := s.rollbackTo(ctx, n.ToSavepoint); err != nil {
					return nil, err
				}
				return tagOnly("ROLLBACK"), nil
			}
			return nil
		}
		st.run = func(ctx context.Context, _ []types.Datum) (pgwire.Result, error) {
			if s.tx != 'T' && s.tx != 'E' {
				s.notifier.Notice("WARNING", "25P01", "there is no transaction in progress")
			}
			s.endTxn()
			return tagOnly("ROLLBACK"), nil
		}
		return nil
	case *parser.Savepoint:
		st.run = func(ctx context.Context, _ []types.Datum) (pgwire.Result, error) {
			if err := s.savepoint(n.Name); err != nil {
				return nil, err
			}
			return tagOnly("SAVEPOINT"), nil
		}
		return nil
	case *parser.Release:
		st.run = func(ctx context.Context, _ []types.Datum) (pgwire.Result, error) {
			if err := s.release(n.Name); err != nil {
				return nil, err
			}
			return tagOnly("RELEASE"), nil
		}
		return nil
	case *parser.Set:
		st.run = func(ctx context.Context, _ []types.Datum) (pgwire.Result, error) { return s.set(n) }
		return nil
	case *parser.Show:
		return s.describeShow(st, n)
	case *parser.Describe:
		st.cols = textColumns("Name", "Type", "Is Hidden", "Description")
		st.run = func(ctx context.Context, _ []types.Datum) (pgwire.Result, error) {
			return s.showColumns(n.Name.Schema, n.Name.Name)
		}
		return nil
	case *parser.CreateTable:
		st.run = func(ctx context.Context, _ []types.Datum) (pgwire.Result, error) { return s.createTable(ctx, n) }
		return nil
	case *parser.CreateView:
		st.run = func(ctx context.Context, _ []types.Datum) (pgwire.Result, error) { return s.createView(ctx, n) }
		return nil
	case *parser.Drop:
		st.run = func(ctx context.Context, _ []types.Datum) (pgwire.Result, error) { return s.drop(ctx, n) }
		return nil
	case *parser.Truncate:
		st.run = func(ctx context.Context, _ []types.Datum) (pgwire.Result, error) { return s.truncate(ctx, n) }
		return nil
	case *parser.Rename:
		st.run = func(ctx context.Context, _ []types.Datum) (pgwire.Result, error) { return s.rename(ctx, n) }
		return nil
	case *parser.AlterColumn:
		st.run = func(ctx context.Context, _ []types.Datum) (pgwire.Result, error) { return s.alterColumn(ctx, n) }
		return nil
	case *parser.Comment:
		st.run = func(ctx context.Context, _ []types.Datum) (pgwire.Result, error) { return s.comment(ctx, n) }
		return nil
	case *parser.CreateDatabase:
		st.run = func(ctx context.Context, _ []types.Datum) (pgwire.Result, error) { return s.createDatabase(ctx, n) }
		return nil
	case *parser.DropDatabase:
		st.run = func(ctx context.Context, _ []types.Datum) (pgwire.Result, error) { return s.dropDatabase(ctx, n) }
		return nil
	case *parser.CreateSchema:
		st.run = func(ctx context.Context, _ []types.Datum) (pgwire.Result, error) { return s.createSchema(ctx, n) }
		return nil
	case *parser.DropSchema:
		st.run = func(ctx context.Context, _ []types.Datum) (pgwire.Result, error) { return s.dropSchema(ctx, n) }
		return nil
	case *parser.CreateFunction:
		st.run = func(ctx context.Context, _ []types.Datum) (pgwire.Result, error) { return s.createFunction(ctx, n) }
		return nil
	case *parser.DropFunction:
		st.run = func(ctx context.Context, _ []types.Datum) (pgwire.Result, error) { return s.dropFunction(ctx, n) }
		return nil
	case *parser.Flush:
		st.run = func(ctx context.Context, _ []types.Datum) (pgwire.Result, error) {
			// Every earlier write is committed and in every created view
			// (and sinks into tables have written theirs), as RisingWave's
			// FLUSH: it does not wait for running backfills or bounded
			// sources (their views refuse queries until done; WAIT waits).
			if err := s.eng.coord().Flush(ctx); err != nil {
				return nil, err
			}
			return tagOnly("FLUSH"), nil
		}
		return nil
	case *parser.Wait:
		st.run = func(ctx context.Context, _ []types.Datum) (pgwire.Result, error) { return s.waitJobs(ctx) }
		return nil
	case *parser.Discard:
		st.run = func(ctx context.Context, _ []types.Datum) (pgwire.Result, error) {
			s.vars = newVars()
			return tagOnly("DISCARD " + strings.ToUpper(n.What)), nil
		}
		return nil
	case *parser.Deallocate:
		st.run = func(ctx context.Context, _ []types.Datum) (pgwire.Result, error) {
			if n.All {
				clear(s.prepared)
				return tagOnly("DEALLOCATE ALL"), nil
			}
			delete(s.prepared, n.Name) // a protocol-level statement's name is not an error either
			return tagOnly("DEALLOCATE"), nil
		}
		return nil
	case *parser.Prepare:
		st.run = func(ctx context.Context, _ []types.Datum) (pgwire.Result, error) {
			return s.prepareSQL(ctx, n)
		}
		return nil
	case *parser.Execute:
		p, ok := s.prepared[n.Name]
		if !ok {
			return types.Errorf(types.ErrUndefinedPrepared, "prepared statement \"%s\" does not exist", n.Name)
		}
		_, cols, err := p.Describe(ctx)
		if err != nil {
			return err
		}
		st.cols = cols
		st.run = func(ctx context.Context, _ []types.Datum) (pgwire.Result, error) {
			return s.executeSQL(ctx, p, n)
		}
		return nil
	case *parser.CreateMaterializedView:
		st.run = func(ctx context.Context, _ []types.Datum) (pgwire.Result, error) {
			return s.createMaterializedView(ctx, n)
		}
		return nil
	case *parser.CreateIndex:
		st.run = func(ctx context.Context, _ []types.Datum) (pgwire.Result, error) {
			return s.createIndex(ctx, n)
		}
		return nil
	case *parser.CreateSink:
		st.run = func(ctx context.Context, _ []types.Datum) (pgwire.Result, error) {
			return s.createSink(ctx, n)
		}
		return nil
	case *parser.CreateSource:
		st.run = func(ctx context.Context, _ []types.Datum) (pgwire.Result, error) {
			return s.createSource(ctx, n)
		}
		return nil
	case *parser.Alter:
		if n.Kind != parser.KindSystem {
			if rel, err := s.lookup(n.Name.Schema, n.Name.Name); err == nil {
				if err := s.checkOwner(rel); err != nil {
					return err
				}
			}
		} else if !s.superuser() {
			return types.Errorf(types.ErrInsufficientPrivilege, "must be superuser to execute ALTER SYSTEM command")
		}
		if n.Kind == parser.KindSystem {
			st.run = func(ctx context.Context, _ []types.Datum) (pgwire.Result, error) { return s.alterSystem(ctx, n) }
			return nil
		}
		if n.Key == "parallelism" {
			st.run = func(ctx context.Context, _ []types.Datum) (pgwire.Result, error) { return s.alterParallelism(ctx, n) }
			return nil
		}
		if n.Kind == parser.KindSink && n.Key == "sink_rate_limit" {
			st.run = func(ctx context.Context, _ []types.Datum) (pgwire.Result, error) { return s.alterSinkRate(ctx, n) }
			return nil
		}
		if n.Kind == parser.KindMaterializedView || n.Kind == parser.KindSink {
			st.run = func(ctx context.Context, _ []types.Datum) (pgwire.Result, error) { return s.alterRateLimit(ctx, n) }
			return nil
		}
		if n.Kind == parser.KindTable && n.Key == "backfill_rate_limit" {
			st.run = func(ctx context.Context, _ []types.Datum) (pgwire.Result, error) {
				return s.alterTableBackfillRate(ctx, n)
			}
			return nil
		}
		if (n.Kind == parser.KindTable || n.Kind == parser.KindSource) && n.Key == "source_rate_limit" {
			st.run = func(ctx context.Context, _ []types.Datum) (pgwire.Result, error) { return s.alterSourceRate(ctx, n) }
			return nil
		}
		return types.Errorf(types.ErrUnsupported, "ALTER %s is not supported yet", n.Kind)
	case *parser.CancelJobs:
		st.cols = textColumns("Id")
		st.run = func(ctx context.Context, _ []types.Datum) (pgwire.Result, error) { return s.cancelJobs(ctx, n.IDs) }
		return nil
	case *parser.Copy:
		return s.describeCopy(st, n)
	case *parser.RoleStmt:
		st.run = func(ctx context.Context, _ []types.Datum) (pgwire.Result, error) { return s.roleStmt(ctx, n) }
		return nil
	case *parser.Grant:
		st.run = func(ctx context.Context, _ []types.Datum) (pgwire.Result, error) { return s.grant(ctx, n) }
		return nil
	case *parser.Recover:
		// RisingWave's manual recovery: every streaming job is rebuilt from
		// its committed state, as after a failure.
		st.run = func(ctx context.Context, _ []types.Datum) (pgwire.Result, error) {
			s.eng.ddl.Lock()
			defer s.eng.ddl.Unlock()
			if err := s.eng.rescheduleLocked(ctx); err != nil {
				return nil, fmt.Errorf("recover: %w", err)
			}
			return tagOnly("RECOVER"), nil
		}
		return nil
	}
	return types.Errorf(types.ErrUnsupported, "statement %T is not supported", st.ast)
}

// ddlName names a statement that changes the catalog or jobs (refused in a
// transaction block), or returns "".
func ddlName(st parser.Statement) string {
	switch n := st.(type) {
	case *parser.CreateTable:
		return "CREATE TABLE"
	case *parser.CreateView:
		return "CREATE VIEW"
	case *parser.CreateMaterializedView:
		return "CREATE MATERIALIZED VIEW"
	case *parser.CreateIndex:
		return "CREATE INDEX"
	case *parser.CreateSink:
		return "CREATE SINK"
	case *parser.CreateSource:
		return "CREATE SOURCE"
	case *parser.CreateDatabase:
		return "CREATE DATABASE"
	case *parser.DropDatabase:
		return "DROP DATABASE"
	case *parser.Drop:
		return "DROP " + strings.ToUpper(n.Kind.String())
	case *parser.Alter:
		return "ALTER " + strings.ToUpper(n.Kind.String())
	case *parser.CancelJobs:
		return "CANCEL JOBS"
	case *parser.Rename:
		return "ALTER " + strings.ToUpper(n.Kind.String())
	case *parser.AlterColumn:
		return "ALTER TABLE"
	case *parser.Comment:
		return "COMMENT"
	case *parser.CreateSchema:
		return "CREATE SCHEMA"
	case *parser.DropSchema:
		return "DROP SCHEMA"
	case *parser.CreateFunction:
		return "CREATE FUNCTION"
	case *parser.DropFunction:
		return "DROP FUNCTION"
	case *parser.Recover:
		return "RECOVER"
	case *parser.RoleStmt:
		return strings.ToUpper(n.Action) + " ROLE"
	case *parser.Grant:
		if n.Revoke {
			return "REVOKE"
		}
		return "GRANT"
	}
	return ""
}

// catalogWithRoles lets psqlcat answer \du from the engine's roles; names
// resolve with the session's search path.
type catalogWithRoles struct {
	catalog.Path
	eng *Engine
}

func (c catalogWithRoles) Roles() []catalog.Role { return c.eng.Roles() }

// Functions lets psqlcat answer \df from the function registry.
func (c catalogWithRoles) Functions() []psqlcat.Func {
	out := slices.Clip(builtinFuncs())
	for _, f := range c.eng.Catalog.UserFunctions() {
		out = append(out, psqlcat.Func{Schema: f.Schema, Name: f.Name, ArgNames: f.ArgNames, Args: f.ArgTypes, Result: f.Returns})
	}
	return out
}

// procRows are pg_proc's rows, from the registry's functions (once: it does not change).
var procRows = sync.OnceValue(func() [][]types.Datum {
	sigs := expr.Signatures()
	procs := make([]catalog.Proc, len(sigs))
	for i, s := range sigs {
		procs[i] = catalog.Proc{Name: s.Name, Args: s.Params, Variadic: s.Variadic, AnyArg: s.AnyArg, Result: s.Result,
			Agg: s.Agg, Volatility: s.Volatility}
	}
	return catalog.ProcRows(procs)
})

// builtinFuncs lists the registry's functions once (it does not change).
var builtinFuncs = sync.OnceValue(func() []psqlcat.Func {
	sigs := expr.Signatures()
	out := make([]psqlcat.Func, len(sigs))
	for i, s := range sigs {
		out[i] = psqlcat.Func{Name: s.Name, Args: s.Params, Variadic: s.Variadic, Result: s.Result, Agg: s.Agg, AnyArg: s.AnyArg}
	}
	return out
})
