package session

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/catalog/persist"
	"github.com/tributary/tributary/executor/coordinator"
	"github.com/tributary/tributary/executor/stream"
	"github.com/tributary/tributary/planner/job"
	"github.com/tributary/tributary/planner/physical"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/server/pgwire"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/parser"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage"
)

// targetLatencyMs is the barrier latency target of adaptive backfill: the
// session's setting, else twice the barrier interval.
func (s *Session) targetLatencyMs() string {
	if s.vars.values["backfill_target_barrier_latency_ms"] == "" {
		return strconv.FormatInt(2*s.eng.cfg.BarrierInterval.Milliseconds(), 10)
	}
	target, _ := s.vars.get("backfill_target_barrier_latency_ms")
	return target
}

// planner plans jobs over the catalog, evaluating defaults as the session.
func (s *Session) planner() *job.Planner {
	return &job.Planner{Catalog: s.eng.Catalog, Eval: func() *expr.Ctx { return s.exprCtx(nil) }}
}

func (s *Session) createMaterializedView(ctx context.Context, n *parser.CreateMaterializedView) (pgwire.Result, error) {
	s.eng.ddl.Lock()
	defer s.eng.ddl.Unlock()
	schema, err := s.schemaOf(n.Name)
	if err != nil {
		return nil, err
	}
	if res, found, err := s.exists(schema, n.Name.Name, n.IfNotExists, "CREATE_MATERIALIZED_VIEW"); found {
		return res, err
	}
	b := s.binder(nil)
	sq, _, err := job.StreamQuery(n.Query, b, n.EmitOnWindowClose, catalog.StateVersion)
	if err != nil {
		return nil, err
	}
	if b.NumParams() > 0 {
		return nil, types.Errorf(types.ErrUndefinedParameter, "there is no parameter $1")
	}
	if err := s.checkRead(b.Referenced()); err != nil {
		return nil, err
	}
	rel := &catalog.Relation{Database: s.relDB(), Schema: schema, Name: n.Name.Name, Kind: catalog.KindMaterializedView,
		Definition: n.Query.Text(), Columns: make([]catalog.Column, len(sq.Columns)), PK: sq.PK,
		DependsOn: sq.Dependencies(b.Dependencies()), Functions: b.Functions(), Refs: pinned(b.Refs()), CreatedAt: time.Now().UTC()}
	k := 0
	for i, f := range sq.Columns {
		rel.Columns[i] = catalog.Column{Name: f.Name, Type: f.Type, Hidden: f.Hidden}
		if !f.Hidden && k < len(n.Columns) {
			rel.Columns[i].Name = n.Columns[k]
			k++
		}
	}
	if len(n.Columns) > k {
		return nil, types.Errorf(types.ErrSyntax, "too many column names were specified")
	}
	// A view that only inserts is append-only for the jobs reading it, and
	// passes on the watermark of a column that carries one.
	rel.AppendOnly = physical.AppendOnly(sq.Root)
	if w := physical.ViewWatermark(sq); w != nil {
		rel.Watermark = w
		for i := range sq.Columns {
			if sq.Columns[i].Name == w.Column {
				w.Column = rel.Columns[i].Name // as the view names it
			}
		}
	}
	s.jobSettings(rel)
	rel.Job.EmitOnWindowClose = n.EmitOnWindowClose
	rel.ID = s.eng.Catalog.NextID()
	root := job.Materialize(sq, rel, rel.Job.StateVersion)
	return s.startJob(ctx, rel, root, n.Text(), "CREATE_MATERIALIZED_VIEW", "materialized view", nil)
}

