package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/catalog/persist"
	"github.com/tributary/tributary/connector/postgrescdc"
	"github.com/tributary/tributary/executor/batch"
	"github.com/tributary/tributary/planner/plan"
	"github.com/tributary/tributary/server/pgwire"
	"github.com/tributary/tributary/sql/expr"
	"github.com/tributary/tributary/sql/parser"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage"
	"github.com/tributary/tributary/storage/state"
)

// truncate runs TRUNCATE: every row of each table is deleted through the
// normal write path (TableSet.DeleteAll), in one epoch (or in the
// transaction block's pending writes), so the views over the tables retract
// the rows incrementally. Tables fed by a connector are refused (their rows
// come from the outside), and so are append-only tables.
func (s *Session) truncate(ctx context.Context, n *parser.Truncate) (pgwire.Result, error) {
	var rels []*catalog.Relation
	for _, name := range n.Names {
		rel, err := s.lookup(name.Schema, name.Name)
		if err != nil {
			return nil, err
		}
		if rel.Kind != catalog.KindTable {
			return nil, types.Errorf(types.ErrWrongObjectType, "\"%s\" is not a table", rel.Name)
		}
		if rel.Connector != nil {
			return nil, types.Errorf(types.ErrWrongObjectType, "cannot truncate table \"%s\": its rows come from connector %s", rel.Name, rel.Connector.Name())
		}
		if rel.AppendOnly {
			return nil, types.Errorf(types.ErrUnsupported, "append-only table \"%s\" does not support TRUNCATE", rel.Name)
		}
		if err := s.checkPriv(rel, "delete"); err != nil {
			return nil, err
		}
		if !containsRel(rels, rel.ID) {
			rels = append(rels, rel)
		}
	}
	err := s.write(ctx, func(tables *batch.TableSet, snapshot uint64) error {
		for _, rel := range rels {
			if err := tables.DeleteAll(ctx, rel, snapshot, nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if n.RestartIdentity {
		// Once the rows are gone (not undone by a ROLLBACK of the block,
		// unlike PostgreSQL's).
		for _, rel := range rels {
			for _, c := range rel.Columns {
				if c.Seq != nil {
					if err := s.eng.seqs.set(ctx, rel.ID, c.Name, c.Seq, c.Seq.Start, false); err != nil {
						return nil, err
					}
				}
			}
		}
	}
	return tagOnly("TRUNCATE TABLE"), nil
}

func containsRel(rels []*catalog.Relation, id uint32) bool {
	for _, r := range rels {
		if r.ID == id {
			return true
		}
	}
	return false
}

// alterTag is the command tag of ALTER kind.
func alterTag(k parser.ObjectKind) string { return "ALTER " + k.String() }

// alterTarget finds the relation an ALTER names and checks that the
// statement's kind fits it (ALTER TABLE also takes views and materialized
// views, as in PostgreSQL) and that the session owns it. With ifExists a
// missing relation gives nil and a notice.
func (s *Session) alterTarget(kind parser.ObjectKind, name parser.ObjectName, ifExists bool) (*catalog.Relation, error) {
	rel, err := s.lookup(name.Schema, name.Name)
	if err != nil || rel.Kind == catalog.KindSystem {
		if ifExists {
			s.notifier.Notice("NOTICE", "00000", fmt.Sprintf("relation \"%s\" does not exist, skipping", name.Name))
			return nil, nil
		}
		if err == nil {
			return nil, types.Errorf(types.ErrInsufficientPrivilege, "permission denied: \"%s\" is a system catalog", rel.Name)
		}
		return nil, err
	}
	want, ok := dropKinds[kind]
	if !ok {
		return nil, types.Errorf(types.ErrUnsupported, "ALTER %s is not supported", kind)
	}
	fits := rel.Kind == want
	if kind == parser.KindTable {
		fits = rel.Kind == catalog.KindTable || rel.Kind == catalog.KindView || rel.Kind == catalog.KindMaterializedView
	}
	if !fits {
		return nil, types.Errorf(types.ErrWrongObjectType, "\"%s\" is not a %s", rel.Name, want)
	}
	if err := s.checkOwner(rel); err != nil {
		return nil, err
	}
	return rel, nil
}

// pinRefs pins the names in the definitions of every relation depending on
// rel that has not pinned them yet (catalog.Relation.Refs), as they
// resolve now, before rel changes: renames and added columns then leave
// their meaning alone. It returns the changed descriptors, to save with
// the change.
func (s *Session) pinRefs(rel *catalog.Relation) ([]*catalog.Relation, error) {
	var out []*catalog.Relation
	for _, d := range s.eng.Catalog.Dependents(rel.ID) {
		if d.Refs != nil || d.Definition == "" {
			continue
		}
		var q *parser.Query
		switch d.Kind {
		case catalog.KindView, catalog.KindMaterializedView, catalog.KindSink:
			stmts, err := parser.Parse(d.Definition)
			if err != nil || len(stmts) != 1 {
				return nil, fmt.Errorf("%s %s: its definition does not parse: %v", d.Kind, d.Name, err)
			}
			var ok bool
			if q, ok = stmts[0].(*parser.Query); !ok {
				return nil, fmt.Errorf("%s %s: its definition is not a query", d.Kind, d.Name)
			}
		default:
			continue
		}
		// On the default path, as the definition was bound at its CREATE.
		b := s.binderOn(s.eng.Catalog, nil)
		if _, err := b.Query(q); err != nil {
			return nil, fmt.Errorf("%s %s: bind its definition: %w", d.Kind, d.Name, err)
		}
		c := *d
		c.Refs = pinned(b.Refs())
		out = append(out, &c)
	}
	return out, nil
}

// saveRelations persists descriptors in one epoch and publishes them
// (Catalog.Rename for one whose name changed); the caller holds the ddl lock.
func (s *Session) saveRelations(ctx context.Context, rels []*catalog.Relation) error {
	_, err := s.eng.coord().Write(ctx, func(_, _ uint64, b *storage.Batch) error {
		for _, r := range rels {
			if err := persist.Save(b, r, s.eng.Catalog.PeekNextID()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, r := range rels {
		old, ok := s.eng.Catalog.ByID(r.ID)
		if ok && old.QualifiedName() != r.QualifiedName() {
			err = s.eng.Catalog.Rename(r)
		} else {
			err = s.eng.Catalog.Replace(r)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// merge puts r into rels, replacing the entry with its id.
func merge(rels []*catalog.Relation, r *catalog.Relation) []*catalog.Relation {
	for i, x := range rels {
		if x.ID == r.ID {
			rels[i] = r
			return rels
		}
	}
	return append(rels, r)
}

// current returns the entry of rels with id, or the catalog's.
func (s *Session) current(rels []*catalog.Relation, id uint32) *catalog.Relation {
	for _, x := range rels {
		if x.ID == id {
			return x
		}
	}
	r, _ := s.eng.Catalog.ByID(id)
	return r
}

// rename runs ALTER ... RENAME TO and ALTER TABLE ... RENAME [COLUMN]. The
// definitions that read the relation pin what they name first (pinRefs),
// so they keep working under the new names; nothing is rewritten and no
// job restarts.
func (s *Session) rename(ctx context.Context, n *parser.Rename) (pgwire.Result, error) {
	s.eng.ddl.Lock()
	defer s.eng.ddl.Unlock()
	tag := alterTag(n.Kind)
	rel, err := s.alterTarget(n.Kind, n.Name, n.IfExists)
	if err != nil || rel == nil {
		return tagOnly(tag), err
	}
	changed, err := s.pinRefs(rel)
	if err != nil {
		return nil, err
	}
	r := *rel
	if n.Column == "" {
		schema := rel.Schema
		if n.NewSchema != "" {
			if schema, err = s.schemaOf(parser.ObjectName{Schema: n.NewSchema, Name: n.NewName}); err != nil {
				return nil, err
			}
		}
		if other, err := s.lookup(schema, n.NewName); err == nil && other.ID != rel.ID {
			if n.NewSchema != "" {
				return nil, types.Errorf(types.ErrDuplicateTable, "relation \"%s\" already exists in schema \"%s\"", n.NewName, schema)
			}
			return nil, types.Errorf(types.ErrDuplicateTable, "relation \"%s\" already exists", n.NewName)
		}
		if r.Connector != nil && r.Connector.Name() == "postgres-cdc" {
			// Its replication slot's and publication's default names come
			// from the relation's name: keep them.
			if err := pinCDCNames(&r); err != nil {
				return nil, err
			}
		}
		r.Name, r.Schema = n.NewName, schema
		if r.Sink != nil && r.Sink.Into != "" && r.Sink.IntoSchema == "" && schema != rel.Schema {
			// A moved sink into a table keeps its target's schema.
			sk := *r.Sink
			sk.IntoSchema = rel.Schema
			r.Sink = &sk
		}
		// The definitions naming it are written with the new name when
		// that provably means the same (for pg_get_viewdef, SHOW CREATE).
		for _, d := range s.eng.Catalog.Dependents(rel.ID) {
			if r.Name == rel.Name {
				break // moved to another schema: its pins find it
			}
			if c, ok := s.renamedDefinition(s.current(changed, d.ID), &r, rel.Name); ok {
				changed = merge(changed, c)
			}
		}
		// Sinks into the table name it.
		for _, d := range s.eng.Catalog.Dependents(rel.ID) {
			if d.SinksInto(rel) {
				c := *s.current(changed, d.ID)
				sk := *c.Sink
				sk.Into, sk.IntoSchema = n.NewName, ""
				if r.Schema != c.Schema {
					sk.IntoSchema = r.Schema
				}
				c.Sink = &sk
				changed = merge(changed, &c)
			}
		}
	} else {
		i := rel.ColumnIndex(n.Column)
		if i < 0 || rel.Columns[i].Hidden {
			return nil, types.Errorf(types.ErrUndefinedColumn, "column \"%s\" does not exist", n.Column)
		}
		if j := rel.ColumnIndex(n.NewName); j >= 0 {
			return nil, types.Errorf(types.ErrDuplicateColumn, "column \"%s\" of relation \"%s\" already exists", n.NewName, rel.Name)
		}
		for _, c := range rel.Columns {
			if c.Generated != "" {
				return nil, types.Errorf(types.ErrUnsupported, "cannot rename a column of table \"%s\": it has generated columns, whose expressions name columns", rel.Name)
			}
		}
		if rel.Connector != nil {
			return nil, types.Errorf(types.ErrUnsupported, "cannot rename a column of \"%s\": its connector reads columns by name", rel.Name)
		}
		r.Columns = slices.Clone(rel.Columns)
		r.Columns[i].Name = n.NewName
		if rel.Watermark != nil && rel.Watermark.Column == n.Column {
			w := *rel.Watermark
			w.Column = n.NewName
			r.Watermark = &w
		}
		// Sinks into the table list its columns by name.
		for _, d := range s.eng.Catalog.Dependents(rel.ID) {
			if d.SinksInto(rel) && slices.Contains(d.Sink.IntoColumns, n.Column) {
				c := *s.current(changed, d.ID)
				sk := *c.Sink
				sk.IntoColumns = slices.Clone(sk.IntoColumns)
				sk.IntoColumns[slices.Index(sk.IntoColumns, n.Column)] = n.NewName
				c.Sink = &sk
				changed = merge(changed, &c)
			}
		}
	}
	// r last: a dependent's new descriptor must not be overwritten by the
	// catalog's copy of it.
	if err := s.saveRelations(ctx, append(changed, &r)); err != nil {
		return nil, err
	}
	return tagOnly(tag), nil
}

// pinCDCNames writes a postgres-cdc relation's slot and publication names
// into its options when they are the defaults derived from its name.
func pinCDCNames(r *catalog.Relation) error {
	cfg, err := postgrescdc.ParseConfig(r.Connector.Props, r.QualifiedName(), r.Kind == catalog.KindTable)
	if err != nil {
		return err
	}
	conn := *r.Connector
	conn.Props = maps.Clone(conn.Props)
	if conn.Props[postgrescdc.OptSlot] == "" {
		conn.Props[postgrescdc.OptSlot] = cfg.Slot
	}
	if conn.Props[postgrescdc.OptPublication] == "" {
		conn.Props[postgrescdc.OptPublication] = cfg.Publication
	}
	r.Connector = &conn
	return nil
}

// pinIntoColumns makes every sink into rel that fills "all its columns"
// name them (SinkSettings.IntoColumns), so a column added or dropped later
// does not change what it writes where.
func (s *Session) pinIntoColumns(rel *catalog.Relation, changed []*catalog.Relation) []*catalog.Relation {
	for _, d := range s.eng.Catalog.Dependents(rel.ID) {
		if !d.SinksInto(rel) || len(d.Sink.IntoColumns) > 0 {
			continue
		}
		// As job.Planner.intoMapping fills them: the target's first
		// visible columns, one per visible column of the sink.
		n := 0
		for _, c := range d.Columns {
			if !c.Hidden {
				n++
			}
		}
		var names []string
		for _, c := range rel.Columns {
			if !c.Hidden && len(names) < n {
				names = append(names, c.Name)
			}
		}
		c := *s.current(changed, d.ID)
		sk := *c.Sink
		sk.IntoColumns = names
		c.Sink = &sk
		changed = merge(changed, &c)
	}
	return changed
}

// alterColumn runs ALTER TABLE ... ADD | DROP COLUMN. Stored rows are not
// rewritten: an added column is the last one, and rows stored before read
// its DEFAULT as evaluated now (Column.Missing) or NULL; a dropped column
// keeps its place, hidden and nameless, new rows holding NULL there. The
// definitions over the table pin what they read first (pinRefs), so they
// keep their columns; then the streaming jobs are rebuilt on the new
// descriptor.
func (s *Session) alterColumn(ctx context.Context, n *parser.AlterColumn) (pgwire.Result, error) {
	s.eng.ddl.Lock()
	defer s.eng.ddl.Unlock()
	const tag = "ALTER TABLE"
	rel, err := s.alterTarget(parser.KindTable, n.Name, n.IfExists)
	if err != nil || rel == nil {
		return tagOnly(tag), err
	}
	if rel.Kind != catalog.KindTable {
		return nil, types.Errorf(types.ErrWrongObjectType, "\"%s\" is not a table", rel.Name)
	}
	if rel.Connector != nil {
		return nil, types.Errorf(types.ErrUnsupported, "cannot add or drop a column of table \"%s\": its rows come from connector %s", rel.Name, rel.Connector.Name())
	}
	changed, err := s.pinRefs(rel)
	if err != nil {
		return nil, err
	}
	changed = s.pinIntoColumns(rel, changed)
	r := *rel
	r.Columns = slices.Clone(rel.Columns)
	if n.Add != nil {
		done, err := s.addColumn(ctx, &r, n)
		if err != nil || done {
			return tagOnly(tag), err
		}
	} else {
		users, done, err := s.dropColumn(&r, n, changed)
		if err != nil || done {
			return tagOnly(tag), err
		}
		// CASCADE: what reads the column goes first, with its own dependents.
		for _, d := range users {
			if _, ok := s.eng.Catalog.ByID(d.ID); !ok {
				continue // gone with an earlier one
			}
			s.notifier.Notice("NOTICE", "00000", fmt.Sprintf("drop cascades to %s %s", d.Kind, d.Name))
			drop := &parser.Drop{Kind: parserKind[d.Kind], Names: []parser.ObjectName{{Schema: d.Schema, Name: d.Name}}, IfExists: true, Cascade: true}
			if _, err := s.dropLocked(ctx, drop); err != nil {
				return nil, err
			}
		}
		var kept []*catalog.Relation
		for _, c := range changed {
			if _, ok := s.eng.Catalog.ByID(c.ID); ok {
				kept = append(kept, c)
			}
		}
		changed = kept
	}
	if err := s.saveRelations(ctx, append(changed, &r)); err != nil {
		return nil, err
	}
	// Jobs reading the table (its DML stream, backfills, sinks into it)
	// are planned again on the new descriptor, from committed state.
	if err := s.eng.rescheduleLocked(ctx); err != nil {
		return nil, fmt.Errorf("alter table %s: restart the streaming jobs: %w", rel.Name, err)
	}
	return tagOnly(tag), nil
}

// addColumn appends n.Add to r; done reports a skipped ADD ... IF NOT EXISTS.
func (s *Session) addColumn(ctx context.Context, r *catalog.Relation, n *parser.AlterColumn) (done bool, err error) {
	cd := n.Add
	if i := r.ColumnIndex(cd.Name); i >= 0 && !r.Columns[i].Dropped {
		if n.ColumnIf {
			s.notifier.Notice("NOTICE", "42701", fmt.Sprintf("column \"%s\" of relation \"%s\" already exists, skipping", cd.Name, r.Name))
			return true, nil
		}
		return false, types.Errorf(types.ErrDuplicateColumn, "column \"%s\" of relation \"%s\" already exists", cd.Name, r.Name)
	}
	switch {
	case cd.PrimaryKey:
		return false, types.Errorf(types.ErrUnsupported, "ALTER TABLE ... ADD COLUMN ... PRIMARY KEY is not supported: a table's primary key is fixed at CREATE")
	case cd.Serial || cd.Identity != "":
		return false, types.Errorf(types.ErrUnsupported, "ALTER TABLE ... ADD COLUMN of a serial or identity column is not supported")
	case cd.Generated != nil:
		return false, types.Errorf(types.ErrUnsupported, "ALTER TABLE ... ADD COLUMN of a generated column is not supported")
	}
	col, err := columnOf(cd, r.Name)
	if err != nil {
		return false, err
	}
	hasRows, err := s.hasRows(ctx, r)
	if err != nil {
		return false, err
	}
	if col.Default != "" {
		e, err := s.binder(nil).DefaultExpr(&col)
		if err != nil {
			return false, err
		}
		if hasRows {
			if volatile(e) {
				return false, types.Errorf(types.ErrUnsupported, "ALTER TABLE ... ADD COLUMN with a volatile DEFAULT on a table with rows is not supported (each stored row would need its own value)")
			}
			d, err := e.EvalRow(s.exprCtx(nil), nil)
			if err != nil {
				return false, err
			}
			if !d.Null {
				text := types.FormatText(col.Type, &d)
				col.Missing = &text
			}
		}
	}
	if col.NotNull && hasRows && col.Missing == nil {
		return false, types.Errorf(types.ErrNotNullViolation, "column \"%s\" of relation \"%s\" contains null values", col.Name, r.Name)
	}
	r.Columns = append(r.Columns, col)
	return false, nil
}

// volatile reports whether e calls a volatile function.
func volatile(e expr.Expr) bool {
	found := false
	expr.Walk(e, func(x expr.Expr) bool {
		if f, ok := x.(*expr.FuncExpr); ok && f.Volatility == expr.Volatile {
			found = true
		}
		return !found
	})
	return found
}

// hasRows reports whether table rel holds a committed row.
func (s *Session) hasRows(ctx context.Context, rel *catalog.Relation) (bool, error) {
	t, err := state.New(s.eng.Store, batch.StateSchema(rel))
	if err != nil {
		return false, err
	}
	it, err := t.Iter(ctx, state.IterOptions{Vnode: state.AllVnodes, Epoch: s.eng.coord().CommittedEpoch()})
	if err != nil {
		return false, err
	}
	defer it.Close()
	switch err := it.Next(); {
	case err == nil:
		return true, nil
	case errors.Is(err, io.EOF):
		return false, nil
	default:
		return false, err
	}
}

// dropColumn marks n.Drop dropped in r, unless something depends on it
// (with CASCADE it returns those, for the caller to drop); done reports a
// skipped DROP ... IF EXISTS.
func (s *Session) dropColumn(r *catalog.Relation, n *parser.AlterColumn, changed []*catalog.Relation) (users []*catalog.Relation, done bool, err error) {
	i := r.ColumnIndex(n.Drop)
	if i < 0 || r.Columns[i].Hidden {
		if n.ColumnIf {
			s.notifier.Notice("NOTICE", "00000", fmt.Sprintf("column \"%s\" of relation \"%s\" does not exist, skipping", n.Drop, r.Name))
			return nil, true, nil
		}
		return nil, false, types.Errorf(types.ErrUndefinedColumn, "column \"%s\" of relation \"%s\" does not exist", n.Drop, r.Name)
	}
	if slices.Contains(r.PK, i) {
		return nil, false, types.Errorf(types.ErrUnsupported, "cannot drop column %s of table %s: it is part of the primary key", n.Drop, r.Name)
	}
	if slices.Contains(r.VersionColumns, i) || r.Watermark != nil && r.Watermark.Column == n.Drop {
		return nil, false, types.Errorf(types.ErrDependentObjects, "cannot drop column %s of table %s: the table's ON CONFLICT version or WATERMARK names it", n.Drop, r.Name)
	}
	for _, c := range r.Columns {
		if c.Generated != "" {
			return nil, false, types.Errorf(types.ErrUnsupported, "cannot drop a column of table \"%s\": it has generated columns, whose expressions name columns", r.Name)
		}
	}
	c := &r.Columns[i]
	c.Name, c.Dropped, c.Hidden, c.NotNull, c.Default, c.Missing, c.Comment = catalog.DroppedName(i), true, true, false, "", nil, ""
	// What reads the column depends on it: a definition that no longer
	// binds, or binds to other columns, without it.
	over := overlay{Path: catalog.Path{Catalog: s.eng.Catalog, Database: r.Database, Search: []string{catalog.DefaultSchema}}, rel: r}
	for _, d := range s.eng.Catalog.Dependents(r.ID) {
		d = s.current(changed, d.ID)
		if d.SinksInto(r) {
			if slices.Contains(d.Sink.IntoColumns, n.Drop) {
				if !n.Cascade {
					// RisingWave's words (its scripts match them), PostgreSQL's SQLSTATE.
					return nil, false, &types.Error{Kind: types.ErrDependentObjects,
						Msg:    fmt.Sprintf("dropping columns in target table of sinks is not supported: sink %s writes column %s of table %s", d.Name, n.Drop, r.Name),
						Detail: fmt.Sprintf("sink %s depends on column %s of table %s", d.Name, n.Drop, r.Name),
						Hint:   "Use DROP ... CASCADE to drop the sink too, or drop the sink first."}
				}
				users = append(users, d)
			}
			continue
		}
		if !slices.ContainsFunc(d.Refs, func(ref catalog.Ref) bool { return ref.ID == r.ID }) {
			continue // it reads the table through a view, which is checked itself
		}
		if !s.stillBinds(over, d) {
			if !n.Cascade {
				return nil, false, dependsOnColumn(d, n.Drop, r.Name)
			}
			users = append(users, d)
		}
	}
	return users, false, nil
}

func dependsOnColumn(d *catalog.Relation, col, table string) error {
	return &types.Error{Kind: types.ErrDependentObjects,
		Msg:    fmt.Sprintf("cannot drop column %s of table %s because other objects depend on it", col, table),
		Detail: fmt.Sprintf("%s %s depends on column %s of table %s", d.Kind, d.Name, col, table),
		Hint:   "Use DROP ... CASCADE to drop the dependent objects too."}
}

// stillBinds reports whether d's definition binds over cat to the same
// visible columns as it has.
func (s *Session) stillBinds(cat catalog.Reader, d *catalog.Relation) bool {
	stmts, err := parser.Parse(d.Definition)
	if err != nil || len(stmts) != 1 {
		return false
	}
	q, ok := stmts[0].(*parser.Query)
	if !ok {
		return false
	}
	pq, err := s.binderOn(cat, nil).WithRefs(d.Refs).Query(q)
	if err != nil {
		return false
	}
	var got []types.T
	for _, f := range pq.Root.Schema() {
		if !f.Hidden {
			got = append(got, f.Type)
		}
	}
	var want []types.T
	for _, c := range d.Columns {
		if !c.Hidden {
			want = append(want, c.Type)
		}
	}
	return slices.EqualFunc(got, want, func(a, b types.T) bool { return a.ID == b.ID })
}

// overlay is a catalog with one relation's descriptor replaced, seen from
// that relation's database.
type overlay struct {
	catalog.Path
	rel *catalog.Relation
}

func (o overlay) ByID(id uint32) (*catalog.Relation, bool) {
	if id == o.rel.ID {
		return o.rel, true
	}
	return o.Path.ByID(id)
}

func (o overlay) Lookup(schema, name string) (*catalog.Relation, error) {
	r, err := o.Path.Lookup(schema, name)
	if err == nil && r.ID == o.rel.ID {
		return o.rel, nil
	}
	return r, err
}

// comment runs COMMENT ON {TABLE | MATERIALIZED VIEW | VIEW | SINK | SOURCE
// | COLUMN} name IS 'text' | NULL: the text is kept with the descriptor
// (psql's \d+ and \dt+, obj_description, col_description show it); NULL or
// an empty text removes it.
func (s *Session) comment(ctx context.Context, n *parser.Comment) (pgwire.Result, error) {
	s.eng.ddl.Lock()
	defer s.eng.ddl.Unlock()
	rel, err := s.lookup(n.Name.Schema, n.Name.Name)
	if err != nil {
		return nil, err
	}
	if rel.Kind == catalog.KindSystem {
		return nil, types.Errorf(types.ErrInsufficientPrivilege, "permission denied: \"%s\" is a system catalog", rel.Name)
	}
	if n.Column == "" {
		if want := dropKinds[n.Kind]; rel.Kind != want {
			return nil, types.Errorf(types.ErrWrongObjectType, "\"%s\" is not a %s", rel.Name, want)
		}
	}
	if err := s.checkOwner(rel); err != nil {
		return nil, err
	}
	text := n.Comment
	if n.Null {
		text = ""
	}
	r := *rel
	if n.Column == "" {
		r.Comment = text
	} else {
		i := rel.ColumnIndex(n.Column)
		if i < 0 || rel.Columns[i].Hidden {
			return nil, types.Errorf(types.ErrUndefinedColumn, "column \"%s\" of relation \"%s\" does not exist", n.Column, rel.Name)
		}
		r.Columns = slices.Clone(rel.Columns)
		r.Columns[i].Comment = text
	}
	if err := s.saveRelations(ctx, []*catalog.Relation{&r}); err != nil {
		return nil, err
	}
	return tagOnly("COMMENT"), nil
}

// comments answers obj_description and col_description (expr.Comments)
// from the catalog; attnum counts visible columns, as pg_attribute does.
type comments struct{ cat *catalog.Catalog }

func (c comments) RelationComment(oid int64) (string, bool) {
	rel, ok := c.cat.ByID(uint32(oid))
	if !ok || oid < 0 || oid > 1<<32-1 || rel.Comment == "" {
		return "", false
	}
	return rel.Comment, true
}

func (c comments) ColumnComment(oid, attnum int64) (string, bool) {
	rel, ok := c.cat.ByID(uint32(oid))
	if !ok || oid < 0 || oid > 1<<32-1 {
		return "", false
	}
	vis := catalog.VisibleColumns(rel)
	if attnum < 1 || attnum > int64(len(vis)) || vis[attnum-1].Comment == "" {
		return "", false
	}
	return vis[attnum-1].Comment, true
}

// createTableAs runs CREATE TABLE name [(columns)] AS query [WITH [NO]
// DATA]: a table (keyed by a hidden row id) with the query's columns,
// filled by INSERT INTO name query through the normal write path. If the
// INSERT fails the table is dropped again. The tag is PostgreSQL's: SELECT
// n, or CREATE TABLE AS WITH NO DATA.
func (s *Session) createTableAs(ctx context.Context, n *parser.CreateTable) (pgwire.Result, error) {
	rel, res, err := s.createTableAsTable(ctx, n)
	if err != nil || res != nil {
		return res, err
	}
	if n.WithNoData {
		return tagOnly("CREATE TABLE AS"), nil
	}
	rows, err := s.insertQuery(ctx, rel, n.AsQuery)
	if err != nil {
		// Not left half made: drop it (its rows went in with the statement or not at all).
		if _, derr := s.drop(context.WithoutCancel(ctx), &parser.Drop{Kind: parser.KindTable, Names: []parser.ObjectName{{Name: rel.Name}}}); derr != nil {
			return nil, fmt.Errorf("%w (and dropping the new table failed: %v)", err, derr)
		}
		return nil, err
	}
	return tagOnly("SELECT " + strconv.FormatInt(rows, 10)), nil
}

// createTableAsTable creates CREATE TABLE AS's table from its query's
// columns; res is set when IF NOT EXISTS found one.
func (s *Session) createTableAsTable(ctx context.Context, n *parser.CreateTable) (*catalog.Relation, pgwire.Result, error) {
	s.eng.ddl.Lock()
	defer s.eng.ddl.Unlock()
	schema, err := s.schemaOf(n.Name)
	if err != nil {
		return nil, nil, err
	}
	if res, found, err := s.exists(schema, n.Name.Name, n.IfNotExists, "CREATE TABLE AS"); found {
		return nil, res, err
	}
	b := s.binder(nil)
	pq, err := b.Query(n.AsQuery)
	if err != nil {
		return nil, nil, err
	}
	if b.NumParams() > 0 {
		return nil, nil, types.Errorf(types.ErrUndefinedParameter, "there is no parameter $1")
	}
	if err := s.checkRead(b.Referenced()); err != nil {
		return nil, nil, err
	}
	rel := &catalog.Relation{Database: s.relDB(), Schema: schema, Name: n.Name.Name, Kind: catalog.KindTable, Definition: n.Text(), CreatedAt: time.Now().UTC()}
	for _, f := range pq.Root.Schema() {
		if f.Hidden {
			continue
		}
		t := f.Type
		if t.ID == types.Unknown {
			t = types.TVarchar
		}
		rel.Columns = append(rel.Columns, catalog.Column{Name: f.Name, Type: t})
	}
	if len(n.AsColumns) > len(rel.Columns) {
		return nil, nil, types.Errorf(types.ErrSyntax, "too many column names were specified")
	}
	for i, name := range n.AsColumns {
		rel.Columns[i].Name = name
	}
	for _, c := range rel.Columns {
		if c.Name == catalog.RowIDColumn {
			return nil, nil, types.Errorf(types.ErrInvalidName, "column name \"%s\" is reserved", c.Name)
		}
	}
	if len(rel.Columns) == 0 {
		return nil, nil, types.Errorf(types.ErrUnsupported, "a table needs at least one column")
	}
	rel.Columns = append(rel.Columns, catalog.Column{Name: catalog.RowIDColumn, Type: types.TInt64, NotNull: true, Hidden: true})
	rel.PK = []int{len(rel.Columns) - 1}
	rel.ID = s.eng.Catalog.NextID()
	if err := s.publish(ctx, rel); err != nil {
		return nil, nil, err
	}
	s.eng.coord().AddTable(rel.ID, rel.ColumnTypes())
	return rel, nil, nil
}

// insertQuery runs INSERT INTO rel q as a statement of the session and
// returns the rows it inserted.
func (s *Session) insertQuery(ctx context.Context, rel *catalog.Relation, q *parser.Query) (int64, error) {
	stmts, err := parser.Parse("INSERT INTO " + quoteIdent(rel.Schema) + "." + quoteIdent(rel.Name) + " " + q.Text())
	if err != nil || len(stmts) != 1 {
		return 0, fmt.Errorf("create table %s as: %v", rel.Name, err)
	}
	st := &statement{s: s, ast: stmts[0], sql: stmts[0].Text()}
	res, err := st.Run(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer res.Close()
	for {
		if _, err := res.Next(ctx); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return 0, err
		}
	}
	tag := res.Tag() // INSERT 0 n
	n, err := strconv.ParseInt(tag[strings.LastIndexByte(tag, ' ')+1:], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("create table %s as: the insert's tag %q", rel.Name, tag)
	}
	return n, nil
}

// pinned is a definition's name resolutions as catalog.Relation.Refs keeps
// them: never nil, so "pinned, nothing named" differs from "not pinned".
func pinned(refs []catalog.Ref) []catalog.Ref {
	if refs == nil {
		return []catalog.Ref{}
	}
	return refs
}

// renamedDefinition returns d with its definition naming relation r (just
// renamed from old) by its new name, or false when d does not name it so
// or the rewritten text would not bind to the very same plan and columns
// (the old name also written for something else, say): the old text, read
// through its Refs, stays right then.
func (s *Session) renamedDefinition(d, r *catalog.Relation, old string) (*catalog.Relation, bool) {
	if d.Definition == "" || d.Refs == nil || !slices.ContainsFunc(d.Refs, func(x catalog.Ref) bool { return x.ID == r.ID && x.Name == old }) {
		return nil, false
	}
	text, k, err := parser.ReplaceIdent(d.Definition, old, r.Name)
	if err != nil || k == 0 {
		return nil, false
	}
	refs := slices.Clone(d.Refs)
	for i := range refs {
		if refs[i].ID == r.ID && refs[i].Name == old {
			refs[i].Name = r.Name
		}
	}
	over := overlay{Path: catalog.Path{Catalog: s.eng.Catalog, Database: r.Database, Search: []string{catalog.DefaultSchema}}, rel: r}
	before, err1 := s.explainDefinition(over, d.Definition, d.Refs)
	after, err2 := s.explainDefinition(over, text, refs)
	if err1 != nil || err2 != nil || before != after {
		return nil, false
	}
	c := *d
	c.Definition, c.Refs = text, refs
	return &c, true
}

// explainDefinition binds a stored definition with its refs over cat and
// prints its plan and output columns.
func (s *Session) explainDefinition(cat catalog.Reader, text string, refs []catalog.Ref) (string, error) {
	stmts, err := parser.Parse(text)
	if err != nil || len(stmts) != 1 {
		return "", fmt.Errorf("parse: %v", err)
	}
	q, ok := stmts[0].(*parser.Query)
	if !ok {
		return "", fmt.Errorf("not a query")
	}
	pq, err := s.binderOn(cat, nil).WithRefs(refs).Query(q)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, f := range pq.Root.Schema() {
		fmt.Fprintf(&b, "%s %s %v;", f.Name, f.Type, f.Hidden)
	}
	b.WriteString(plan.Explain(pq.Root))
	for _, ip := range pq.InitPlans {
		b.WriteString("\n" + plan.Explain(ip.Plan))
	}
	return b.String(), nil
}
