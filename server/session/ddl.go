package session

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/catalog/persist"
	"github.com/tributary/tributary/executor/coordinator"
	"github.com/tributary/tributary/server/pgwire"
	"github.com/tributary/tributary/sql/parser"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage"
)

// publish persists and registers a new relation in one epoch.
func (s *Session) publish(ctx context.Context, rel *catalog.Relation) error {
	if u := s.currentUser(); rel.Owner == "" && u != "" && u != catalog.RootRole && s.isRole(u) {
		// The creator owns it ("": root). A trusted user name that is no
		// role acts as root, and what it creates is root's: a role of that
		// name created later must not inherit it.
		rel.Owner = u
	}
	if rel.Database == "" {
		rel.Database = s.relDB()
	}
	_, err := s.eng.coord().Write(ctx, func(_, _ uint64, b *storage.Batch) error {
		if err := s.eng.Catalog.Add(rel); err != nil {
			return err
		}
		if err := persist.Save(b, rel, s.eng.Catalog.PeekNextID()); err != nil {
			s.eng.Catalog.Remove(rel.ID)
			return err
		}
		return nil
	})
	if err != nil {
		s.eng.Catalog.Remove(rel.ID)
	}
	return err
}

func (s *Session) exists(schema, name string, ifNotExists bool, tag string) (pgwire.Result, bool, error) {
	old, err := s.lookup(schema, name)
	if err != nil {
		return nil, false, nil
	}
	if ifNotExists {
		s.notifier.Notice("NOTICE", "42P07", fmt.Sprintf("relation \"%s\" already exists, skipping", name))
		return tagOnly(tag), true, nil
	}
	return nil, true, types.Errorf(types.ErrDuplicateTable, "relation \"%s\" already exists", old.Name)
}

// columnOf is a column definition of CREATE TABLE or CREATE SOURCE: its
// name (not the reserved row id's), type, NOT NULL and DEFAULT.
// table names the table whose column it is ("" for a source's): serial and
// identity columns get the sequence table_column_seq.
func columnOf(cd *parser.ColumnDef, table string) (catalog.Column, error) {
	if cd.Name == catalog.RowIDColumn {
		return catalog.Column{}, types.Errorf(types.ErrInvalidName, "column name \"%s\" is reserved", cd.Name)
	}
	t, err := types.FromName(cd.Type.Name, cd.Type.Args)
	if err == nil && cd.Type.Array {
		t = types.ArrayOf(t)
	}
	if err != nil {
		return catalog.Column{}, err
	}
	col := catalog.Column{Name: cd.Name, Type: t, NotNull: cd.NotNull, Default: cd.DefaultText, Generated: cd.GeneratedText}
	if !cd.Serial && cd.Identity == "" {
		return col, nil
	}
	if table == "" {
		return col, types.Errorf(types.ErrUnsupported, "serial and identity columns are only supported in tables")
	}
	if !t.IsInteger() {
		return col, types.Errorf(types.ErrInvalidParameter, "identity column type must be smallint, integer, or bigint")
	}
	seq, err := newSequence(table+"_"+cd.Name+"_seq", t, cd.SeqStart, cd.SeqIncrement)
	if err != nil {
		return col, err
	}
	col.Seq = seq
	switch cd.Identity {
	case "always":
		col.Identity = "a"
	case "by default":
		col.Identity = "d"
	default:
		col.Default = catalog.NextvalSQL(seq.Name)
	}
	return col, nil
}

// newSequence is the sequence of an integer column of type t, as
// PostgreSQL makes it: ascending from 1 to the type's maximum, or with a
// negative increment descending from -1 to its minimum; start and
// increment are the options given (0: not given).
func newSequence(name string, t types.T, start, increment int64) (*catalog.Sequence, error) {
	hi := int64(math.MaxInt64)
	switch t.ID {
	case types.Int16:
		hi = math.MaxInt16
	case types.Int32:
		hi = math.MaxInt32
	}
	seq := &catalog.Sequence{Name: name, Increment: 1, Min: 1, Max: hi}
	if increment != 0 {
		seq.Increment = increment
	}
	if seq.Increment < 0 {
		seq.Min, seq.Max = -hi-1, -1
		seq.Start = seq.Max
	} else {
		seq.Start = seq.Min
	}
	if start != 0 {
		seq.Start = start
	}
	if seq.Start < seq.Min {
		return nil, types.Errorf(types.ErrInvalidParameter, "START value (%d) cannot be less than MINVALUE (%d)", seq.Start, seq.Min)
	}
	if seq.Start > seq.Max {
		return nil, types.Errorf(types.ErrInvalidParameter, "START value (%d) cannot be greater than MAXVALUE (%d)", seq.Start, seq.Max)
	}
	return seq, nil
}