// jobSettings records the session's streaming settings a new job keeps
// across restarts: parallelism, backfill rate limit and kind.
func (s *Session) jobSettings(rel *catalog.Relation) {
	js := &catalog.JobSettings{}
	if p, err := s.vars.get("streaming_parallelism"); err == nil && p != "0" {
		js.Parallelism, _ = strconv.Atoi(p)
	}
	kindVar := "streaming_parallelism_for_materialized_view"
	if rel.Kind == catalog.KindSink {
		kindVar = "streaming_parallelism_for_sink"
	}
	if p, err := s.vars.get(kindVar); err == nil && p != "default" {
		js.Parallelism, _ = strconv.Atoi(p)
	}
	if r, err := s.vars.get("backfill_rate_limit"); err == nil && r != "default" {
		if r == "adaptive" {
			js.Adaptive = true
			js.TargetLatencyMs, _ = strconv.Atoi(s.targetLatencyMs())
		} else if v, err := strconv.ParseInt(r, 10, 64); err == nil {
			js.BackfillRate = &v
		}
	}
	if v, _ := s.vars.get("streaming_use_snapshot_backfill"); v == "true" {
		js.SnapshotBackfill = true
	}
	if v, _ := s.vars.get("background_ddl"); v == "true" {
		js.Background = true
	}
	js.StateVersion = catalog.StateVersion
	rel.Job = js
}

// startJob publishes rel and starts its streaming job (root, whose sources
// backfill): with background_ddl at once, else when the backfill is done,
// with progress NOTICEs at most every 5 s; a failure or cancel removes both.
// noun names the object in messages ("materialized view", "sink"); wait, if
// not nil, is a last condition a blocking create waits for.
func (s *Session) startJob(ctx context.Context, rel *catalog.Relation, root plan.StreamNode, statement, tag, noun string, wait func(context.Context) error) (pgwire.Result, error) {
	if err := s.waitCreatingSlot(ctx); err != nil {
		return nil, err
	}
	job.EnableBackfill(root, rel)
	physical.AssignState(root, func() uint32 {
		id := s.eng.Catalog.NextID()
		rel.StateTables = append(rel.StateTables, id)
		return id
	})
	// Publish the descriptor, then start the job; a failure undoes both.
	if err := s.publish(ctx, rel); err != nil {
		return nil, err
	}
	c := s.eng.coord()
	opts := coordinator.OptionsFor(rel, root)
	opts.Statement = statement
	bg, _ := s.vars.get("background_ddl")
	opts.Background = bg == "true"
	if err := c.AddJob(ctx, rel.ID, root, opts); err != nil {
		s.eng.Logger.Warn("create "+noun+" failed", "name", rel.Name, "err", err)
		s.abandonJob(rel)
		return nil, fmt.Errorf("create %s %s: %w", noun, rel.Name, err)
	}
	if opts.Background {
		return tagOnly(tag), nil
	}
	// Blocking DDL: return when the backfill has fed every existing row.
	// Other DDL (an ALTER, a DROP) and the engine's recovery need not wait
	// for it: the DDL lock is released meanwhile.
	err := s.eng.withoutDDLLock(func() error { return s.waitJob(ctx, rel, noun, wait) })
	if err == nil {
		if _, ok := s.eng.Catalog.ByID(rel.ID); !ok {
			return nil, fmt.Errorf("create %s %s: it was dropped while it backfilled", noun, rel.Name)
		}
	}
	if err != nil {
		if _, ok := s.eng.Catalog.ByID(rel.ID); ok {
			s.abandonJob(rel)
		}
		if ctx.Err() != nil {
			return nil, types.Errorf(types.ErrQueryCanceled, "canceling statement due to user request")
		}
		return nil, fmt.Errorf("create %s %s: %w", noun, rel.Name, err)
	}
	return tagOnly(tag), nil
}

// unpublish removes a relation's descriptor (a failed CREATE).
func (s *Session) unpublish(ctx context.Context, rel *catalog.Relation) {
	s.eng.coord().Write(ctx, func(_, _ uint64, b *storage.Batch) error {
		persist.Delete(b, rel.ID)
		return nil
	})
	s.eng.Catalog.Remove(rel.ID)
}

