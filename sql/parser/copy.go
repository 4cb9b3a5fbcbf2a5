package parser

import (
	"strings"
)

// Copy is COPY table [(columns)] FROM STDIN | TO STDOUT, or COPY (query) TO
// STDOUT, with its options in either PostgreSQL syntax (WITH (FORMAT csv,
// HEADER) or the old CSV HEADER form), normalised to lower-case keys.
type Copy struct {
	Source
	Table   ObjectName // when Query is nil
	Columns []string   // nil: every column
	Query   *Query     // COPY (query) TO
	From    bool       // FROM, else TO
	// File is the server-side file named instead of STDIN/STDOUT ("" for
	// STDIN/STDOUT); Program is set for FROM/TO PROGRAM. Both are refused
	// when the statement runs.
	File    string
	Program bool
	Options []CopyOption
}

// CopyOption is one COPY option: format, delimiter, null, header, quote,
// escape, force_quote, force_not_null, force_null, encoding, freeze, default.
// Value is "" when the option has none (HEADER alone); Columns is set for a
// column list, All for "*".
type CopyOption struct {
	Key     string
	Value   string
	Columns []string
	All     bool
}

// copyStmt parses what follows COPY.
func (p *ddlParser) copyStmt() (Statement, error) {
	st := &Copy{}
	if g := p.peek(); g != nil && g.isParen() {
		p.i++
		if len(g.kids) == 0 {
			return nil, syntaxErrAt(p.src, g.close)
		}
		q, err := parseSeq(p.src, g.kids)
		if err != nil {
			return nil, err
		}
		qq, ok := q.(*Query)
		if !ok {
			return nil, syntaxErrAtNode(p.src, g.kids[0])
		}
		st.Query = qq
	} else {
		var err error
		if st.Table, err = p.objectName(); err != nil {
			return nil, err
		}
		if g := p.peek(); g != nil && g.isParen() {
			if st.Columns, err = p.identList(); err != nil {
				return nil, err
			}
		}
	}
	switch {
	case p.kw("from"):
		st.From = true
	case p.kw("to"):
	default:
		return nil, p.errHere()
	}
	if st.Query != nil && st.From {
		return nil, syntaxErrAtNode(p.src, p.seq[p.i-1])
	}
	n := p.peek()
	switch {
	case n == nil:
		return nil, p.errHere()
	case st.From && n.kw("stdin"), !st.From && n.kw("stdout"):
		p.i++
	case n.kw("program"):
		p.i++
		st.Program = true
		f := p.peek()
		if f == nil || f.group || f.tok.kind != tkString {
			return nil, p.errHere()
		}
		p.i++
		st.File = f.tok.val
	case !n.group && n.tok.kind == tkString:
		p.i++
		st.File = n.tok.val
	default:
		return nil, p.errHere()
	}
	if p.i >= len(p.seq) {
		return st, nil
	}
	if n := p.peek(); n.isParen() || (n.kw("with") && p.peekAt(1) != nil && p.peekAt(1).isParen()) {
		p.kw("with")
		g := p.peek()
		p.i++
		opts, err := p.copyOptions(g)
		if err != nil {
			return nil, err
		}
		st.Options = opts
	} else {
		p.kw("with")
		opts, err := p.copyLegacyOptions()
		if err != nil {
			return nil, err
		}
		st.Options = opts
	}
	// PostgreSQL also accepts a WHERE clause on COPY FROM; we do not.
	if n := p.peek(); n != nil && n.kw("where") {
		return nil, p.unsupported(n, "COPY FROM ... WHERE is not supported")
	}
	return st, nil
}

// copyOptions parses the generic option list: name [value | (columns) | *], ...
func (p *ddlParser) copyOptions(g *node) ([]CopyOption, error) {
	var out []CopyOption
	if len(g.kids) == 0 {
		return nil, syntaxErrAt(p.src, g.close)
	}
	for _, part := range splitCommas(g.kids) {
		if len(part) == 0 {
			return nil, syntaxErrAt(p.src, g.close)
		}
		sub := &ddlParser{src: p.src, seq: part}
		key, err := sub.ident()
		if err != nil {
			return nil, err
		}
		o := CopyOption{Key: strings.ToLower(key)}
		if n := sub.peek(); n != nil {
			switch {
			case n.isParen():
				if o.Columns, err = sub.identList(); err != nil {
					return nil, err
				}
			case n.isOp("*"):
				sub.i++
				o.All = true
			default:
				if o.Value, err = sub.value(); err != nil {
					return nil, err
				}
			}
		}
		if err := sub.done(); err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}

// copyLegacyOptions parses PostgreSQL's pre-9.0 option words: BINARY,
// DELIMITER [AS] 'c', NULL [AS] 'x', CSV, HEADER, QUOTE [AS] 'q', ESCAPE [AS]
// 'e', FORCE QUOTE cols | *, FORCE NOT NULL cols, FORCE NULL cols.
func (p *ddlParser) copyLegacyOptions() ([]CopyOption, error) {
	var out []CopyOption
	strArg := func(key string) error {
		p.kw("as")
		n := p.peek()
		if n == nil || n.group || n.tok.kind != tkString {
			return p.errHere()
		}
		p.i++
		out = append(out, CopyOption{Key: key, Value: n.tok.val})
		return nil
	}
	cols := func(key string) error {
		var names []string
		for {
			name, err := p.ident()
			if err != nil {
				return err
			}
			names = append(names, name)
			if n := p.peek(); n == nil || !n.isPunct(",") {
				break
			}
			p.i++
		}
		out = append(out, CopyOption{Key: key, Columns: names})
		return nil
	}
	for p.i < len(p.seq) {
		n := p.peek()
		var err error
		switch {
		case p.kw("binary"):
			out = append(out, CopyOption{Key: "format", Value: "binary"})
		case p.kw("csv"):
			out = append(out, CopyOption{Key: "format", Value: "csv"})
		case p.kw("header"):
			out = append(out, CopyOption{Key: "header", Value: "true"})
		case p.kw("delimiter"):
			err = strArg("delimiter")
		case p.kw("null"):
			err = strArg("null")
		case p.kw("quote"):
			err = strArg("quote")
		case p.kw("escape"):
			err = strArg("escape")
		case p.kw("encoding"):
			err = strArg("encoding")
		case p.kw("force", "quote"):
			if m := p.peek(); m != nil && m.isOp("*") {
				p.i++
				out = append(out, CopyOption{Key: "force_quote", All: true})
			} else {
				err = cols("force_quote")
			}
		case p.kw("force", "not", "null"):
			err = cols("force_not_null")
		case p.kw("force", "null"):
			err = cols("force_null")
		case n.kw("where"):
			return out, nil
		default:
			return nil, p.errHere()
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}
