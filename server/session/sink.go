package session

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/connector"
	"github.com/tributary/tributary/executor/stream"
	"github.com/tributary/tributary/planner/bind"
	"github.com/tributary/tributary/planner/job"
	"github.com/tributary/tributary/planner/physical"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/server/pgwire"
	"github.com/tributary/tributary/sql/parser"
	"github.com/tributary/tributary/sql/types"
)

// alterSinkRate is ALTER SINK s SET SINK_RATE_LIMIT = n | DEFAULT: a
// decoupled sink's delivery rate, changed online and recorded with it.
func (s *Session) alterSinkRate(ctx context.Context, n *parser.Alter) (pgwire.Result, error) {
	s.eng.ddl.Lock()
	defer s.eng.ddl.Unlock()
	rel, err := s.lookup(n.Name.Schema, n.Name.Name)
	if err != nil {
		return nil, err
	}
	if rel.Kind != catalog.KindSink {
		return nil, types.Errorf(types.ErrWrongObjectType, "\"%s\" is not a sink", rel.Name)
	}
	if rel.Sink == nil || !rel.Sink.Decoupled {
		return nil, types.Errorf(types.ErrUnsupported, "sink %s is coupled: SINK_RATE_LIMIT applies to decoupled sinks (create it with sink_decouple = true)", rel.Name)
	}
	updated := *rel
	ss := *rel.Sink
	ss.RateLimit = nil
	rate := int64(-1)
	if !n.Default && !strings.EqualFold(n.Value, "default") {
		v, err := strconv.ParseInt(n.Value, 10, 64)
		if err != nil || v < 0 {
			return nil, types.Errorf(types.ErrInvalidParameter, "sink_rate_limit must be a non-negative integer or DEFAULT")
		}
		rate = v
		ss.RateLimit = &v
	}
	updated.Sink = &ss
	if err := s.replaceRelation(ctx, &updated); err != nil {
		return nil, err
	}
	if err := s.eng.coord().SetSinkRate(ctx, rel.ID, rate); err != nil {
		return nil, fmt.Errorf("alter sink %s: %w", rel.Name, err)
	}
	return tagOnly("ALTER_SINK"), nil
}

func (s *Session) createSink(ctx context.Context, n *parser.CreateSink) (pgwire.Result, error) {
	s.eng.ddl.Lock()
	defer s.eng.ddl.Unlock()
	schema, err := s.schemaOf(n.Name)
	if err != nil {
		return nil, err
	}
	if res, found, err := s.exists(schema, n.Name.Name, n.IfNotExists, "CREATE_SINK"); found {
		return res, err
	}
	rel, root, err := s.planSink(n, schema)
	if err != nil {
		return nil, err
	}
	// A connector's target must exist and fit (a table's columns and key).
	if sn := root.(*plan.StreamSink); sn.Into == nil {
		if c, err := connector.LookupSink(sn.Props); err == nil {
			if err := s.checkConnectOut(ctx, c.Name, c.Endpoints, sn.Props); err != nil {
				return nil, err
			}
		}
		if err := stream.CheckSink(ctx, sn); err != nil {
			return nil, s.peerErr(fmt.Errorf("create sink %s: %w", rel.Name, err))
		}
	}
	rel.ID = s.eng.Catalog.NextID()
	var wait func(context.Context) error
	if strings.EqualFold(rel.Sink.CreateWait, "delivered") {
		wait = func(ctx context.Context) error { return s.waitDelivered(ctx, rel) }
	}
	return s.startJob(ctx, rel, root, n.Text(), "CREATE_SINK", "sink", wait)
}