// waitJob waits for a blocking CREATE's backfill (and wait, when not nil),
// following the job to the new coordinator when a rescale replaced the
// one it ran on; it fails when the job fails the streaming engine or is
// dropped.
func (s *Session) waitJob(ctx context.Context, rel *catalog.Relation, noun string, wait func(context.Context) error) error {
	id := rel.ID
	if isConnectorTable(rel) {
		id = rel.StateTables[0] // the job of its source
	}
	for {
		c := s.eng.coord()
		err := c.WaitBackfill(ctx, id, 5*time.Second, func(rows int64) {
			progress := fmt.Sprintf("%d rows", rows)
			for _, j := range c.Jobs() {
				if j.ID == id {
					progress = progressText(j)
				}
			}
			s.notifier.Notice("NOTICE", "00000", fmt.Sprintf("%s \"%s\": backfilled %s", noun, rel.Name, progress))
		})
		if err == nil {
			err = c.Flush(ctx) // the epoch holding the last backfilled rows commits
		}
		if err == nil && wait != nil {
			err = wait(ctx)
		}
		if err == nil || ctx.Err() != nil || c.Failed() != nil || !errors.Is(err, coordinator.ErrStopped) {
			return err
		}
		// Stopped without failing: replaced by a rescale, which rebuilt the
		// job (if it still exists) on the new coordinator, or shut down.
		for s.eng.coord() == c {
			if s.eng.isClosed() {
				return err
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(5 * time.Millisecond):
			}
		}
		if _, ok := s.eng.Catalog.ByID(rel.ID); !ok {
			return fmt.Errorf("it was dropped while it backfilled")
		}
	}
}

// abandonJob removes a job whose CREATE failed, with its descriptor and
// state (the caller holds the ddl lock). When the streaming engine failed
// (the job may be why) that must wait for the recovery, which needs the ddl
// lock: the job leaves the catalog now, so the recovery does not rebuild
// it, and the recovery deletes what it stored.
func (s *Session) abandonJob(rel *catalog.Relation) {
	s.eng.streaming.Abandon(context.Background(), rel, rel.ID)
	s.eng.Catalog.Remove(rel.ID)
}

// explainCreateMV prints a materialized view's stream plan.
func (s *Session) explainCreateMV(n *parser.CreateMaterializedView) (pgwire.Result, error) {
	sq, _, err := job.StreamQuery(n.Query, s.binder(nil), n.EmitOnWindowClose, catalog.StateVersion)
	if err != nil {
		return nil, err
	}
	// The view's table is id 1, as a new view's would be numbered first; the other tables follow.
	rel := &catalog.Relation{ID: 1, Schema: "public", Name: n.Name.Name, Kind: catalog.KindMaterializedView, PK: sq.PK}
	for _, f := range sq.Columns {
		rel.Columns = append(rel.Columns, catalog.Column{Name: f.Name, Type: f.Type, Hidden: f.Hidden})
	}
	if v, _ := s.vars.get("streaming_use_snapshot_backfill"); v == "true" {
		rel.Job = &catalog.JobSettings{SnapshotBackfill: true}
	}
	root := job.Materialize(sq, rel, catalog.StateVersion)
	job.EnableBackfill(root, rel)
	next := uint32(1)
	physical.AssignState(root, func() uint32 { next++; return next })
	return planRows(plan.ExplainStream(root)), nil
}

// dropStreamingState removes a dropped job's rows and state tables in one epoch.
func (s *Session) dropStreamingState(ctx context.Context, rels []*catalog.Relation) error {
	return s.eng.streaming.DropState(ctx, rels)
}

// progressText renders a job's progress like RisingWave: "12.50% (125/1000)".
// The estimate is extrapolated from the vnodes read so far ("(125/?)" before
// the first vnode is done).
func progressText(j coordinator.JobInfo) string {
	if j.Estimate <= 0 {
		return fmt.Sprintf("%.2f%% (%d/?)", j.Percent, j.Rows)
	}
	return fmt.Sprintf("%.2f%% (%d/%d)", j.Percent, j.Rows, max(j.Estimate, j.Rows))
}

func createType(j coordinator.JobInfo) string {
	if j.Background {
		return "BACKGROUND"
	}
	return "FOREGROUND"
}

// ddlProgressRows answers rw_catalog.rw_ddl_progress.
func (e *Engine) ddlProgressRows() [][]types.Datum {
	var rows [][]types.Datum
	for _, j := range e.coord().Jobs() {
		rows = append(rows, []types.Datum{types.DInt(int64(j.ID)), types.DString(catalog.MaskSecrets(j.Statement)),
			types.DString(createType(j)), types.DString(progressText(j)), types.DInt(j.Started.UnixMicro()),
			types.DString(j.BackfillType)})
	}
	return rows
}