// resolveKey sets rel's primary key to the named columns (NOT NULL).
func resolveKey(rel *catalog.Relation, names []string) error {
	for _, name := range names {
		idx := rel.ColumnIndex(name)
		if idx < 0 {
			return types.Errorf(types.ErrUndefinedColumn, "column \"%s\" named in key does not exist", name)
		}
		if slices.Contains(rel.PK, idx) {
			return types.Errorf(types.ErrDuplicateColumn, "column \"%s\" appears twice in primary key constraint", name)
		}
		rel.Columns[idx].NotNull = true
		rel.PK = append(rel.PK, idx)
	}
	return nil
}

// setWatermark records a WATERMARK FOR clause on rel (a source or an
// append-only table), checking its column is a timestamp.
func setWatermark(rel *catalog.Relation, w *parser.Watermark) error {
	if w == nil {
		return nil
	}
	if rel.Kind == catalog.KindTable && !rel.AppendOnly {
		return types.Errorf(types.ErrInvalidTableDefinition,
			"WATERMARK FOR is only supported on append-only tables and sources: declare table \"%s\" APPEND ONLY", rel.Name)
	}
	i := rel.ColumnIndex(w.Column)
	if i < 0 || rel.Columns[i].Hidden {
		return types.Errorf(types.ErrUndefinedColumn, "column \"%s\" named in WATERMARK FOR does not exist", w.Column)
	}
	if t := rel.Columns[i].Type.ID; t != types.Timestamp && t != types.Timestamptz {
		return types.Errorf(types.ErrDatatypeMismatch,
			"the watermark column \"%s\" must be timestamp or timestamp with time zone, not %s", w.Column, rel.Columns[i].Type)
	}
	rel.Watermark = &catalog.Watermark{Column: w.Column, Delay: w.Delay}
	if _, err := rel.Watermark.DelayInterval(); err != nil {
		return err
	}
	return nil
}

