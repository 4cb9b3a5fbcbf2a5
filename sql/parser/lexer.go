package parser

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/tributary/tributary/sql/types"
)

type tokKind uint8

const (
	tkIdent  tokKind = iota + 1 // unquoted identifier or keyword; val is lower case
	tkQIdent                    // "quoted" identifier; val is its unescaped content
	tkString                    // string literal ('..', E'..', $$..$$); val is its content
	tkBits                      // B'..' or X'..' literal; val is the raw text
	tkNumber                    // numeric literal; val is the raw text
	tkParam                     // $n; val is the digits
	tkOp                        // operator; val is the raw text
	tkPunct                     // ( ) [ ] , ; . :
	tkRaw                       // synthetic text emitted verbatim
	tkRows                      // an INSERT's literal rows after its first one (lexRows); pos keys them
)

// token is one lexical unit. pos and end are byte offsets into the original
// SQL string of the source text the token stands for (for synthetic tokens:
// the source token they were derived from).
type token struct {
	kind  tokKind
	val   string
	pos   int
	end   int
	sp    bool // rendered with a space before it
	quote bool // an identifier to be rendered quoted (reserved in TiDB)
	synth bool
}

func (t token) render(b *strings.Builder) {
	switch t.kind {
	case tkIdent:
		if t.quote {
			writeQuotedIdent(b, t.val)
		} else {
			b.WriteString(t.val)
		}
	case tkQIdent:
		writeQuotedIdent(b, t.val)
	case tkString:
		writeStringLit(b, t.val)
	default:
		b.WriteString(t.val)
	}
}

func writeQuotedIdent(b *strings.Builder, s string) {
	b.WriteByte('"')
	b.WriteString(strings.ReplaceAll(s, `"`, `""`))
	b.WriteByte('"')
}

func writeStringLit(b *strings.Builder, s string) {
	b.WriteByte('\'')
	b.WriteString(strings.ReplaceAll(s, `'`, `''`))
	b.WriteByte('\'')
}

func quoteString(s string) string {
	var b strings.Builder
	writeStringLit(&b, s)
	return b.String()
}

const opChars = "+-*/<>=~!@#%^&|`?"

// lexer tokenizes PostgreSQL SQL text.
type lexer struct {
	src     string
	i       int
	toks    []token
	notices []Notice
	// rows are the literal rows read without tokens (lexRows), by their tkRows token's pos.
	rows map[int][][]Literal
}

// maxIdentLen is PostgreSQL's NAMEDATALEN-1: longer identifiers are truncated
// to this many bytes (at a character boundary) with a NOTICE.
const maxIdentLen = 63

// Notice is a message the parser reports without failing, sent to the client
// as a NoticeResponse (e.g. an identifier truncated to 63 bytes).
type Notice struct {
	Code, Msg string
}

// lex splits src into tokens. Comments and whitespace are dropped (they only
// set the next token's sp flag).
func lex(src string) ([]token, error) {
	toks, _, err := lexNotices(src)
	return toks, err
}

// lexNotices is lex that also returns the notices of identifiers truncated
// to maxIdentLen bytes, as PostgreSQL's scanner truncates them.
func lexNotices(src string) ([]token, []Notice, error) {
	// A guess at the tokens of a bulk INSERT (a token for every 3 bytes or so), within bounds
	// for text that is mostly one long literal.
	l := &lexer{src: src, toks: make([]token, 0, min(len(src)/3, 1<<15)+8)}
	if err := l.run(false); err != nil {
		return nil, nil, err
	}
	return l.toks, l.notices, nil
}

// lexRows is lexNotices for ParseNotices: once an INSERT ... VALUES's first row has closed
// (insertFirstRow), the rows after it that hold only literals are read straight into
// Literals, with no token each, and one tkRows token stands for them (rows[its pos]), which
// splitLiteralRows takes. ok is false when a row after the first holds anything else: the
// caller then lexes the text again with lexNotices (the general path parses such rows).
func lexRows(src string) (toks []token, notices []Notice, rows map[int][][]Literal, ok bool, err error) {
	l := &lexer{src: src, toks: make([]token, 0, 64)}
	if err := l.run(true); err != nil {
		if err == errNotLiterals {
			return nil, nil, nil, false, nil
		}
		return nil, nil, nil, false, err
	}
	return l.toks, l.notices, l.rows, true, nil
}

