package parser

import (
	"regexp"
	"strings"
)

var plainIdent = regexp.MustCompile(`^[a-z_][a-z0-9_$]*$`)

// QuoteIdent writes name as an identifier: as is when it is a plain lower
// case word, else double-quoted.
func QuoteIdent(name string) string {
	if plainIdent.MatchString(name) {
		return name
	}
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

// ReplaceIdent returns sql with every identifier token naming old (quoted or
// not, as the parser reads it) written as newName instead, and how many it
// replaced. Strings, comments and other tokens are left as they are. The
// caller checks that the result means what it should.
func ReplaceIdent(sql, old, newName string) (string, int, error) {
	toks, err := lex(sql)
	if err != nil {
		return sql, 0, err
	}
	var b strings.Builder
	at, n := 0, 0
	for _, t := range toks {
		if (t.kind != tkIdent && t.kind != tkQIdent) || t.synth || t.val != old || t.end > len(sql) {
			continue
		}
		b.WriteString(sql[at:t.pos])
		b.WriteString(QuoteIdent(newName))
		at = t.end
		n++
	}
	b.WriteString(sql[at:])
	return b.String(), n, nil
}
