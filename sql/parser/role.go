package parser

// RoleStmt is CREATE USER | ROLE, ALTER USER | ROLE and DROP USER | ROLE.
type RoleStmt struct {
	Source
	// Action is "create", "alter" or "drop".
	Action   string
	Names    []string // one, but DROP may name several
	IfExists bool     // DROP ... IF EXISTS
	// Options set by CREATE and ALTER (nil: not given).
	Password  *string // PASSWORD 'x'
	NoPass    bool    // PASSWORD NULL
	Superuser *bool
	Login     *bool
	CreateDB  *bool
	// CreateConnection (CREATECONNECTION) lets a role create sources and
	// sinks that connect out to other hosts (postgres, kafka, postgres-cdc).
	CreateConnection *bool
}

// role parses the rest of CREATE | ALTER | DROP USER | ROLE (action).
func (p *ddlParser) role(action string, user bool) (Statement, error) {
	st := &RoleStmt{Action: action}
	if action == "drop" {
		st.IfExists = p.kw("if", "exists")
		for {
			name, err := p.ident()
			if err != nil {
				return nil, err
			}
			st.Names = append(st.Names, name)
			if n := p.peek(); n != nil && n.isPunct(",") {
				p.i++
				continue
			}
			return st, nil
		}
	}
	name, err := p.ident()
	if err != nil {
		return nil, err
	}
	st.Names = []string{name}
	if action == "create" && user {
		t := true
		st.Login = &t // CREATE USER is CREATE ROLE ... LOGIN
	}
	p.kw("with")
	set := func(dst **bool, v bool) {
		*dst = &v
	}
	for p.i < len(p.seq) {
		switch {
		case p.kw("password"):
			n := p.peek()
			switch {
			case n != nil && n.kw("null"):
				p.i++
				st.NoPass = true
			case n != nil && !n.group && n.tok.kind == tkString:
				p.i++
				v := n.tok.val
				st.Password = &v
			default:
				return nil, p.errHere()
			}
		case p.kw("encrypted", "password"):
			n := p.peek()
			if n == nil || n.group || n.tok.kind != tkString {
				return nil, p.errHere()
			}
			p.i++
			v := n.tok.val
			st.Password = &v
		case p.kw("superuser"):
			set(&st.Superuser, true)
		case p.kw("nosuperuser"):
			set(&st.Superuser, false)
		case p.kw("login"):
			set(&st.Login, true)
		case p.kw("nologin"):
			set(&st.Login, false)
		case p.kw("createdb"):
			set(&st.CreateDB, true)
		case p.kw("nocreatedb"):
			set(&st.CreateDB, false)
		case p.kw("createconnection"):
			set(&st.CreateConnection, true)
		case p.kw("nocreateconnection"):
			set(&st.CreateConnection, false)
		case p.kwOneOf("inherit", "noinherit", "createrole", "nocreaterole", "replication", "noreplication", "bypassrls", "nobypassrls"):
			// Accepted for scripts' sake: every role inherits; the others are superuser's.
		default:
			return nil, p.errHere()
		}
	}
	return st, nil
}