// waitDelivered returns once every actor of a decoupled sink has an empty
// log store (create_wait = 'delivered'): what it had backfilled, committed
// before the call, reached the connector.
func (s *Session) waitDelivered(ctx context.Context, rel *catalog.Relation) error {
	name := rel.QualifiedName()
	for {
		actors, empty := 0, 0
		for _, st := range s.eng.SinkLog().Stores() {
			if st.Sink != name {
				continue
			}
			actors++
			if st.PendingEpochs <= 0 && st.PendingRows <= 0 {
				empty++
			}
		}
		if actors > 0 && empty == actors {
			return nil
		}
		t := time.NewTimer(20 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// explainCreateSink prints a sink's stream plan.
func (s *Session) explainCreateSink(n *parser.CreateSink) (pgwire.Result, error) {
	rel, root, err := s.planSink(n, "public")
	if err != nil {
		return nil, err
	}
	job.EnableBackfill(root, rel)
	next := uint32(0)
	physical.AssignState(root, func() uint32 { next++; return next })
	return planRows(plan.ExplainStream(root)), nil
}

// bindSinkQuery binds a sink's query (FROM relation meaning SELECT * FROM
// it) for streaming: the query, its plan and the relations it reads.
func (s *Session) bindSinkQuery(n *parser.CreateSink) (*parser.Query, *physical.StreamQuery, *bind.Binder, error) {
	q := n.Query
	if n.From != nil {
		stmts, err := parser.Parse("SELECT * FROM " + n.From.String())
		if err != nil {
			return nil, nil, nil, err
		}
		q = stmts[0].(*parser.Query)
	}
	b := s.binder(nil)
	sq, _, err := job.StreamQuery(q, b, n.EmitOnWindowClose, catalog.StateVersion)
	if err != nil {
		return nil, nil, nil, err
	}
	if b.NumParams() > 0 {
		return nil, nil, nil, types.Errorf(types.ErrUndefinedParameter, "there is no parameter $1")
	}
	if err := s.checkRead(b.Referenced()); err != nil {
		return nil, nil, nil, err
	}
	return q, sq, b, nil
}

// planSinkInto is planSink for CREATE SINK ... INTO table.
func (s *Session) planSinkInto(n *parser.CreateSink, schema string, props map[string]string) (*catalog.Relation, plan.StreamNode, error) {
	if n.Format != nil {
		return nil, nil, types.Errorf(types.ErrSyntax, "a sink into a table takes no FORMAT")
	}
	into := map[string]string{} // type and force_append_only, kept with the sink
	for k, v := range props {
		switch {
		case k == "create_wait" && (strings.EqualFold(v, "delivered") || strings.EqualFold(v, "backfilled")):
		case k == "create_wait":
			return nil, nil, types.Errorf(types.ErrInvalidParameter, "create_wait must be 'backfilled' or 'delivered', got %q", v)
		case k == "snapshot":
		case k == "type" || k == "force_append_only":
			into[k] = strings.ToLower(v)
		case k == "ignore_delete":
			// RisingWave's: deletes are dropped and an update is written as
			// an insert (the target's key makes it an update again), which
			// is force_append_only.
			switch strings.ToLower(v) {
			case "true":
				into["ignore_delete"] = "true"
			case "false":
			default:
				return nil, nil, types.Errorf(types.ErrInvalidParameter, "ignore_delete must be 'true' or 'false', got %q", v)
			}
		default:
			return nil, nil, types.Errorf(types.ErrInvalidParameter, "a sink into a table takes no option %q (only type, force_append_only, ignore_delete, snapshot and create_wait)", k)
		}
	}
	if into["ignore_delete"] == "true" {
		delete(into, "ignore_delete")
		if t, ok := into["type"]; ok && t != "append-only" {
			return nil, nil, types.Errorf(types.ErrInvalidParameter, "ignore_delete = 'true' makes the sink append-only: it cannot be of type %q", t)
		}
		into["type"], into["force_append_only"] = "append-only", "true"
	}
	noSnapshot, err := job.SnapshotOff(props)
	if err != nil {
		return nil, nil, err
	}
	target, err := s.lookup(n.Into.Schema, n.Into.Name)
	if err != nil {
		return nil, nil, err
	}
	if target.Kind != catalog.KindTable {
		return nil, nil, types.Errorf(types.ErrWrongObjectType, "\"%s\" is not a table", target.Name)
	}
	for _, p := range []string{"insert", "update", "delete"} {
		if err := s.checkPriv(target, p); err != nil {
			return nil, nil, err
		}
	}
	if len(target.PK) == 0 || (target.Columns[target.PK[0]].Hidden && !target.HasRowID()) {
		return nil, nil, types.Errorf(types.ErrUnsupported, "a sink into a table without a primary key is not supported yet")
	}
	q, sq, b, err := s.bindSinkQuery(n)
	if err != nil {
		return nil, nil, err
	}
	deps := sq.Dependencies(b.Dependencies())
	if s.feeds(target.ID, deps) {
		return nil, nil, types.Errorf(types.ErrInvalidDefinition, "Creating such a sink will result in circular dependency: sink %s would write into %s, which what it reads comes from", n.Name.Name, target.Name)
	}
	rel := &catalog.Relation{Database: s.relDB(), Schema: schema, Name: n.Name.Name, Kind: catalog.KindSink,
		Definition: q.Text(), Columns: make([]catalog.Column, len(sq.Columns)), PK: sq.PK,
		DependsOn: append(deps, target.ID), Functions: b.Functions(), Refs: pinned(b.Refs()), CreatedAt: time.Now().UTC()}
	seen := map[string]bool{}
	for i, f := range sq.Columns {
		name := f.Name
		for k := 1; seen[name]; k++ { // its columns' names matter to nobody: two "?column?" are fine
			name = fmt.Sprintf("%s_%d", f.Name, k)
		}
		seen[name] = true
		rel.Columns[i] = catalog.Column{Name: name, Type: f.Type, Hidden: f.Hidden}
	}
	s.jobSettings(rel)
	rel.Job.EmitOnWindowClose = n.EmitOnWindowClose
	rel.Job.NoBackfill = noSnapshot
	// A sink into a table is decoupled unless asked otherwise.
	ss := &catalog.SinkSettings{Decoupled: true, Into: target.Name, CreateWait: props["create_wait"], IntoColumns: n.IntoColumns}
	if target.Schema != schema {
		ss.IntoSchema = target.Schema
	}
	if len(into) > 0 {
		ss.Props = into
	}
	if d, _ := s.vars.get("sink_decouple"); d == "false" {
		ss.Decoupled = false
	}
	if r, _ := s.vars.get("sink_rate_limit"); r != "default" {
		if v, err := strconv.ParseInt(r, 10, 64); err == nil {
			ss.RateLimit = &v
		}
	}
	rel.Sink = ss
	root, err := s.planner().Sink(sq, rel)
	if err != nil {
		return nil, nil, err
	}
	return rel, root, nil
}

// planSink checks a CREATE SINK and returns the sink's descriptor (without
// an id) and its job's plan.
func (s *Session) planSink(n *parser.CreateSink, schema string) (*catalog.Relation, plan.StreamNode, error) {
	format, encode := "", ""
	if n.Format != nil {
		if len(n.Format.Options) > 0 {
			return nil, nil, types.Errorf(types.ErrUnsupported, "FORMAT ... ENCODE options are not supported yet")
		}
		format, encode = strings.ToLower(n.Format.Format), strings.ToLower(n.Format.Encode)
	}
	props := map[string]string{}
	for _, o := range n.With {
		props[strings.ToLower(o.Key)] = o.Value
	}
	if n.Into != nil {
		return s.planSinkInto(n, schema, props)
	}
	switch w := strings.ToLower(props["create_wait"]); w {
	case "", "backfilled", "delivered":
	default:
		return nil, nil, types.Errorf(types.ErrInvalidParameter, "create_wait must be 'backfilled' or 'delivered', got %q", w)
	}
	noSnapshot, err := job.SnapshotOff(props)
	if err != nil {
		return nil, nil, err
	}
	connProps := maps.Clone(props)
	delete(connProps, "create_wait")
	delete(connProps, "snapshot")
	if _, err := stream.OpenSink(connProps, format, encode); err != nil {
		return nil, nil, err
	}
	q, sq, b, err := s.bindSinkQuery(n)
	if err != nil {
		return nil, nil, err
	}
	rel := &catalog.Relation{Database: s.relDB(), Schema: schema, Name: n.Name.Name, Kind: catalog.KindSink,
		Definition: q.Text(), Columns: make([]catalog.Column, len(sq.Columns)), PK: sq.PK,
		DependsOn: sq.Dependencies(b.Dependencies()), Functions: b.Functions(), Refs: pinned(b.Refs()), CreatedAt: time.Now().UTC()}
	for i, f := range sq.Columns {
		rel.Columns[i] = catalog.Column{Name: f.Name, Type: f.Type, Hidden: f.Hidden}
	}
	ss := &catalog.SinkSettings{Props: connProps, Format: format, Encode: encode, CreateWait: props["create_wait"]}
	s.jobSettings(rel)
	rel.Job.EmitOnWindowClose = n.EmitOnWindowClose
	rel.Job.NoBackfill = noSnapshot
	decouple, _ := s.vars.get("sink_decouple")
	if decouple == "default" {
		decouple = strconv.FormatBool(stream.SinkDecoupled(props))
	}
	ss.Decoupled = decouple == "true"
	rel.Sink = ss
	if strings.EqualFold(props["create_wait"], "delivered") && decouple != "true" {
		return nil, nil, types.Errorf(types.ErrInvalidParameter, "create_wait = 'delivered' needs a decoupled sink (a coupled one delivers before CREATE returns)")
	}
	if r, _ := s.vars.get("sink_rate_limit"); r != "default" {
		if decouple != "true" {
			return nil, nil, types.Errorf(types.ErrUnsupported, "sink_rate_limit = %s applies to decoupled sinks only: SET sink_decouple = true, or sink_rate_limit = default", r)
		}
		if v, err := strconv.ParseInt(r, 10, 64); err == nil {
			ss.RateLimit = &v
		}
	}
	root, err := job.SinkPlan(sq, rel)
	if err != nil {
		return nil, nil, err
	}
	return rel, root, nil
}

// feeds reports whether relation id is upstream of any of rels (or one of
// them): through what views and sinks read, and through the sinks that
// write into a table.
func (s *Session) feeds(id uint32, rels []uint32) bool {
	seen := map[uint32]bool{}
	var up func(r uint32) bool
	up = func(r uint32) bool {
		if r == id {
			return true
		}
		if seen[r] {
			return false
		}
		seen[r] = true
		rel, ok := s.eng.Catalog.ByID(r)
		if !ok {
			return false
		}
		for _, d := range rel.DependsOn {
			if sc, into := rel.IntoTarget(); into != "" {
				if t, err := s.lookup(sc, into); err == nil && t.ID == d {
					continue // what the sink writes, not what it reads
				}
			}
			if up(d) {
				return true
			}
		}
		if rel.Kind == catalog.KindTable {
			for _, dep := range s.eng.Catalog.Dependents(r) {
				if dep.SinksInto(rel) && up(dep.ID) {
					return true
				}
			}
		}
		return false
	}
	for _, r := range rels {
		if up(r) {
			return true
		}
	}
	return false
}
