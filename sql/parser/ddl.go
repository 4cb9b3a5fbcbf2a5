package parser

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tributary/tributary/sql/types"
)

// ddlParser is our own recursive-descent grammar for the statements TiDB's
// parser does not cover (streaming DDL, CREATE TABLE with PostgreSQL types,
// session and transaction commands).
type ddlParser struct {
	src string
	seq []*node
	i   int
}

func (p *ddlParser) peek() *node { return nodeAt(p.seq, p.i) }

func (p *ddlParser) peekAt(k int) *node { return nodeAt(p.seq, p.i+k) }

// kw consumes the words ws if they come next.
func (p *ddlParser) kw(ws ...string) bool {
	for k, w := range ws {
		n := p.peekAt(k)
		if n == nil || !n.kw(w) {
			return false
		}
	}
	p.i += len(ws)
	return true
}

func (p *ddlParser) expect(ws ...string) error {
	if !p.kw(ws...) {
		return p.errHere()
	}
	return nil
}

func (p *ddlParser) errHere() error { return syntaxErrAtNode(p.src, p.peek()) }

func (p *ddlParser) unsupported(n *node, format string, args ...any) error {
	pos := len(p.src)
	if n != nil {
		pos = n.tok.pos
	}
	return types.ErrorAt(types.ErrUnsupported, charPos(p.src, pos), format, args...)
}

func (p *ddlParser) done() error {
	if p.i < len(p.seq) {
		return p.errHere()
	}
	return nil
}

func (p *ddlParser) ident() (string, error) {
	n := p.peek()
	if n == nil || !n.isIdent() {
		return "", p.errHere()
	}
	p.i++
	return n.tok.val, nil
}

func (p *ddlParser) objectName() (ObjectName, error) {
	a, err := p.ident()
	if err != nil {
		return ObjectName{}, err
	}
	if n := p.peek(); n != nil && n.isPunct(".") {
		p.i++
		b, err := p.ident()
		if err != nil {
			return ObjectName{}, err
		}
		if n := p.peek(); n != nil && n.isPunct(".") { // database.schema.name: drop the database
			p.i++
			c, err := p.ident()
			if err != nil {
				return ObjectName{}, err
			}
			return ObjectName{Database: a, Schema: b, Name: c}, nil
		}
		return ObjectName{Schema: a, Name: b}, nil
	}
	return ObjectName{Name: a}, nil
}

func (p *ddlParser) ifNotExists() bool { return p.kw("if", "not", "exists") }

// identList parses "(a, b, ...)" at the current position.
func (p *ddlParser) identList() ([]string, error) {
	g := p.peek()
	if g == nil || !g.isParen() {
		return nil, p.errHere()
	}
	p.i++
	var out []string
	for _, part := range splitCommas(g.kids) {
		if len(part) != 1 || !part[0].isIdent() {
			if len(part) == 0 {
				return nil, syntaxErrAt(p.src, g.close)
			}
			return nil, syntaxErrAtNode(p.src, part[0])
		}
		out = append(out, part[0].tok.val)
	}
	return out, nil
}

// unsupportedCommands are recognised statements we do not implement.
var unsupportedCommands = map[string]string{
	"listen": "LISTEN", "notify": "NOTIFY", "unlisten": "UNLISTEN", "vacuum": "VACUUM", "analyze": "ANALYZE",
	"lock": "LOCK", "do": "DO", "call": "CALL",
	"checkpoint": "CHECKPOINT", "reindex": "REINDEX",
	"cluster": "CLUSTER", "refresh": "REFRESH", "import": "IMPORT", "load": "LOAD", "fetch": "FETCH",
	"move": "MOVE", "close": "CLOSE", "declare": "DECLARE", "security": "SECURITY LABEL",
	"reassign": "REASSIGN", "use": "USE", "merge": "MERGE",
}

func (p *ddlParser) statement() (Statement, error) {
	first := p.peek()
	w := first.tok.val
	if first.tok.kind == tkIdent {
		if name, ok := unsupportedCommands[w]; ok {
			return nil, p.unsupported(first, "%s is not supported", name)
		}
	}
	p.i++
	var st Statement
	var err error
	switch {
	case first.kw("create"):
		st, err = p.create()
	case first.kw("drop"):
		st, err = p.drop()
	case first.kw("alter"):
		st, err = p.alter()
	case first.kw("set"):
		st, err = p.set()
	case first.kw("reset"):
		st, err = p.reset()
	case first.kw("show"):
		st, err = p.show()
	case first.kwIn("describe", "desc"):
		var name ObjectName
		if name, err = p.objectName(); err == nil {
			st = &Describe{Name: name}
		}
	case first.kw("grant"):
		st, err = p.grant(false)
	case first.kw("revoke"):
		st, err = p.grant(true)
	case first.kw("flush"):
		st = &Flush{}
	case first.kw("wait"):
		st = &Wait{}
	case first.kw("recover"):
		st = &Recover{}
	case first.kw("cancel"):
		st, err = p.cancel()
	case first.kw("begin"):
		p.kw("work")
		p.kw("transaction")
		st, err = p.txnModes()
	case first.kw("start"):
		if err = p.expect("transaction"); err == nil {
			if st, err = p.txnModes(); err == nil {
				st.(*Begin).Start = true
			}
		}
	case first.kwIn("commit", "end"):
		if p.kw("prepared") {
			return nil, p.unsupported(first, "COMMIT PREPARED is not supported")
		}
		p.kwOneOf("work", "transaction")
		if p.kw("and") {
			p.kw("no")
			err = p.expect("chain")
		}
		st = &Commit{}
	case first.kwIn("rollback", "abort"):
		if n := p.peek(); n != nil && n.kw("prepared") {
			return nil, p.unsupported(first, "ROLLBACK PREPARED is not supported")
		}
		p.kwOneOf("work", "transaction")
		if first.kw("rollback") && p.kw("to") {
			p.kw("savepoint")
			var name string
			if name, err = p.ident(); err == nil {
				st = &Rollback{ToSavepoint: name}
			}
			break
		}
		if p.kw("and") {
			p.kw("no")
			err = p.expect("chain")
		}
		st = &Rollback{}
	case first.kw("savepoint"):
		var name string
		if name, err = p.ident(); err == nil {
			st = &Savepoint{Name: name}
		}
	case first.kw("release"):
		p.kw("savepoint")
		var name string
		if name, err = p.ident(); err == nil {
			st = &Release{Name: name}
		}
	case first.kw("truncate"):
		st, err = p.truncate()
	case first.kw("comment"):
		st, err = p.comment()
	case first.kw("explain"):
		return p.explain()
	case first.kw("copy"):
		st, err = p.copyStmt()
	case first.kw("discard"):
		n := p.peek()
		if n == nil || !n.kwIn("all", "plans", "sequences", "temp", "temporary") {
			return nil, p.errHere()
		}
		p.i++
		st = &Discard{What: n.tok.val}
	case first.kw("prepare"):
		st, err = p.prepare()
	case first.kw("execute"):
		st, err = p.execute()
	case first.kw("deallocate"):
		p.kw("prepare")
		if p.kw("all") {
			st = &Deallocate{All: true}
		} else {
			var name string
			if name, err = p.ident(); err == nil {
				st = &Deallocate{Name: name}
			}
		}
	default:
		return nil, syntaxErrAt(p.src, first.tok)
	}
	if err != nil {
		return nil, err
	}
	if err := p.done(); err != nil {
		return nil, err
	}
	return st, nil
}

