package job

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/planner/bind"
	"github.com/tributary/tributary/planner/physical"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/types"
)

// Sink is SinkPlan, or for a sink into a table (rel.Sink.Into) the plan
// that writes into it.
func (p *Planner) Sink(sq *physical.StreamQuery, rel *catalog.Relation) (plan.StreamNode, error) {
	if rel.Sink == nil {
		return nil, fmt.Errorf("sink %s has no settings", rel.Name)
	}
	if rel.Sink.Into == "" {
		return SinkPlan(sq, rel)
	}
	schema, into := rel.IntoTarget()
	target, err := catalog.Path{Catalog: p.Catalog, Database: rel.Database}.Lookup(schema, into)
	if err != nil {
		return nil, err
	}
	appendOnly, err := intoAppendOnly(sq, rel)
	if err != nil {
		return nil, err
	}
	if target.HasRowID() && !appendOnly && !physical.AppendOnly(sq.Root) {
		// Each row the sink writes is a new row (a new hidden row id): a
		// delete or an update could not find its row.
		return nil, types.Errorf(types.ErrInvalidParameter, "Only append-only sinks can sink to a table without primary keys. sink %s: add type = 'append-only', force_append_only = 'true', or give %s a primary key", rel.Name, target.Name)
	}
	root := physical.Sink(sq, rel, map[string]string{}, appendOnly, true)
	root.Coupled = !rel.Sink.Decoupled
	if r := rel.Sink.RateLimit; r != nil {
		root.RateLimit = *r
	}
	root.Into = target
	if root.IntoMap, root.IntoDefaults, root.IntoGenerated, err = p.intoMapping(rel, target, rel.Sink.IntoColumns); err != nil {
		return nil, err
	}
	return root, nil
}

// intoAppendOnly checks a sink into a table's type and force_append_only
// as SinkPlan does and reports whether its stream is made append-only
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

// SnapshotOff reads a sink's snapshot option: 'false' makes it read only
// the changes after its creation, not its upstreams' existing rows.
func SnapshotOff(props map[string]string) (bool, error) {
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
// columns (the first visible ones when none are listed) take the sink's
// visible columns in order, of the same types; the others take their
// defaults. The
// table's primary key must come from the sink, except a hidden row id
// (plan.IntoNewRowID: every row written gets a new one).
func (p *Planner) intoMapping(rel, target *catalog.Relation, names []string) ([]int, []types.Datum, []expr.Expr, error) {
	var sinkCols []int
	for i, c := range rel.Columns {
		if !c.Hidden {
			sinkCols = append(sinkCols, i)
		}
	}
	var targets []int
	if len(names) == 0 {
		// The target's visible columns in order; the sink may give fewer
		// (the rest take their defaults, as in RisingWave).
		for i, c := range target.Columns {
			if !c.Hidden && c.Generated == "" && len(targets) < len(sinkCols) {
				targets = append(targets, i)
			}
		}
	}
	for _, name := range names {
		idx := target.ColumnIndex(strings.TrimSpace(name))
		if idx >= 0 && target.Columns[idx].Generated != "" {
			return nil, nil, nil, types.Errorf(types.ErrGeneratedAlways, "cannot insert a non-DEFAULT value into column \"%s\"", name)
		}
		if idx < 0 || target.Columns[idx].Hidden {
			return nil, nil, nil, types.Errorf(types.ErrUndefinedColumn, "column \"%s\" of relation \"%s\" does not exist", name, target.Name)
		}
		if slices.Contains(targets, idx) {
			return nil, nil, nil, types.Errorf(types.ErrDuplicateColumn, "column \"%s\" specified more than once", name)
		}
		targets = append(targets, idx)
	}
	if len(sinkCols) != len(targets) {
		return nil, nil, nil, types.Errorf(types.ErrSyntax, "sink %s has %d columns and its target %d", rel.Name, len(sinkCols), len(targets))
	}
	mapping := make([]int, len(target.Columns))
	for i := range mapping {
		mapping[i] = -1
	}
	for i, t := range targets {
		sc, tc := rel.Columns[sinkCols[i]], target.Columns[t]
		if sc.Type != tc.Type {
			return nil, nil, nil, types.Errorf(types.ErrDatatypeMismatch, "column \"%s\" of table %s is of type %s but the sink's column \"%s\" is of type %s",
				tc.Name, target.Name, tc.Type, sc.Name, sc.Type)
		}
		mapping[t] = sinkCols[i]
	}
	defaults := make([]types.Datum, len(target.Columns))
	b := bind.New(p.Catalog, nil)
	var generated []expr.Expr
	for i, c := range target.Columns {
		if mapping[i] >= 0 {
			continue
		}
		if c.Generated != "" {
			e, err := b.GeneratedExpr(target, i)
			if err != nil {
				return nil, nil, nil, fmt.Errorf("sink %s: generated column %s of %s: %w", rel.Name, c.Name, target.Name, err)
			}
			if generated == nil {
				generated = make([]expr.Expr, len(target.Columns))
			}
			generated[i] = e
			continue
		}
		if target.HasRowID() && i == target.PK[0] {
			mapping[i] = plan.IntoNewRowID
			continue
		}
		if slices.Contains(target.PK, i) {
			return nil, nil, nil, types.Errorf(types.ErrNotNullViolation, "sink %s must provide the primary key column \"%s\" of %s", rel.Name, c.Name, target.Name)
		}
		e, err := b.DefaultExpr(&target.Columns[i])
		if err != nil {
			return nil, nil, nil, err
		}
		if defaults[i], err = e.EvalRow(p.evalCtx(), nil); err != nil {
			return nil, nil, nil, fmt.Errorf("default of column %s: %w", c.Name, err)
		}
		if defaults[i].Null && c.NotNull {
			return nil, nil, nil, types.Errorf(types.ErrNotNullViolation, "column \"%s\" of %s is NOT NULL without a default, and sink %s leaves it out", c.Name, target.Name, rel.Name)
		}
	}
	return mapping, defaults, generated, nil
}

// SinkPlan checks a sink's type against its query's stream and returns the
// job's plan: append-only needs an insert-only stream unless
// force_append_only; upsert needs a key (primary_key, else the stream key).
func SinkPlan(sq *physical.StreamQuery, rel *catalog.Relation) (plan.StreamNode, error) {
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
