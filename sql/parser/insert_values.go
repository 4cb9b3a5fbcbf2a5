package parser

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/pingcap/tidb/pkg/parser/opcode"
)

// The INSERT ... VALUES fast path. A bulk INSERT of literals spends most of its parse and
// bind on its rows, although they are nothing but values: a token per value and separator,
// the rewrite rules' walks, TiDB's parser, an expression node per value in two trees. The
// lexer reads rows 2..n of such a statement straight into Literals (lexRows), and
// splitLiteralRows takes them off the statement's tokens as Query.Rows, which the binder
// turns into constants directly; the statement's head, its first row and its tail take the
// general path, so everything but plain literal rows (table names, column lists, ON
// CONFLICT, RETURNING, any row with an expression) is parsed as before. A statement
// qualifies only when every one of rows 2..n holds nothing but literals TiDB reads without
// warnings or errors: integers and decimals in plain digits (a leading minus allowed),
// strings, NULL, TRUE, FALSE and DEFAULT. TestLiteralRowsFastPath checks that the rows' TiDB
// expressions (Literal.Expr) give the general path's tree, and the binder's tests that its
// constants are those it binds from those expressions.

// LiteralKind is what a Literal is.
type LiteralKind uint8

const (
	LitNumber  LiteralKind = iota + 1 // Val: digits, at most one '.' between them
	LitString                         // Val: the string's content
	LitNull                           // NULL
	LitTrue                           // TRUE
	LitFalse                          // FALSE
	LitDefault                        // DEFAULT
)

// Literal is one value of a VALUES row the fast path took. Neg is a leading minus (numbers).
type Literal struct {
	Kind LiteralKind
	Val  string
	Neg  bool
}

// Expr returns the expression TiDB's parser builds for l (Literal, NumLiteral, "DEFAULT",
// a minus before a number).
func (l Literal) Expr() ast.ExprNode {
	var e ast.ExprNode
	switch l.Kind {
	case LitNumber:
		v, _ := numberValue(l.Val)
		e = ast.NewValueExpr(v, mysql.DefaultCharset, mysql.DefaultCollationName)
	case LitString:
		e = ast.NewValueExpr(l.Val, mysql.DefaultCharset, mysql.DefaultCollationName)
	case LitNull:
		e = ast.NewValueExpr(nil, mysql.DefaultCharset, mysql.DefaultCollationName)
	case LitTrue, LitFalse:
		e = ast.NewValueExpr(l.Kind == LitTrue, mysql.DefaultCharset, mysql.DefaultCollationName)
	default:
		e = &ast.DefaultExpr{}
	}
	if l.Neg {
		e = &ast.UnaryOperationExpr{Op: opcode.Minus, V: e}
	}
	ast.SetFlag(e)
	return e
}

// insertHeadStop are the words that end the fast path's look between INSERT INTO and VALUES
// (which may hold only identifiers, dots and parenthesised groups): anything that could make
// VALUES part of a query (SELECT, UNION, WITH, ...), or DEFAULT VALUES.
var insertHeadStop = map[string]bool{
	"select": true, "union": true, "intersect": true, "except": true, "with": true, "from": true,
	"table": true, "values": true, "default": true,
}

// splitLiteralRows returns the tokens of one statement without its literal rows after the
// first (lexRows' tkRows token), and those rows, when the statement is INSERT ... VALUES (...),
// (...), ... [ON CONFLICT ... | RETURNING ...] whose rows 2..n hold only literals; otherwise
// toks and nil.
func splitLiteralRows(toks []token, lexed map[int][][]Literal) ([]token, [][]Literal) {
	first := insertFirstRow(toks)
	if first < 0 || first+1 >= len(toks) || toks[first+1].kind != tkRows {
		return toks, nil
	}
	rows, end := lexed[toks[first+1].pos], first+2 // after the rows
	switch {
	case len(rows) == 0:
		return toks, nil
	case end == len(toks):
	case toks[end].is(tkIdent, "returning"):
	case end+1 < len(toks) && toks[end].is(tkIdent, "on") && toks[end+1].is(tkIdent, "conflict"):
	default:
		return toks, nil
	}
	head := make([]token, 0, first+1+len(toks)-end)
	head = append(append(head, toks[:first+1]...), toks[end:]...)
	return head, rows
}

