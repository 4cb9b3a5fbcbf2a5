package session

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/catalog/persist"
	"github.com/tributary/tributary/server/pgwire"
	"github.com/tributary/tributary/sql/parser"
	"github.com/tributary/tributary/sql/types"
	"github.com/tributary/tributary/storage"
)

// AuthMode is how clients authenticate (--auth).
type AuthMode string

// Authentication modes.
const (
	// AuthAuto trusts loopback connections and asks every other for a
	// password (the default).
	AuthAuto AuthMode = ""
	// AuthTrust asks no one for a password.
	AuthTrust AuthMode = "trust"
	// AuthPassword asks everyone for a password (SCRAM-SHA-256).
	AuthPassword AuthMode = "password"
)

// roles are the users and roles (CREATE USER | ROLE), persisted with the
// catalog; root always exists and is a superuser.
type roles struct {
	sync.RWMutex
	byName map[string]*catalog.Role
	next   uint32 // the next role oid
}

// firstRoleOID numbers created roles (root is catalog.OwnerOID).
const firstRoleOID = 16384

func (e *Engine) loadRoles(ctx context.Context, rootPassword string) error {
	list, err := persist.LoadRoles(ctx, e.Store)
	if err != nil {
		return err
	}
	e.roles.byName = map[string]*catalog.Role{}
	e.roles.next = firstRoleOID
	for i := range list {
		r := list[i]
		e.roles.byName[r.Name] = &r
		e.roles.next = max(e.roles.next, r.OID+1)
	}
	root := e.roles.byName[catalog.RootRole]
	if root == nil {
		root = &catalog.Role{Name: catalog.RootRole, OID: catalog.OwnerOID}
		e.roles.byName[root.Name] = root
	}
	root.Superuser, root.Login, root.CreateDB = true, true, true
	if rootPassword != "" {
		// TRIBUTARY_ROOT_PASSWORD at every start: an operator can reset it.
		v, err := pgwire.VerifierFor(rootPassword)
		if err != nil {
			return err
		}
		root.Password = v
		if _, err := e.coord().Write(ctx, func(_, _ uint64, b *storage.Batch) error {
			return persist.SaveRoles(b, e.roleListLocked())
		}); err != nil {
			return fmt.Errorf("save the root password: %w", err)
		}
	}
	return nil
}

