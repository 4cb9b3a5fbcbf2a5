package session

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/connector"
	"github.com/tributary/tributary/executor/stream"
	"github.com/tributary/tributary/planner/physical"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/server/pgwire"
	"github.com/tributary/tributary/sql/parser"
	"github.com/tributary/tributary/sql/types"
)

// sinkJobPlan is sinkPlan, or for a sink into a table (rel.Sink.Into) the
// plan that writes into it.
func (s *Session) sinkJobPlan(sq *physical.StreamQuery, rel *catalog.Relation) (plan.StreamNode, error) {
	if rel.Sink == nil {
		return nil, fmt.Errorf("sink %s has no settings", rel.Name)
	}
	if rel.Sink.Into == "" {
		return sinkPlan(sq, rel)
	}
	target, err := s.eng.Catalog.Lookup(rel.Schema, rel.Sink.Into)
	if err != nil {
		return nil, err
	}
	cols := rel.Sink.IntoColumns
	appendOnly, err := intoAppendOnly(sq, rel)
	if err != nil {
		return nil, err
	}
	root := physical.Sink(sq, rel, map[string]string{}, appendOnly, true)
	root.Coupled = !rel.Sink.Decoupled
	if r := rel.Sink.RateLimit; r != nil {
		root.RateLimit = *r
	}
	root.Into = target
	if root.IntoMap, root.IntoDefaults, err = s.intoMapping(rel, target, cols); err != nil {
		return nil, err
	}
	return root, nil
}

// intoAppendOnly checks a sink into a table's type and force_append_only
// as sinkPlan does and reports whether its stream is made append-only
// (deletes dropped, updates written as inserts).
func intoAppendOnly(sq *physical.StreamQuery, rel *catalog.Relation) (bool, error) {
	typ, force := rel.Sink.Props["type"], rel.Sink.Props["force_append_only"]
	switch force {
	case "", "false":
	case "true":
		if typ != "append-only" {
			return false, types.Errorf(types.ErrInvalidParameter, "sink %s: force_append_only needs type = 'append-only'", rel.Name)
		}
	default:
		return false, types.Errorf(types.ErrInvalidParameter, "sink %s: force_append_only must be 'true' or 'false', got %q", rel.Name, force)
	}
	insertOnly := physical.AppendOnly(sq.Root)
	switch typ {
	case "", "upsert":
		return false, nil
	case "append-only":
		if !insertOnly && force != "true" {
			return false, types.Errorf(types.ErrInvalidParameter,
				"sink %s: the query can delete and update rows, so the sink cannot be append-only; add force_append_only = 'true' to drop deletes and turn updates into inserts, or use type = 'upsert'", rel.Name)
		}
		return !insertOnly, nil
	}
	return false, types.Errorf(types.ErrInvalidParameter, "sink type %q is not valid for a sink into a table (append-only or upsert)", typ)
}

// sinkSnapshotOff reads a sink's snapshot option: 'false' makes it read
// only the changes after its creation, not its upstreams' existing rows.
func sinkSnapshotOff(props map[string]string) (bool, error) {
	switch v := strings.ToLower(props["snapshot"]); v {
	case "", "true":
		return false, nil
	case "false":
		return true, nil
	default:
		return false, types.Errorf(types.ErrInvalidParameter, "snapshot must be 'true' or 'false', got %q", v)
	}
}

