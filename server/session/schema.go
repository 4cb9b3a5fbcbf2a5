package session

import (
	"context"
	"fmt"
	"strings"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/catalog/persist"
	"github.com/tributary/tributary/server/pgwire"
	"github.com/tributary/tributary/sql/parser"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage"
)

// Schemas. CREATE SCHEMA adds a schema (persisted with the catalog, its oid
// taken from the relation ids); DROP SCHEMA removes an empty one, or with
// CASCADE everything in it. search_path is honoured: an unqualified name
// resolves in its schemas that exist, in order ("$user" is the schema
// named like the current user, if any), then in pg_catalog, rw_catalog and
// information_schema; CREATE without a schema creates in the first of them
// that exists (3F000 when none does), as PostgreSQL does.

// searchPath is the session's search_path as a list of schema names.
func (s *Session) searchPath() []string {
	v, err := s.vars.get("search_path")
	if err != nil {
		return []string{catalog.DefaultSchema}
	}
	var out []string
	for _, w := range strings.Split(v, ",") {
		w = strings.TrimSpace(w)
		if len(w) >= 2 && (w[0] == '"' && w[len(w)-1] == '"' || w[0] == '\'' && w[len(w)-1] == '\'') {
			w = strings.ReplaceAll(w[1:len(w)-1], `""`, `"`)
		} else {
			w = strings.ToLower(w)
		}
		if w == "$user" {
			w = s.currentUser()
		}
		if w != "" {
			out = append(out, w)
		}
	}
	return out
}

// cat is the catalog as the session sees it: with its search path.
func (s *Session) cat() catalog.Path {
	return catalog.Path{Catalog: s.eng.Catalog, Database: s.database, Search: s.searchPath()}
}

// lookup resolves a relation name with the session's search path.
func (s *Session) lookup(schema, name string) (*catalog.Relation, error) {
	return s.cat().Lookup(schema, name)
}

// schemaOf is the schema a new object named n goes into: the one named
// (which must exist), else the first existing schema of the search path.
func (s *Session) schemaOf(n parser.ObjectName) (string, error) {
	if n.Database != "" && n.Database != s.db() {
		return "", types.Errorf(types.ErrUnsupported, "cross-database references are not implemented: \"%s\"", n.QualifiedString())
	}
	if n.Schema != "" {
		if !s.cat().HasSchema(n.Schema) {
			return "", types.Errorf(types.ErrInvalidSchemaName, "schema \"%s\" does not exist", n.Schema)
		}
		if n.Schema != catalog.DefaultSchema && catalog.IsBuiltinSchema(n.Schema) {
			return "", types.Errorf(types.ErrInsufficientPrivilege, "permission denied to create \"%s.%s\"", n.Schema, n.Name)
		}
		return n.Schema, nil
	}
	for _, sc := range s.searchPath() {
		if sc == catalog.DefaultSchema || !catalog.IsBuiltinSchema(sc) && s.cat().HasSchema(sc) {
			return sc, nil
		}
	}
	return "", types.Errorf(types.ErrInvalidSchemaName, "no schema has been selected to create in")
}

// saveSchemas persists and installs the user schemas.
func (s *Session) saveSchemas(ctx context.Context, schemas map[string]uint32) error {
	if _, err := s.eng.coord().Write(ctx, func(_, _ uint64, b *storage.Batch) error {
		return persist.SaveSchemas(b, schemas, s.eng.Catalog.PeekNextID())
	}); err != nil {
		return err
	}
	s.eng.Catalog.SetSchemas(schemas)
	return nil
}

// createSchema runs CREATE SCHEMA [IF NOT EXISTS] name.
func (s *Session) createSchema(ctx context.Context, n *parser.CreateSchema) (pgwire.Result, error) {
	s.eng.ddl.Lock()
	defer s.eng.ddl.Unlock()
	if !s.superuser() {
		return nil, types.Errorf(types.ErrInsufficientPrivilege, "permission denied for database %s", s.db())
	}
	if s.cat().HasSchema(n.Name) {
		if n.IfNotExists {
			s.notifier.Notice("NOTICE", "42P06", fmt.Sprintf("schema \"%s\" already exists, skipping", n.Name))
			return tagOnly("CREATE SCHEMA"), nil
		}
		return nil, types.Errorf(types.ErrDuplicateSchema, "schema \"%s\" already exists", n.Name)
	}
	if strings.HasPrefix(n.Name, "pg_") {
		return nil, &types.Error{Kind: types.ErrReservedName, Msg: fmt.Sprintf("unacceptable schema name \"%s\"", n.Name),
			Detail: "The prefix \"pg_\" is reserved for system schemas."}
	}
	schemas := s.eng.Catalog.UserSchemas()
	schemas[catalog.SchemaKey(s.db(), n.Name)] = s.eng.Catalog.NextID()
	if err := s.saveSchemas(ctx, schemas); err != nil {
		return nil, err
	}
	return tagOnly("CREATE SCHEMA"), nil
}

