package session

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/connector"
	"github.com/tributary/tributary/server/pgwire"
	"github.com/tributary/tributary/sql/parser"
	"github.com/tributary/tributary/sql/types"
)

// Privileges. A relation's owner (its creator) and superusers may do
// anything with it; other roles need a grant (GRANT SELECT | INSERT |
// UPDATE | DELETE | ALL ON ... TO role | PUBLIC): reading a relation a
// statement names needs SELECT on it (a view's own inputs are the view's
// owner's business), writing it INSERT, UPDATE or DELETE; dropping or
// altering it needs its ownership. A missing privilege is PostgreSQL's
// 42501 "permission denied for table t".

// owner is rel's owning role.
func owner(rel *catalog.Relation) string {
	if rel.Owner == "" {
		return catalog.RootRole
	}
	return rel.Owner
}

// allowed reports whether the session's user holds priv on rel.
func (s *Session) allowed(rel *catalog.Relation, priv string) bool {
	if rel.Kind == catalog.KindSystem || s.superuser() || owner(rel) == s.currentUser() {
		return true
	}
	return slices.Contains(rel.Grants[s.currentUser()], priv) || slices.Contains(rel.Grants["public"], priv)
}

// kindWord names rel's kind as PostgreSQL's permission errors do.
func kindWord(rel *catalog.Relation) string {
	switch rel.Kind {
	case catalog.KindMaterializedView:
		return "materialized view"
	case catalog.KindView:
		return "view"
	case catalog.KindSource:
		return "source"
	case catalog.KindSink:
		return "sink"
	}
	return "table"
}

func denied(rel *catalog.Relation) error {
	return types.Errorf(types.ErrInsufficientPrivilege, "permission denied for %s %s", kindWord(rel), rel.Name)
}

// checkRead requires SELECT on every relation ids names.
func (s *Session) checkRead(ids []uint32) error {
	for _, id := range ids {
		if rel, ok := s.eng.Catalog.ByID(id); ok && !s.allowed(rel, "select") {
			return denied(rel)
		}
	}
	return nil
}

// checkPriv requires priv on rel.
func (s *Session) checkPriv(rel *catalog.Relation, priv string) error {
	if !s.allowed(rel, priv) {
		return denied(rel)
	}
	return nil
}

// checkOwner requires the ownership of rel (DROP, ALTER): PostgreSQL's
// "must be owner of table t".
func (s *Session) checkOwner(rel *catalog.Relation) error {
	if rel.Kind == catalog.KindSystem || s.superuser() || owner(rel) == s.currentUser() {
		return nil
	}
	return types.Errorf(types.ErrInsufficientPrivilege, "must be owner of %s %s", kindWord(rel), rel.Name)
}

// grant runs GRANT and REVOKE: the owner of each relation or a superuser
// may.
func (s *Session) grant(ctx context.Context, n *parser.Grant) (pgwire.Result, error) {
	e := s.eng
	e.ddl.Lock()
	defer e.ddl.Unlock()
	for _, r := range n.Roles {
		if r == "public" {
			continue
		}
		e.roles.RLock()
		_, ok := e.roles.byName[r]
		e.roles.RUnlock()
		if !ok {
			return nil, types.Errorf(types.ErrUndefinedObject, "role \"%s\" does not exist", r)
		}
	}
	var rels []*catalog.Relation
	for _, name := range n.Names {
		rel, err := s.lookup(name.Schema, name.Name)
		if err != nil {
			return nil, err
		}
		if want, ok := dropKinds[n.Kind]; ok && n.Kind != parser.KindTable && rel.Kind != want {
			return nil, types.Errorf(types.ErrWrongObjectType, "\"%s\" is not a %s", rel.Name, strings.ToLower(n.Kind.String()))
		}
		if rel.Kind == catalog.KindSystem {
			return nil, types.Errorf(types.ErrInsufficientPrivilege, "permission denied: \"%s\" is a system catalog", rel.Name)
		}
		rels = append(rels, rel)
	}
	for _, schema := range n.AllIn {
		for _, rel := range s.cat().Relations() {
			if rel.Schema == schema && rel.Kind != catalog.KindSystem && rel.Kind != catalog.KindSink {
				rels = append(rels, rel)
			}
		}
	}
	for _, rel := range rels {
		if err := s.checkOwner(rel); err != nil {
			return nil, err
		}
	}
	for _, rel := range rels {
		updated := *rel
		updated.Grants = map[string][]string{}
		for k, v := range rel.Grants {
			updated.Grants[k] = slices.Clone(v)
		}
		for _, r := range n.Roles {
			have := updated.Grants[r]
			for _, p := range n.Privileges {
				switch {
				case n.Revoke:
					have = slices.DeleteFunc(have, func(x string) bool { return x == p })
				case !slices.Contains(have, p):
					have = append(have, p)
				}
			}
			slices.Sort(have)
			if len(have) == 0 {
				delete(updated.Grants, r)
			} else {
				updated.Grants[r] = have
			}
		}
		if len(updated.Grants) == 0 {
			updated.Grants = nil
		}
		if maps.EqualFunc(updated.Grants, rel.Grants, slices.Equal) {
			continue
		}
		if err := s.replaceRelation(ctx, &updated); err != nil {
			return nil, fmt.Errorf("grant on %s: %w", rel.Name, err)
		}
	}
	if n.Revoke {
		return tagOnly("REVOKE"), nil
	}
	return tagOnly("GRANT"), nil
}

