package session

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tributary/tributary/catalog/persist"
	"github.com/tributary/tributary/storage"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/server/pgwire"
	"github.com/tributary/tributary/sql/parser"
	"github.com/tributary/tributary/sql/types"
)

func (s *Session) set(n *parser.Set) (pgwire.Result, error) {
	if n.Name == "role" {
		return s.setRole(n)
	}
	if n.Name == "database" {
		return s.setDatabase(n)
	}
	if n.Default {
		if _, err := s.vars.set(n.Name, "", true); err != nil {
			return nil, err
		}
		return tagOnly(setTag(n)), nil
	}
	value := strings.Join(n.Value, ", ")
	notice, err := s.vars.set(n.Name, value, false)
	if err != nil {
		return nil, err
	}
	if notice != "" {
		s.notifier.Notice("NOTICE", "0A000", notice)
	}
	if n.Local {
		s.notifier.Notice("WARNING", "0A000", "SET LOCAL applies to the session: settings are not undone at the end of the transaction")
	}
	return tagOnly("SET"), nil
}

// mixedCaseVars are the session variables PostgreSQL spells with capitals.
var mixedCaseVars = map[string]string{"datestyle": "DateStyle", "intervalstyle": "IntervalStyle", "timezone": "TimeZone"}

// setTag is the command tag of n: RESET or SET, as PostgreSQL's.
func setTag(n *parser.Set) string {
	if n.Reset {
		return "RESET"
	}
	return "SET"
}

func (s *Session) describeShow(st *statement, n *parser.Show) error {
	switch n.Kind {
	case "variable":
		name := strings.ToLower(n.Name)
		if _, err := s.vars.get(name); err != nil {
			return err
		}
		col := name
		if c, ok := mixedCaseVars[name]; ok {
			col = c // SHOW names its column as PostgreSQL spells the variable
		}
		st.cols = textColumns(col)
		st.run = func(ctx context.Context, _ []types.Datum) (pgwire.Result, error) {
			v, err := s.vars.get(name)
			if err != nil {
				return nil, err
			}
			if name == "is_superuser" && !s.superuser() {
				v = "off" // the current role's, as SET ROLE leaves it
			}
			return textRows([]string{col}, [][]string{{v}}, "SHOW"), nil
		}
	case "parameters":
		st.cols = textColumns("Name", "Value", "Editable")
		st.run = func(ctx context.Context, _ []types.Datum) (pgwire.Result, error) {
			return textRows([]string{"Name", "Value", "Editable"}, s.eng.systemParams(), ""), nil
		}
	case "all":
		st.cols = textColumns("Name", "Setting", "Description")
		st.run = func(ctx context.Context, _ []types.Datum) (pgwire.Result, error) {
			var rows [][]string
			for _, v := range s.vars.all() {
				rows = append(rows, v[:])
			}
			return textRows([]string{"Name", "Setting", "Description"}, rows, ""), nil
		}
	case "tables", "views", "materialized_views", "sinks", "sources":
		kind := map[string]catalog.Kind{"tables": catalog.KindTable, "views": catalog.KindView,
			"materialized_views": catalog.KindMaterializedView, "sinks": catalog.KindSink, "sources": catalog.KindSource}[n.Kind]
		schema := catalog.DefaultSchema
		if n.Object != nil && n.Object.Schema != "" {
			schema = n.Object.Schema
		}
		st.cols = textColumns("Name")
		st.run = func(ctx context.Context, _ []types.Datum) (pgwire.Result, error) {
			var rows [][]string
			for _, r := range s.cat().Relations() {
				if r.Kind == kind && r.Schema == schema {
					rows = append(rows, []string{r.Name})
				}
			}
			return textRows([]string{"Name"}, sortRows(rows), ""), nil
		}
	case "databases":
		st.cols = textColumns("Name")
		st.run = func(ctx context.Context, _ []types.Datum) (pgwire.Result, error) {
			var rows [][]string
			for _, d := range s.eng.Catalog.Databases() {
				rows = append(rows, []string{d.Name})
			}
			return textRows([]string{"Name"}, sortRows(rows), ""), nil
		}
	case "schemas":
		st.cols = textColumns("Name")
		st.run = func(ctx context.Context, _ []types.Datum) (pgwire.Result, error) {
			var rows [][]string
			for _, sc := range s.cat().Schemas() {
				rows = append(rows, []string{sc})
			}
			return textRows([]string{"Name"}, sortRows(rows), ""), nil
		}
	case "columns":
		if n.Object == nil {
			return types.Errorf(types.ErrSyntax, "SHOW COLUMNS needs FROM <relation>")
		}
		st.cols = textColumns("Name", "Type", "Is Hidden", "Description")
		obj := *n.Object
		st.run = func(ctx context.Context, _ []types.Datum) (pgwire.Result, error) {
			return s.showColumns(obj.Schema, obj.Name)
		}
	case "create_table", "create_view", "create_materialized_view", "create_sink", "create_source":
		if n.Object == nil {
			return types.Errorf(types.ErrSyntax, "SHOW CREATE needs a relation")
		}
		st.cols = textColumns("Name", "Create Sql")
		obj := *n.Object
		st.run = func(ctx context.Context, _ []types.Datum) (pgwire.Result, error) {
			rel, err := s.lookup(obj.Schema, obj.Name)
			if err != nil {
				return nil, err
			}
			def := rel.Definition
			if rel.Kind == catalog.KindView {
				def = fmt.Sprintf("CREATE VIEW %s AS %s", rel.Name, rel.Definition)
			}
			if rel.Job != nil && rel.Job.EmitOnWindowClose {
				def += " EMIT ON WINDOW CLOSE"
			}
			return textRows([]string{"Name", "Create Sql"}, [][]string{{rel.QualifiedName(), catalog.MaskSecrets(def)}}, ""), nil
		}
	case "jobs":
		st.cols = textColumns("Id", "Statement", "Create Type", "Progress")
		st.run = func(ctx context.Context, _ []types.Datum) (pgwire.Result, error) { return s.showJobs(), nil }
	default:
		return types.Errorf(types.ErrUnsupported, "SHOW %s is not supported", strings.ReplaceAll(n.Kind, "_", " "))
	}
	return nil
}

