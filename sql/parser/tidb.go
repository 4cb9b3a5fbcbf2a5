package parser

import (
	"fmt"
	"regexp"
	"strconv"
	"sync"

	tidb "github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	_ "github.com/pingcap/tidb/pkg/parser/test_driver" // literal values for TiDB's AST

	"github.com/tributary/tributary/sql/types"
)

// sqlMode is PostgreSQL's dialect as far as TiDB's lexer can follow it:
// "..." are identifiers, || concatenates, and backslashes in '..' are plain
// characters (standard_conforming_strings).
const sqlMode = mysql.ModeANSIQuotes | mysql.ModePipesAsConcat | mysql.ModeNoBackslashEscapes

// TiDB's parser is not safe for concurrent use; keep a pool.
var tidbPool = sync.Pool{New: func() any {
	p := tidb.New()
	p.SetSQLMode(sqlMode)
	p.EnableWindowFunc(true)
	return p
}}

var tidbErrRe = regexp.MustCompile(`line (\d+) column (\d+) near "((?s:.*))"`)

// parseTiDB renders seq and parses it with TiDB as exactly one statement.
// Errors map back to the original text src.
func parseTiDB(src string, seq []*node) (stmt ast.StmtNode, err error) {
	r := render(seq)
	defer func() {
		if rec := recover(); rec != nil {
			stmt, err = nil, types.ErrorAt(types.ErrSyntax, charPos(src, firstPos(seq)), "syntax error: %v", rec)
		}
	}()
	p := tidbPool.Get().(*tidb.Parser)
	stmts, _, perr := p.Parse(r.text, "", "")
	tidbPool.Put(p)
	if perr != nil {
		return nil, mapTiDBError(src, r, seq, perr)
	}
	if len(stmts) != 1 {
		return nil, types.ErrorAt(types.ErrSyntax, charPos(src, firstPos(seq)), "syntax error: expected one statement")
	}
	return stmts[0], nil
}

func firstPos(seq []*node) int {
	if len(seq) == 0 {
		return 0
	}
	return seq[0].tok.pos
}

// mapTiDBError turns TiDB's "line L column C near ..." into PostgreSQL's
// "syntax error at or near" with a position in the original text. TiDB's
// column is the end offset of the offending token on that line.
func mapTiDBError(src string, r rendered, seq []*node, perr error) error {
	m := tidbErrRe.FindStringSubmatch(perr.Error())
	if m == nil {
		return &types.Error{Kind: types.ErrSyntax, Msg: fmt.Sprintf("syntax error: %v", perr), Pos: charPos(src, firstPos(seq))}
	}
	line, _ := strconv.Atoi(m[1])
	col, _ := strconv.Atoi(m[2])
	off := 0
	for l := 1; l < line; l++ { // rendered text has no newlines except inside literals
		nl := indexByteFrom(r.text, '\n', off)
		if nl < 0 {
			break
		}
		off = nl + 1
	}
	off += col
	if m[3] == "" || m[3] == " " {
		return syntaxErrEnd(src)
	}
	// The token ending at off, else the one containing off-1, else the next.
	var hit *renderedTok
	for i := range r.toks {
		t := &r.toks[i]
		if t.end == off || (t.start < off && off <= t.end) {
			hit = t
			break
		}
		if t.start >= off {
			hit = t
			break
		}
	}
	if hit == nil {
		return syntaxErrEnd(src)
	}
	return syntaxErrAt(src, hit.tok)
}

func indexByteFrom(s string, c byte, from int) int {
	for i := from; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}
