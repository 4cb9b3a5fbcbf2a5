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

// The INSERT ... VALUES fast path. A bulk INSERT of literals spends most of its parse in the
// rewrite rules' walks over every row and in TiDB's parser, although neither changes a
// literal. splitLiteralRows takes rows 2..n off such a statement and builds them directly as
// the AST TiDB builds for them; the statement's head and its first row take the general path,
// so everything but plain literal rows (table names, column lists, ON CONFLICT, RETURNING,
// any row with an expression) is parsed as before. A statement qualifies only when every one
// of rows 2..n holds nothing but literals TiDB reads without warnings or errors: integers and
// decimals in plain digits (a leading minus allowed), strings, NULL, TRUE, FALSE and
// DEFAULT. TestLiteralRowsFastPath checks the two paths give equal trees.

// errNotFastPath makes parseStatement parse the statement again on the general path.
var errNotFastPath = errors.New("parser: not an INSERT of literal rows")

// insertHeadStop are the words that end the fast path's look between INSERT INTO and VALUES
// (which may hold only identifiers, dots and a parenthesised column list): anything that could
// make VALUES part of a query (SELECT, UNION, WITH, ...), or DEFAULT VALUES.
var insertHeadStop = map[string]bool{
	"select": true, "union": true, "intersect": true, "except": true, "with": true, "from": true,
	"table": true, "values": true, "default": true,
}

// splitLiteralRows returns seq without rows 2..n of its VALUES list and those rows as TiDB
// expressions, when seq is INSERT ... VALUES (...), (...), ... [ON CONFLICT ... | RETURNING
// ...] whose rows 2..n hold only literals; otherwise seq and nil.
func splitLiteralRows(seq []*node) ([]*node, [][]ast.ExprNode) {
	if len(seq) < 7 || !seq[0].kw("insert") || !seq[1].kw("into") {
		return seq, nil
	}
	v := -1
	for i := 2; i < len(seq); i++ {
		n := seq[i]
		if n.kw("values") {
			v = i
			break
		}
		switch {
		case n.isParen(), n.isPunct("."):
		case n.isIdent() && !(n.tok.kind == tkIdent && insertHeadStop[n.tok.val]):
		default:
			return seq, nil
		}
	}
	if v < 0 || v+1 >= len(seq) || !seq[v+1].isParen() {
		return seq, nil
	}
	end := v + 2 // after the last row
	for end+1 < len(seq) && seq[end].isPunct(",") && seq[end+1].isParen() {
		end += 2
	}
	switch {
	case end == len(seq):
	case seq[end].kw("returning"):
	case end+1 < len(seq) && seq[end].kw("on") && seq[end+1].kw("conflict"):
	default:
		return seq, nil
	}
	if end == v+2 {
		return seq, nil // one row: nothing to gain
	}
	rows := make([][]ast.ExprNode, 0, (end-v-2)/2)
	for k := v + 3; k < end; k += 2 {
		row, ok := literalRow(seq[k].kids)
		if !ok {
			return seq, nil
		}
		rows = append(rows, row)
	}
	out := make([]*node, 0, v+2+len(seq)-end)
	out = append(append(out, seq[:v+2]...), seq[end:]...)
	return out, rows
}

// spliceLiteralRows appends rows to the VALUES list of stmt, which TiDB parsed from the
// statement splitLiteralRows cut, and sets the flags TiDB sets on a parsed statement.
func spliceLiteralRows(stmt ast.StmtNode, rows [][]ast.ExprNode) error {
	ins, ok := stmt.(*ast.InsertStmt)
	if !ok || ins.Select != nil || ins.Setlist || len(ins.Lists) != 1 {
		return errNotFastPath
	}
	ins.Lists = append(ins.Lists, rows...)
	for _, row := range rows {
		for _, e := range row {
			ast.SetFlag(e)
		}
	}
	return nil
}

// literalRow builds a row's comma-separated literals, or reports that it holds something else.
func literalRow(kids []*node) ([]ast.ExprNode, bool) {
	row := make([]ast.ExprNode, 0, (len(kids)+1)/2)
	for i := 0; i < len(kids); {
		if i > 0 {
			if !kids[i].isPunct(",") {
				return nil, false
			}
			i++
		}
		if i >= len(kids) {
			return nil, false
		}
		n := kids[i]
		neg := false
		if n.isOp("-") {
			neg = true
			i++
			if i >= len(kids) || kids[i].group || kids[i].tok.kind != tkNumber {
				return nil, false
			}
			n = kids[i]
		}
		e, ok := literalExpr(n)
		if !ok {
			return nil, false
		}
		if neg {
			e = &ast.UnaryOperationExpr{Op: opcode.Minus, V: e}
		}
		row = append(row, e)
		i++
	}
	return row, len(row) > 0
}

// literalExpr builds one literal as TiDB's grammar does (Literal, NumLiteral, "DEFAULT").
func literalExpr(n *node) (ast.ExprNode, bool) {
	if n.group || n.tok.synth {
		return nil, false
	}
	t := n.tok
	switch t.kind {
	case tkNumber:
		v, ok := numberValue(t.val)
		if !ok {
			return nil, false
		}
		return ast.NewValueExpr(v, mysql.DefaultCharset, mysql.DefaultCollationName), true
	case tkString:
		if !utf8.ValidString(t.val) || strings.IndexByte(t.val, 0) >= 0 {
			return nil, false
		}
		return ast.NewValueExpr(t.val, mysql.DefaultCharset, mysql.DefaultCollationName), true
	case tkIdent:
		switch t.val {
		case "null":
			return ast.NewValueExpr(nil, mysql.DefaultCharset, mysql.DefaultCollationName), true
		case "true":
			return ast.NewValueExpr(true, mysql.DefaultCharset, mysql.DefaultCollationName), true
		case "false":
			return ast.NewValueExpr(false, mysql.DefaultCharset, mysql.DefaultCollationName), true
		case "default":
			return &ast.DefaultExpr{}, true
		}
	}
	return nil, false
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