// barrierLatencyRows answers rw_catalog.rw_barrier_latency: the last
// committed epochs' barrier round trips, ordered by epoch.
func (e *Engine) barrierLatencyRows() [][]types.Datum {
	var rows [][]types.Datum
	for _, b := range e.coord().BarrierHistory() {
		rows = append(rows, []types.Datum{types.DInt(int64(b.Epoch)), types.DInt(b.Injected.UnixMicro()),
			types.DInt(b.Committed.UnixMicro()), types.DFloat(float64(b.Latency) / float64(time.Millisecond))})
	}
	return rows
}

// sinkLogStoreRows answers rw_catalog.rw_sink_log_store: each decoupled
// sink actor's log store as its reader last reported it.
func (e *Engine) sinkLogStoreRows() [][]types.Datum {
	var rows [][]types.Datum
	for _, s := range e.SinkLog().Stores() {
		lastErr := types.NullDatum
		if s.LastError != "" {
			lastErr = types.DString(s.LastError)
		}
		rows = append(rows, []types.Datum{types.DString(s.Sink), types.DInt(int64(s.Actor)), types.DInt(s.PendingEpochs),
			types.DInt(s.PendingRows), types.DInt(s.PendingBytes), types.DInt(int64(s.DeliveredEpoch)), types.DInt(s.Failures), lastErr})
	}
	return rows
}

// eventLogRows answers rw_catalog.rw_event_logs: the last sink failures
// (SINK_FAIL), streaming jobs' expression errors (EXPR_ERROR, whose
// object_name is the job's relation) and source troubles.
func (e *Engine) eventLogRows() [][]types.Datum {
	var rows [][]types.Datum
	for _, ev := range e.SinkLog().Events() {
		typ, name := ev.Type, ev.Sink
		if typ == "" {
			typ = "SINK_FAIL"
		}
		if ev.Job != 0 && name == "" {
			if rel, ok := e.Catalog.ByID(ev.Job); ok {
				name = rel.Name
			}
		}
		rows = append(rows, []types.Datum{types.DInt(ev.Time.UnixMicro()), types.DString(typ), types.DString(name),
			types.DInt(int64(ev.Actor)), types.DString(catalog.MaskSecrets(ev.Err))})
	}
	return rows
}

// sourceSplitRows answers rw_catalog.rw_source_splits.
func (e *Engine) sourceSplitRows() [][]types.Datum {
	var rows [][]types.Datum
	for _, s := range e.SinkLog().SourceSplits() {
		lastErr := types.NullDatum
		if s.LastError != "" {
			lastErr = types.DString(s.LastError)
		}
		rows = append(rows, []types.Datum{types.DString(s.Source), types.DString(s.Split), types.DInt(int64(s.Actor)),
			types.DInt(s.Next), types.DInt(s.Rows), types.DInt(s.BadMessages), lastErr})
	}
	return rows
}

// cdcProgressRows answers rw_catalog.rw_cdc_progress.
func (e *Engine) cdcProgressRows() [][]types.Datum {
	var rows [][]types.Datum
	for _, p := range e.SinkLog().CDCProgresses() {
		pk := types.NullDatum
		if p.PK != "" {
			pk = types.DString(p.PK)
		}
		rows = append(rows, []types.Datum{types.DString(p.Relation), types.DString(p.Split), pk, types.DBool(p.Finished),
			types.DInt(p.Rows), types.DString(p.LSN), types.DInt(int64(p.SplitTotal)), types.DInt(int64(p.SplitBackfilled)),
			types.DInt(int64(p.SplitCompleted))})
	}
	return rows
}

// cdcSplitRows answers rw_catalog.rw_cdc_splits.
func (e *Engine) cdcSplitRows() [][]types.Datum {
	var rows [][]types.Datum
	text := func(s string, null bool) types.Datum {
		if null {
			return types.NullDatum
		}
		return types.DString(s)
	}
	for _, p := range e.SinkLog().CDCProgresses() {
		for _, r := range p.Ranges {
			rows = append(rows, []types.Datum{types.DString(p.Relation), types.DInt(int64(r.ID)), text(r.Lo, r.LoOpen), text(r.Hi, r.HiOpen),
				text(r.PK, r.PK == ""), types.DBool(r.Finished), types.DInt(r.Rows), text(r.LSNLow, r.LSNLow == ""), text(r.LSNHigh, r.LSNHigh == "")})
		}
	}
	return rows
}