// intoMapping maps the target table's columns to the sink's: the listed
// columns (all visible ones when none are listed) take the sink's visible
// columns in order, of the same types; the others take their defaults. The
// table's primary key must come from the sink.
func (s *Session) intoMapping(rel, target *catalog.Relation, names []string) ([]int, []types.Datum, error) {
	var sinkCols []int
	for i, c := range rel.Columns {
		if !c.Hidden {
			sinkCols = append(sinkCols, i)
		}
	}
	var targets []int
	if len(names) == 0 {
		for i, c := range target.Columns {
			if !c.Hidden {
				targets = append(targets, i)
			}
		}
	}
	for _, name := range names {
		idx := target.ColumnIndex(strings.TrimSpace(name))
		if idx < 0 || target.Columns[idx].Hidden {
			return nil, nil, types.Errorf(types.ErrUndefinedColumn, "column \"%s\" of relation \"%s\" does not exist", name, target.Name)
		}
		if slices.Contains(targets, idx) {
			return nil, nil, types.Errorf(types.ErrDuplicateColumn, "column \"%s\" specified more than once", name)
		}
		targets = append(targets, idx)
	}
	if len(sinkCols) != len(targets) {
		return nil, nil, types.Errorf(types.ErrSyntax, "sink %s has %d columns and its target %d", rel.Name, len(sinkCols), len(targets))
	}
	mapping := make([]int, len(target.Columns))
	for i := range mapping {
		mapping[i] = -1
	}
	for i, t := range targets {
		sc, tc := rel.Columns[sinkCols[i]], target.Columns[t]
		if sc.Type != tc.Type {
			return nil, nil, types.Errorf(types.ErrDatatypeMismatch, "column \"%s\" of table %s is of type %s but the sink's column \"%s\" is of type %s",
				tc.Name, target.Name, tc.Type, sc.Name, sc.Type)
		}
		mapping[t] = sinkCols[i]
	}
	defaults := make([]types.Datum, len(target.Columns))
	b := s.binder(nil)
	for i, c := range target.Columns {
		if mapping[i] >= 0 {
			continue
		}
		if slices.Contains(target.PK, i) {
			return nil, nil, types.Errorf(types.ErrNotNullViolation, "sink %s must provide the primary key column \"%s\" of %s", rel.Name, c.Name, target.Name)
		}
		e, err := b.DefaultExpr(&target.Columns[i])
		if err != nil {
			return nil, nil, err
		}
		if defaults[i], err = e.EvalRow(s.exprCtx(nil), nil); err != nil {
			return nil, nil, fmt.Errorf("default of column %s: %w", c.Name, err)
		}
		if defaults[i].Null && c.NotNull {
			return nil, nil, types.Errorf(types.ErrNotNullViolation, "column \"%s\" of %s is NOT NULL without a default, and sink %s leaves it out", c.Name, target.Name, rel.Name)
		}
	}
	return mapping, defaults, nil
}

// sinkPlan checks a sink's type against its query's stream and returns the
// job's plan: append-only needs an insert-only stream unless
// force_append_only; upsert needs a key (primary_key, else the stream key).
func sinkPlan(sq *physical.StreamQuery, rel *catalog.Relation) (plan.StreamNode, error) {
	props := maps.Clone(rel.Sink.Props)
	insertOnly := physical.AppendOnly(sq.Root)
	force := strings.EqualFold(props["force_append_only"], "true")
	typ := strings.ToLower(props["type"])
	if typ == "" {
		typ = "upsert"
		if insertOnly || force {
			typ = "append-only"
		}
	}
	switch typ {
	case "append-only":
		if !insertOnly && !force {
			return nil, types.Errorf(types.ErrInvalidParameter,
				"sink %s: the query can delete and update rows, so the sink cannot be append-only; add force_append_only = 'true' to drop deletes and turn updates into inserts, or use type = 'upsert'", rel.Name)
		}
	case "upsert":
		if force {
			return nil, types.Errorf(types.ErrInvalidParameter, "sink %s: force_append_only needs type = 'append-only'", rel.Name)
		}
		if err := checkSinkKey(rel, props["primary_key"], sq.PK); err != nil {
			return nil, err
		}
	case "retract", "debezium":
		return nil, types.Errorf(types.ErrUnsupported, "sink type %q is not supported yet (supported: append-only, upsert)", typ)
	default:
		return nil, types.Errorf(types.ErrInvalidParameter, "sink type %q is not valid (append-only or upsert)", typ)
	}
	props["type"] = typ // as settled: the connector needs it
	root := physical.Sink(sq, rel, props, typ == "append-only" && !insertOnly, rel.Sink.Decoupled)
	root.Format, root.Encode = rel.Sink.Format, rel.Sink.Encode
	if r := rel.Sink.RateLimit; r != nil {
		root.RateLimit = *r
	}
	return root, nil
}

// checkSinkKey checks an upsert sink's primary_key (comma-separated visible
// columns), or that the query has a stream key when none is given.
func checkSinkKey(rel *catalog.Relation, given string, streamKey []int) error {
	if strings.TrimSpace(given) == "" {
		if len(streamKey) == 0 {
			return types.Errorf(types.ErrInvalidParameter, "sink %s: an upsert sink needs a primary key, and none can be derived from the query; give primary_key = '<columns>'", rel.Name)
		}
		return nil
	}
	for _, name := range strings.Split(given, ",") {
		name = strings.TrimSpace(name)
		found := false
		for _, c := range rel.Columns {
			if !c.Hidden && strings.EqualFold(c.Name, name) {
				found = true
				break
			}
		}
		if !found {
			return types.Errorf(types.ErrUndefinedColumn, "sink %s: primary key column \"%s\" is not in the sink's columns", rel.Name, name)
		}
	}
	return nil
}

