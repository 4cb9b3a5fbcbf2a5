package parser

import (
	"strings"

	"github.com/tributary/tributary/sql/types"
)

// CreateFunction is CREATE [OR REPLACE] FUNCTION name ([[IN] [argname]
// type, ...]) RETURNS type {LANGUAGE lang | AS 'body' | RETURN expr |
// IMMUTABLE | STABLE | VOLATILE | STRICT | CALLED ON NULL INPUT | RETURNS
// NULL ON NULL INPUT | [NOT] LEAKPROOF | PARALLEL x} ... Body is the
// body's SQL text ("SELECT expr" for RETURN expr).
type CreateFunction struct {
	Source
	Name      ObjectName
	OrReplace bool
	ArgNames  []string // "" for an unnamed argument
	ArgTypes  []TypeName
	Returns   TypeName
	// ReturnsTable is set for RETURNS TABLE (...) or RETURNS SETOF.
	ReturnsSet bool
	Language   string // lower case; "sql" when none was given with RETURN
	Body       string
	Volatility string // "i", "s" or "v"
	Strict     bool
}

// DropFunction is DROP FUNCTION [IF EXISTS] name [(types)] [, ...]
// [CASCADE | RESTRICT]. Args is nil for a function named without a list.
type DropFunction struct {
	Source
	Funcs    []FuncRef
	IfExists bool
	Cascade  bool
}

// FuncRef names a function, with its argument types when given.
type FuncRef struct {
	Name ObjectName
	Args []TypeName
	// HasArgs: an argument list was given (possibly empty).
	HasArgs bool
}

// funcArgs parses "([IN] [name] type, ...)" (argument names allowed when
// named) at the current position.
func (p *ddlParser) funcArgs(named bool) (names []string, ts []TypeName, err error) {
	g := p.peek()
	if g == nil || !g.isParen() {
		return nil, nil, p.errHere()
	}
	p.i++
	if len(g.kids) == 0 {
		return nil, nil, nil
	}
	for _, part := range splitCommas(g.kids) {
		if len(part) == 0 {
			return nil, nil, syntaxErrAt(p.src, g.close)
		}
		if part[0].kw("in") && len(part) > 1 {
			part = part[1:]
		} else if part[0].kwIn("out", "inout", "variadic") && len(part) > 1 {
			return nil, nil, p.unsupported(part[0], "%s arguments are not supported", strings.ToUpper(part[0].tok.val))
		}
		name := ""
		whole := false
		if _, next, err := parseTypeName(p.src, part, 0); err == nil && next == len(part) {
			whole = true // a type alone (double precision), not name + type
		}
		if named && !whole && len(part) >= 2 && part[0].isIdent() {
			if t, next, err := parseTypeName(p.src, part, 1); err == nil && next == len(part) {
				names, ts = append(names, part[0].tok.val), append(ts, t)
				continue
			}
		}
		for _, n := range part {
			if n.kw("default") || n.isOp("=") {
				return nil, nil, p.unsupported(n, "argument defaults are not supported")
			}
		}
		t, next, err := parseTypeName(p.src, part, 0)
		if err != nil {
			return nil, nil, err
		}
		if next != len(part) {
			return nil, nil, syntaxErrAtNode(p.src, part[next])
		}
		names, ts = append(names, name), append(ts, t)
	}
	return names, ts, nil
}

// createFunction parses the rest of CREATE [OR REPLACE] FUNCTION.
func (p *ddlParser) createFunction(orReplace bool) (Statement, error) {
	st := &CreateFunction{OrReplace: orReplace, Volatility: "v"}
	var err error
	if st.Name, err = p.objectName(); err != nil {
		return nil, err
	}
	if st.ArgNames, st.ArgTypes, err = p.funcArgs(true); err != nil {
		return nil, err
	}
	if err := p.expect("returns"); err != nil {
		return nil, err
	}
	if n := p.peek(); n != nil && n.kwIn("setof", "table") {
		st.ReturnsSet = true
		p.i++
		if n.kw("table") {
			if g := p.peek(); g != nil && g.isParen() {
				p.i++
			}
		} else if _, p.i, err = parseTypeName(p.src, p.seq, p.i); err != nil {
			return nil, err
		}
	} else {
		next := 0
		if st.Returns, next, err = parseTypeName(p.src, p.seq, p.i); err != nil {
			return nil, err
		}
		p.i = next
	}
	hasBody := false
	for p.i < len(p.seq) {
		n := p.peek()
		switch {
		case p.kw("language"):
			l := p.peek()
			if l == nil || !(l.isIdent() || l.tok.kind == tkString) {
				return nil, p.errHere()
			}
			p.i++
			st.Language = strings.ToLower(l.tok.val)
		case p.kw("as"):
			b := p.peek()
			if b == nil || b.group || b.tok.kind != tkString {
				return nil, p.errHere()
			}
			p.i++
			if nx := p.peek(); nx != nil && nx.isPunct(",") {
				return nil, p.unsupported(nx, "AS 'obj_file', 'link_symbol' is not supported")
			}
			if hasBody {
				return nil, syntaxErrAtNode(p.src, n)
			}
			st.Body, hasBody = b.tok.val, true
		case p.kw("return"):
			if hasBody {
				return nil, syntaxErrAtNode(p.src, n)
			}
			if p.i >= len(p.seq) {
				return nil, p.errHere()
			}
			st.Body, hasBody = "SELECT "+srcText(p.src, p.seq[p.i:]), true
			p.i = len(p.seq)
			if st.Language == "" {
				st.Language = "sql"
			}
		case p.kw("immutable"):
			st.Volatility = "i"
		case p.kw("stable"):
			st.Volatility = "s"
		case p.kw("volatile"):
			st.Volatility = "v"
		case p.kw("strict"), p.kw("returns", "null", "on", "null", "input"):
			st.Strict = true
		case p.kw("called", "on", "null", "input"):
			st.Strict = false
		case p.kw("leakproof"), p.kw("not", "leakproof"):
		case p.kw("security", "invoker"), p.kw("security", "definer"), p.kw("external", "security", "invoker"):
		case p.kw("parallel"):
			if !p.kwOneOf("safe", "unsafe", "restricted") {
				return nil, p.errHere()
			}
		case p.kwOneOf("cost", "rows"):
			if v := p.peek(); v == nil || v.tok.kind != tkNumber {
				return nil, p.errHere()
			}
			p.i++
		default:
			return nil, p.errHere()
		}
	}
	if !hasBody {
		return nil, types.Errorf(types.ErrInvalidFunctionDef, "no function body specified")
	}
	if st.Language == "" {
		return nil, types.Errorf(types.ErrInvalidFunctionDef, "no language specified")
	}
	return st, nil
}

// dropFunction parses the rest of DROP FUNCTION.
func (p *ddlParser) dropFunction() (Statement, error) {
	st := &DropFunction{IfExists: p.kw("if", "exists")}
	for {
		var ref FuncRef
		var err error
		if ref.Name, err = p.objectName(); err != nil {
			return nil, err
		}
		if g := p.peek(); g != nil && g.isParen() {
			ref.HasArgs = true
			if _, ref.Args, err = p.funcArgs(true); err != nil {
				return nil, err
			}
		}
		st.Funcs = append(st.Funcs, ref)
		if n := p.peek(); n != nil && n.isPunct(",") {
			p.i++
			continue
		}
		break
	}
	st.Cascade = p.dropBehavior()
	return st, nil
}