// run lexes the text into l.toks, with literal rows read as lexRows says when rows is set.
func (l *lexer) run(rows bool) error {
	stmt := 0    // the current statement's first token
	look := rows // the statement may still be an INSERT whose first row is to come
	for {
		before := l.i
		if err := l.skipSpace(); err != nil {
			return err
		}
		if l.i >= len(l.src) {
			return nil
		}
		t, err := l.next()
		if err != nil {
			return err
		}
		if (t.kind == tkIdent || t.kind == tkQIdent) && len(t.val) > maxIdentLen {
			t.val = l.truncateIdent(t.val)
		}
		t.sp = l.i > before && t.pos > before
		l.toks = append(l.toks, t)
		switch {
		case t.kind == tkPunct && t.val == ";":
			stmt, look = len(l.toks), rows
		case look && t.kind == tkPunct && t.val == ")":
			switch first := insertFirstRow(l.toks[stmt:]); {
			case first == len(l.toks)-1-stmt:
				look = false
				if err := l.literalRows(); err != nil {
					return err
				}
			case first == -1 || len(l.toks)-stmt > maxInsertHead:
				look = false
			}
		case look && len(l.toks)-stmt <= 2:
			look = insertFirstRow(l.toks[stmt:]) != -1
		}
	}
}

// truncateIdent cuts id to at most maxIdentLen bytes without splitting a
// character and records PostgreSQL's NOTICE (42622).
func (l *lexer) truncateIdent(id string) string {
	n := maxIdentLen
	for n > 0 && !utf8.RuneStart(id[n]) {
		n--
	}
	l.notices = append(l.notices, Notice{Code: "42622",
		Msg: fmt.Sprintf("identifier \"%s\" will be truncated to \"%s\"", id, id[:n])})
	return id[:n]
}

func (l *lexer) errAt(pos int, format string, args ...any) error {
	return types.ErrorAt(types.ErrSyntax, charPos(l.src, pos), format, args...)
}

// charPos converts a byte offset into PostgreSQL's 1-based character position.
func charPos(src string, off int) int {
	if off > len(src) {
		off = len(src)
	}
	if off < 0 {
		off = 0
	}
	return utf8.RuneCountInString(src[:off]) + 1
}

func (l *lexer) skipSpace() error {
	for l.i < len(l.src) {
		c := l.src[l.i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			l.i++
		case c == '-' && strings.HasPrefix(l.src[l.i:], "--"):
			nl := strings.IndexByte(l.src[l.i:], '\n')
			if nl < 0 {
				l.i = len(l.src)
			} else {
				l.i += nl + 1
			}
		case c == '/' && strings.HasPrefix(l.src[l.i:], "/*"):
			depth := 0
			j := l.i
			for j < len(l.src) {
				if strings.HasPrefix(l.src[j:], "/*") {
					depth++
					j += 2
				} else if strings.HasPrefix(l.src[j:], "*/") {
					depth--
					j += 2
					if depth == 0 {
						break
					}
				} else {
					j++
				}
			}
			if depth > 0 {
				return l.errAt(l.i, "unterminated /* comment at or near %q", l.src[l.i:])
			}
			l.i = j
		default:
			return nil
		}
	}
	return nil
}

func isIdentStart(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || r >= 0x80
}

func isIdentCont(r rune) bool {
	return isIdentStart(r) || r == '$' || (r >= '0' && r <= '9')
}