// dropSchema runs DROP SCHEMA [IF EXISTS] name [, ...] [CASCADE | RESTRICT].
func (s *Session) dropSchema(ctx context.Context, n *parser.DropSchema) (pgwire.Result, error) {
	var names []string
	for _, name := range n.Names {
		if !s.cat().HasSchema(name) {
			if n.IfExists {
				s.notifier.Notice("NOTICE", "00000", fmt.Sprintf("schema \"%s\" does not exist, skipping", name))
				continue
			}
			return nil, types.Errorf(types.ErrInvalidSchemaName, "schema \"%s\" does not exist", name)
		}
		if catalog.IsBuiltinSchema(name) {
			return nil, types.Errorf(types.ErrDependentObjects, "cannot drop schema %s because other objects depend on it", name)
		}
		names = append(names, name)
	}
	if !s.superuser() && len(names) > 0 {
		return nil, types.Errorf(types.ErrInsufficientPrivilege, "must be owner of schema %s", names[0])
	}
	for _, name := range names {
		var inside []parser.ObjectName
		var first *catalog.Relation
		for _, r := range s.cat().Relations() {
			if r.Schema == name && r.ID >= catalog.FirstUserID {
				if first == nil {
					first = r
				}
				inside = append(inside, parser.ObjectName{Schema: r.Schema, Name: r.Name})
			}
		}
		var funcs []*catalog.Function
		for _, f := range s.eng.Catalog.UserFunctions() {
			if f.Schema == name {
				funcs = append(funcs, f)
			}
		}
		if len(inside) > 0 && !n.Cascade {
			return nil, &types.Error{Kind: types.ErrDependentObjects,
				Msg:    fmt.Sprintf("cannot drop schema %s because other objects depend on it", name),
				Detail: fmt.Sprintf("%s %s.%s depends on schema %s", first.Kind, first.Schema, first.Name, name),
				Hint:   "Use DROP ... CASCADE to drop the dependent objects too."}
		}
		if len(funcs) > 0 && !n.Cascade {
			return nil, &types.Error{Kind: types.ErrDependentObjects,
				Msg:    fmt.Sprintf("cannot drop schema %s because other objects depend on it", name),
				Detail: fmt.Sprintf("function %s.%s depends on schema %s", name, funcs[0].Signature(), name),
				Hint:   "Use DROP ... CASCADE to drop the dependent objects too."}
		}
		if len(funcs) > 0 {
			if err := s.dropFunctions(ctx, funcs, true); err != nil {
				return nil, fmt.Errorf("drop schema %s: %w", name, err)
			}
		}
		// Everything in it, with what depends on it, dependents first.
		for _, on := range inside {
			rel, err := s.lookup(on.Schema, on.Name)
			if err != nil {
				continue // gone with an earlier one
			}
			kind, ok := parserKind[rel.Kind]
			if !ok {
				continue
			}
			if _, err := s.drop(ctx, &parser.Drop{Kind: kind, Names: []parser.ObjectName{on}, IfExists: true, Cascade: true}); err != nil {
				return nil, fmt.Errorf("drop schema %s: %w", name, err)
			}
		}
	}
	if len(names) == 0 {
		return tagOnly("DROP SCHEMA"), nil
	}
	s.eng.ddl.Lock()
	defer s.eng.ddl.Unlock()
	schemas := s.eng.Catalog.UserSchemas()
	for _, name := range names {
		delete(schemas, catalog.SchemaKey(s.db(), name))
	}
	if err := s.saveSchemas(ctx, schemas); err != nil {
		return nil, err
	}
	return tagOnly("DROP SCHEMA"), nil
}

// parserKind is the DROP kind of a relation kind.
var parserKind = map[catalog.Kind]parser.ObjectKind{
	catalog.KindTable:            parser.KindTable,
	catalog.KindView:             parser.KindView,
	catalog.KindMaterializedView: parser.KindMaterializedView,
	catalog.KindSink:             parser.KindSink,
	catalog.KindSource:           parser.KindSource,
}
