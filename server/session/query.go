package session

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/executor/batch"
	"github.com/tributary/tributary/planner/bind"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/server/pgwire"
	"github.com/tributary/tributary/server/psqlcat"
	"github.com/tributary/tributary/sql/parser"
	"github.com/tributary/tributary/sql/types"
)

func (s *Session) binder(declared []types.T) *bind.Binder {
	return s.binderOn(s.cat(), declared)
}

// binderOn is binder over the catalog reader r (names resolving as r says).
func (s *Session) binderOn(r catalog.Reader, declared []types.T) *bind.Binder {
	cat := s.cat() // the system tables list the session's database
	return bind.New(r, declared).WithSystemRows(func(rel *catalog.Relation) ([][]types.Datum, error) {
		if rel.Schema == "rw_catalog" && rel.Name == "rw_ddl_progress" {
			return s.eng.ddlProgressRows(), nil
		}
		if rel.Schema == "rw_catalog" && rel.Name == "rw_barrier_latency" {
			return s.eng.barrierLatencyRows(), nil
		}
		if rel.Schema == "rw_catalog" && rel.Name == "rw_backfill_vnode_progress" {
			return s.eng.backfillVnodeRows(), nil
		}
		if rel.Schema == "rw_catalog" && rel.Name == "rw_fragment_backfill_progress" {
			return s.eng.fragmentBackfillRows(), nil
		}
		if rel.Schema == "rw_catalog" && rel.Name == "rw_sink_log_store" {
			return s.eng.sinkLogStoreRows(), nil
		}
		if rel.Schema == "rw_catalog" && rel.Name == "rw_event_logs" {
			return s.eng.eventLogRows(), nil
		}
		if rel.Schema == "rw_catalog" && rel.Name == "rw_fragments" {
			return s.eng.fragmentRows(), nil
		}
		if rel.Schema == "rw_catalog" && rel.Name == "rw_source_splits" {
			return s.eng.sourceSplitRows(), nil
		}
		if rel.Schema == "rw_catalog" && rel.Name == "rw_table_stats" {
			return s.eng.tableStatsRows()
		}
		if rel.Schema == "rw_catalog" && rel.Name == "rw_memory" {
			return s.eng.memoryRows(), nil
		}
		if rel.Schema == "rw_catalog" && rel.Name == "rw_cdc_progress" {
			return s.eng.cdcProgressRows(), nil
		}
		if rel.Schema == "rw_catalog" && rel.Name == "rw_cdc_splits" {
			return s.eng.cdcSplitRows(), nil
		}
		if rel.Schema == "rw_catalog" && rel.Name == "rw_source_backfill_progress" {
			return s.eng.sourceBackfillRows(), nil
		}
		if rel.Schema == "rw_catalog" && rel.Name == "rw_materialized_views" {
			rows, err := catalog.SystemRows(cat, rel)
			if err != nil {
				return nil, err
			}
			status := s.eng.jobStatus()
			for _, r := range rows {
				if st, ok := status[uint32(r[0].I)]; ok {
					r[len(r)-1] = types.DString(st)
				}
			}
			return rows, nil
		}
		if rel.Schema == "pg_catalog" && rel.Name == "pg_stat_activity" {
			return s.eng.activityRows(), nil
		}
		if rel.Schema == "pg_catalog" && rel.Name == "pg_authid" {
			if !s.superuser() {
				return nil, types.Errorf(types.ErrInsufficientPrivilege, "permission denied for table pg_authid")
			}
			return authidRows(s.eng.Roles()), nil
		}
		if rel.Schema == "pg_catalog" && rel.Name == "pg_proc" {
			return append(slices.Clip(procRows()), catalog.FunctionProcRows(s.eng.Catalog.UserFunctions(), s.eng.Catalog.SchemaOID)...), nil
		}
		if rel.Schema == "pg_catalog" && (rel.Name == "pg_roles" || rel.Name == "pg_user") {
			roles, users := catalog.RoleRows(s.eng.Roles())
			if rel.Name == "pg_roles" {
				return roles, nil
			}
			return users, nil
		}
		return catalog.SystemRows(cat, rel)
	}).WithSettings(s.vars.get)
}