// sourceBackfillRows answers rw_catalog.rw_source_backfill_progress.
func (e *Engine) sourceBackfillRows() [][]types.Datum {
	var rows [][]types.Datum
	orNull := func(v int64) types.Datum {
		if v < 0 {
			return types.NullDatum
		}
		return types.DInt(v)
	}
	for _, s := range e.coord().BackfillSplits() {
		name := types.NullDatum
		if up, ok := e.Catalog.ByID(s.Upstream); ok {
			name = types.DString(up.QualifiedName())
		}
		rows = append(rows, []types.Datum{types.DInt(int64(s.Job)), types.DInt(int64(s.Actor)), name, types.DString(s.Split),
			types.DString(stream.SplitPhaseName(s.Phase)), orNull(s.Start), orNull(s.Next), orNull(s.Target), types.DInt(s.Rows)})
	}
	return rows
}

// backfillVnodeRows answers rw_catalog.rw_backfill_vnode_progress: each
// running backfill's state per upstream vnode, as of its last barrier.
func (e *Engine) backfillVnodeRows() [][]types.Datum {
	var rows [][]types.Datum
	for _, v := range e.coord().BackfillVnodes() {
		name := types.NullDatum
		if up, ok := e.Catalog.ByID(v.Upstream); ok {
			name = types.DString(up.QualifiedName())
		}
		state := "not started"
		switch {
		case v.Finished:
			state = "finished"
		case v.Started:
			state = "in progress"
		}
		rows = append(rows, []types.Datum{types.DInt(int64(v.Job)), types.DInt(int64(v.Actor)), name,
			types.DInt(int64(v.Vnode)), types.DString(state), types.DInt(v.Rows), types.DInt(int64(v.Epoch))})
	}
	return rows
}

// fragmentBackfillRows answers rw_catalog.rw_fragment_backfill_progress:
// each running backfill by fragment and upstream, its progress as
// "percent% (rows/estimated rows)".
func (e *Engine) fragmentBackfillRows() [][]types.Datum {
	name := func(id uint32) types.Datum {
		if r, ok := e.Catalog.ByID(id); ok {
			return types.DString(r.Schema + "." + r.Name)
		}
		return types.NullDatum
	}
	var rows [][]types.Datum
	for _, f := range e.coord().BackfillFragments() {
		var progress string
		switch {
		case f.Done:
			progress = fmt.Sprintf("100.00%% (%d/%d)", f.Rows, f.Rows)
		case f.Estimate > 0:
			total := max(f.Estimate, f.Rows)
			progress = fmt.Sprintf("%.2f%% (%d/%d)", min(100*float64(f.Rows)/float64(total), 99.99), f.Rows, total)
		default:
			progress = fmt.Sprintf("0.00%% (%d/?)", f.Rows)
		}
		rows = append(rows, []types.Datum{types.DInt(int64(f.Job)), types.DInt(int64(f.Fragment)), name(f.Job), name(f.Upstream),
			types.DString(progress)})
	}
	return rows
}

// showJobs answers SHOW JOBS.
func (s *Session) showJobs() pgwire.Result {
	var rows [][]string
	for _, j := range s.eng.coord().Jobs() {
		rows = append(rows, []string{strconv.FormatUint(uint64(j.ID), 10), catalog.MaskSecrets(j.Statement), createType(j), progressText(j)})
	}
	return textRows([]string{"Id", "Statement", "Create Type", "Progress"}, rows, "")
}

