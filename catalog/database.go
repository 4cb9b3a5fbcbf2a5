package catalog

import (
	"slices"
	"sort"
	"strings"

	"github.com/tributary/tributary/sql/types"
)

// Databases. The catalog holds several databases, "dev" always among them.
// Each has its own user schemas and relations; a relation's Database is ""
// for dev, so data directories from before databases existed load into dev
// unchanged. Relation ids (and so storage keys and state) are global. The
// system schemas (pg_catalog, information_schema, rw_catalog) exist in every
// database; their tables list the database they are read from (Path's).

// DatabaseDesc is one database: its name, pg_database oid and owner role.
type DatabaseDesc struct {
	Name  string `json:"name"`
	OID   uint32 `json:"oid"`
	Owner string `json:"owner,omitempty"`
}

// CrossDBSep joins a database and a schema name into the one schema name a
// three-part name db.schema.name reaches the binder with (the parser's
// encoding; no identifier contains it).
const CrossDBSep = "\x1f"

// SplitSchema splits a schema name the parser encoded as database+CrossDBSep+schema;
// db is "" when it names no database.
func SplitSchema(schema string) (db, sc string) {
	if i := strings.Index(schema, CrossDBSep); i >= 0 {
		return schema[:i], schema[i+len(CrossDBSep):]
	}
	return "", schema
}

// dbKey is the key part naming database db: "" for dev.
func dbKey(db string) string {
	if db == Database {
		return ""
	}
	return db
}

// DB is the name of the database r belongs to.
func (r *Relation) DB() string {
	if r.Database == "" {
		return Database
	}
	return r.Database
}

// key is the byName key of schema.name in database db.
func key(db, schema, name string) string {
	if IsBuiltinSchema(schema) && schema != DefaultSchema {
		db = "" // system schemas are shared
	}
	if db = dbKey(db); db != "" {
		return db + "\x00" + schema + "." + name
	}
	return schema + "." + name
}

func (r *Relation) key() string { return key(r.Database, r.Schema, r.Name) }

// schemaKey is the key of user schema name in database db in the schema map
// (persisted as is: dev's schemas keep their plain names).
func schemaKey(db, name string) string {
	if db = dbKey(db); db != "" {
		return db + "\x00" + name
	}
	return name
}

// SchemaKey is schemaKey for callers editing UserSchemas' map.
func SchemaKey(db, name string) string { return schemaKey(db, name) }

// Databases lists the databases ordered by oid.
func (c *Catalog) Databases() []DatabaseDesc {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]DatabaseDesc, 0, len(c.mu.databases))
	for _, d := range c.mu.databases {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].OID < out[j].OID })
	return out
}

// DatabaseByName returns database name.
func (c *Catalog) DatabaseByName(name string) (DatabaseDesc, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	d, ok := c.mu.databases[name]
	return d, ok
}

// UserDatabases returns the databases besides dev (for persisting them).
func (c *Catalog) UserDatabases() []DatabaseDesc {
	var out []DatabaseDesc
	for _, d := range c.Databases() {
		if d.Name != Database {
			out = append(out, d)
		}
	}
	return out
}

// SetDatabases installs the databases besides dev (at start-up, and after
// CREATE or DROP DATABASE), each oid taken from NextID.
func (c *Catalog) SetDatabases(dbs []DatabaseDesc) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.databases = map[string]DatabaseDesc{Database: {Name: Database, OID: DatabaseOID, Owner: Owner}}
	for _, d := range dbs {
		c.mu.databases[d.Name] = d
		if d.OID >= c.mu.nextID {
			c.mu.nextID = d.OID + 1
		}
	}
}

// DatabaseContents returns the relations (ordered by id) and user schemas
// of database db.
func (c *Catalog) DatabaseContents(db string) (rels []*Relation, schemas []string) {
	for _, r := range c.Relations() {
		if r.ID >= FirstUserID && r.DB() == db {
			rels = append(rels, r)
		}
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	for k := range c.mu.schemas {
		if d, name := splitSchemaKey(k); d == db {
			schemas = append(schemas, name)
		}
	}
	sort.Strings(schemas)
	return rels, schemas
}

func splitSchemaKey(k string) (db, name string) {
	if i := strings.IndexByte(k, 0); i >= 0 {
		return k[:i], k[i+1:]
	}
	return Database, k
}

// schemasIn lists database db's schemas: the built-in ones, then CREATE SCHEMA's by name.
func (c *Catalog) schemasIn(db string) []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := slices.Clone(builtinSchemas)
	var user []string
	for k := range c.mu.schemas {
		if d, name := splitSchemaKey(k); d == db {
			user = append(user, name)
		}
	}
	sort.Strings(user)
	return append(out, user...)
}

// SchemaOIDIn is schema name's pg_namespace oid in database db (0: no such schema).
func (c *Catalog) SchemaOIDIn(db, name string) uint32 {
	if oid := SchemaOID(name); oid != 0 {
		return oid
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.mu.schemas[schemaKey(db, name)]
}

// HasSchemaIn reports whether schema name exists in database db.
func (c *Catalog) HasSchemaIn(db, name string) bool { return c.SchemaOIDIn(db, name) != 0 }

// errNoDatabase is PostgreSQL's error for an unknown database.
func errNoDatabase(name string) error {
	return types.Errorf(types.ErrInvalidCatalogName, "database \"%s\" does not exist", name)
}

// ErrNoDatabase is PostgreSQL's error for an unknown database (3D000).
func ErrNoDatabase(name string) error { return errNoDatabase(name) }