func (p *ddlParser) kwOneOf(ws ...string) bool {
	for _, w := range ws {
		if p.kw(w) {
			return true
		}
	}
	return false
}

func (p *ddlParser) create() (Statement, error) {
	orReplace := p.kw("or", "replace")
	n := p.peek()
	switch {
	case p.kw("table"):
		if orReplace {
			return nil, syntaxErrAt(p.src, n.tok)
		}
		return p.createTable()
	case p.kw("materialized", "view"):
		return p.createMV(n)
	case p.kw("view"):
		return p.createView(orReplace)
	case p.kw("sink"):
		return p.createSink()
	case p.kw("source"):
		return p.createSource()
	case p.kw("schema"):
		return p.createSchema()
	case p.kw("database"):
		return p.createDatabase()
	case p.kw("function"):
		return p.createFunction(orReplace)
	case p.kw("user"):
		return p.role("create", true)
	case p.kw("role"):
		return p.role("create", false)
	case n == nil:
		return nil, p.errHere()
	case n.kwIn("temp", "temporary", "unlogged", "global", "local"):
		return nil, p.unsupported(n, "CREATE %s TABLE is not supported", strings.ToUpper(n.tok.val))
	case p.kw("index"):
		return p.createIndex()
	case n.kw("unique"):
		return nil, p.unsupported(n, "unique indexes are not supported (an index here never refuses a row; use a primary key)")
	case n.isIdent() && n.tok.kind == tkIdent:
		return nil, p.unsupported(n, "CREATE %s is not supported", strings.ToUpper(n.tok.val))
	}
	return nil, p.errHere()
}

// prepare parses the rest of PREPARE name [(type, ...)] AS statement.
func (p *ddlParser) prepare() (*Prepare, error) {
	st := &Prepare{}
	var err error
	if st.Name, err = p.ident(); err != nil {
		return nil, err
	}
	if g := p.peek(); g != nil && g.isParen() {
		p.i++
		for _, part := range splitCommas(g.kids) {
			if len(part) == 0 {
				return nil, syntaxErrAt(p.src, g.close)
			}
			t, next, err := parseTypeName(p.src, part, 0)
			if err != nil {
				return nil, err
			}
			if next != len(part) {
				return nil, syntaxErrAtNode(p.src, part[next])
			}
			st.Types = append(st.Types, t)
		}
	}
	if err := p.expect("as"); err != nil {
		return nil, err
	}
	body := p.peek()
	if body == nil {
		return nil, p.errHere()
	}
	last := p.seq[len(p.seq)-1]
	end := last.tok.end
	if last.group {
		end = last.close.end
	}
	st.Body = strings.TrimSpace(p.src[body.tok.pos:end])
	inner, err := Parse(st.Body)
	if err != nil {
		return nil, err
	}
	if len(inner) != 1 {
		return nil, p.unsupported(body, "PREPARE takes one statement")
	}
	switch inner[0].(type) {
	case *Query: // SELECT, VALUES, INSERT, UPDATE, DELETE
	default:
		return nil, p.unsupported(body, "only SELECT, VALUES, INSERT, UPDATE and DELETE can be prepared")
	}
	st.Statement = inner[0]
	p.i = len(p.seq)
	return st, nil
}

// execute parses the rest of EXECUTE name [(expression, ...)].
func (p *ddlParser) execute() (*Execute, error) {
	st := &Execute{}
	var err error
	if st.Name, err = p.ident(); err != nil {
		return nil, err
	}
	if g := p.peek(); g != nil && g.isParen() {
		p.i++
		for _, part := range splitCommas(g.kids) {
			if len(part) == 0 {
				return nil, syntaxErrAt(p.src, g.close)
			}
			from, end := part[0].tok.pos, part[len(part)-1].tok.end
			if last := part[len(part)-1]; last.group {
				end = last.close.end
			}
			st.Args = append(st.Args, strings.TrimSpace(p.src[from:end]))
		}
	}
	return st, nil
}

// createIndex parses the rest of CREATE INDEX [CONCURRENTLY] [[IF NOT EXISTS]
// name] ON [ONLY] table [USING btree | hash] (column [ASC | DESC] [NULLS
// FIRST | LAST], ...) [INCLUDE (columns)] [DISTRIBUTED BY (columns)].
// Expressions, WHERE (partial indexes) and other access methods are refused.
func (p *ddlParser) createIndex() (Statement, error) {
	st := &CreateIndex{}
	p.kw("concurrently") // an index is always built without blocking writes
	st.IfNotExists = p.ifNotExists()
	if n := p.peek(); n != nil && !n.kw("on") {
		name, err := p.ident()
		if err != nil {
			return nil, err
		}
		st.Name = name
	} else if st.IfNotExists {
		return nil, p.errHere()
	}
	if err := p.expect("on"); err != nil {
		return nil, err
	}
	p.kw("only")
	var err error
	if st.Table, err = p.objectName(); err != nil {
		return nil, err
	}
	if p.kw("using") {
		m := p.peek()
		if m == nil || !m.isIdent() {
			return nil, p.errHere()
		}
		if !m.kwIn("btree", "hash") {
			return nil, p.unsupported(m, "access method \"%s\" is not supported", m.tok.val)
		}
		p.i++
	}
	g := p.peek()
	if g == nil || !g.isParen() {
		return nil, p.errHere()
	}
	p.i++
	for _, part := range splitCommas(g.kids) {
		if len(part) == 0 {
			return nil, syntaxErrAt(p.src, g.close)
		}
		if !part[0].isIdent() || part[0].isParen() {
			return nil, p.unsupported(part[0], "indexes on expressions are not supported")
		}
		rest := part[1:]
		for len(rest) > 0 && (rest[0].kwIn("asc", "desc", "nulls", "first", "last")) {
			rest = rest[1:]
		}
		if len(rest) > 0 {
			return nil, p.unsupported(rest[0], "indexes on expressions are not supported")
		}
		st.Columns = append(st.Columns, part[0].tok.val)
	}
	for {
		switch {
		case p.kw("include"):
			cols, err := p.identList()
			if err != nil {
				return nil, err
			}
			st.Include = append(st.Include, cols...)
			continue
		case p.kw("distributed", "by"):
			cols, err := p.identList()
			if err != nil {
				return nil, err
			}
			st.DistributedBy = cols
			continue
		}
		break
	}
	if n := p.peek(); n != nil && n.kw("where") {
		return nil, p.unsupported(n, "partial indexes are not supported")
	}
	if n := p.peek(); n != nil && n.kw("with") {
		p.i++
		if _, err := p.options(); err != nil { // storage parameters: nothing to tune here
			return nil, err
		}
	}
	return st, p.done()
}