// roleListLocked lists the roles by name (the caller holds roles or has
// them to itself).
func (e *Engine) roleListLocked() []catalog.Role {
	out := make([]catalog.Role, 0, len(e.roles.byName))
	for _, r := range e.roles.byName {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Roles lists the roles by name (pg_roles, pg_user).
func (e *Engine) Roles() []catalog.Role {
	e.roles.RLock()
	defer e.roles.RUnlock()
	return e.roleListLocked()
}

// Authenticate is pgwire's Config.Auth. With rules (--hba-file; rules
// returns nil without one) the first matching rule picks the method;
// otherwise the mode does: trust, or a password (SCRAM-SHA-256, or md5 for
// a role whose stored hash is md5). The decision carries the user's
// stored password when the user may log in.
func (e *Engine) Authenticate(mode AuthMode, rules func() *pgwire.HBA) func(pgwire.AuthRequest) pgwire.AuthDecision {
	return func(req pgwire.AuthRequest) pgwire.AuthDecision {
		var d pgwire.AuthDecision
		switch h := rules(); {
		case h != nil:
			d = h.Match(req)
		case mode == AuthTrust || (mode == AuthAuto && pgwire.IsLoopback(req.Remote)):
			d.Method = pgwire.MethodTrust
		default:
			d.Method = pgwire.MethodMD5
		}
		if d.Method == pgwire.MethodTrust || d.Method == pgwire.MethodReject {
			return d
		}
		e.roles.RLock()
		defer e.roles.RUnlock()
		r := e.roles.byName[req.User]
		switch {
		case r != nil && r.Login:
			d.Secret = r.Password
		case d.Method != pgwire.MethodCert:
			// No secret: the exchange runs against a decoy and fails.
		case r == nil:
			d.Method, d.Refusal = pgwire.MethodReject, fmt.Sprintf("role \"%s\" does not exist", req.User)
		default:
			d.Method, d.Refusal = pgwire.MethodReject, fmt.Sprintf("role \"%s\" is not permitted to log in", req.User)
		}
		return d
	}
}

// roleStmt runs CREATE | ALTER | DROP USER | ROLE. Only a superuser may.
func (s *Session) roleStmt(ctx context.Context, n *parser.RoleStmt) (pgwire.Result, error) {
	e := s.eng
	if !s.superuser() {
		return nil, types.Errorf(types.ErrInsufficientPrivilege, "permission denied to %s role", n.Action)
	}
	e.ddl.Lock()
	defer e.ddl.Unlock()
	e.roles.Lock()
	defer e.roles.Unlock()
	changed := map[string]*catalog.Role{}
	for k, v := range e.roles.byName {
		changed[k] = v
	}
	tag := strings.ToUpper(n.Action) + " ROLE" // PostgreSQL's tag, for CREATE USER too
	switch n.Action {
	case "create":
		name := n.Names[0]
		if changed[name] != nil {
			return nil, types.Errorf(types.ErrDuplicateObject, "role \"%s\" already exists", name)
		}
		r := &catalog.Role{Name: name, OID: e.roles.next}
		if err := applyRoleOptions(r, n, s.passwordEncryption()); err != nil {
			return nil, err
		}
		changed[name] = r
	case "alter":
		name := n.Names[0]
		old := changed[name]
		if old == nil {
			return nil, types.Errorf(types.ErrUndefinedObject, "role \"%s\" does not exist", name)
		}
		r := *old
		if err := applyRoleOptions(&r, n, s.passwordEncryption()); err != nil {
			return nil, err
		}
		if name == catalog.RootRole && !r.Superuser {
			return nil, types.Errorf(types.ErrInsufficientPrivilege, "role \"%s\" must stay a superuser", name)
		}
		changed[name] = &r
	case "drop":
		for _, name := range n.Names {
			switch {
			case changed[name] == nil && n.IfExists:
				s.notifier.Notice("NOTICE", "00000", fmt.Sprintf("role \"%s\" does not exist, skipping", name))
			case changed[name] == nil:
				return nil, types.Errorf(types.ErrUndefinedObject, "role \"%s\" does not exist", name)
			case name == catalog.RootRole || name == s.user:
				return nil, types.Errorf(types.ErrObjectInUse, "current user cannot be dropped")
			default:
				delete(changed, name)
			}
		}
	}
	list := make([]catalog.Role, 0, len(changed))
	for _, r := range changed {
		list = append(list, *r)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	if _, err := e.coord().Write(ctx, func(_, _ uint64, b *storage.Batch) error { return persist.SaveRoles(b, list) }); err != nil {
		return nil, err
	}
	e.roles.byName = changed
	if n.Action == "create" {
		e.roles.next++
	}
	return tagOnly(tag), nil
}

// passwordEncryption is the session's password_encryption.
func (s *Session) passwordEncryption() string {
	v, _ := s.vars.get("password_encryption")
	return v
}

// applyRoleOptions sets what a CREATE or ALTER ROLE gives; a password in
// clear is stored hashed by encryption (password_encryption), an already
// hashed one (a SCRAM-SHA-256 verifier or an md5 hash, as pg_dump writes
// them) as given.
func applyRoleOptions(r *catalog.Role, n *parser.RoleStmt, encryption string) error {
	if n.Superuser != nil {
		r.Superuser = *n.Superuser
	}
	if n.Login != nil {
		r.Login = *n.Login
	}
	if n.CreateDB != nil {
		r.CreateDB = *n.CreateDB
	}
	if n.CreateConnection != nil {
		r.CreateConnection = *n.CreateConnection
	}
	switch {
	case n.NoPass:
		r.Password = ""
	case n.Password != nil:
		if strings.HasPrefix(*n.Password, "SCRAM-SHA-256$") || pgwire.IsMD5Hash(*n.Password) {
			r.Password = *n.Password
			return nil
		}
		if encryption == "md5" {
			r.Password = pgwire.MD5For(r.Name, *n.Password)
			return nil
		}
		v, err := pgwire.VerifierFor(*n.Password)
		if err != nil {
			return err
		}
		r.Password = v
	}
	return nil
}

// superuser reports whether the session's user is a superuser. A user
// name that is no role can only have come in trusted (AuthTrust, or a
// loopback connection in AuthAuto): it acts as root, as every user did
// before roles existed, until privileges are checked.
func (s *Session) superuser() bool {
	s.eng.roles.RLock()
	defer s.eng.roles.RUnlock()
	r := s.eng.roles.byName[s.currentUser()]
	return r == nil || r.Superuser
}

// IsSuperuser is pgwire.Superuser: is_superuser at startup.
func (s *Session) IsSuperuser() bool { return s.superuser() }

// isRole reports whether name is a role.
func (s *Session) isRole(name string) bool {
	s.eng.roles.RLock()
	defer s.eng.roles.RUnlock()
	return s.eng.roles.byName[name] != nil
}

// currentUser is the role privileges are checked for: the one SET ROLE
// chose, else the session's user.
func (s *Session) currentUser() string {
	if s.role != "" {
		return s.role
	}
	return s.user
}

// setRole is SET ROLE name | NONE and RESET ROLE: a superuser (by its
// session user) may become any role; another role only itself.
func (s *Session) setRole(n *parser.Set) (pgwire.Result, error) {
	if n.Default {
		s.role = ""
		return tagOnly(setTag(n)), nil
	}
	name := strings.Join(n.Value, "")
	s.eng.roles.RLock()
	r, ok := s.eng.roles.byName[name]
	sessionRole := s.eng.roles.byName[s.user]
	s.eng.roles.RUnlock()
	if !ok {
		return nil, types.Errorf(types.ErrInvalidParameter, "role \"%s\" does not exist", name)
	}
	if name != s.user && sessionRole != nil && !sessionRole.Superuser {
		return nil, types.Errorf(types.ErrInsufficientPrivilege, "permission denied to set role \"%s\"", name)
	}
	s.role = r.Name
	return tagOnly("SET"), nil
}

// authidRows are pg_authid's rows: the roles with their SCRAM verifiers.
func authidRows(roles []catalog.Role) [][]types.Datum {
	var rows [][]types.Datum
	for _, r := range roles {
		pass := types.NullDatum
		if r.Password != "" {
			pass = types.DString(r.Password)
		}
		rows = append(rows, []types.Datum{types.DInt(int64(r.OID)), types.DString(r.Name), types.DBool(r.Superuser), types.DBool(true),
			types.DBool(r.Superuser), types.DBool(r.CreateDB), types.DBool(r.Login), types.DBool(r.Superuser), types.DBool(r.Superuser),
			types.DInt(-1), pass, types.NullDatum})
	}
	return rows
}
