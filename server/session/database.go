package session

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/catalog/persist"
	"github.com/tributary/tributary/server/pgwire"
	"github.com/tributary/tributary/sql/parser"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage"
)

// Databases. A session uses one database: the startup parameter's (3D000
// when unknown), or the one RisingWave's `SET database TO name` switches
// to. Unqualified and two-part names resolve in it; a three-part name
// db.schema.name reads another database's relation (RisingWave allows that
// in queries and materialized views; PostgreSQL refuses it), but nothing is
// created in or written into another database (0A000, PostgreSQL's
// "cross-database references are not implemented"). CREATE DATABASE needs
// superuser or CREATEDB; DROP DATABASE needs the owner or a superuser, and is
// refused while another session is connected to it (55006: connected at
// startup, as PostgreSQL counts; a session that moved there with SET
// database does not hold it and finds its database gone) or while a
// relation in another database reads one of its relations (2BP01).

// attached records, per session (by pid), the database it uses and whether
// it connected to it at startup.
type attached struct {
	mu struct {
		sync.Mutex
		byPID map[int32]attachment
	}
}

type attachment struct {
	db        string
	connected bool
}

func (a *attached) set(pid int32, db string, connected bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.mu.byPID == nil {
		a.mu.byPID = map[int32]attachment{}
	}
	a.mu.byPID[pid] = attachment{db: db, connected: connected}
}

func (a *attached) remove(pid int32) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.mu.byPID, pid)
}

// of returns the database session pid uses.
func (a *attached) of(pid int32) (string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	at, ok := a.mu.byPID[pid]
	return at.db, ok
}

// connectedTo counts the sessions other than pid connected to db.
func (a *attached) connectedTo(db string, pid int32) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for p, at := range a.mu.byPID {
		if p != pid && at.connected && at.db == db {
			n++
		}
	}
	return n
}

// db is the session's database.
func (s *Session) db() string {
	if s.database == "" {
		return catalog.Database
	}
	return s.database
}

// checkDatabase fails when the session's database was dropped under it.
func (s *Session) checkDatabase() error {
	if _, ok := s.eng.Catalog.DatabaseByName(s.db()); !ok {
		return catalog.ErrNoDatabase(s.db())
	}
	return nil
}

// setDatabase is SET database { TO | = } name.
func (s *Session) setDatabase(n *parser.Set) (pgwire.Result, error) {
	if n.Default || len(n.Value) != 1 {
		return nil, types.Errorf(types.ErrInvalidParameter, "SET database takes one database name")
	}
	name := n.Value[0]
	if len(name) >= 2 && name[0] == '\'' && name[len(name)-1] == '\'' {
		name = strings.ReplaceAll(name[1:len(name)-1], "''", "'")
	}
	if _, ok := s.eng.Catalog.DatabaseByName(name); !ok {
		return nil, catalog.ErrNoDatabase(name)
	}
	if s.tx != 0 && s.tx != 'I' {
		return nil, types.Errorf(types.ErrActiveTx, "SET database cannot run inside a transaction block")
	}
	s.database = name
	s.eng.attached.set(s.pid, name, false)
	return tagOnly("SET"), nil
}

// canCreateDB reports whether the current user may CREATE DATABASE.
func (s *Session) canCreateDB() bool {
	s.eng.roles.RLock()
	defer s.eng.roles.RUnlock()
	r := s.eng.roles.byName[s.currentUser()]
	return r == nil || r.Superuser || r.CreateDB
}

// saveDatabasesLocked persists and installs the databases besides dev; the
// caller holds the ddl lock.
func (s *Session) saveDatabasesLocked(ctx context.Context, dbs []catalog.DatabaseDesc) error {
	if _, err := s.eng.coord().Write(ctx, func(_, _ uint64, b *storage.Batch) error {
		return persist.SaveDatabases(b, dbs, s.eng.Catalog.PeekNextID())
	}); err != nil {
		return err
	}
	s.eng.Catalog.SetDatabases(dbs)
	return nil
}

