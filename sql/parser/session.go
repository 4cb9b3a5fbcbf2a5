package parser

import (
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
)

func isSelect(q *Query) bool {
	switch q.Node.(type) {
	case *ast.SelectStmt, *ast.SetOprStmt:
		return true
	}
	return false
}

// setOne reads the one value of SET NAMES | SCHEMA | ROLE (variable name),
// or defaultWord (when not empty) for the variable's default.
func (p *ddlParser) setOne(st *Set, name, defaultWord string) (Statement, error) {
	st.Name = name
	if defaultWord != "" && p.kw(defaultWord) {
		st.Default = true
		return st, nil
	}
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	st.Value = []string{v}
	return st, nil
}

// set parses the rest of SET.
func (p *ddlParser) set() (Statement, error) {
	st := &Set{}
	if p.kw("local") {
		st.Local = true
	} else if p.kw("session") {
		if p.kw("characteristics", "as", "transaction") {
			return p.setTransaction("default_")
		}
		if p.kw("authorization") {
			return nil, p.unsupported(nodeAt(p.seq, p.i-1), "SET SESSION AUTHORIZATION is not supported")
		}
	}
	switch {
	case p.kw("time", "zone"):
		st.Name = "timezone"
		if p.kw("local") || p.kw("default") {
			st.Default = true
			return st, nil
		}
		if n := p.peek(); n != nil && n.kw("interval") {
			return nil, p.unsupported(n, "SET TIME ZONE INTERVAL is not supported")
		}
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		st.Value = []string{v}
		return st, nil
	case p.kw("transaction"):
		return p.setTransaction("")
	case p.kw("names"):
		return p.setOne(st, "client_encoding", "default")
	case p.kw("schema"):
		return p.setOne(st, "search_path", "")
	case p.kw("role"):
		return p.setOne(st, "role", "none")
	case p.peek() != nil && p.peek().kwIn("constraints"):
		n := p.peek()
		return nil, p.unsupported(n, "SET %s is not supported", strings.ToUpper(n.tok.val))
	}
	name, err := p.varName()
	if err != nil {
		return nil, err
	}
	st.Name = name
	if n := p.peek(); n != nil && (n.isOp("=") || n.kw("to")) {
		p.i++
	} else {
		return nil, p.errHere()
	}
	if p.kw("default") {
		st.Default = true
		return st, nil
	}
	for {
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		st.Value = append(st.Value, v)
		if n := p.peek(); n != nil && n.isPunct(",") {
			p.i++
			continue
		}
		return st, nil
	}
}

// setTransaction parses SET [SESSION CHARACTERISTICS AS] TRANSACTION modes as
// a SET of [default_]transaction_isolation / [default_]transaction_read_only.
func (p *ddlParser) setTransaction(prefix string) (Statement, error) {
	switch {
	case p.kw("isolation", "level"):
		lvl, err := p.isolation()
		if err != nil {
			return nil, err
		}
		return &Set{Name: prefix + "transaction_isolation", Value: []string{lvl}}, nil
	case p.kw("read", "only"):
		return &Set{Name: prefix + "transaction_read_only", Value: []string{"on"}}, nil
	case p.kw("read", "write"):
		return &Set{Name: prefix + "transaction_read_only", Value: []string{"off"}}, nil
	}
	return nil, p.errHere()
}

// varName reads a possibly dotted configuration parameter name.
func (p *ddlParser) varName() (string, error) {
	var b strings.Builder
	for {
		w, err := p.ident()
		if err != nil {
			return "", err
		}
		b.WriteString(strings.ToLower(w))
		if n := p.peek(); n != nil && n.isPunct(".") {
			p.i++
			b.WriteByte('.')
			continue
		}
		return b.String(), nil
	}
}

func (p *ddlParser) reset() (Statement, error) {
	st := &Set{Default: true, Reset: true}
	switch {
	case p.kw("all"):
		st.Name = "all"
	case p.kw("time", "zone"):
		st.Name = "timezone"
	case p.kw("session", "authorization"):
		st.Name = "session_authorization"
	default:
		name, err := p.varName()
		if err != nil {
			return nil, err
		}
		st.Name = name
	}
	return st, nil
}

// showLists are the SHOW forms that list catalog objects.
var showLists = []struct {
	words []string
	kind  string
}{
	{[]string{"tables"}, "tables"},
	{[]string{"internal", "tables"}, "internal_tables"},
	{[]string{"materialized", "views"}, "materialized_views"},
	{[]string{"views"}, "views"},
	{[]string{"sinks"}, "sinks"},
	{[]string{"sources"}, "sources"},
	{[]string{"jobs"}, "jobs"},
	{[]string{"databases"}, "databases"},
	{[]string{"schemas"}, "schemas"},
	{[]string{"functions"}, "functions"},
	{[]string{"parameters"}, "parameters"},
	{[]string{"processlist"}, "processlist"},
	{[]string{"cluster"}, "cluster"},
}

var showCreate = []struct {
	words []string
	kind  string
}{
	{[]string{"table"}, "create_table"},
	{[]string{"materialized", "view"}, "create_materialized_view"},
	{[]string{"view"}, "create_view"},
	{[]string{"sink"}, "create_sink"},
	{[]string{"source"}, "create_source"},
	{[]string{"index"}, "create_index"},
}

func (p *ddlParser) show() (Statement, error) {
	st := &Show{}
	for _, l := range showLists {
		if p.kw(l.words...) {
			st.Kind = l.kind
			if p.kw("from") || p.kw("in") {
				schema, err := p.ident()
				if err != nil {
					return nil, err
				}
				st.Object = &ObjectName{Schema: schema}
			}
			return st, nil
		}
	}
	switch {
	case p.kw("all"):
		st.Kind = "all"
		return st, nil
	case p.kw("create"):
		for _, c := range showCreate {
			if p.kw(c.words...) {
				st.Kind = c.kind
				name, err := p.objectName()
				if err != nil {
					return nil, err
				}
				st.Object = &name
				return st, nil
			}
		}
		return nil, p.errHere()
	case p.kw("columns"), p.kw("indexes"), p.kw("index"):
		st.Kind = "columns"
		if p.seq[p.i-1].kwIn("indexes", "index") {
			st.Kind = "indexes"
		}
		if !p.kw("from") && !p.kw("in") {
			return nil, p.errHere()
		}
		name, err := p.objectName()
		if err != nil {
			return nil, err
		}
		st.Object = &name
		return st, nil
	case p.kw("time", "zone"):
		st.Kind, st.Name = "variable", "timezone"
		return st, nil
	case p.kw("transaction", "isolation", "level"):
		st.Kind, st.Name = "variable", "transaction_isolation"
		return st, nil
	case p.kw("session", "authorization"):
		st.Kind, st.Name = "variable", "session_authorization"
		return st, nil
	}
	name, err := p.varName()
	if err != nil {
		return nil, err
	}
	st.Kind, st.Name = "variable", name
	return st, nil
}