// describeQuery binds a query or DML statement.
func (s *Session) describeQuery(st *statement, q *parser.Query) error {
	switch q.Node.(type) {
	case *ast.InsertStmt, *ast.UpdateStmt, *ast.DeleteStmt:
		return s.describeDML(st, q)
	}
	b := s.binder(st.declared)
	pq, err := b.Query(q)
	if err != nil {
		return err
	}
	st.params = b.ParamTypes()
	st.cols = columnsOf(pq.Root.Schema())
	rebind := b.ReadsSystemTables()
	referenced := b.Referenced()
	st.run = func(ctx context.Context, params []types.Datum) (pgwire.Result, error) {
		if err := s.checkRead(referenced); err != nil {
			return nil, err
		}
		if err := s.checkCreated(ctx, referenced); err != nil {
			return nil, err
		}
		pq := pq
		if rebind { // system-table rows are taken at bind time: take them now
			var err error
			if pq, err = s.binder(st.declared).Query(q); err != nil {
				return nil, err
			}
		}
		env := &batch.Env{Ctx: s.exprCtx(withInitSlots(params, pq)), Store: s.eng.Store, IndexReady: s.eng.indexReady}
		env.Ctx.Context = ctx
		var release func()
		if t, err := s.txnState(); err != nil {
			return nil, err
		} else if t != nil {
			// In a transaction block: its snapshot (pinned until it ends)
			// and its own writes.
			env.Epoch, env.Tables, release = t.snapshot, t.tables, func() {}
		} else {
			env.Epoch = s.eng.coord().CommittedEpoch()
			// Pin the snapshot so version GC keeps it readable while the query runs.
			if release, err = s.eng.Store.Pin(env.Epoch); err != nil {
				return nil, err
			}
			env.Tables = batch.NewTableSet(env.Store)
		}
		if t, _ := s.txnState(); t == nil {
			// Values nextval handed out are reserved in storage before the
			// statement ends (inside a transaction block, at its commit).
			unpin := release
			release = func() {
				unpin()
				if !s.tookNextval.Swap(false) {
					return
				}
				pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
				defer cancel()
				if err := s.eng.persistPending(pctx); err != nil {
					s.eng.Logger.Warn("persist sequence reservations", "err", err)
				}
			}
		}
		exec, err := batch.Build(env, pq)
		if err != nil {
			release()
			return nil, err
		}
		return &execResult{cols: st.cols, exec: exec, release: release}, nil
	}
	return nil
}

// withInitSlots extends the parameters with room for init-plan results (params
// themselves when there are none: a bulk INSERT's thousands of parameters are
// not copied).
func withInitSlots(params []types.Datum, q *plan.Query) []types.Datum {
	if len(q.InitPlans) == 0 && len(params) == q.ParamBase {
		return params
	}
	out := make([]types.Datum, q.ParamBase+len(q.InitPlans))
	copy(out, params)
	return out
}

func (s *Session) describeStatic(st *statement, cols []psqlcat.Column, rows [][]types.Datum) error {
	ts := make([]types.T, len(cols))
	st.cols = make([]pgwire.Column, len(cols))
	for i, c := range cols {
		ts[i] = c.Type
		st.cols[i] = pgwire.Column{Name: c.Name, Type: c.Type}
	}
	st.run = func(ctx context.Context, _ []types.Datum) (pgwire.Result, error) {
		chunk := types.NewChunk(ts, len(rows))
		for _, r := range rows {
			chunk.AppendRow(r)
		}
		return &staticResult{cols: st.cols, chunk: chunk, tag: fmt.Sprintf("SELECT %d", len(rows))}, nil
	}
	return nil
}

func (s *Session) describeDML(st *statement, q *parser.Query) error {
	b := s.binder(st.declared)
	var node any
	var pq *plan.Query
	var retOut []plan.Field
	var verb string
	var err error
	switch q.Node.(type) {
	case *ast.InsertStmt:
		var ins *plan.Insert
		ins, pq, err = b.Insert(q)
		node, verb = ins, "INSERT 0"
		if ins != nil {
			retOut = ins.RetOut
		}
	case *ast.UpdateStmt:
		var up *plan.Update
		up, pq, err = b.Update(q)
		node, verb = up, "UPDATE"
		if up != nil {
			retOut = up.RetOut
		}
	case *ast.DeleteStmt:
		var del *plan.Delete
		del, pq, err = b.Delete(q)
		node, verb = del, "DELETE"
		if del != nil {
			retOut = del.RetOut
		}
	}
	if err != nil {
		return err
	}
	st.params = b.ParamTypes()
	if retOut != nil {
		st.cols = columnsOf(retOut)
	}
	// Privileges: the verb's on the target (and SELECT when the statement
	// reads its rows: its WHERE or SET expressions name a column, or it
	// returns rows), SELECT on everything else it names, as in PostgreSQL.
	var target *catalog.Relation
	priv, readsTarget := "insert", false
	switch n := node.(type) {
	case *plan.Insert:
		target = n.Table
	case *plan.Update:
		target, priv = n.Table, "update"
		if u, ok := q.Node.(*ast.UpdateStmt); ok {
			readsTarget = u.Where != nil && mentionsColumn(u.Where) || u.Order != nil
			for _, a := range u.List {
				readsTarget = readsTarget || mentionsColumn(a.Expr)
			}
		}
	case *plan.Delete:
		target, priv = n.Table, "delete"
		if d, ok := q.Node.(*ast.DeleteStmt); ok && d.Where != nil {
			readsTarget = mentionsColumn(d.Where)
		}
	}
	if retOut != nil {
		readsTarget = true // RETURNING reads the rows
	}
	var reads []uint32
	if target != nil && readsTarget {
		reads = append(reads, target.ID)
	}
	for _, id := range b.Referenced() {
		if target == nil || id != target.ID {
			reads = append(reads, id)
		}
	}
	st.run = func(ctx context.Context, params []types.Datum) (pgwire.Result, error) {
		if target != nil {
			if cur, ok := s.eng.Catalog.ByID(target.ID); ok && !catalog.SameLayout(cur, target) {
				// ALTER TABLE changed the table since the statement was
				// prepared: plan it again, as PostgreSQL does.
				if err := s.describeDML(st, q); err != nil {
					return nil, err
				}
				return st.run(ctx, params)
			}
			if err := s.checkPriv(target, priv); err != nil {
				return nil, err
			}
		}
		if err := s.checkRead(reads); err != nil {
			return nil, err
		}
		return s.runDML(ctx, node, pq, params, st.cols, verb)
	}
	return nil
}