func (l *lexer) next() (token, error) {
	s := l.src
	start := l.i
	c := s[l.i]
	switch {
	case c == '\'':
		val, err := l.quoted('\'', start)
		return token{kind: tkString, val: val, pos: start, end: l.i}, err
	case c == '"':
		val, err := l.quoted('"', start)
		if err == nil && val == "" {
			err = l.errAt(start, "zero-length delimited identifier at or near \"\"\"\"")
		}
		return token{kind: tkQIdent, val: val, pos: start, end: l.i}, err
	case (c == 'e' || c == 'E') && l.i+1 < len(s) && s[l.i+1] == '\'':
		l.i++
		val, err := l.escapeString(start)
		return token{kind: tkString, val: val, pos: start, end: l.i}, err
	case (c == 'b' || c == 'B' || c == 'x' || c == 'X') && l.i+1 < len(s) && s[l.i+1] == '\'':
		l.i++
		if _, err := l.quoted('\'', start); err != nil {
			return token{}, err
		}
		return token{kind: tkBits, val: s[start:l.i], pos: start, end: l.i}, nil
	case (c == 'n' || c == 'N') && l.i+1 < len(s) && s[l.i+1] == '\'':
		l.i++ // N'..' national character string: a plain string
		val, err := l.quoted('\'', start)
		return token{kind: tkString, val: val, pos: start, end: l.i}, err
	case (c == 'u' || c == 'U') && l.i+2 < len(s) && s[l.i+1] == '&' && (s[l.i+2] == '\'' || s[l.i+2] == '"'):
		return token{}, types.ErrorAt(types.ErrUnsupported, charPos(s, start), "unicode escape strings are not supported")
	case c == '$':
		return l.dollar(start)
	case c >= '0' && c <= '9' || c == '.' && l.i+1 < len(s) && s[l.i+1] >= '0' && s[l.i+1] <= '9':
		return l.number(start)
	case c == '(' || c == ')' || c == '[' || c == ']' || c == ',' || c == ';' || c == '.':
		l.i++
		return token{kind: tkPunct, val: s[start:l.i], pos: start, end: l.i}, nil
	case c == ':':
		if strings.HasPrefix(s[l.i:], "::") {
			l.i += 2
			return token{kind: tkOp, val: "::", pos: start, end: l.i}, nil
		}
		if strings.HasPrefix(s[l.i:], ":=") {
			l.i += 2
			return token{kind: tkOp, val: ":=", pos: start, end: l.i}, nil
		}
		l.i++
		return token{kind: tkPunct, val: ":", pos: start, end: l.i}, nil
	case strings.IndexByte(opChars, c) >= 0:
		t := l.operator(start)
		if strings.IndexByte(t.val, '`') >= 0 {
			// PostgreSQL has no operator with a backquote; refuse MySQL's
			// quoted identifiers rather than let TiDB read them as such.
			return token{}, l.errAt(start, "syntax error at or near %q", t.val)
		}
		return t, nil
	}
	r, size := utf8.DecodeRuneInString(s[l.i:])
	if isIdentStart(r) {
		l.i += size
		for l.i < len(s) {
			r, size = utf8.DecodeRuneInString(s[l.i:])
			if !isIdentCont(r) {
				break
			}
			l.i += size
		}
		return token{kind: tkIdent, val: foldIdent(s[start:l.i]), pos: start, end: l.i}, nil
	}
	l.i += size
	return token{}, l.errAt(start, "syntax error at or near %q", s[start:l.i])
}

// foldIdent lower-cases an unquoted identifier the way PostgreSQL does.
func foldIdent(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' || c >= 0x80 {
			return strings.ToLower(s)
		}
	}
	return s
}

// quoted reads a '..' or ".." token with doubled-quote escapes; l.i is at the
// opening quote.
func (l *lexer) quoted(q byte, start int) (string, error) {
	s := l.src
	l.i++
	var b strings.Builder
	for {
		j := strings.IndexByte(s[l.i:], q)
		if j < 0 {
			l.i = len(s)
			if q == '"' {
				return "", l.errAt(start, "unterminated quoted identifier at or near %q", s[start:])
			}
			return "", l.errAt(start, "unterminated quoted string at or near %q", s[start:])
		}
		if b.Len() == 0 && !(l.i+j+1 < len(s) && s[l.i+j+1] == q) {
			// No doubled quote: a copy of the text, of its size. Not the text itself: a value
			// a job keeps (a group's key, a cached join row) would keep the whole statement.
			val := strings.Clone(s[l.i : l.i+j])
			l.i += j + 1
			return val, nil
		}
		b.WriteString(s[l.i : l.i+j])
		l.i += j + 1
		if l.i < len(s) && s[l.i] == q {
			b.WriteByte(q)
			l.i++
			continue
		}
		return b.String(), nil
	}
}

