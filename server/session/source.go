package session

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/executor/coordinator"
	"github.com/tributary/tributary/executor/stream"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/server/pgwire"
	"github.com/tributary/tributary/sql/parser"
	"github.com/tributary/tributary/sql/types"
)

// withPrefix marks a connector table's WITH options in Relation.Options.
const withPrefix = "with."

// connectorOptions checks a CREATE TABLE's WITH options against the table
// and records them (and the session's source_rate_limit) in rel.Options.
func (s *Session) connectorOptions(rel *catalog.Relation, with []parser.Option) error {
	props := map[string]string{}
	for _, o := range with {
		props[strings.ToLower(o.Key)] = o.Value
	}
	if _, ok := props["connector"]; !ok {
		return types.Errorf(types.ErrUnsupported, "CREATE %s ... WITH (...) needs a connector option (connector = 'datagen' or 'nexmark')", strings.ToUpper(rel.Kind.String()))
	}
	if _, err := stream.ParseConnector(rel, props); err != nil {
		return err
	}
	if rel.Options == nil {
		rel.Options = map[string]string{}
	}
	for k, v := range props {
		rel.Options[withPrefix+k] = v
	}
	if r, err := s.vars.get("source_rate_limit"); err == nil && r != "default" {
		rel.Options["source_rate_limit"] = r
	}
	return nil
}

// isConnectorTable reports whether rel is a table fed by a connector.
func isConnectorTable(rel *catalog.Relation) bool {
	return rel.Kind == catalog.KindTable && rel.Options[withPrefix+"connector"] != "" && len(rel.StateTables) == 1
}

// connectorSource is the plan of a connector table's source job.
func connectorSource(rel *catalog.Relation) *plan.StreamConnectorSource {
	props := map[string]string{}
	for k, v := range rel.Options {
		if name, ok := strings.CutPrefix(k, withPrefix); ok {
			props[name] = v
		}
	}
	n := &plan.StreamConnectorSource{Table: rel, Props: props, State: plan.ConnectorSourceState(rel.StateTables[0]), RateLimit: -1}
	if v, err := strconv.ParseInt(rel.Options["source_rate_limit"], 10, 64); err == nil {
		n.RateLimit = v
	}
	return n
}

// connectorJobOptions describes a connector table's source job for SHOW JOBS.
func connectorJobOptions(rel *catalog.Relation) coordinator.JobOptions {
	return coordinator.JobOptions{Parallelism: 1, BackfillRate: -1, Background: true,
		Statement: "CREATE TABLE " + rel.Name + " (source)", BackfillType: "Source"}
}

// alterSourceRate is ALTER TABLE name SET SOURCE_RATE_LIMIT {= | TO} {n |
// DEFAULT}: a connector table's source changes rate online (by a barrier
// mutation), and the rate is recorded with the table for restarts.
func (s *Session) alterSourceRate(ctx context.Context, n *parser.Alter) (pgwire.Result, error) {
	s.eng.ddl.Lock()
	defer s.eng.ddl.Unlock()
	rel, err := s.eng.Catalog.Lookup(n.Name.Schema, n.Name.Name)
	if err != nil {
		return nil, err
	}
	if n.Kind == parser.KindSource && rel.Kind != catalog.KindSource {
		return nil, types.Errorf(types.ErrWrongObjectType, "\"%s\" is not a source", rel.Name)
	}
	if n.Kind == parser.KindTable && !isConnectorTable(rel) {
		return nil, types.Errorf(types.ErrWrongObjectType, "\"%s\" is not a table with a connector", rel.Name)
	}
	updated := *rel
	updated.Options = maps.Clone(rel.Options)
	delete(updated.Options, "source_rate_limit")
	rate := int64(-1)
	if !n.Default && !strings.EqualFold(n.Value, "default") {
		v, err := strconv.ParseInt(n.Value, 10, 64)
		if err != nil || v < 0 {
			return nil, types.Errorf(types.ErrInvalidParameter, "source_rate_limit must be a non-negative integer or DEFAULT")
		}
		rate = v
		updated.Options["source_rate_limit"] = strconv.FormatInt(v, 10)
	}
	if err := s.replaceRelation(ctx, &updated); err != nil {
		return nil, err
	}
	if rel.Kind == catalog.KindSource {
		if err := s.eng.coord().SetSourceScanRate(ctx, rel.ID, rate); err != nil {
			return nil, fmt.Errorf("alter source %s: %w", rel.Name, err)
		}
		return tagOnly("ALTER_SOURCE"), nil
	}
	if err := s.eng.coord().SetSourceRate(ctx, rel.StateTables[0], rate); err != nil {
		return nil, fmt.Errorf("alter table %s: %w", rel.Name, err)
	}
	return tagOnly("ALTER_TABLE"), nil
}

// createSource is CREATE SOURCE name (columns) WITH (connector = ...): a
// descriptor only. Every view or sink over it reads the connector in its own
// job (a StreamSourceScan), from its own split offsets; its rows are keyed by
// a hidden row id the connector fills from each row's number.
func (s *Session) createSource(ctx context.Context, n *parser.CreateSource) (pgwire.Result, error) {
	s.eng.ddl.Lock()
	defer s.eng.ddl.Unlock()
	schema, err := schemaOf(n.Name)
	if err != nil {
		return nil, err
	}
	if n.Format != nil {
		return nil, types.Errorf(types.ErrUnsupported, "FORMAT ... ENCODE is not supported by the datagen and nexmark connectors")
	}
	if len(n.PrimaryKey) > 0 {
		return nil, types.Errorf(types.ErrUnsupported, "a source has no primary key (its rows are keyed by a hidden row id); use CREATE TABLE ... WITH (connector = ...) for a keyed table")
	}
	if res, found, err := s.exists(schema, n.Name.Name, n.IfNotExists, "CREATE_SOURCE"); found {
		return res, err
	}
	rel := &catalog.Relation{Schema: schema, Name: n.Name.Name, Kind: catalog.KindSource, Definition: n.Text(),
		AppendOnly: true, CreatedAt: time.Now().UTC()}
	for _, cd := range n.Columns {
		if cd.PrimaryKey {
			return nil, types.Errorf(types.ErrUnsupported, "a source has no primary key (its rows are keyed by a hidden row id)")
		}
		col, err := columnOf(cd)
		if err != nil {
			return nil, err
		}
		if rel.ColumnIndex(cd.Name) >= 0 {
			return nil, types.Errorf(types.ErrDuplicateColumn, "column \"%s\" specified more than once", cd.Name)
		}
		col.Default = "" // a source's rows come from its connector
		rel.Columns = append(rel.Columns, col)
	}
	if len(rel.Columns) == 0 {
		return nil, types.Errorf(types.ErrUnsupported, "a source needs at least one column")
	}
	rel.Columns = append(rel.Columns, catalog.Column{Name: catalog.RowIDColumn, Type: types.TInt64, NotNull: true, Hidden: true})
	rel.PK = []int{len(rel.Columns) - 1}
	if err := s.connectorOptions(rel, n.With); err != nil {
		return nil, err
	}
	rel.ID = s.eng.Catalog.NextID()
	if err := s.publish(ctx, rel); err != nil {
		return nil, err
	}
	return tagOnly("CREATE_SOURCE"), nil
}