// insertFirstRow returns the index of the ')' closing the first VALUES row of toks (one
// statement's tokens, or the first of them), INSERT INTO <names, dots, parenthesised groups>
// VALUES (...); -1 when toks cannot start such a statement, -2 when it is not known yet.
func insertFirstRow(toks []token) int {
	switch {
	case len(toks) > 0 && !toks[0].is(tkIdent, "insert"), len(toks) > 1 && !toks[1].is(tkIdent, "into"):
		return -1
	case len(toks) < 2:
		return -2
	}
	v := -1
	for i := 2; i < len(toks) && v < 0; i++ {
		t := toks[i]
		switch {
		case t.is(tkIdent, "values"):
			v = i
		case t.is(tkPunct, "("):
			end := closing(toks, i)
			if end < 0 {
				return -2
			}
			i = end
		case t.is(tkPunct, "."), t.kind == tkQIdent && !t.synth:
		case t.kind == tkIdent && !t.synth && !insertHeadStop[t.val]:
		default:
			return -1
		}
	}
	switch {
	case v < 0, v+1 >= len(toks):
		return -2
	case v < 3 || !toks[v+1].is(tkPunct, "("):
		return -1
	}
	if first := closing(toks, v+1); first >= 0 {
		return first
	}
	return -2
}

// maxInsertHead is the most tokens lexRows looks through for an INSERT's first row.
const maxInsertHead = 4096

// errNotLiterals stops lexRows at a row after an INSERT's first one that holds more than
// literals.
var errNotLiterals = errors.New("not a row of literals")

// is reports whether t is the (unquoted, not synthetic) token val of kind.
func (t token) is(kind tokKind, val string) bool { return t.kind == kind && !t.synth && t.val == val }

// closing returns the index of the ')' closing the '(' at toks[open], or -1.
func closing(toks []token, open int) int {
	depth := 0
	for i := open; i < len(toks); i++ {
		if toks[i].kind != tkPunct {
			continue
		}
		switch toks[i].val {
		case "(", "[":
			depth++
		case ")", "]":
			depth--
			if depth == 0 {
				if toks[i].val != ")" {
					return -1
				}
				return i
			}
		}
	}
	return -1
}

// literalRows reads the rows that follow an INSERT's first VALUES row, ", (literal, ...)"
// each, and appends one tkRows token standing for them (none when no row follows). It stops
// before anything else, and returns errNotLiterals for a row holding more than literals.
// It reads the text as the lexer's tokens would (skipSpace and next): ',' '(' and ')' are
// always tokens of their own, and a '-' before a digit an operator of its own.
func (l *lexer) literalRows() error {
	from := l.i
	var rows [][]Literal
	var buf []Literal
	for {
		at := l.i
		if ok, err := l.punct(','); err != nil || !ok {
			l.i = at // lexed again as it was
			break
		}
		if ok, err := l.punct('('); err != nil || !ok {
			l.i = at
			break
		}
		if rows == nil {
			// The rows' literals share one allocation (a literal takes at least two bytes with its
			// separator, most many more), and the row slices another.
			buf = make([]Literal, 0, (len(l.src)-at)/8+1)
			rows = make([][]Literal, 0, (len(l.src)-at)/max(at-from, 16)+1)
		}
		var row []Literal
		var err error
		if row, buf, err = l.literalRow(buf); err != nil {
			return err
		}
		rows = append(rows, row)
	}
	if rows == nil {
		return nil
	}
	if l.rows == nil {
		l.rows = map[int][][]Literal{}
	}
	l.rows[from] = rows
	l.toks = append(l.toks, token{kind: tkRows, pos: from, end: l.i})
	return nil
}

// punct skips space and then c, a one-byte punctuation token, if it comes next.
func (l *lexer) punct(c byte) (bool, error) {
	if err := l.skipSpace(); err != nil {
		return false, err
	}
	if l.i < len(l.src) && l.src[l.i] == c {
		l.i++
		return true, nil
	}
	return false, nil
}

