package parser

import (
	"errors"
	"slices"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/tributary/tributary/sql/types"
)

// Parse splits sql into statements and parses each. An empty, whitespace-only
// or comment-only string gives no statements and no error. Errors are
// *types.Error of kind types.ErrSyntax (Pos: 1-based character offset into
// sql), types.ErrUnsupported, or types.ErrStackDepth for statements nested
// deeper than the limits in sql/types.
func Parse(sql string) (stmts []Statement, err error) {
	stmts, _, err = ParseNotices(sql)
	return stmts, err
}

// ParseNotices is Parse that also returns the notices PostgreSQL's parser
// would send (identifiers truncated to 63 bytes, 42622), in text order.
func ParseNotices(sql string) (stmts []Statement, notices []Notice, err error) {
	defer func() {
		if r := recover(); r != nil {
			stmts, notices = nil, nil
			err = types.ErrorAt(types.ErrSyntax, 1, "syntax error: %v", r)
		}
	}()
	stmts, notices, err = parseAll(sql, true)
	if err == errRelex {
		return parseAll(sql, false)
	}
	return stmts, notices, err
}

// errRelex says a statement lexRows read literal rows of is not the fast path's after all:
// the text is lexed and parsed again without it.
var errRelex = errors.New("lex again without literal rows")

// parseAll parses sql's statements, its literal rows read by the lexer (lexRows) when rows.
func parseAll(sql string, rows bool) (stmts []Statement, notices []Notice, err error) {
	var toks []token
	var lexed map[int][][]Literal
	ok := false
	if rows {
		if toks, notices, lexed, ok, err = lexRows(sql); err != nil {
			return nil, nil, err
		}
	}
	if !ok {
		if toks, notices, err = lexNotices(sql); err != nil {
			return nil, nil, err
		}
	}
	if err := checkDepth(toks); err != nil {
		return nil, nil, err
	}
	start := 0
	for i := 0; i <= len(toks); i++ {
		if i < len(toks) && !(toks[i].kind == tkPunct && toks[i].val == ";") {
			continue
		}
		if i > start {
			st, err := parseStatement(sql, toks[start:i], lexed)
			if err != nil {
				return nil, nil, err
			}
			stmts = append(stmts, st)
		}
		start = i + 1
	}
	return stmts, notices, nil
}

// textSetter is implemented by every statement through its embedded Source.
type textSetter interface{ setText(string) }

func parseStatement(src string, toks []token, lexed map[int][][]Literal) (Statement, error) {
	st, err := parseLiteralRows(src, toks, lexed)
	if st == nil && err == nil {
		if slices.ContainsFunc(toks, func(t token) bool { return t.kind == tkRows }) {
			return nil, errRelex // the general path parses the rows' tokens
		}
		st, err = parseTokens(src, toks)
	}
	if err != nil {
		return nil, err
	}
	st.(textSetter).setText(src[toks[0].pos:toks[len(toks)-1].end])
	return st, nil
}

// parseLiteralRows parses an INSERT ... VALUES whose rows 2..n are literals (splitLiteralRows):
// its other tokens on the general path, those rows into the Query's Rows. It returns nil and
// no error for any other statement, or when the rest is not an INSERT of one VALUES row
// (the general path then says what the statement is).
func parseLiteralRows(src string, toks []token, lexed map[int][][]Literal) (Statement, error) {
	head, rows := splitLiteralRows(toks, lexed)
	if rows == nil {
		return nil, nil
	}
	st, err := parseTokens(src, head)
	if err != nil {
		return nil, nil
	}
	q, ok := st.(*Query)
	if !ok {
		return nil, nil
	}
	ins, ok := q.Node.(*ast.InsertStmt)
	if !ok || ins.Select != nil || ins.Setlist || len(ins.Lists) != 1 {
		return nil, nil
	}
	q.Rows = rows
	return q, nil
}