func (p *ddlParser) createTable() (Statement, error) {
	st := &CreateTable{IfNotExists: p.ifNotExists()}
	var err error
	if st.Name, err = p.objectName(); err != nil {
		return nil, err
	}
	if n := p.peek(); n != nil && (n.kw("as") || n.isParen() && p.peekAt(1) != nil && p.peekAt(1).kw("as")) {
		return p.createTableAs(st)
	}
	g := p.peek()
	if g == nil || !g.isParen() {
		return nil, p.errHere()
	}
	p.i++
	if st.Columns, st.PrimaryKey, st.Watermark, err = p.columnDefs(g, st.Name.Name); err != nil {
		return nil, err
	}
	for p.i < len(p.seq) {
		n := p.peek()
		switch {
		case p.kw("append", "only"):
			st.AppendOnly = true
		case n.kw("with"):
			p.i++
			if st.With, err = p.options(); err != nil {
				return nil, err
			}
		case n.kw("format"):
			if st.Format, err = p.formatEncode(); err != nil {
				return nil, err
			}
		case n.kw("include"):
			inc, err := p.include()
			if err != nil {
				return nil, err
			}
			st.Include = append(st.Include, inc)
		case n.kw("from") && st.FromSource == nil:
			p.i++
			src, err := p.objectName()
			if err != nil {
				return nil, err
			}
			st.FromSource = &src
			if err := p.expect("table"); err != nil {
				return nil, err
			}
			if t := p.peek(); t == nil || t.group || t.tok.kind != tkString {
				return nil, p.errHere()
			}
			st.SourceTable = p.peek().tok.val
			p.i++
		case n.kw("on") && st.OnConflict == "":
			p.i++
			if err := p.expect("conflict"); err != nil {
				return nil, err
			}
			switch {
			case p.kw("overwrite"):
				st.OnConflict = "overwrite"
			case p.kw("ignore"), p.kw("do", "nothing"):
				st.OnConflict = "ignore"
			case p.kw("do", "update", "if", "not", "null"):
				st.OnConflict = "do_update_if_not_null"
			case p.kw("do", "update", "full"):
				st.OnConflict = "overwrite"
			default:
				return nil, p.errHere()
			}
			if p.kw("with", "version", "column") {
				g := p.peek()
				if g == nil || !g.isParen() || len(g.kids) == 0 {
					return nil, p.errHere()
				}
				p.i++
				for _, part := range splitCommas(g.kids) {
					if len(part) != 1 || !part[0].isIdent() {
						return nil, syntaxErrAtNode(p.src, nodeAt(part, 0))
					}
					st.VersionColumns = append(st.VersionColumns, part[0].tok.val)
				}
			}
		case n.kwIn("on", "as", "engine"):
			return nil, p.unsupported(n, "CREATE TABLE ... %s is not supported", strings.ToUpper(n.tok.val))
		default:
			return nil, p.errHere()
		}
	}
	if err := p.checkKey(g, st.Columns, st.PrimaryKey, st.Include); err != nil {
		return nil, err
	}
	return st, nil
}

// columnStop ends a DEFAULT expression.
var columnStop = map[string]bool{
	"not": true, "null": true, "primary": true, "constraint": true, "unique": true, "check": true,
	"references": true, "default": true, "generated": true, "collate": true, "as": true,
}

// columnDefs parses the parenthesised column and constraint list of CREATE
// TABLE / CREATE SOURCE.
func (p *ddlParser) columnDefs(g *node, table string) ([]*ColumnDef, []string, *Watermark, error) {
	cols, pk, wm, err := p.columnDefsWM(g, table)
	if err != nil {
		return nil, nil, nil, err
	}
	if wm != nil && !slices.ContainsFunc(cols, func(c *ColumnDef) bool { return c.Name == wm.Column }) {
		return nil, nil, nil, types.ErrorAt(types.ErrUndefinedColumn, charPos(p.src, g.tok.pos), "column %q named in WATERMARK FOR does not exist", wm.Column)
	}
	return cols, pk, wm, nil
}

func (p *ddlParser) columnDefsWM(g *node, table string) ([]*ColumnDef, []string, *Watermark, error) {
	var cols []*ColumnDef
	var pk []string
	var wm *Watermark
	pkSet := false
	setPK := func(at *node, names []string) error {
		if pkSet {
			return types.ErrorAt(types.ErrInvalidTableDefinition, charPos(p.src, at.tok.pos), "multiple primary keys for table %q are not allowed", table)
		}
		pkSet = true
		pk = names
		return nil
	}
	if len(g.kids) == 0 {
		return nil, nil, nil, nil
	}
	parts := splitCommas(g.kids)
	if n := len(parts); n > 1 && len(parts[n-1]) == 0 {
		parts = parts[:n-1] // a trailing comma after the last column, as RisingWave accepts
	}
	for _, part := range parts {
		if len(part) == 0 {
			return nil, nil, nil, syntaxErrAt(p.src, g.close)
		}
		sub := &ddlParser{src: p.src, seq: part}
		first := part[0]
		if sub.kw("constraint") {
			if _, err := sub.ident(); err != nil {
				return nil, nil, nil, err
			}
		}
		switch {
		case sub.kw("primary", "key"):
			names, err := sub.identList()
			if err != nil {
				return nil, nil, nil, err
			}
			if err := setPK(first, names); err != nil {
				return nil, nil, nil, err
			}
			if err := sub.done(); err != nil {
				return nil, nil, nil, err
			}
			continue
		case sub.peek() != nil && sub.peek().kw("watermark") && sub.peekAt(1) != nil && sub.peekAt(1).kw("for"):
			if wm != nil {
				return nil, nil, nil, sub.unsupported(first, "only one WATERMARK FOR is supported per relation")
			}
			w, err := sub.watermark()
			if err != nil {
				return nil, nil, nil, err
			}
			wm = w
			continue
		case sub.peek() != nil && sub.peek().kwIn("unique", "check", "foreign", "exclude", "like"):
			n := sub.peek()
			return nil, nil, nil, sub.unsupported(n, "%s constraints are not supported", strings.ToUpper(n.tok.val))
		}
		if first.kw("constraint") {
			return nil, nil, nil, sub.errHere()
		}
		col, err := sub.columnDef()
		if err != nil {
			return nil, nil, nil, err
		}
		if col.PrimaryKey {
			if err := setPK(first, []string{col.Name}); err != nil {
				return nil, nil, nil, err
			}
		}
		cols = append(cols, col)
	}
	for _, name := range pk {
		for _, c := range cols {
			if c.Name == name {
				c.NotNull = true
				c.PrimaryKey = true
			}
		}
	}
	return cols, pk, wm, nil
}