// createDatabase runs CREATE DATABASE [IF NOT EXISTS] name [WITH OWNER role].
func (s *Session) createDatabase(ctx context.Context, n *parser.CreateDatabase) (pgwire.Result, error) {
	if !s.canCreateDB() {
		return nil, types.Errorf(types.ErrInsufficientPrivilege, "permission denied to create database")
	}
	owner := s.currentUser()
	switch n.Owner {
	case "current_user", "current_role":
		n.Owner = ""
	case "session_user":
		n.Owner, owner = "", s.user
	}
	if n.Owner != "" {
		if !s.isRole(n.Owner) && n.Owner != catalog.RootRole {
			return nil, types.Errorf(types.ErrUndefinedObject, "role \"%s\" does not exist", n.Owner)
		}
		owner = n.Owner
	}
	if owner == "" || !s.isRole(owner) {
		owner = catalog.RootRole
	}
	s.eng.ddl.Lock()
	defer s.eng.ddl.Unlock()
	if _, ok := s.eng.Catalog.DatabaseByName(n.Name); ok {
		if n.IfNotExists {
			s.notifier.Notice("NOTICE", "42P04", fmt.Sprintf("database \"%s\" already exists, skipping", n.Name))
			return tagOnly("CREATE DATABASE"), nil
		}
		return nil, types.Errorf(types.ErrDuplicateDatabase, "database \"%s\" already exists", n.Name)
	}
	if n.Name == "" || strings.Contains(n.Name, catalog.CrossDBSep) || strings.ContainsRune(n.Name, 0) {
		return nil, types.Errorf(types.ErrInvalidName, "invalid database name \"%s\"", n.Name)
	}
	dbs := append(s.eng.Catalog.UserDatabases(), catalog.DatabaseDesc{Name: n.Name, OID: s.eng.Catalog.NextID(), Owner: owner})
	if err := s.saveDatabasesLocked(ctx, dbs); err != nil {
		return nil, err
	}
	return tagOnly("CREATE DATABASE"), nil
}