// parseTokens parses one statement's tokens on the general path.
func parseTokens(src string, toks []token) (Statement, error) {
	seq, err := buildTree(src, toks)
	if err != nil {
		return nil, err
	}
	return parseSeq(src, seq)
}

// queryStarts are the words that begin a query or DML statement.
var queryStarts = map[string]bool{
	"select": true, "with": true, "values": true, "insert": true, "update": true, "delete": true, "table": true,
}

// parseSeq parses one statement's node list.
func parseSeq(src string, seq []*node) (Statement, error) {
	first := seq[0]
	if first.isParen() || (first.tok.kind == tkIdent && queryStarts[first.tok.val]) {
		return parseQuery(src, seq)
	}
	if first.tok.kind != tkIdent {
		return nil, syntaxErrAt(src, first.tok)
	}
	p := &ddlParser{src: src, seq: seq}
	st, err := p.statement()
	if err != nil {
		return nil, err
	}
	st.(textSetter).setText(srcText(src, seq))
	return st, nil
}

// parseQuery rewrites a query or DML statement and parses it with TiDB.
func parseQuery(src string, seq []*node) (*Query, error) {
	q := &Query{}
	q.setText(srcText(src, seq))
	c := &rewriteCtx{src: src}
	seq, err := c.rewrite(seq)
	if err != nil {
		return nil, err
	}
	// Split off a DML's RETURNING list.
	var ret []*node
	if seq[0].kwIn("insert", "update", "delete", "with") {
		for i, n := range seq {
			if n.kw("returning") {
				ret = seq[i+1:]
				if len(ret) == 0 {
					return nil, syntaxErrEnd(src)
				}
				seq = seq[:i]
				break
			}
		}
	}
	var insertAlias string
	if len(seq) > 5 && seq[0].kw("insert") && seq[1].kw("into") && seq[2].isIdent() {
		// INSERT INTO t [.name] AS alias: TiDB takes no alias there; the
		// table source gets it after parsing.
		k := 3
		if k+1 < len(seq) && seq[k].isPunct(".") && seq[k+1].isIdent() {
			k += 2
		}
		if k+1 < len(seq) && seq[k].kw("as") && seq[k+1].isIdent() {
			insertAlias = seq[k+1].tok.val
			seq = append(seq[:k:k], seq[k+2:]...)
		}
	}
	if seq[0].kw("insert") {
		for i := 1; i+1 < len(seq); i++ {
			if seq[i].kw("on") && seq[i+1].kw("conflict") {
				if q.OnConflict, err = parseOnConflict(src, seq[i], seq[i+2:]); err != nil {
					return nil, err
				}
				seq = seq[:i]
				break
			}
		}
	}
	// UPDATE ... FROM list and DELETE ... USING list: TiDB reads neither
	// with PostgreSQL's meaning, so the list is split off here.
	if seq[0].kwIn("update", "delete") {
		if q.From, seq, err = splitDMLFrom(src, seq); err != nil {
			return nil, err
		}
	}
	// INSERT ... OVERRIDING {SYSTEM | USER} VALUE, which TiDB lacks.
	if seq[0].kw("insert") {
		for i := 1; i+2 < len(seq); i++ {
			if seq[i].kw("overriding") && seq[i+1].kwIn("system", "user") && seq[i+2].kw("value") {
				q.OverridingSystem = seq[i+1].kw("system")
				q.OverridingUser = !q.OverridingSystem
				seq = append(append([]*node(nil), seq[:i]...), seq[i+3:]...)
				break
			}
		}
	}
	stmt, err := parseTiDB(src, seq)
	if err != nil {
		return nil, err
	}
	switch stmt.(type) {
	case *ast.SelectStmt, *ast.SetOprStmt:
		if ret != nil {
			return nil, syntaxErrAt(src, ret[0].tok)
		}
	case *ast.InsertStmt, *ast.UpdateStmt, *ast.DeleteStmt:
	default:
		return nil, types.ErrorAt(types.ErrSyntax, charPos(src, seq[0].tok.pos), "syntax error at or near %q", src[seq[0].tok.pos:seq[0].tok.end])
	}
	if ins, ok := stmt.(*ast.InsertStmt); ok && insertAlias != "" && ins.Table != nil && ins.Table.TableRefs != nil {
		if ts, ok := ins.Table.TableRefs.Left.(*ast.TableSource); ok {
			ts.AsName = ast.NewCIStr(insertAlias)
		}
	}
	q.Node = stmt
	if ret != nil {
		if q.Returning, err = parseSelectList(src, ret); err != nil {
			return nil, err
		}
	}
	q.AliasColumns = c.aliasCols
	if len(c.funcs) > 0 {
		q.TableFuncs = make(map[string]*TableFunc, len(c.funcs))
		for _, pf := range c.funcs {
			tf := &TableFunc{Name: pf.name, ColumnAliases: pf.aliases, Ordinality: pf.ordinality}
			if len(pf.args) > 0 {
				fields, err := parseSelectList(src, joinCommas(pf.args, pf.args[0][0].tok))
				if err != nil {
					return nil, err
				}
				for _, f := range fields {
					if f.Expr == nil {
						return nil, types.ErrorAt(types.ErrSyntax, 1, "syntax error: * is not a function argument")
					}
					tf.Args = append(tf.Args, f.Expr)
				}
			}
			q.TableFuncs[pf.placeholder] = tf
		}
	}
	return q, nil
}