// watermark parses WATERMARK FOR col AS col [- INTERVAL 'd' [unit]]. The
// watermark expression must be the column itself, less a constant interval.
func (p *ddlParser) watermark() (*Watermark, error) {
	p.i += 2 // WATERMARK FOR
	col, err := p.ident()
	if err != nil {
		return nil, err
	}
	if err := p.expect("as"); err != nil {
		return nil, err
	}
	at := p.peek()
	ref, err := p.ident()
	if err != nil {
		return nil, err
	}
	wm := &Watermark{Column: col}
	if ref != col {
		return nil, p.unsupported(at, "the watermark of column %q must be %q or %q - INTERVAL '...'", col, col, col)
	}
	if p.peek() == nil {
		return wm, nil
	}
	if n := p.peek(); !n.isOp("-") {
		return nil, p.unsupported(n, "the watermark of column %q must be %q or %q - INTERVAL '...'", col, col, col)
	}
	p.i++
	if !p.kw("interval") {
		return nil, p.unsupported(p.peek(), "the watermark of column %q must be %q or %q - INTERVAL '...'", col, col, col)
	}
	s := p.peek()
	if s == nil || s.group || s.tok.kind != tkString {
		return nil, p.errHere()
	}
	p.i++
	text := s.tok.val
	if u := p.peek(); u != nil && u.isIdent() { // INTERVAL '5' SECOND
		text += " " + strings.ToLower(u.tok.val)
		p.i++
	}
	iv, err := types.ParseInterval(text)
	if err != nil {
		return nil, types.ErrorAt(types.ErrInvalidDatetime, charPos(p.src, s.tok.pos), "%s", err.Error())
	}
	if iv.Months < 0 || iv.Days < 0 || iv.Micros < 0 {
		return nil, types.ErrorAt(types.ErrInvalidParameter, charPos(p.src, s.tok.pos), "the watermark delay must not be negative")
	}
	wm.Delay = text
	return wm, p.done()
}

// checkKey refuses a primary key naming a column that is not defined (g is
// the column list). With INCLUDE columns the key may name one of them: the
// statement's executor checks it.
func (p *ddlParser) checkKey(g *node, cols []*ColumnDef, pk []string, include []Include) error {
	if len(include) > 0 {
		return nil
	}
	for _, name := range pk {
		if !slices.ContainsFunc(cols, func(c *ColumnDef) bool { return c.Name == name }) {
			return types.ErrorAt(types.ErrUndefinedColumn, charPos(p.src, g.tok.pos), "column %q named in key does not exist", name)
		}
	}
	return nil
}

func (p *ddlParser) columnDef() (*ColumnDef, error) {
	name, err := p.ident()
	if err != nil {
		return nil, err
	}
	col := &ColumnDef{Name: name}
	if p.peek() == nil {
		return nil, p.errHere()
	}
	t, next, err := parseTypeName(p.src, p.seq, p.i)
	if err != nil {
		return nil, err
	}
	col.Type = t
	p.i = next
	if i, ok := serialTypes[t.Name]; ok && len(t.Args) == 0 && !t.Array {
		col.Serial = true
		col.Type = TypeName{Name: i}
		col.NotNull = true
	}
	for p.i < len(p.seq) {
		n := p.peek()
		switch {
		case p.identityNext():
			if err := p.identity(col); err != nil {
				return nil, err
			}
		case p.kw("not", "null"):
			col.NotNull = true
		case p.kw("null"):
		case p.kw("primary", "key"):
			col.PrimaryKey = true
			col.NotNull = true
		case p.kw("constraint"):
			if _, err := p.ident(); err != nil {
				return nil, err
			}
		case p.kw("default"):
			if col.Default != nil {
				return nil, syntaxErrAt(p.src, n.tok)
			}
			if col.Serial || col.Identity != "" {
				return nil, &types.Error{Kind: types.ErrSyntax, Pos: charPos(p.src, n.tok.pos),
					Msg: fmt.Sprintf("multiple default values specified for column \"%s\"", col.Name)}
			}
			if col.Generated != nil {
				return nil, &types.Error{Kind: types.ErrSyntax, Pos: charPos(p.src, n.tok.pos),
					Msg: fmt.Sprintf("multiple default or generation expressions specified for column \"%s\"", col.Name)}
			}
			start := p.i
			p.i++ // the first token always belongs to the expression
			for p.i < len(p.seq) && !(p.peek().tok.kind == tkIdent && columnStop[p.peek().tok.val] && !p.peek().group) {
				p.i++
			}
			if start >= len(p.seq) {
				return nil, p.errHere()
			}
			expr := p.seq[start:p.i]
			col.DefaultText = srcText(p.src, expr)
			if col.Default, err = parseExpr(p.src, expr); err != nil {
				return nil, err
			}
		case n.kw("collate"):
			p.i++
			if _, err := p.ident(); err != nil {
				return nil, err
			}
		case n.kwIn("as", "generated") && !(n.kw("generated") && !(p.peekAt(1) != nil && p.peekAt(1).kw("always"))):
			if col.Default != nil || col.Generated != nil {
				return nil, &types.Error{Kind: types.ErrSyntax, Pos: charPos(p.src, n.tok.pos),
					Msg: fmt.Sprintf("multiple default or generation expressions specified for column \"%s\"", col.Name)}
			}
			var expr []*node
			if p.kw("generated", "always", "as") {
				g := p.peek()
				if g == nil || !g.isParen() || len(g.kids) == 0 {
					return nil, p.errHere()
				}
				p.i++
				if err := p.expect("stored"); err != nil {
					return nil, err
				}
				expr = g.kids
			} else {
				p.i++ // AS
				start := p.i
				for p.i < len(p.seq) && !(p.peek().tok.kind == tkIdent && columnStop[p.peek().tok.val] && !p.peek().group) {
					p.i++
				}
				if start == p.i {
					return nil, p.errHere()
				}
				expr = p.seq[start:p.i]
			}
			col.GeneratedText = srcText(p.src, expr)
			if col.Generated, err = parseExpr(p.src, expr); err != nil {
				return nil, err
			}
		case n.kwIn("unique", "check", "references", "generated"):
			return nil, p.unsupported(n, "column constraint %s is not supported", strings.ToUpper(n.tok.val))
		default:
			return nil, p.errHere()
		}
	}
	return col, nil
}

// serialTypes maps PostgreSQL's serial pseudo-types to their integer types.
var serialTypes = map[string]string{
	"serial": "integer", "serial4": "integer", "bigserial": "bigint", "serial8": "bigint",
	"smallserial": "smallint", "serial2": "smallint",
}

// identityNext reports whether GENERATED {ALWAYS | BY DEFAULT} AS IDENTITY comes next.
func (p *ddlParser) identityNext() bool {
	words := func(ws ...string) bool {
		for k, w := range ws {
			if n := p.peekAt(k); n == nil || !n.kw(w) {
				return false
			}
		}
		return true
	}
	return words("generated", "always", "as", "identity") || words("generated", "by", "default", "as", "identity")
}