// dropDatabase runs DROP DATABASE [IF EXISTS] name: its relations (each
// with what depends on it in the same database) and schemas go with it.
func (s *Session) dropDatabase(ctx context.Context, n *parser.DropDatabase) (pgwire.Result, error) {
	d, ok := s.eng.Catalog.DatabaseByName(n.Name)
	if !ok {
		if n.IfExists {
			s.notifier.Notice("NOTICE", "00000", fmt.Sprintf("database \"%s\" does not exist, skipping", n.Name))
			return tagOnly("DROP DATABASE"), nil
		}
		return nil, catalog.ErrNoDatabase(n.Name)
	}
	if u := s.currentUser(); !s.superuser() && u != d.Owner {
		return nil, types.Errorf(types.ErrInsufficientPrivilege, "must be owner of database %s", n.Name)
	}
	if n.Name == s.db() {
		return nil, types.Errorf(types.ErrObjectInUse, "cannot drop the currently open database")
	}
	if n.Name == catalog.Database {
		return nil, types.Errorf(types.ErrObjectInUse, "cannot drop database %s: it is the default database", n.Name)
	}
	// As PostgreSQL does, give sessions that are closing up to 5 s to go.
	k := s.eng.attached.connectedTo(n.Name, s.pid)
	for deadline := time.Now().Add(5 * time.Second); k > 0 && time.Now().Before(deadline); k = s.eng.attached.connectedTo(n.Name, s.pid) {
		select {
		case <-ctx.Done():
			return nil, types.Errorf(types.ErrQueryCanceled, "canceling statement due to user request")
		case <-time.After(50 * time.Millisecond):
		}
	}
	if k > 0 {
		detail := "There is 1 other session using the database."
		if k > 1 {
			detail = fmt.Sprintf("There are %d other sessions using the database.", k)
		}
		return nil, &types.Error{Kind: types.ErrObjectInUse, Msg: fmt.Sprintf("database \"%s\" is being accessed by other users", n.Name), Detail: detail}
	}
	rels, schemas := s.eng.Catalog.DatabaseContents(n.Name)
	for _, r := range rels {
		for _, dep := range s.eng.Catalog.Dependents(r.ID) {
			if dep.DB() != n.Name {
				return nil, &types.Error{Kind: types.ErrDependentObjects,
					Msg:    fmt.Sprintf("cannot drop database %s because other objects depend on it", n.Name),
					Detail: fmt.Sprintf("%s %s.%s.%s depends on %s %s.%s", dep.Kind, dep.DB(), dep.Schema, dep.Name, r.Kind, r.Schema, r.Name)}
			}
		}
	}
	// Drop the relations as that database's session would, dependents first (CASCADE).
	mine := s.database
	s.database = n.Name
	defer func() { s.database = mine }()
	for i := len(rels) - 1; i >= 0; i-- {
		r := rels[i]
		if _, ok := s.eng.Catalog.ByID(r.ID); !ok {
			continue // gone with an earlier one
		}
		kind, ok := parserKind[r.Kind]
		if !ok {
			continue
		}
		name := parser.ObjectName{Schema: r.Schema, Name: r.Name}
		if _, err := s.drop(ctx, &parser.Drop{Kind: kind, Names: []parser.ObjectName{name}, IfExists: true, Cascade: true}); err != nil {
			return nil, fmt.Errorf("drop database %s: %w", n.Name, err)
		}
	}
	s.database = mine
	s.eng.ddl.Lock()
	defer s.eng.ddl.Unlock()
	all := s.eng.Catalog.UserSchemas()
	for _, sc := range schemas {
		delete(all, catalog.SchemaKey(n.Name, sc))
	}
	if err := s.saveSchemas(ctx, all); err != nil {
		return nil, err
	}
	var dbs []catalog.DatabaseDesc
	for _, o := range s.eng.Catalog.UserDatabases() {
		if o.Name != n.Name {
			dbs = append(dbs, o)
		}
	}
	if err := s.saveDatabasesLocked(ctx, dbs); err != nil {
		return nil, err
	}
	return tagOnly("DROP DATABASE"), nil
}

// relDB is the Database a new relation of the session records ("" for dev,
// as relations from before databases existed do).
func (s *Session) relDB() string {
	if s.db() == catalog.Database {
		return ""
	}
	return s.db()
}

var objectNameType = reflect.TypeOf(parser.ObjectName{})

// foreignName returns a three-part name of statement st (in its own fields,
// not in a query it holds) naming another database than db: DDL and the
// other statements naming objects act in the session's database only.
func foreignName(st parser.Statement, db string) (parser.ObjectName, bool) {
	v := reflect.ValueOf(st)
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return parser.ObjectName{}, false
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return parser.ObjectName{}, false
	}
	check := func(f reflect.Value) (parser.ObjectName, bool) {
		if n := f.Interface().(parser.ObjectName); n.Database != "" && n.Database != db {
			return n, true
		}
		return parser.ObjectName{}, false
	}
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		if !v.Type().Field(i).IsExported() {
			continue
		}
		switch {
		case f.Type() == objectNameType:
			if n, ok := check(f); ok {
				return n, true
			}
		case f.Kind() == reflect.Pointer && f.Type().Elem() == objectNameType && !f.IsNil():
			if n, ok := check(f.Elem()); ok {
				return n, true
			}
		case f.Kind() == reflect.Slice && f.Type().Elem() == objectNameType:
			for j := 0; j < f.Len(); j++ {
				if n, ok := check(f.Index(j)); ok {
					return n, true
				}
			}
		}
	}
	return parser.ObjectName{}, false
}