// literalRow reads the comma-separated literals of a row up to its ')', appended to buf, and
// returns them and buf; errNotLiterals for a row holding anything else, and the lexer's error
// for text it cannot lex.
func (l *lexer) literalRow(buf []Literal) (row, _ []Literal, err error) {
	start := len(buf)
	for {
		lit, err := l.literal()
		if err != nil {
			return nil, buf, err
		}
		buf = append(buf, lit)
		if err := l.skipSpace(); err != nil {
			return nil, buf, err
		}
		if l.i >= len(l.src) {
			return nil, buf, errNotLiterals
		}
		switch l.src[l.i] {
		case ',':
			l.i++
		case ')':
			l.i++
			return buf[start:len(buf):len(buf)], buf, nil
		default:
			return nil, buf, errNotLiterals
		}
	}
}

// literal reads one literal of a row: a number (a '-' before it allowed), a string, NULL,
// TRUE, FALSE or DEFAULT; errNotLiterals for anything else.
func (l *lexer) literal() (lit Literal, err error) {
	if err := l.skipSpace(); err != nil {
		return lit, err
	}
	s := l.src
	if l.i >= len(s) {
		return lit, errNotLiterals
	}
	if s[l.i] == '-' && l.i+1 < len(s) && s[l.i+1] >= '0' && s[l.i+1] <= '9' {
		lit.Neg = true // the operator "-" alone: a digit is no operator character
		l.i++
	}
	var t token
	switch c := s[l.i]; {
	case c >= '0' && c <= '9':
		t, err = l.number(l.i)
	case c == '\'':
		t.kind = tkString
		t.val, err = l.quoted('\'', l.i)
	case lit.Neg:
		return lit, errNotLiterals
	default:
		t, err = l.next()
	}
	if err != nil {
		return lit, err
	}
	switch t.kind {
	case tkNumber:
		if !numberOK(t.val) {
			return lit, errNotLiterals
		}
		lit.Kind, lit.Val = LitNumber, t.val
	case tkString:
		if !utf8.ValidString(t.val) || strings.IndexByte(t.val, 0) >= 0 {
			return lit, errNotLiterals
		}
		lit.Kind, lit.Val = LitString, t.val
	case tkIdent:
		switch t.val {
		case "null":
			lit.Kind = LitNull
		case "true":
			lit.Kind = LitTrue
		case "false":
			lit.Kind = LitFalse
		case "default":
			lit.Kind = LitDefault
		default:
			return lit, errNotLiterals
		}
	default:
		return lit, errNotLiterals
	}
	return lit, nil
}

// numberOK reports whether numberValue takes s, without building its value for up to 18
// digits (an int64 always).
func numberOK(s string) bool {
	if s != "" && len(s) <= 18 {
		digits := true
		for i := 0; i < len(s) && digits; i++ {
			digits = s[i] >= '0' && s[i] <= '9'
		}
		if digits {
			return true
		}
	}
	_, ok := numberValue(s)
	return ok
}

// numberValue is TiDB's lexer value of a numeric literal in plain digits, with at most one
// '.' between digits: int64, uint64 above MaxInt64, a decimal beyond uint64 or with a
// fraction. Other forms (exponents, a leading or trailing '.', hex) are not ours.
func numberValue(s string) (any, bool) {
	dot := -1
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
		case c == '.' && dot < 0 && i > 0 && i+1 < len(s):
			dot = i
		default:
			return nil, false
		}
	}
	if s == "" {
		return nil, false
	}
	if dot < 0 {
		u, err := strconv.ParseUint(s, 10, 64)
		switch {
		case err == nil && u <= math.MaxInt64:
			return int64(u), true
		case err == nil:
			return u, true
		}
		// Out of range: TiDB reads a decimal.
	}
	if len(s) > mysql.MaxDecimalWidth {
		return nil, false // TiDB warns and clips it: the general path says what happens
	}
	d, err := ast.NewDecimal(s)
	if err != nil {
		return nil, false
	}
	return d, true
}