// identity parses GENERATED {ALWAYS | BY DEFAULT} AS IDENTITY [(options)]:
// of the sequence options, START [WITH] n and INCREMENT [BY] n.
func (p *ddlParser) identity(col *ColumnDef) error {
	at := p.peek()
	if col.Identity != "" || col.Serial || col.Default != nil || col.Generated != nil {
		return &types.Error{Kind: types.ErrSyntax, Pos: charPos(p.src, at.tok.pos),
			Msg: fmt.Sprintf("multiple default or identity specifications for column \"%s\"", col.Name)}
	}
	if p.kw("generated", "always", "as", "identity") {
		col.Identity = "always"
	} else if p.kw("generated", "by", "default", "as", "identity") {
		col.Identity = "by default"
	}
	col.NotNull = true
	g := p.peek()
	if g == nil || !g.isParen() {
		return nil
	}
	p.i++
	sub := &ddlParser{src: p.src, seq: g.kids}
	for sub.i < len(sub.seq) {
		n := sub.peek()
		var dst *int64
		switch {
		case sub.kw("start"):
			sub.kw("with")
			dst = &col.SeqStart
		case sub.kw("increment"):
			sub.kw("by")
			dst = &col.SeqIncrement
		default:
			return sub.unsupported(n, "this identity sequence option is not supported (only START WITH and INCREMENT BY)")
		}
		v, err := sub.value()
		if err != nil {
			return err
		}
		x, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return sub.errHere()
		}
		if dst == &col.SeqIncrement && x == 0 {
			return &types.Error{Kind: types.ErrInvalidParameter, Msg: "INCREMENT must not be zero"}
		}
		*dst = x
	}
	return nil
}

// options parses "(key = value, ...)" after WITH.
func (p *ddlParser) options() ([]Option, error) {
	g := p.peek()
	if g == nil || !g.isParen() {
		return nil, p.errHere()
	}
	p.i++
	return parseOptions(p.src, g)
}

func parseOptions(src string, g *node) ([]Option, error) {
	opts := []Option{}
	if len(g.kids) == 0 {
		return opts, nil
	}
	parts := splitCommas(g.kids)
	if n := len(parts); n > 1 && len(parts[n-1]) == 0 {
		parts = parts[:n-1] // a trailing comma, as RisingWave accepts
	}
	for _, part := range parts {
		if len(part) == 0 {
			return nil, syntaxErrAt(src, g.close)
		}
		sub := &ddlParser{src: src, seq: part}
		var key strings.Builder
		if n := sub.peek(); !n.group && n.tok.kind == tkString {
			key.WriteString(strings.ToLower(n.tok.val))
			sub.i++
		} else {
			for {
				w, err := sub.ident()
				if err != nil {
					return nil, err
				}
				key.WriteString(strings.ToLower(w))
				if n := sub.peek(); n != nil && n.isPunct(".") {
					sub.i++
					key.WriteByte('.')
					continue
				}
				break
			}
		}
		if n := sub.peek(); n == nil || !n.isOp("=") {
			return nil, sub.errHere()
		}
		sub.i++
		val, err := sub.value()
		if err != nil {
			return nil, err
		}
		if err := sub.done(); err != nil {
			return nil, err
		}
		opts = append(opts, Option{Key: key.String(), Value: val})
	}
	return opts, nil
}

// value reads one option or SET value: a string, a (signed) number, or a
// word; quoted identifiers give their content.
func (p *ddlParser) value() (string, error) {
	n := p.peek()
	if n == nil || n.group {
		return "", p.errHere()
	}
	sign := ""
	if n.isOp("-") || n.isOp("+") {
		if n.tok.val == "-" {
			sign = "-"
		}
		p.i++
		n = p.peek()
		if n == nil || n.group || n.tok.kind != tkNumber {
			return "", p.errHere()
		}
	}
	switch n.tok.kind {
	case tkString, tkNumber, tkIdent, tkQIdent:
		p.i++
		return sign + n.tok.val, nil
	}
	return "", p.errHere()
}

// formatEncode parses FORMAT x ENCODE y [(options)]; names are upper case.
func (p *ddlParser) formatEncode() (*FormatEncode, error) {
	if err := p.expect("format"); err != nil {
		return nil, err
	}
	f, err := p.ident()
	if err != nil {
		return nil, err
	}
	fe := &FormatEncode{Format: strings.ToUpper(f)}
	if err := p.expect("encode"); err != nil {
		return nil, err
	}
	e, err := p.ident()
	if err != nil {
		return nil, err
	}
	fe.Encode = strings.ToUpper(e)
	if n := p.peek(); n != nil && n.isParen() {
		if fe.Options, err = p.options(); err != nil {
			return nil, err
		}
	}
	return fe, nil
}

// query parses seq[from:to] as a query (not DML).
func (p *ddlParser) query(lo, hi int) (*Query, error) {
	if lo >= hi {
		return nil, syntaxErrAtNode(p.src, nodeAt(p.seq, lo))
	}
	q, err := parseQuery(p.src, clone(p.seq[lo:hi]))
	if err != nil {
		return nil, err
	}
	if !isSelect(q) {
		return nil, syntaxErrAt(p.src, p.seq[lo].tok)
	}
	return q, nil
}

func (p *ddlParser) createMV(at *node) (Statement, error) {
	st := &CreateMaterializedView{IfNotExists: p.ifNotExists()}
	var err error
	if st.Name, err = p.objectName(); err != nil {
		return nil, err
	}
	if n := p.peek(); n != nil && n.isParen() {
		if st.Columns, err = p.identList(); err != nil {
			return nil, err
		}
	}
	if p.kw("with") {
		if st.With, err = p.options(); err != nil {
			return nil, err
		}
	}
	if err := p.expect("as"); err != nil {
		return nil, err
	}
	end := len(p.seq)
	if k := len(p.seq) - 4; k > p.i && p.isEOWC(k) {
		end, st.EmitOnWindowClose = k, true
	}
	if st.Query, err = p.query(p.i, end); err != nil {
		return nil, err
	}
	p.i = len(p.seq)
	return st, nil
}

// isEOWC reports whether seq[k:] starts with EMIT ON WINDOW CLOSE.
func (p *ddlParser) isEOWC(k int) bool {
	for j, w := range []string{"emit", "on", "window", "close"} {
		n := nodeAt(p.seq, k+j)
		if n == nil || !n.kw(w) {
			return false
		}
	}
	return true
}

func (p *ddlParser) createView(orReplace bool) (Statement, error) {
	st := &CreateView{OrReplace: orReplace, IfNotExists: p.ifNotExists()}
	var err error
	if st.Name, err = p.objectName(); err != nil {
		return nil, err
	}
	if n := p.peek(); n != nil && n.isParen() {
		if st.Columns, err = p.identList(); err != nil {
			return nil, err
		}
	}
	if err := p.expect("as"); err != nil {
		return nil, err
	}
	if st.Query, err = p.query(p.i, len(p.seq)); err != nil {
		return nil, err
	}
	p.i = len(p.seq)
	return st, nil
}

// sinkTail finds where a sink's query ends: at a top-level "WITH (" or
// "FORMAT x ENCODE".
func (p *ddlParser) sinkTail(from int) int {
	for k := from + 1; k < len(p.seq); k++ {
		if p.seq[k].kw("with") && k+1 < len(p.seq) && p.seq[k+1].isParen() {
			return k
		}
		if p.seq[k].kw("format") && k+2 < len(p.seq) && p.seq[k+1].isIdent() && p.seq[k+2].kw("encode") {
			return k
		}
		if p.isEOWC(k) {
			return k
		}
	}
	return len(p.seq)
}