// splitDMLFrom removes UPDATE's FROM list (after SET) or DELETE's USING list
// (after DELETE FROM t [alias]) from seq, up to the WHERE at the same level,
// and parses it as a SELECT's FROM clause; nil when there is none.
func splitDMLFrom(src string, seq []*node) (*ast.TableRefsClause, []*node, error) {
	start := -1
	if seq[0].kw("update") {
		sawSet := false
		for i, n := range seq {
			if n.kw("set") {
				sawSet = true
			}
			if n.kw("where") {
				break
			}
			if sawSet && n.kw("from") && !seq[i-1].kw("distinct") {
				start = i
				break
			}
		}
	} else if len(seq) > 2 && seq[1].kw("from") {
		for i := 2; i < len(seq); i++ {
			if seq[i].kw("where") {
				break
			}
			if seq[i].kw("using") {
				start = i
				break
			}
		}
	}
	if start < 0 {
		return nil, seq, nil
	}
	end := len(seq)
	for i := start + 1; i < len(seq); i++ {
		if seq[i].kw("where") {
			end = i
			break
		}
	}
	list := clone(seq[start+1 : end])
	if len(list) == 0 {
		if end < len(seq) {
			return nil, nil, syntaxErrAt(src, seq[end].tok)
		}
		return nil, nil, syntaxErrEnd(src)
	}
	list[0] = withSpace(list[0])
	stmt, err := parseTiDB(src, cat(one(rawNode("SELECT 1 FROM", seq[start].tok, false)), list))
	if err != nil {
		return nil, nil, err
	}
	sel, ok := stmt.(*ast.SelectStmt)
	if !ok || sel.From == nil || sel.Where != nil || sel.GroupBy != nil || sel.Having != nil || sel.OrderBy != nil || sel.Limit != nil {
		return nil, nil, syntaxErrAt(src, list[0].tok)
	}
	return sel.From, append(clone(seq[:start]), seq[end:]...), nil
}

// parseSelectList parses an already rewritten expression list by asking TiDB
// for "SELECT <list>".
func parseSelectList(src string, list []*node) ([]*ast.SelectField, error) {
	if len(list) == 0 {
		return nil, syntaxErrEnd(src)
	}
	at := list[0].tok
	sel := rawNode("SELECT", at, false)
	list = clone(list)
	list[0] = withSpace(list[0])
	stmt, err := parseTiDB(src, cat(one(sel), list))
	if err != nil {
		return nil, err
	}
	s, ok := stmt.(*ast.SelectStmt)
	if !ok || s.Fields == nil || s.From != nil || s.Where != nil {
		return nil, syntaxErrAt(src, at)
	}
	return s.Fields.Fields, nil
}