// cancelJobs is CANCEL JOBS: it drops each backfilling job and its state.
func (s *Session) cancelJobs(ctx context.Context, ids []int64) (pgwire.Result, error) {
	s.eng.ddl.Lock()
	defer s.eng.ddl.Unlock()
	running := map[uint32]bool{}
	for _, j := range s.eng.coord().Jobs() {
		running[j.ID] = true
	}
	var canceled [][]string
	for _, id := range ids {
		for _, r := range s.eng.Catalog.Relations() {
			if isConnectorTable(r) && r.StateTables[0] == uint32(id) && running[uint32(id)] {
				return nil, types.Errorf(types.ErrFeatureNotReady, "job %d copies table %s from its upstream: DROP TABLE %s to cancel it", id, r.Name, r.Name)
			}
		}
		rel, ok := s.eng.Catalog.ByID(uint32(id))
		if !ok || !running[uint32(id)] {
			return nil, types.Errorf(types.ErrUndefinedObject, "job %d is not running", id)
		}
		if err := s.eng.coord().DropJob(ctx, rel.ID); err != nil {
			return nil, err
		}
		if err := s.dropStreamingState(ctx, []*catalog.Relation{rel}); err != nil {
			return nil, err
		}
		s.eng.Catalog.Remove(rel.ID)
		canceled = append(canceled, []string{strconv.FormatInt(id, 10)})
	}
	return textRows([]string{"Id"}, canceled, "CANCEL_JOBS"), nil
}

// waitJobs is WAIT: it returns when every backfill (and bounded source's
// job) has finished, then commits an epoch as FLUSH does.
func (s *Session) waitJobs(ctx context.Context) (pgwire.Result, error) {
	for _, j := range s.eng.coord().Jobs() {
		err := s.eng.coord().WaitBackfill(ctx, j.ID, time.Hour, func(int64) {})
		if err != nil && ctx.Err() != nil {
			return nil, types.Errorf(types.ErrQueryCanceled, "canceling statement due to user request")
		}
	}
	if err := s.eng.coord().Flush(ctx); err != nil {
		return nil, err
	}
	return tagOnly("WAIT"), nil
}

// replaceRelation persists a changed descriptor (in the open epoch) and
// publishes it; the caller holds the engine's ddl lock.
func (s *Session) replaceRelation(ctx context.Context, rel *catalog.Relation) error {
	if _, err := s.eng.coord().Write(ctx, func(_, _ uint64, b *storage.Batch) error {
		return persist.Save(b, rel, s.eng.Catalog.PeekNextID())
	}); err != nil {
		return err
	}
	return s.eng.Catalog.Replace(rel)
}

// alterRateLimit is ALTER MATERIALIZED VIEW name SET BACKFILL_RATE_LIMIT: applied online
// by a barrier mutation and recorded with the view for restarts.
func (s *Session) alterRateLimit(ctx context.Context, n *parser.Alter) (pgwire.Result, error) {
	if n.Key != "backfill_rate_limit" {
		return nil, types.Errorf(types.ErrUnsupported, "ALTER ... SET %s is not supported", strings.ToUpper(n.Key))
	}
	s.eng.ddl.Lock()
	defer s.eng.ddl.Unlock()
	rel, err := s.lookup(n.Name.Schema, n.Name.Name)
	if err != nil {
		return nil, err
	}
	if want := dropKinds[n.Kind]; rel.Kind != want {
		return nil, types.Errorf(types.ErrWrongObjectType, "\"%s\" is not a %s", rel.Name, want)
	}
	updated := *rel
	js := catalog.JobSettings{}
	if rel.Job != nil {
		js = *rel.Job
	}
	js.BackfillRate, js.Adaptive = nil, false
	switch {
	case n.Default || strings.EqualFold(n.Value, "default"):
	case strings.EqualFold(n.Value, "adaptive"):
		js.Adaptive = true
		if js.TargetLatencyMs == 0 {
			js.TargetLatencyMs, _ = strconv.Atoi(s.targetLatencyMs())
		}
	default:
		v, err := strconv.ParseInt(n.Value, 10, 64)
		if err != nil || v < 0 {
			return nil, types.Errorf(types.ErrInvalidParameter, "backfill_rate_limit must be a non-negative integer, 'adaptive' or DEFAULT")
		}
		js.BackfillRate = &v
	}
	updated.Job = &js
	if err := s.replaceRelation(ctx, &updated); err != nil {
		return nil, err
	}
	if err := s.eng.coord().SetBackfillRate(ctx, rel.ID, coordinator.OptionsFor(&updated, nil)); err != nil {
		return nil, err
	}
	if rel.Kind == catalog.KindSink {
		return tagOnly("ALTER_SINK"), nil
	}
	return tagOnly("ALTER_MATERIALIZED_VIEW"), nil
}