func (s *Session) createTable(ctx context.Context, n *parser.CreateTable) (pgwire.Result, error) {
	if n.AsQuery != nil {
		return s.createTableAs(ctx, n)
	}
	s.eng.ddl.Lock()
	defer s.eng.ddl.Unlock()
	schema, err := s.schemaOf(n.Name)
	if err != nil {
		return nil, err
	}
	if n.Format != nil && len(n.With) == 0 {
		return nil, types.Errorf(types.ErrUnsupported, "FORMAT ... ENCODE needs a connector: WITH (connector = ...)")
	}
	if len(n.Include) > 0 && len(n.With) == 0 {
		return nil, types.Errorf(types.ErrUnsupported, "INCLUDE needs a connector: WITH (connector = ...)")
	}
	if n.FromSource != nil && (n.Format != nil || len(n.Include) > 0 || n.AppendOnly) {
		return nil, types.Errorf(types.ErrUnsupported, "CREATE TABLE ... FROM source TABLE takes no FORMAT, INCLUDE or APPEND ONLY: the source's options apply")
	}
	if res, found, err := s.exists(schema, n.Name.Name, n.IfNotExists, "CREATE TABLE"); found {
		return res, err
	}
	rel := &catalog.Relation{Database: s.relDB(), Schema: schema, Name: n.Name.Name, Kind: catalog.KindTable, Definition: n.Text(), AppendOnly: n.AppendOnly, OnConflict: n.OnConflict, CreatedAt: time.Now().UTC()}
	pkNames := slices.Clone(n.PrimaryKey)
	for _, cd := range n.Columns {
		col, err := columnOf(cd, n.Name.Name)
		if err != nil {
			return nil, err
		}
		col.NotNull = col.NotNull || cd.PrimaryKey
		if cd.PrimaryKey && !slices.Contains(pkNames, cd.Name) {
			pkNames = append(pkNames, cd.Name)
		}
		rel.Columns = append(rel.Columns, col)
	}
	s.uniqueSequenceNames(rel)
	if len(rel.Columns) == 0 {
		return nil, types.Errorf(types.ErrUnsupported, "a table needs at least one column")
	}
	// A key naming INCLUDE columns is resolved once they are added.
	deferKey := len(n.Include) > 0 && len(pkNames) > 0
	if !deferKey {
		if err := resolveKey(rel, pkNames); err != nil {
			return nil, err
		}
	}
	if len(rel.PK) == 0 && !deferKey {
		rel.Columns = append(rel.Columns, catalog.Column{Name: catalog.RowIDColumn, Type: types.TInt64, NotNull: true, Hidden: true})
		rel.PK = []int{len(rel.Columns) - 1}
	}
	if n.OnConflict != "" && (len(n.PrimaryKey) == 0 && !slices.ContainsFunc(n.Columns, func(c *parser.ColumnDef) bool { return c.PrimaryKey })) {
		return nil, types.Errorf(types.ErrInvalidTableDefinition, "ON CONFLICT needs a primary key")
	}
	if len(n.VersionColumns) > 0 {
		if n.OnConflict == "ignore" {
			return nil, types.Errorf(types.ErrInvalidTableDefinition, "The with version column syntax cannot be used with the ignore behavior of on conflict")
		}
		for _, name := range n.VersionColumns {
			i := rel.ColumnIndex(name)
			if i < 0 || rel.Columns[i].Hidden {
				return nil, types.Errorf(types.ErrUndefinedColumn, "Version column %s not found", name)
			}
			switch rel.Columns[i].Type.ID {
			case types.Bool, types.Jsonb:
				return nil, types.Errorf(types.ErrDatatypeMismatch, "Version column %s must be of a comparable data type, not %s", name, rel.Columns[i].Type)
			}
			rel.VersionColumns = append(rel.VersionColumns, i)
		}
	}
	if n.OnConflict != "" && (len(n.With) > 0 || n.FromSource != nil) {
		return nil, types.Errorf(types.ErrUnsupported, "ON CONFLICT on a table with a connector is not supported yet (its rows replace rows with the same key)")
	}
	// Defaults and generation expressions must bind and fit their column.
	b := s.binder(nil)
	for i := range rel.Columns {
		if rel.Columns[i].Generated != "" {
			if _, err := b.GeneratedExpr(rel, i); err != nil {
				return nil, err
			}
		}
		if rel.Columns[i].Default == "" {
			continue
		}
		if _, err := b.DefaultExpr(&rel.Columns[i]); err != nil {
			return nil, err
		}
	}
	rel.Functions = b.Functions() // those its defaults and generated columns call
	if (len(n.With) > 0 || n.FromSource != nil) && slices.ContainsFunc(rel.Columns, func(c catalog.Column) bool { return c.Generated != "" }) {
		return nil, types.Errorf(types.ErrUnsupported, "generated columns on a table with a connector are not supported yet")
	}
	if len(n.With) > 0 && n.FromSource == nil {
		var key []string
		if deferKey {
			key = pkNames
		}
		if err := s.connectorOptions(ctx, rel, n.With, n.Format, n.Include, key); err != nil {
			return nil, err
		}
	}
	if n.FromSource != nil {
		if err := s.sourceTableOptions(ctx, rel, *n.FromSource, n.SourceTable, n.With); err != nil {
			return nil, err
		}
	}
	if err := setWatermark(rel, n.Watermark); err != nil {
		return nil, err
	}
	rel.ID = s.eng.Catalog.NextID()
	copies := false // a CDC table: its job copies the upstream table first
	if rel.Connector != nil {
		rel.StateTables = []uint32{s.eng.Catalog.NextID()} // the source's split offsets
		if copies = copiesFirst(rel); copies {
			share := rel.Job // resolveTable's: the parallelism of a job whose actors share out the splits
			if rel.Job, err = s.tableJobSettings(); err != nil {
				return nil, err
			}
			if share != nil {
				rel.Job.Parallelism = share.Parallelism
			}
		}
	}
	if err := s.publish(ctx, rel); err != nil {
		return nil, err
	}
	s.eng.coord().AddTable(rel.ID, rel.ColumnTypes())
	if !isConnectorTable(rel) {
		return tagOnly("CREATE TABLE"), nil
	}
	root := s.planner().ConnectorTable(rel)
	opts := coordinator.OptionsFor(rel, root)
	bg, _ := s.vars.get("background_ddl")
	opts.Background = !copies || bg == "true"
	if err := s.eng.coord().AddJob(ctx, rel.StateTables[0], root, opts); err != nil {
		// Undo the table: it must not exist without its source.
		s.abandonConnectorTable(rel)
		return nil, err
	}
	if opts.Background {
		return tagOnly("CREATE TABLE"), nil
	}
	// A CDC table returns once the copy is in, as CREATE MATERIALIZED VIEW
	// does once its backfill is (background_ddl: at once). The DDL lock is
	// released meanwhile.
	err = s.eng.withoutDDLLock(func() error { return s.waitJob(ctx, rel, "table", nil) })
	if err == nil {
		if _, ok := s.eng.Catalog.ByID(rel.ID); !ok {
			return nil, fmt.Errorf("create table %s: it was dropped while it copied", rel.Name)
		}
	}
	if err != nil {
		if _, ok := s.eng.Catalog.ByID(rel.ID); ok {
			s.abandonConnectorTable(rel)
		}
		if ctx.Err() != nil {
			return nil, types.Errorf(types.ErrQueryCanceled, "canceling statement due to user request")
		}
		return nil, fmt.Errorf("create table %s: %w", rel.Name, err)
	}
	return tagOnly("CREATE TABLE"), nil
}