// runDML executes a DML plan under the coordinator's write lock and commits
// its writes in one epoch before returning; RETURNING rows are buffered.
func (s *Session) runDML(ctx context.Context, node any, pq *plan.Query, params []types.Datum, cols []pgwire.Column, verb string) (pgwire.Result, error) {
	var out *types.Chunk
	var affected int64
	err := s.write(ctx, func(tables *batch.TableSet, snapshot uint64) error {
		out, affected = nil, 0
		env := &batch.Env{Ctx: s.exprCtx(withInitSlots(params, pq)), Store: s.eng.Store, Epoch: snapshot, Tables: tables,
			IndexReady: s.eng.indexReady}
		env.Ctx.Context = ctx
		exec, rowsAffected, err := batch.BuildDML(env, node, pq.InitPlans, pq.ParamBase)
		if err != nil {
			return err
		}
		defer exec.Close()
		for {
			c, err := exec.Next(ctx)
			if err == io.EOF {
				break
			}
			if err != nil {
				return err
			}
			if cols != nil {
				if out == nil {
					out = types.NewChunk(c.Types(), c.Len())
				}
				for i := 0; i < c.Len(); i++ {
					if c.Visible(i) {
						out.AppendFrom(c, i)
					}
				}
			}
		}
		affected = rowsAffected()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &staticResult{cols: cols, chunk: out, tag: fmt.Sprintf("%s %d", verb, affected)}, nil
}

// explain prints a statement's plan.
func (s *Session) explain(e *parser.Explain) (pgwire.Result, error) {
	if mv, ok := e.Stmt.(*parser.CreateMaterializedView); ok {
		return s.explainCreateMV(mv)
	}
	if sink, ok := e.Stmt.(*parser.CreateSink); ok {
		return s.explainCreateSink(sink)
	}
	q, ok := e.Stmt.(*parser.Query)
	if !ok {
		return nil, types.Errorf(types.ErrUnsupported, "EXPLAIN of %T is not supported", e.Stmt)
	}
	b := s.binder(nil)
	var text string
	switch q.Node.(type) {
	case *ast.InsertStmt:
		ins, _, err := b.Insert(q)
		if err != nil {
			return nil, err
		}
		text = plan.ExplainDML("Insert", ins.Table, ins.Input)
	case *ast.UpdateStmt:
		up, _, err := b.Update(q)
		if err != nil {
			return nil, err
		}
		text = plan.ExplainDML("Update", up.Table, up.Input)
	case *ast.DeleteStmt:
		del, _, err := b.Delete(q)
		if err != nil {
			return nil, err
		}
		text = plan.ExplainDML("Delete", del.Table, del.Input)
	default:
		pq, err := b.Query(q)
		if err != nil {
			return nil, err
		}
		text = plan.Explain(pq.Root)
		for i, ip := range pq.InitPlans {
			text += fmt.Sprintf("\nInitPlan %d\n%s", i+1, indentText(plan.Explain(ip.Plan)))
		}
	}
	return planRows(text), nil
}

// planRows returns plan text as EXPLAIN's one-column result.
func planRows(text string) pgwire.Result {
	lines := strings.Split(text, "\n")
	rows := make([][]string, len(lines))
	for i, l := range lines {
		rows[i] = []string{l}
	}
	return textRows([]string{"QUERY PLAN"}, rows, "EXPLAIN")
}

func indentText(s string) string {
	return "  " + strings.ReplaceAll(s, "\n", "\n  ")
}

// mentionsColumn reports whether e names a column (so an UPDATE reads
// its target's rows, and needs SELECT on it as in PostgreSQL).
func mentionsColumn(e ast.Node) bool {
	v := &columnFinder{}
	e.Accept(v)
	return v.found
}

type columnFinder struct{ found bool }

func (v *columnFinder) Enter(n ast.Node) (ast.Node, bool) {
	if _, ok := n.(*ast.ColumnNameExpr); ok {
		v.found = true
	}
	return n, v.found
}

func (v *columnFinder) Leave(n ast.Node) (ast.Node, bool) { return n, true }
