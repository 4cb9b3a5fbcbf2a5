package parser

import "strings"

// Grant is GRANT or REVOKE of table privileges.
type Grant struct {
	Source
	Revoke bool
	// Privileges are lower case: select, insert, update, delete (ALL gives
	// the four).
	Privileges []string
	// Kind is the object kind named (0: TABLE, which covers every relation
	// kind, as in PostgreSQL); Names the objects, or AllIn the schemas of
	// ALL TABLES IN SCHEMA.
	Kind  ObjectKind
	Names []ObjectName
	AllIn []string
	// Roles are the grantees; "public" for PUBLIC.
	Roles []string
}

// tablePrivileges are the privileges GRANT ALL gives on a relation.
var tablePrivileges = []string{"select", "insert", "update", "delete"}

// grant parses the rest of GRANT (revoke: REVOKE).
func (p *ddlParser) grant(revoke bool) (Statement, error) {
	st := &Grant{Revoke: revoke}
	if revoke && p.kw("grant", "option", "for") {
		return nil, p.unsupported(p.peek(), "REVOKE GRANT OPTION FOR is not supported")
	}
	if p.kw("all") {
		p.kw("privileges")
		st.Privileges = append(st.Privileges, tablePrivileges...)
	} else {
		for {
			n := p.peek()
			if n == nil || !n.kwIn("select", "insert", "update", "delete") {
				if n != nil && n.tok.kind == tkIdent && !n.group {
					return nil, p.unsupported(n, "privilege %s is not supported (SELECT, INSERT, UPDATE, DELETE, ALL)", strings.ToUpper(n.tok.val))
				}
				return nil, p.errHere()
			}
			p.i++
			st.Privileges = append(st.Privileges, n.tok.val)
			if c := p.peek(); c != nil && c.isPunct(",") {
				p.i++
				continue
			}
			break
		}
	}
	if err := p.expect("on"); err != nil {
		return nil, err
	}
	switch {
	case p.kw("all", "tables", "in", "schema"), p.kw("all", "materialized", "views", "in", "schema"):
		for {
			s, err := p.ident()
			if err != nil {
				return nil, err
			}
			st.AllIn = append(st.AllIn, s)
			if c := p.peek(); c != nil && c.isPunct(",") {
				p.i++
				continue
			}
			break
		}
	default:
		if k, ok := p.objectKind(); ok {
			st.Kind = k
		}
		for {
			name, err := p.objectName()
			if err != nil {
				return nil, err
			}
			st.Names = append(st.Names, name)
			if c := p.peek(); c != nil && c.isPunct(",") {
				p.i++
				continue
			}
			break
		}
	}
	to := "to"
	if revoke {
		to = "from"
	}
	if err := p.expect(to); err != nil {
		return nil, err
	}
	for {
		p.kw("group")
		r, err := p.ident()
		if err != nil {
			return nil, err
		}
		st.Roles = append(st.Roles, r)
		if c := p.peek(); c != nil && c.isPunct(",") {
			p.i++
			continue
		}
		break
	}
	if !revoke && p.kw("with", "grant", "option") {
		return nil, p.unsupported(p.peek(), "WITH GRANT OPTION is not supported")
	}
	if revoke && !p.kw("cascade") {
		p.kw("restrict")
	}
	return st, nil
}