// abandonConnectorTable removes a connector table whose CREATE failed or
// was canceled: its job, its DML source, its rows and state, what its
// connector holds upstream (a replication slot) and its descriptor (the
// caller holds the ddl lock). When the streaming engine failed, the
// recovery deletes what it stored, as for abandonJob.
func (s *Session) abandonConnectorTable(rel *catalog.Relation) {
	ctx := context.Background()
	s.eng.streaming.Abandon(ctx, rel, rel.StateTables[0])
	s.eng.SinkLog().ForgetSource(rel.QualifiedName())
	releaseSource(ctx, rel)
	s.eng.Catalog.Remove(rel.ID)
}

func (s *Session) createView(ctx context.Context, n *parser.CreateView) (pgwire.Result, error) {
	s.eng.ddl.Lock()
	defer s.eng.ddl.Unlock()
	schema, err := s.schemaOf(n.Name)
	if err != nil {
		return nil, err
	}
	if n.OrReplace {
		return nil, types.Errorf(types.ErrUnsupported, "CREATE OR REPLACE VIEW is not supported")
	}
	if res, found, err := s.exists(schema, n.Name.Name, n.IfNotExists, "CREATE VIEW"); found {
		return res, err
	}
	b := s.binder(nil)
	pq, err := b.Query(n.Query)
	if err != nil {
		return nil, err
	}
	if b.NumParams() > 0 {
		return nil, types.Errorf(types.ErrUndefinedParameter, "there is no parameter $1")
	}
	if err := s.checkRead(b.Referenced()); err != nil {
		return nil, err
	}
	rel := &catalog.Relation{Database: s.relDB(), Schema: schema, Name: n.Name.Name, Kind: catalog.KindView, Definition: n.Query.Text(), CreatedAt: time.Now().UTC()}
	fields := pq.Root.Schema()
	k := 0
	for _, f := range fields {
		if f.Hidden {
			continue
		}
		name := f.Name
		if k < len(n.Columns) {
			name = n.Columns[k]
		}
		rel.Columns = append(rel.Columns, catalog.Column{Name: name, Type: f.Type})
		k++
	}
	if len(n.Columns) > k {
		return nil, types.Errorf(types.ErrSyntax, "CREATE VIEW specifies more column names than columns")
	}
	rel.DependsOn = b.Dependencies()
	rel.Functions = b.Functions()
	rel.Refs = pinned(b.Refs())
	rel.ID = s.eng.Catalog.NextID()
	if err := s.publish(ctx, rel); err != nil {
		return nil, err
	}
	return tagOnly("CREATE VIEW"), nil
}

var dropKinds = map[parser.ObjectKind]catalog.Kind{
	parser.KindTable:            catalog.KindTable,
	parser.KindView:             catalog.KindView,
	parser.KindMaterializedView: catalog.KindMaterializedView,
	parser.KindSink:             catalog.KindSink,
	parser.KindSource:           catalog.KindSource,
	parser.KindIndex:            catalog.KindIndex,
}

func (s *Session) drop(ctx context.Context, n *parser.Drop) (pgwire.Result, error) {
	s.eng.ddl.Lock()
	defer s.eng.ddl.Unlock()
	return s.dropLocked(ctx, n)
}

