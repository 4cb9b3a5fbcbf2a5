package parser

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/pingcap/tidb/pkg/parser/opcode"
)

// The INSERT ... VALUES fast path. A bulk INSERT of literals spends most of its parse and
// bind on its rows, although they are nothing but values: the rewrite rules' walks, TiDB's
// parser, an expression node per value in two trees. splitLiteralRows takes rows 2..n off
// such a statement at the token level and keeps each value as a Literal (Query.Rows), which
// the binder turns into a constant directly; the statement's head, its first row and its
// tail take the general path, so everything but plain literal rows (table names, column
// lists, ON CONFLICT, RETURNING, any row with an expression) is parsed as before. A statement
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

// splitLiteralRows returns the tokens of one statement without rows 2..n of its VALUES list,
// and those rows as literals, when the statement is INSERT ... VALUES (...), (...), ...
// [ON CONFLICT ... | RETURNING ...] whose rows 2..n hold only literals; otherwise toks and
// nil.
func splitLiteralRows(toks []token) ([]token, [][]Literal) {
	if len(toks) < 9 || !toks[0].is(tkIdent, "insert") || !toks[1].is(tkIdent, "into") {
		return toks, nil
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
				return toks, nil
			}
			i = end
		case t.is(tkPunct, "."), t.kind == tkQIdent && !t.synth:
		case t.kind == tkIdent && !t.synth && !insertHeadStop[t.val]:
		default:
			return toks, nil
		}
	}
	if v < 3 || v+1 >= len(toks) || !toks[v+1].is(tkPunct, "(") {
		return toks, nil
	}
	first := closing(toks, v+1) // the first row's ')'
	if first < 0 {
		return toks, nil
	}
	// The rows' literals share one allocation (a literal takes at least a
	// token and its separator), and the row slices another.
	buf := make([]Literal, 0, (len(toks)-first)/2+1)
	rows := make([][]Literal, 0, (len(toks)-first)/(first-v+1)+1)
	end := first + 1 // after the last row
	for end+1 < len(toks) && toks[end].is(tkPunct, ",") && toks[end+1].is(tkPunct, "(") {
		var row []Literal
		var next int
		var ok bool
		row, buf, next, ok = literalRow(toks, end+2, buf)
		if !ok {
			return toks, nil
		}
		rows = append(rows, row)
		end = next
	}
	switch {
	case len(rows) == 0:
		return toks, nil // one row: nothing to gain
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

// literalRow reads the comma-separated literals of a row from toks[i] to its ')', appended to
// buf, and returns them, buf and the index after the ')'; ok is false for a row holding
// anything else.
func literalRow(toks []token, i int, buf []Literal) (row, _ []Literal, next int, ok bool) {
	start := len(buf)
	for {
		if i >= len(toks) {
			return nil, buf, 0, false
		}
		t := toks[i]
		var l Literal
		if t.is(tkOp, "-") {
			l.Neg = true
			i++
			if i >= len(toks) || toks[i].kind != tkNumber {
				return nil, buf, 0, false
			}
			t = toks[i]
		}
		if t.synth {
			return nil, buf, 0, false
		}
		switch t.kind {
		case tkNumber:
			if !numberOK(t.val) {
				return nil, buf, 0, false
			}
			l.Kind, l.Val = LitNumber, t.val
		case tkString:
			if !utf8.ValidString(t.val) || strings.IndexByte(t.val, 0) >= 0 {
				return nil, buf, 0, false
			}
			l.Kind, l.Val = LitString, t.val
		case tkIdent:
			switch t.val {
			case "null":
				l.Kind = LitNull
			case "true":
				l.Kind = LitTrue
			case "false":
				l.Kind = LitFalse
			case "default":
				l.Kind = LitDefault
			default:
				return nil, buf, 0, false
			}
		default:
			return nil, buf, 0, false
		}
		buf = append(buf, l)
		i++
		if i >= len(toks) || toks[i].kind != tkPunct {
			return nil, buf, 0, false
		}
		switch toks[i].val {
		case ",":
			i++
		case ")":
			return buf[start:len(buf):len(buf)], buf, i + 1, true
		default:
			return nil, buf, 0, false
		}
	}
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