// checkConnectOut requires, of a connector that connects to other hosts
// (endpoints lists them from props; nil for one that does not), a
// superuser or a role with CREATECONNECTION, and every host in the
// operator's allow-list (--connector-allow).
func (s *Session) checkConnectOut(ctx context.Context, name string, endpoints func(map[string]string) []string, props map[string]string) error {
	if endpoints == nil {
		return nil
	}
	if !s.superuser() {
		s.eng.roles.RLock()
		r := s.eng.roles.byName[s.currentUser()]
		s.eng.roles.RUnlock()
		if r == nil || !r.CreateConnection {
			return types.Errorf(types.ErrInsufficientPrivilege, "permission denied to create a %s connector: it connects to other hosts, which needs superuser or CREATECONNECTION", name)
		}
	}
	lower := make(map[string]string, len(props))
	for k, v := range props {
		lower[strings.ToLower(k)] = v
	}
	for _, ep := range endpoints(lower) {
		if err := connector.CheckEndpoint(ctx, name+" connector", ep); err != nil {
			return err
		}
	}
	return nil
}

// peerErr shows a connector's check error to a superuser as it is; for
// other roles the remote host's own text is replaced (connector.Redact),
// and the whole error logged.
func (s *Session) peerErr(err error) error {
	if err == nil || s.superuser() {
		return err
	}
	red := connector.Redact(err)
	if red != err {
		s.eng.Logger.Info("a connector check failed; the remote host's reply is not shown to the client", "user", s.currentUser(), "err", err)
	}
	return red
}

// backendGuard is what pg_cancel_backend and pg_terminate_backend reach:
// a superuser signals any session; another role only the sessions of its
// own role, and never a superuser's (PostgreSQL 15's rules and messages).
type backendGuard struct{ s *Session }

func (g backendGuard) Signal(pid int32, terminate bool) (bool, error) {
	e := g.s.eng
	if !g.s.superuser() {
		for _, a := range e.Backends.Activity() {
			if a.PID != pid {
				continue
			}
			e.roles.RLock()
			r := e.roles.byName[a.User]
			e.roles.RUnlock()
			switch {
			case r == nil || r.Superuser: // a user name that is no role acts as root
				if terminate {
					return false, types.Errorf(types.ErrInsufficientPrivilege, "must be a superuser to terminate superuser process")
				}
				return false, types.Errorf(types.ErrInsufficientPrivilege, "must be a superuser to cancel superuser query")
			case a.User != g.s.currentUser():
				if terminate {
					return false, types.Errorf(types.ErrInsufficientPrivilege, "must be a member of the role whose process is being terminated or member of pg_signal_backend")
				}
				return false, types.Errorf(types.ErrInsufficientPrivilege, "must be a member of the role whose query is being canceled or member of pg_signal_backend")
			}
		}
	}
	return e.Backends.Signal(pid, terminate), nil
}