func sortRows(rows [][]string) [][]string {
	for i := 1; i < len(rows); i++ {
		for j := i; j > 0 && rows[j][0] < rows[j-1][0]; j-- {
			rows[j], rows[j-1] = rows[j-1], rows[j]
		}
	}
	return rows
}

// showColumns answers DESCRIBE / SHOW COLUMNS like RisingWave: one row per
// column, then the primary key.
func (s *Session) showColumns(schema, name string) (pgwire.Result, error) {
	rel, err := s.lookup(schema, name)
	if err != nil {
		return nil, err
	}
	var rows [][]string
	for _, c := range rel.Columns {
		if c.Hidden {
			continue
		}
		rows = append(rows, []string{c.Name, c.Type.String(), "false", "NULL"})
	}
	var pk []string
	for _, k := range rel.PK {
		if !rel.Columns[k].Hidden {
			pk = append(pk, rel.Columns[k].Name)
		}
	}
	if len(pk) > 0 {
		rows = append(rows, []string{"primary key", strings.Join(pk, ", "), "", "NULL"})
	}
	return textRows([]string{"Name", "Type", "Is Hidden", "Description"}, rows, ""), nil
}

// systemParams lists the system parameters (SHOW PARAMETERS).
func (e *Engine) systemParams() [][]string {
	e.ddl.Lock()
	defer e.ddl.Unlock()
	return [][]string{
		{"barrier_interval_ms", strconv.FormatInt(e.cfg.BarrierInterval.Milliseconds(), 10), "true"},
		{"checkpoint_frequency", "1", "false"},
		{maxCreatingParam, cmp.Or(e.params[maxCreatingParam], "0"), "true"},
		{"streaming_parallelism_default", strconv.Itoa(e.cfg.Parallelism), "false"},
		{"memory_limit", e.memoryLimit(), "false"},
	}
}

// alterSystem is ALTER SYSTEM SET name = value: persisted, applied online.
func (s *Session) alterSystem(ctx context.Context, n *parser.Alter) (pgwire.Result, error) {
	if n.Key == maxCreatingParam {
		v := int64(0)
		if !n.Default {
			var err error
			if v, err = strconv.ParseInt(strings.TrimSpace(n.Value), 10, 64); err != nil || v < 0 || v > 1<<20 {
				return nil, types.Errorf(types.ErrInvalidParameter, "%s must be a non-negative integer (0: no limit)", maxCreatingParam)
			}
		}
		s.eng.ddl.Lock()
		defer s.eng.ddl.Unlock()
		s.eng.params[maxCreatingParam] = strconv.FormatInt(v, 10)
		if _, err := s.eng.coord().Write(ctx, func(_, _ uint64, b *storage.Batch) error {
			return persist.SaveParams(b, s.eng.params)
		}); err != nil {
			return nil, err
		}
		return tagOnly("ALTER_SYSTEM"), nil
	}
	if n.Key != "barrier_interval_ms" {
		return nil, types.Errorf(types.ErrUndefinedObject, "unrecognized or read-only system parameter \"%s\"", n.Key)
	}
	ms := int64(1000)
	if !n.Default {
		v, err := strconv.ParseInt(n.Value, 10, 64)
		if err != nil || v < 10 || v > 3_600_000 {
			return nil, types.Errorf(types.ErrInvalidParameter, "barrier_interval_ms must be an integer between 10 and 3600000")
		}
		ms = v
	}
	s.eng.ddl.Lock()
	defer s.eng.ddl.Unlock()
	s.eng.params["barrier_interval_ms"] = strconv.FormatInt(ms, 10)
	if _, err := s.eng.coord().Write(ctx, func(_, _ uint64, b *storage.Batch) error {
		return persist.SaveParams(b, s.eng.params)
	}); err != nil {
		return nil, err
	}
	s.eng.cfg.BarrierInterval = time.Duration(ms) * time.Millisecond
	s.eng.streaming.SetBarrierInterval(s.eng.cfg.BarrierInterval)
	return tagOnly("ALTER_SYSTEM"), nil
}
