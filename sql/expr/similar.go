package expr

import (
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/tributary/tributary/sql/types"
)

// x SIMILAR TO p [ESCAPE e], which the parser turns into pg__similar(x, p
// [, e]): the SQL-standard pattern is translated into an anchored Go regexp
// the way PostgreSQL's similar_to_escape does.

func init() {
	def("pg__similar", tB, tS, tS).r(similarFn(false))
	def("pg__similar", tB, tS, tS, tS).r(similarFn(true))
	infixOps["pg__similar"] = "SIMILAR TO"
}

func similarFn(hasEscape bool) rowFn {
	return func(_ *Ctx, a []types.Datum) (types.Datum, error) {
		esc := "\\"
		if hasEscape {
			esc = a[2].S
		}
		re, err := similarRegex(a[1].S, esc)
		if err != nil {
			return types.NullDatum, err
		}
		return types.DBool(re.MatchString(a[0].S)), nil
	}
}

// similarRegex translates a SIMILAR TO pattern with escape character esc
// ("" for none) into a compiled regexp matching the whole string.
func similarRegex(p, esc string) (*regexp.Regexp, error) {
	var escRune rune = -1
	switch utf8.RuneCountInString(esc) {
	case 0:
	case 1:
		escRune, _ = utf8.DecodeRuneInString(esc)
	default:
		return nil, &types.Error{Kind: types.ErrInvalidEscape, Msg: "invalid escape string",
			Hint: "Escape string must be empty or one character."}
	}
	var b strings.Builder
	b.WriteString("(?s)^(?:")
	afterEscape, inClass := false, false
	classLen := 0 // runes inside the bracket expression, a leading ^ not counted
	for _, c := range p {
		switch {
		case afterEscape:
			// An escaped letter or digit keeps the regexp's meaning (\d); other
			// characters become literals. The escape-double-quote separators of
			// SUBSTRING's patterns only group, which matching does not need.
			if isAlnum(c) {
				b.WriteByte('\\')
				b.WriteRune(c)
			} else if c != '"' {
				b.WriteString(regexp.QuoteMeta(string(c)))
			}
			afterEscape = false
		case c == escRune:
			afterEscape = true
		case inClass:
			switch {
			case c == '\\':
				b.WriteString(`\\`)
			case c == '^' && classLen == 0:
				b.WriteRune(c)
				classLen = -1 // the next ] is still a member
				continue
			default:
				b.WriteRune(c)
			}
			if c == ']' && classLen > 0 {
				inClass = false
			}
			if classLen < 0 {
				classLen = 0
			}
			classLen++
		case c == '[':
			b.WriteRune(c)
			inClass, classLen = true, 0
		case c == '%':
			b.WriteString(".*")
		case c == '_':
			b.WriteByte('.')
		case c == '(':
			b.WriteString("(?:")
		case c == '\\' || c == '.' || c == '^' || c == '$':
			b.WriteByte('\\')
			b.WriteRune(c)
		default:
			b.WriteRune(c)
		}
	}
	b.WriteString(")$")
	return compileRegex(b.String(), false)
}

func isAlnum(c rune) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