// parseExpr parses one expression (already tokenised) with the rewrite
// rules and TiDB.
func parseExpr(src string, seq []*node) (ast.ExprNode, error) {
	c := &rewriteCtx{src: src, depth: 1}
	seq, err := c.rewrite(clone(seq))
	if err != nil {
		return nil, err
	}
	if len(c.funcs) > 0 {
		return nil, types.ErrorAt(types.ErrSyntax, charPos(src, seq[0].tok.pos), "syntax error: table function in expression")
	}
	fields, err := parseSelectList(src, seq)
	if err != nil {
		return nil, err
	}
	if len(fields) != 1 || fields[0].Expr == nil {
		return nil, types.ErrorAt(types.ErrSyntax, charPos(src, seq[0].tok.pos), "syntax error: expected one expression")
	}
	return fields[0].Expr, nil
}

// withSpace returns a shallow copy of n rendered with a space before it.
func withSpace(n *node) *node {
	c := *n
	c.tok.sp = true
	return &c
}

// parseOnConflict reads what follows INSERT's ON CONFLICT (at): the
// target, then DO NOTHING or DO UPDATE SET assignments [WHERE condition],
// whose expressions TiDB parses as an UPDATE's.
func parseOnConflict(src string, at *node, seq []*node) (*OnConflict, error) {
	oc := &OnConflict{}
	i := 0
	switch {
	case i < len(seq) && seq[i].isParen():
		for _, part := range splitCommas(seq[i].kids) {
			if len(part) == 0 {
				return nil, syntaxErrAtNode(src, seq[i])
			}
			if len(part) != 1 || !part[0].isIdent() {
				return nil, types.ErrorAt(types.ErrUnsupported, charPos(src, part[0].tok.pos),
					"ON CONFLICT's target must list columns (index expressions are not supported)")
			}
			oc.Columns = append(oc.Columns, part[0].tok.val)
		}
		i++
		if i < len(seq) && seq[i].kw("where") {
			return nil, types.ErrorAt(types.ErrUnsupported, charPos(src, seq[i].tok.pos), "ON CONFLICT (...) WHERE (a partial index) is not supported")
		}
	case i+2 < len(seq) && seq[i].kw("on") && seq[i+1].kw("constraint") && seq[i+2].isIdent():
		oc.Constraint = seq[i+2].tok.val
		i += 3
	}
	if i >= len(seq) || !seq[i].kw("do") {
		if i < len(seq) {
			return nil, syntaxErrAt(src, seq[i].tok)
		}
		return nil, syntaxErrEnd(src)
	}
	i++
	switch {
	case i < len(seq) && seq[i].kw("nothing"):
		oc.DoNothing = true
		if i+1 < len(seq) {
			return nil, syntaxErrAt(src, seq[i+1].tok)
		}
		return oc, nil
	case i+1 < len(seq) && seq[i].kw("update") && seq[i+1].kw("set"):
		if i+2 >= len(seq) {
			return nil, syntaxErrEnd(src)
		}
		// UPDATE <placeholder> SET ... [WHERE ...], parsed by TiDB.
		upd := cat(one(rawNode("UPDATE pg__conflict", at.tok, true)), seq[i+1:])
		stmt, err := parseTiDB(src, upd)
		if err != nil {
			return nil, err
		}
		u, ok := stmt.(*ast.UpdateStmt)
		if !ok || u.Order != nil || u.Limit != nil {
			return nil, syntaxErrAt(src, seq[i].tok)
		}
		oc.Set, oc.Where = u.List, u.Where
		return oc, nil
	}
	if i < len(seq) {
		return nil, syntaxErrAt(src, seq[i].tok)
	}
	return nil, syntaxErrEnd(src)
}