func (p *ddlParser) createSink() (Statement, error) {
	st := &CreateSink{IfNotExists: p.ifNotExists()}
	var err error
	if st.Name, err = p.objectName(); err != nil {
		return nil, err
	}
	if p.kw("into") {
		into, err := p.objectName()
		if err != nil {
			return nil, err
		}
		st.Into = &into
		if n := p.peek(); n != nil && n.isParen() {
			if st.IntoColumns, err = p.identList(); err != nil {
				return nil, err
			}
		}
	}
	if p.kw("with") {
		if st.With, err = p.options(); err != nil {
			return nil, err
		}
	}
	switch {
	case p.kw("from"):
		from, err := p.objectName()
		if err != nil {
			return nil, err
		}
		st.From = &from
	case p.kw("as"):
		end := p.sinkTail(p.i)
		if st.Query, err = p.query(p.i, end); err != nil {
			return nil, err
		}
		p.i = end
	default:
		return nil, p.errHere()
	}
	for p.i < len(p.seq) {
		n := p.peek()
		switch {
		case n.kw("with") && st.With == nil:
			p.i++
			if st.With, err = p.options(); err != nil {
				return nil, err
			}
		case n.kw("format") && st.Format == nil:
			if st.Format, err = p.formatEncode(); err != nil {
				return nil, err
			}
		case st.Query != nil && !st.EmitOnWindowClose && p.isEOWC(p.i):
			p.i += 4
			st.EmitOnWindowClose = true
		default:
			return nil, p.errHere()
		}
	}
	return st, nil
}