// alterSinkRate is ALTER SINK s SET SINK_RATE_LIMIT = n | DEFAULT: a
// decoupled sink's delivery rate, changed online and recorded with it.
func (s *Session) alterSinkRate(ctx context.Context, n *parser.Alter) (pgwire.Result, error) {
	s.eng.ddl.Lock()
	defer s.eng.ddl.Unlock()
	rel, err := s.eng.Catalog.Lookup(n.Name.Schema, n.Name.Name)
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
	schema, err := schemaOf(n.Name)
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
		for _, st := range s.eng.sinks.Stores() {
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
	enableBackfill(root, rel)
	next := uint32(0)
	physical.AssignState(root, func() uint32 { next++; return next })
	return planRows(plan.ExplainStream(root)), nil
}

// bindSinkQuery binds a sink's query (FROM relation meaning SELECT * FROM
// it) for streaming: the query, its plan and the relations it reads.
func (s *Session) bindSinkQuery(n *parser.CreateSink) (*parser.Query, *physical.StreamQuery, []uint32, error) {
	q := n.Query
	if n.From != nil {
		stmts, err := parser.Parse("SELECT * FROM " + n.From.String())
		if err != nil {
			return nil, nil, nil, err
		}
		q = stmts[0].(*parser.Query)
	}
	b := s.binder(nil)
	sq, _, err := s.eng.streamQuery(q, b, n.EmitOnWindowClose)
	if err != nil {
		return nil, nil, nil, err
	}
	if b.NumParams() > 0 {
		return nil, nil, nil, types.Errorf(types.ErrUndefinedParameter, "there is no parameter $1")
	}
	if err := s.checkRead(b.Referenced()); err != nil {
		return nil, nil, nil, err
	}
	return q, sq, b.Dependencies(), nil
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
		default:
			return nil, nil, types.Errorf(types.ErrInvalidParameter, "a sink into a table takes no option %q (only type, force_append_only, snapshot and create_wait)", k)
		}
	}
	noSnapshot, err := sinkSnapshotOff(props)
	if err != nil {
		return nil, nil, err
	}
	target, err := s.eng.Catalog.Lookup(n.Into.Schema, n.Into.Name)
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
	if slices.ContainsFunc(target.Columns, func(c catalog.Column) bool { return c.Generated != "" }) {
		return nil, nil, types.Errorf(types.ErrUnsupported, "a sink into a table with generated columns is not supported yet")
	}
	if len(target.PK) == 0 || target.Columns[target.PK[0]].Hidden {
		return nil, nil, types.Errorf(types.ErrUnsupported, "a sink into a table without a primary key is not supported yet")
	}
	q, sq, deps, err := s.bindSinkQuery(n)
	if err != nil {
		return nil, nil, err
	}
	if slices.Contains(deps, target.ID) {
		return nil, nil, types.Errorf(types.ErrInvalidDefinition, "sink %s would write into %s, which it reads", n.Name.Name, target.Name)
	}
	rel := &catalog.Relation{Schema: schema, Name: n.Name.Name, Kind: catalog.KindSink,
		Definition: q.Text(), Columns: make([]catalog.Column, len(sq.Columns)), PK: sq.PK,
		DependsOn: append(deps, target.ID), CreatedAt: time.Now().UTC()}
	for i, f := range sq.Columns {
		rel.Columns[i] = catalog.Column{Name: f.Name, Type: f.Type, Hidden: f.Hidden}
	}
	s.jobSettings(rel)
	rel.Job.EmitOnWindowClose = n.EmitOnWindowClose
	rel.Job.NoBackfill = noSnapshot
	// A sink into a table is decoupled unless asked otherwise.
	ss := &catalog.SinkSettings{Decoupled: true, Into: target.Name, CreateWait: props["create_wait"], IntoColumns: n.IntoColumns}
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
	root, err := s.sinkJobPlan(sq, rel)
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
	noSnapshot, err := sinkSnapshotOff(props)
	if err != nil {
		return nil, nil, err
	}
	connProps := maps.Clone(props)
	delete(connProps, "create_wait")
	delete(connProps, "snapshot")
	if _, err := stream.OpenSink(connProps, format, encode); err != nil {
		return nil, nil, err
	}
	q, sq, deps, err := s.bindSinkQuery(n)
	if err != nil {
		return nil, nil, err
	}
	rel := &catalog.Relation{Schema: schema, Name: n.Name.Name, Kind: catalog.KindSink,
		Definition: q.Text(), Columns: make([]catalog.Column, len(sq.Columns)), PK: sq.PK,
		DependsOn: deps, CreatedAt: time.Now().UTC()}
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
	root, err := sinkPlan(sq, rel)
	if err != nil {
		return nil, nil, err
	}
	return rel, root, nil
}