// escapeString reads the body of E'..' (l.i at the quote), resolving
// backslash escapes.
func (l *lexer) escapeString(start int) (string, error) {
	s := l.src
	l.i++
	var b strings.Builder
	for l.i < len(s) {
		c := s[l.i]
		switch {
		case c == '\'':
			if l.i+1 < len(s) && s[l.i+1] == '\'' {
				b.WriteByte('\'')
				l.i += 2
				continue
			}
			l.i++
			return b.String(), nil
		case c == '\\' && l.i+1 < len(s):
			l.i++
			e := s[l.i]
			l.i++
			switch e {
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'x':
				v, n := hexDigits(s[l.i:], 2)
				if n == 0 {
					b.WriteByte('x')
				} else {
					b.WriteByte(byte(v))
					l.i += n
				}
			case 'u', 'U':
				want := 4
				if e == 'U' {
					want = 8
				}
				v, n := hexDigits(s[l.i:], want)
				if n != want || !utf8.ValidRune(rune(v)) {
					return "", l.errAt(l.i-2, "invalid Unicode escape")
				}
				b.WriteRune(rune(v))
				l.i += n
			default:
				if e >= '0' && e <= '7' {
					v := int(e - '0')
					for k := 0; k < 2 && l.i < len(s) && s[l.i] >= '0' && s[l.i] <= '7'; k++ {
						v = v*8 + int(s[l.i]-'0')
						l.i++
					}
					b.WriteByte(byte(v))
				} else {
					b.WriteByte(e)
				}
			}
		default:
			b.WriteByte(c)
			l.i++
		}
	}
	return "", l.errAt(start, "unterminated quoted string at or near %q", s[start:])
}

func hexDigits(s string, max int) (int, int) {
	v, n := 0, 0
	for n < max && n < len(s) {
		c := s[n]
		var d int
		switch {
		case c >= '0' && c <= '9':
			d = int(c - '0')
		case c >= 'a' && c <= 'f':
			d = int(c-'a') + 10
		case c >= 'A' && c <= 'F':
			d = int(c-'A') + 10
		default:
			return v, n
		}
		v = v*16 + d
		n++
	}
	return v, n
}

// dollar reads $n parameters and $tag$..$tag$ strings.
func (l *lexer) dollar(start int) (token, error) {
	s := l.src
	j := l.i + 1
	if j < len(s) && s[j] >= '0' && s[j] <= '9' {
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		l.i = j
		return token{kind: tkParam, val: s[start+1 : j], pos: start, end: j}, nil
	}
	for j < len(s) {
		r, size := utf8.DecodeRuneInString(s[j:])
		if r == '$' {
			break
		}
		if !isIdentCont(r) || r == '$' {
			return token{}, l.errAt(start, "syntax error at or near \"$\"")
		}
		j += size
	}
	if j >= len(s) {
		return token{}, l.errAt(start, "syntax error at or near \"$\"")
	}
	tag := s[start : j+1]
	body := j + 1
	k := strings.Index(s[body:], tag)
	if k < 0 {
		l.i = len(s)
		return token{}, l.errAt(start, "unterminated dollar-quoted string at or near %q", s[start:])
	}
	l.i = body + k + len(tag)
	return token{kind: tkString, val: s[body : body+k], pos: start, end: l.i}, nil
}

func (l *lexer) number(start int) (token, error) {
	s := l.src
	j := l.i
	digits := func() {
		for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '_') {
			j++
		}
	}
	digits()
	if j < len(s) && s[j] == '.' && !(j+1 < len(s) && s[j+1] == '.') {
		j++
		digits()
	}
	if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
		k := j + 1
		if k < len(s) && (s[k] == '+' || s[k] == '-') {
			k++
		}
		if k < len(s) && s[k] >= '0' && s[k] <= '9' {
			j = k
			digits()
		}
	}
	l.i = j
	if j < len(s) {
		if r, _ := utf8.DecodeRuneInString(s[j:]); isIdentStart(r) {
			return token{}, l.errAt(start, "trailing junk after numeric literal at or near %q", s[start:j+1])
		}
	}
	return token{kind: tkNumber, val: strings.ReplaceAll(s[start:j], "_", ""), pos: start, end: j}, nil
}

// operator reads a PostgreSQL operator: a run of operator characters that
// stops before a comment start, and drops a trailing + or - unless the
// operator contains one of ~ ! @ # % ^ & | ` ?.
func (l *lexer) operator(start int) token {
	s := l.src
	j := l.i
	for j < len(s) && strings.IndexByte(opChars, s[j]) >= 0 {
		if j > start && (strings.HasPrefix(s[j:], "--") || strings.HasPrefix(s[j:], "/*")) {
			break
		}
		j++
	}
	op := s[start:j]
	if len(op) > 1 && !strings.ContainsAny(op, "~!@#%^&|`?") {
		for len(op) > 1 && (op[len(op)-1] == '+' || op[len(op)-1] == '-') {
			op = op[:len(op)-1]
		}
	}
	l.i = start + len(op)
	return token{kind: tkOp, val: op, pos: start, end: l.i}
}