// dropLocked is drop with the ddl lock held.
func (s *Session) dropLocked(ctx context.Context, n *parser.Drop) (pgwire.Result, error) {
	kind, ok := dropKinds[n.Kind]
	tag := "DROP " + n.Kind.String()
	if !ok {
		return nil, types.Errorf(types.ErrUnsupported, "DROP %s is not supported", n.Kind)
	}
	var victims []*catalog.Relation
	for _, name := range n.Names {
		if name.Database != "" && name.Database != s.db() {
			return nil, types.Errorf(types.ErrUnsupported, "cross-database references are not implemented: \"%s\"", name.QualifiedString())
		}
		rel, err := s.lookup(name.Schema, name.Name)
		if err != nil || rel.Kind == catalog.KindSystem {
			if n.IfExists {
				s.notifier.Notice("NOTICE", "00000", fmt.Sprintf("%s \"%s\" does not exist, skipping", kind, name.Name))
				continue
			}
			switch kind {
			case catalog.KindTable:
				return nil, types.Errorf(types.ErrUndefinedTable, "table \"%s\" does not exist", name.Name)
			case catalog.KindIndex: // PostgreSQL's code for a missing index (42P01 is for relations read)
				return nil, types.Errorf(types.ErrUndefinedObject, "index \"%s\" does not exist", name.Name)
			}
			return nil, types.Errorf(types.ErrUndefinedTable, "%s \"%s\" does not exist", kind, name.Name)
		}
		if rel.Kind != kind {
			return nil, types.Errorf(types.ErrWrongObjectType, "\"%s\" is not a %s", rel.Name, kind)
		}
		if err := s.checkOwner(rel); err != nil {
			return nil, err
		}
		all, err := s.dropClosure(rel, n.Cascade)
		if err != nil {
			return nil, err
		}
		for _, r := range all {
			if !slices.Contains(victims, r) {
				victims = append(victims, r)
			}
		}
	}
	if len(victims) == 0 {
		return tagOnly(tag), nil
	}
	// Stop the streaming jobs first (dependents come before what they read),
	// then remove descriptors, rows and state in one epoch.
	for _, r := range victims {
		var err error
		switch r.Kind {
		case catalog.KindMaterializedView, catalog.KindSink, catalog.KindIndex:
			err = s.eng.coord().DropJob(ctx, r.ID)
		case catalog.KindSource:
			if isSharedSource(r) {
				err = s.eng.coord().DropJob(ctx, r.ID)
				s.eng.SinkLog().ForgetSource(r.QualifiedName())
			}
			if tablesSource(r) {
				releaseSource(ctx, r) // a CDC source's slot, when its CREATE made it
			}
		case catalog.KindTable:
			if isConnectorTable(r) {
				if err = s.eng.coord().DropJob(ctx, r.StateTables[0]); err != nil {
					break
				}
				s.eng.SinkLog().ForgetSource(r.QualifiedName())
				releaseSource(ctx, r)
			}
			err = s.eng.coord().DropTable(ctx, r.ID)
		}
		if err != nil {
			return nil, err
		}
	}
	if err := s.dropStreamingState(ctx, victims); err != nil {
		return nil, err
	}
	for _, r := range victims {
		s.eng.Catalog.Remove(r.ID)
	}
	return tagOnly(tag), nil
}

// dropClosure returns rel and, with cascade, everything depending on it;
// without cascade a dependent refuses the drop (2BP01).
func (s *Session) dropClosure(rel *catalog.Relation, cascade bool) ([]*catalog.Relation, error) {
	deps := s.eng.Catalog.Dependents(rel.ID)
	// The sinks writing into a table go with it, as in RisingWave: they
	// have nowhere else to write.
	var blocking []*catalog.Relation
	for _, d := range deps {
		// A relation's indexes go with it too, as in PostgreSQL.
		if !d.SinksInto(rel) && d.Kind != catalog.KindIndex {
			blocking = append(blocking, d)
		}
	}
	for _, d := range deps {
		if d.DB() != rel.DB() {
			// CASCADE does not reach into other databases (as in RisingWave).
			return nil, &types.Error{Kind: types.ErrDependentObjects,
				Msg:    fmt.Sprintf("cannot drop %s %s because other objects depend on it", rel.Kind, rel.Name),
				Detail: fmt.Sprintf("%s %s.%s.%s in another database depends on %s %s", d.Kind, d.DB(), d.Schema, d.Name, rel.Kind, rel.Name),
				Hint:   fmt.Sprintf("Drop the dependent objects in database %s first.", d.DB())}
		}
	}
	if len(blocking) > 0 && !cascade {
		return nil, &types.Error{Kind: types.ErrDependentObjects,
			Msg:    fmt.Sprintf("cannot drop %s %s because other objects depend on it", rel.Kind, rel.Name),
			Detail: fmt.Sprintf("%s %s depends on %s %s", blocking[0].Kind, blocking[0].Name, rel.Kind, rel.Name),
			Hint:   "Use DROP ... CASCADE to drop the dependent objects too."}
	}
	out := []*catalog.Relation{}
	for _, d := range deps {
		sub, err := s.dropClosure(d, cascade)
		if err != nil {
			return nil, err
		}
		out = append(out, sub...)
	}
	return append(out, rel), nil
}