func (p *ddlParser) createSource() (Statement, error) {
	st := &CreateSource{IfNotExists: p.ifNotExists()}
	var err error
	if st.Name, err = p.objectName(); err != nil {
		return nil, err
	}
	g := p.peek()
	if g != nil && g.isParen() {
		p.i++
		if st.Columns, st.PrimaryKey, st.Watermark, err = p.columnDefs(g, st.Name.Name); err != nil {
			return nil, err
		}
	}
	for p.i < len(p.seq) {
		n := p.peek()
		switch {
		case n.kw("with") && st.With == nil:
			p.i++
			if st.With, err = p.options(); err != nil {
				return nil, err
			}
		case n.kw("format") && st.Format == nil:
			if st.Format, err = p.formatEncode(); err != nil {
				return nil, err
			}
		case n.kw("include"):
			inc, err := p.include()
			if err != nil {
				return nil, err
			}
			st.Include = append(st.Include, inc)
		default:
			return nil, p.errHere()
		}
	}
	if g != nil && g.isParen() {
		if err := p.checkKey(g, st.Columns, st.PrimaryKey, st.Include); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// include parses INCLUDE what [AS name].
func (p *ddlParser) include() (Include, error) {
	p.i++ // INCLUDE
	what, err := p.ident()
	if err != nil {
		return Include{}, err
	}
	inc := Include{What: strings.ToLower(what)}
	if p.kw("as") {
		if inc.Name, err = p.ident(); err != nil {
			return Include{}, err
		}
	}
	return inc, nil
}

// objectKind reads TABLE, MATERIALIZED VIEW, VIEW, SINK, SOURCE or INDEX.
func (p *ddlParser) objectKind() (ObjectKind, bool) {
	switch {
	case p.kw("table"):
		return KindTable, true
	case p.kw("materialized", "view"):
		return KindMaterializedView, true
	case p.kw("view"):
		return KindView, true
	case p.kw("sink"):
		return KindSink, true
	case p.kw("source"):
		return KindSource, true
	case p.kw("index"):
		return KindIndex, true
	}
	return 0, false
}

func (p *ddlParser) drop() (Statement, error) {
	if p.kwOneOf("user", "role") {
		return p.role("drop", false)
	}
	if p.kw("schema") {
		return p.dropSchema()
	}
	if p.kw("database") {
		st := &DropDatabase{IfExists: p.kw("if", "exists")}
		name, err := p.ident()
		if err != nil {
			return nil, err
		}
		st.Name = name
		if n := p.peek(); n != nil {
			return nil, p.unsupported(n, "DROP DATABASE ... %s is not supported", strings.ToUpper(n.tok.val))
		}
		return st, nil
	}
	if p.kw("function") {
		return p.dropFunction()
	}
	kind, ok := p.objectKind()
	if !ok {
		if n := p.peek(); n != nil && n.tok.kind == tkIdent && !n.group {
			return nil, p.unsupported(n, "DROP %s is not supported", strings.ToUpper(n.tok.val))
		}
		return nil, p.errHere()
	}
	st := &Drop{Kind: kind, IfExists: p.kw("if", "exists")}
	for {
		name, err := p.objectName()
		if err != nil {
			return nil, err
		}
		st.Names = append(st.Names, name)
		if n := p.peek(); n != nil && n.isPunct(",") {
			p.i++
			continue
		}
		break
	}
	st.Cascade = p.dropBehavior()
	return st, nil
}

// dropBehavior reads an optional CASCADE | RESTRICT and reports CASCADE.
func (p *ddlParser) dropBehavior() bool {
	if p.kw("cascade") {
		return true
	}
	p.kw("restrict")
	return false
}

func (p *ddlParser) alter() (Statement, error) {
	if p.kwOneOf("user", "role") {
		return p.role("alter", false)
	}
	st := &Alter{Action: "set"}
	if p.kw("system") {
		st.Kind = KindSystem
	} else {
		kind, ok := p.objectKind()
		if !ok {
			if n := p.peek(); n != nil && n.tok.kind == tkIdent && !n.group {
				return nil, p.unsupported(n, "ALTER %s is not supported", strings.ToUpper(n.tok.val))
			}
			return nil, p.errHere()
		}
		st.Kind = kind
		if p.kw("if", "exists") {
			// ALTER ... IF EXISTS name RENAME | ADD | DROP.
			name, err := p.objectName()
			if err != nil {
				return nil, err
			}
			if n := p.peek(); n != nil && n.kw("rename") {
				return p.rename(kind, name, true)
			}
			if n := p.peek(); kind == KindTable && n != nil && n.kwIn("add", "drop") {
				return p.alterColumn(name, true)
			}
			return nil, p.errHere()
		}
		var err error
		if st.Name, err = p.objectName(); err != nil {
			return nil, err
		}
	}
	n := p.peek()
	if n == nil {
		return nil, p.errHere()
	}
	switch {
	case st.Kind != KindSystem && n.kw("rename"):
		return p.rename(st.Kind, st.Name, false)
	case st.Kind == KindTable && n.kwIn("add", "drop"):
		return p.alterColumn(st.Name, false)
	}
	if !p.kw("set") {
		if n.tok.kind == tkIdent {
			return nil, p.unsupported(n, "ALTER %s ... %s is not supported", st.Kind, strings.ToUpper(n.tok.val))
		}
		return nil, p.errHere()
	}
	key, err := p.ident()
	if err != nil {
		return nil, err
	}
	st.Key = key
	if m := p.peek(); key == "schema" && st.Kind != KindSystem && m != nil && m.isIdent() {
		// ALTER kind name SET SCHEMA s: a move, run as a rename.
		p.i++
		return &Rename{Kind: st.Kind, Name: st.Name, NewSchema: m.tok.val, NewName: st.Name.Name}, nil
	}
	if m := p.peek(); m != nil && (m.isOp("=") || m.kw("to")) {
		p.i++
	} else {
		return nil, p.unsupported(n, "ALTER %s ... SET %s is not supported", st.Kind, strings.ToUpper(key))
	}
	if p.kw("default") {
		st.Default = true
		return st, nil
	}
	if st.Value, err = p.value(); err != nil {
		return nil, err
	}
	return st, nil
}

var isolationLevels = [][]string{
	{"serializable"}, {"repeatable", "read"}, {"read", "committed"}, {"read", "uncommitted"},
}

// isolation reads an isolation level name after ISOLATION LEVEL.
func (p *ddlParser) isolation() (string, error) {
	for _, lvl := range isolationLevels {
		if p.kw(lvl...) {
			return strings.Join(lvl, " "), nil
		}
	}
	return "", p.errHere()
}

// txnModes parses BEGIN/START TRANSACTION modes.
func (p *ddlParser) txnModes() (Statement, error) {
	st := &Begin{}
	for p.i < len(p.seq) {
		switch {
		case p.kw("isolation", "level"):
			lvl, err := p.isolation()
			if err != nil {
				return nil, err
			}
			st.Isolation = lvl
		case p.kw("read", "only"):
			st.ReadOnly = true
		case p.kw("read", "write"):
			st.ReadOnly = false
		case p.kw("not", "deferrable"), p.kw("deferrable"):
		default:
			return nil, p.errHere()
		}
		if n := p.peek(); n != nil && n.isPunct(",") {
			p.i++
		}
	}
	return st, nil
}

func (p *ddlParser) cancel() (Statement, error) {
	if !p.kw("jobs") && !p.kw("job") {
		return nil, p.errHere()
	}
	st := &CancelJobs{}
	for {
		n := p.peek()
		if n == nil || n.group || n.tok.kind != tkNumber {
			return nil, p.errHere()
		}
		id, err := strconv.ParseInt(n.tok.val, 10, 64)
		if err != nil {
			return nil, syntaxErrAt(p.src, n.tok)
		}
		st.IDs = append(st.IDs, id)
		p.i++
		if m := p.peek(); m != nil && m.isPunct(",") {
			p.i++
			continue
		}
		return st, nil
	}
}

// explainAnalyze reads the rest of EXPLAIN ANALYZE: the running job of a
// MATERIALIZED VIEW, SINK or TABLE (a query's EXPLAIN ANALYZE is not
// supported).
func (p *ddlParser) explainAnalyze(at *node, st *ExplainAnalyze) (Statement, error) {
	p.kw("verbose")
	kind, ok := p.objectKind()
	if !ok || (kind != KindMaterializedView && kind != KindSink && kind != KindTable) {
		return nil, p.unsupported(at, "EXPLAIN ANALYZE is supported for a running streaming job only: EXPLAIN ANALYZE MATERIALIZED VIEW, SINK or TABLE name")
	}
	name, err := p.objectName()
	if err != nil {
		return nil, err
	}
	st.Kind, st.Name = kind, name
	return st, nil
}

// explainDuration reads EXPLAIN's DURATION: seconds, or a Go duration
// ('500ms', '2s'), between 100 ms and one minute.
func explainDuration(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		secs, err2 := strconv.ParseFloat(v, 64)
		if err2 != nil {
			return 0, fmt.Errorf("%q is not seconds or a duration such as '2s'", v)
		}
		d = time.Duration(secs * float64(time.Second))
	}
	if d < 100*time.Millisecond || d > time.Minute {
		return 0, fmt.Errorf("%s is not between 100ms and 1m", d)
	}
	return d, nil
}

func (p *ddlParser) explain() (Statement, error) {
	st := &Explain{}
	analyze := &ExplainAnalyze{}
	var analyzeAt *node
	if n := p.peek(); n != nil && n.isParen() {
		p.i++
		for _, part := range splitCommas(n.kids) {
			if len(part) == 0 || !part[0].isIdent() {
				return nil, syntaxErrAtNode(p.src, nodeAt(part, 0))
			}
			on := len(part) == 1 || part[1].kwIn("true", "on") || (part[1].tok.kind == tkNumber && part[1].tok.val != "0")
			switch part[0].tok.val {
			case "verbose":
				st.Verbose = on
			case "analyze":
				if on {
					analyzeAt = part[0]
				}
			case "duration":
				if len(part) != 2 || (part[1].tok.kind != tkNumber && part[1].tok.kind != tkString) {
					return nil, syntaxErrAtNode(p.src, nodeAt(part, 1))
				}
				d, err := explainDuration(part[1].tok.val)
				if err != nil {
					return nil, p.unsupported(part[1], "EXPLAIN DURATION: %v", err)
				}
				analyze.Duration = d
			}
		}
	}
	if n := p.peek(); n != nil && n.kw("analyze") {
		analyzeAt = n
		p.i++
	}
	if analyzeAt != nil {
		return p.explainAnalyze(analyzeAt, analyze)
	}
	if p.kw("verbose") {
		st.Verbose = true
	}
	if p.i >= len(p.seq) {
		return nil, p.errHere()
	}
	if n := p.peek(); n.kw("materialized") || n.kw("sink") {
		// A running job's plan and parallelism (TABLE t would be a query).
		at := n
		analyze.Plain = true
		kind, _ := p.objectKind()
		if kind != KindMaterializedView && kind != KindSink {
			return nil, syntaxErrAtNode(p.src, at)
		}
		name, err := p.objectName()
		if err != nil {
			return nil, err
		}
		analyze.Kind, analyze.Name = kind, name
		return analyze, nil
	}
	inner := p.seq[p.i:]
	sub, err := parseSeq(p.src, inner)
	if err != nil {
		return nil, err
	}
	switch sub.(type) {
	case *Query, *CreateMaterializedView, *CreateSink, *CreateTable, *CreateView, *CreateSource:
	default:
		return nil, syntaxErrAt(p.src, inner[0].tok)
	}
	st.Stmt = sub
	return st, nil
}

// truncate parses the rest of TRUNCATE [TABLE] [ONLY] name [, ...]
// [RESTART IDENTITY | CONTINUE IDENTITY] [CASCADE | RESTRICT].
func (p *ddlParser) truncate() (Statement, error) {
	p.kw("table")
	st := &Truncate{}
	for {
		p.kw("only")
		name, err := p.objectName()
		if err != nil {
			return nil, err
		}
		if n := p.peek(); n != nil && n.isOp("*") {
			p.i++
		}
		st.Names = append(st.Names, name)
		if n := p.peek(); n != nil && n.isPunct(",") {
			p.i++
			continue
		}
		break
	}
	switch {
	case p.kw("restart", "identity"):
		st.RestartIdentity = true
	case p.kw("continue", "identity"):
	}
	st.Cascade = p.dropBehavior()
	return st, nil
}

// rename parses RENAME TO new or RENAME [COLUMN] a TO b after ALTER kind name.
func (p *ddlParser) rename(kind ObjectKind, name ObjectName, ifExists bool) (Statement, error) {
	if err := p.expect("rename"); err != nil {
		return nil, err
	}
	st := &Rename{Kind: kind, Name: name, IfExists: ifExists}
	var err error
	if !p.kw("to") {
		if kind != KindTable && kind != KindMaterializedView && kind != KindView {
			return nil, p.errHere()
		}
		p.kw("column") // reserved, as in PostgreSQL
		if st.Column, err = p.ident(); err != nil {
			return nil, err
		}
		if err := p.expect("to"); err != nil {
			return nil, err
		}
	}
	if st.NewName, err = p.ident(); err != nil {
		return nil, err
	}
	return st, nil
}

// alterColumn parses ADD [COLUMN] [IF NOT EXISTS] def or DROP [COLUMN]
// [IF EXISTS] name [CASCADE | RESTRICT] after ALTER TABLE name.
func (p *ddlParser) alterColumn(name ObjectName, ifExists bool) (Statement, error) {
	st := &AlterColumn{Name: name, IfExists: ifExists}
	switch {
	case p.kw("add"):
		if n := p.peek(); n != nil && n.kwIn("constraint", "primary", "unique", "check", "foreign") {
			return nil, p.unsupported(n, "ALTER TABLE ... ADD %s is not supported", strings.ToUpper(n.tok.val))
		}
		p.kw("column") // reserved, as in PostgreSQL
		st.ColumnIf = p.kw("if", "not", "exists")
		col, err := p.columnDef()
		if err != nil {
			return nil, err
		}
		st.Add = col
	case p.kw("drop"):
		if n := p.peek(); n != nil && n.kw("constraint") {
			return nil, p.unsupported(n, "ALTER TABLE ... DROP CONSTRAINT is not supported")
		}
		p.kw("column")
		st.ColumnIf = p.kw("if", "exists")
		col, err := p.ident()
		if err != nil {
			return nil, err
		}
		st.Drop = col
		if p.kw("cascade") {
			st.Cascade = true
		} else {
			p.kw("restrict")
		}
	default:
		return nil, p.errHere()
	}
	return st, nil
}

// comment parses the rest of COMMENT ON kind name IS {'text' | NULL}.
func (p *ddlParser) comment() (Statement, error) {
	if err := p.expect("on"); err != nil {
		return nil, err
	}
	st := &Comment{}
	if p.kw("column") {
		// [schema.]table.column
		var parts []string
		for {
			id, err := p.ident()
			if err != nil {
				return nil, err
			}
			parts = append(parts, id)
			if n := p.peek(); n == nil || !n.isPunct(".") {
				break
			}
			p.i++
		}
		if len(parts) < 2 || len(parts) > 3 {
			return nil, p.errHere()
		}
		st.Kind, st.Column = KindTable, parts[len(parts)-1]
		st.Name = ObjectName{Name: parts[len(parts)-2]}
		if len(parts) == 3 {
			st.Name.Schema = parts[0]
		}
	} else {
		kind, ok := p.objectKind()
		if !ok || kind == KindIndex {
			if n := p.peek(); n != nil && n.tok.kind == tkIdent && !n.group {
				return nil, p.unsupported(n, "COMMENT ON %s is not supported", strings.ToUpper(n.tok.val))
			}
			return nil, p.errHere()
		}
		st.Kind = kind
		var err error
		if st.Name, err = p.objectName(); err != nil {
			return nil, err
		}
	}
	if err := p.expect("is"); err != nil {
		return nil, err
	}
	switch n := p.peek(); {
	case n == nil:
		return nil, p.errHere()
	case n.kw("null"):
		st.Null = true
	case !n.group && n.tok.kind == tkString:
		st.Comment = n.tok.val
	default:
		return nil, p.errHere()
	}
	p.i++
	return st, nil
}

// createTableAs parses the rest of CREATE TABLE name [(columns)] AS query
// [WITH [NO] DATA].
func (p *ddlParser) createTableAs(st *CreateTable) (Statement, error) {
	if n := p.peek(); n.isParen() {
		cols, err := p.identList()
		if err != nil {
			return nil, err
		}
		st.AsColumns = cols
	}
	if err := p.expect("as"); err != nil {
		return nil, err
	}
	end := len(p.seq)
	if end-p.i > 2 && p.seq[end-2].kw("with") && p.seq[end-1].kw("data") {
		end -= 2
	} else if end-p.i > 3 && p.seq[end-3].kw("with") && p.seq[end-2].kw("no") && p.seq[end-1].kw("data") {
		end -= 3
		st.WithNoData = true
	}
	q, err := p.query(p.i, end)
	if err != nil {
		return nil, err
	}
	st.AsQuery = q
	p.i = len(p.seq)
	return st, nil
}

// createSchema parses the rest of CREATE SCHEMA.
func (p *ddlParser) createSchema() (Statement, error) {
	st := &CreateSchema{IfNotExists: p.ifNotExists()}
	if n := p.peek(); n != nil && n.kw("authorization") {
		p.i++
		role, err := p.ident()
		if err != nil {
			return nil, err
		}
		st.Name, st.Authorization = role, role
		return st, nil
	}
	name, err := p.ident()
	if err != nil {
		return nil, err
	}
	st.Name = name
	if p.kw("authorization") {
		if st.Authorization, err = p.ident(); err != nil {
			return nil, err
		}
	}
	if n := p.peek(); n != nil {
		return nil, p.unsupported(n, "CREATE SCHEMA ... with schema elements is not supported")
	}
	return st, nil
}

// createDatabase parses the rest of CREATE DATABASE: [IF NOT EXISTS] name
// [[WITH] OWNER [=] role]; other options are refused.
func (p *ddlParser) createDatabase() (Statement, error) {
	st := &CreateDatabase{IfNotExists: p.ifNotExists()}
	name, err := p.ident()
	if err != nil {
		return nil, err
	}
	st.Name = name
	p.kw("with")
	if p.kw("owner") {
		if n := p.peek(); n != nil && (n.isPunct("=") || n.isOp("=")) {
			p.i++
		}
		if st.Owner, err = p.ident(); err != nil {
			return nil, err
		}
	}
	if n := p.peek(); n != nil {
		return nil, p.unsupported(n, "CREATE DATABASE option %s is not supported", strings.ToUpper(n.tok.val))
	}
	return st, nil
}

// dropSchema parses the rest of DROP SCHEMA.
func (p *ddlParser) dropSchema() (Statement, error) {
	st := &DropSchema{IfExists: p.kw("if", "exists")}
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
		break
	}
	st.Cascade = p.dropBehavior()
	return st, nil
}