// activityRows is pg_stat_activity: the wire server's connections.
func (e *Engine) activityRows() [][]types.Datum {
	if e.Backends == nil {
		return nil
	}
	ts := func(t time.Time) types.Datum {
		if t.IsZero() {
			return types.NullDatum
		}
		return types.DInt(t.UnixMicro())
	}
	text := func(s string) types.Datum { return types.DString(s) }
	var rows [][]types.Datum
	for _, a := range e.Backends.Activity() {
		addr, port := types.NullDatum, types.DInt(int64(a.ClientPort))
		if a.ClientAddr != "" {
			addr = text(a.ClientAddr)
		}
		query := text(a.Query)
		db, dbOID := a.Database, int64(catalog.DatabaseOID)
		if at, ok := e.attached.of(a.PID); ok {
			db = at // where SET database moved it
		}
		if d, ok := e.Catalog.DatabaseByName(db); ok {
			dbOID = int64(d.OID)
		}
		rows = append(rows, []types.Datum{
			types.DInt(dbOID), text(db), types.DInt(int64(a.PID)), types.NullDatum,
			types.DInt(catalog.OwnerOID), text(a.User), text(a.ApplicationName),
			addr, types.NullDatum, port,
			ts(a.BackendStart), types.NullDatum, ts(a.QueryStart),
			ts(a.StateChange), types.NullDatum, types.NullDatum,
			text(a.State.String()), types.NullDatum, types.NullDatum, types.NullDatum,
			query, text("client backend"),
		})
	}
	return rows
}

// maxCreatingParam is the system parameter bounding the jobs that backfill
// at once (0: no bound).
const maxCreatingParam = "max_concurrent_creating_streaming_jobs"

// waitCreatingSlot waits (with the DDL lock released, which the caller
// holds) until fewer jobs backfill than max_concurrent_creating_streaming_jobs
// allows: a CREATE past the bound queues, as in RisingWave.
func (s *Session) waitCreatingSlot(ctx context.Context) error {
	limit, _ := strconv.Atoi(s.eng.params[maxCreatingParam])
	if limit <= 0 {
		return nil
	}
	for len(s.eng.coord().Jobs()) >= limit {
		s.eng.ddl.Unlock()
		select {
		case <-ctx.Done():
			s.eng.ddl.Lock()
			return types.Errorf(types.ErrQueryCanceled, "canceling statement due to user request")
		case <-time.After(20 * time.Millisecond):
		}
		s.eng.ddl.Lock()
	}
	return nil
}

// checkCreated refuses a query of a materialized view whose job is still
// backfilling (a background CREATE, or one resumed after a restart): its
// rows are not all there yet, and RisingWave refuses it too.
func (s *Session) checkCreated(ctx context.Context, ids []uint32) error {
	creating := func() map[uint32]coordinator.JobInfo {
		m := map[uint32]coordinator.JobInfo{}
		for _, j := range s.eng.coord().Jobs() {
			m[j.ID] = j
		}
		return m
	}
	var jobs map[uint32]coordinator.JobInfo
	flushed := false
	for _, id := range ids {
		rel, ok := s.eng.Catalog.ByID(id)
		if !ok || rel.Kind != catalog.KindMaterializedView {
			continue
		}
		if jobs == nil {
			jobs = creating()
		}
		if _, ok := jobs[id]; ok && !flushed {
			// A job rebuilt after a restart or a rescale says its backfill
			// was done at its first barrier: wait for one, then look again.
			flushed = true
			if err := s.eng.coord().Flush(ctx); err != nil {
				return err
			}
			jobs = creating()
		}
		if j, ok := jobs[id]; ok {
			return &types.Error{Kind: types.ErrFeatureNotReady,
				Msg:  fmt.Sprintf("materialized view %s is still being created (backfill %s)", rel.Name, progressText(j)),
				Hint: "Query it once its backfill is done: WAIT waits for every background job, rw_catalog.rw_ddl_progress shows the progress."}
		}
	}
	return nil
}

// jobStatus is rw_materialized_views.status: Creating while the job
// backfills, Created afterwards.
func (e *Engine) jobStatus() map[uint32]string {
	st := map[uint32]string{}
	for _, j := range e.coord().Jobs() {
		st[j.ID] = "Creating"
	}
	return st
}
