package psqlcat

import (
	"regexp"
	"strings"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/sql/types"
)

// Column is one result column of an answered query.
type Column struct {
	Name string
	Type types.T
}

// result is an answered query.
type result struct {
	cols []Column
	rows [][]types.Datum
}

// recogniser answers one family of psql queries. It returns ok=false when q
// (normalised) is not of its family.
type recogniser struct {
	name   string
	answer func(r catalog.Reader, q string) (res *result, ok bool, err error)
}

// recognisers are tried in order; the first that recognises the query answers it.
var recognisers = []recogniser{
	{"list privileges (\\dp, \\z)", listPrivileges},
	{"list relations (\\d, \\dt, \\dv, \\dm, \\di and + variants)", listRelations},
	{"list databases (\\l)", listDatabases},
	{"list schemas (\\dn)", listSchemas},
	{"list roles (\\du, \\dg)", listRoles},
	{"list functions (\\df)", listFunctions},
	{"list types (\\dT)", listTypes},
	{"list extensions (\\dx)", listExtensions},
	{"describe: find relations by pattern", describeLookup},
	{"describe: table info", tableInfo},
	{"describe: columns", tableColumns},
	{"describe: indexes", tableIndexes},
	{"describe: view definition", viewDefinition},
	{"describe: empty footers", emptyFooters},
}

// Answer recognises one of psql's catalog queries and answers it from the
// catalog. ok is false when sql is not such a query (the session then runs it
// as ordinary SQL); err reports a recognised query that cannot be answered
// (an invalid name pattern).
func Answer(r catalog.Reader, sql string) (cols []Column, rows [][]types.Datum, ok bool, err error) {
	if !strings.Contains(sql, "pg_catalog.") { // every query psql sends names pg_catalog
		return nil, nil, false, nil
	}
	q := normalize(sql)
	if !strings.HasPrefix(q, "SELECT ") {
		return nil, nil, false, nil
	}
	for _, rc := range recognisers {
		res, ok, err := rc.answer(r, q)
		if err != nil {
			return nil, nil, true, err
		}
		if ok {
			return res.cols, res.rows, true, nil
		}
	}
	return nil, nil, false, nil
}

// normalize collapses whitespace outside quoted strings and identifiers to
// single spaces, drops spaces next to "(", ")", "," and "=", and strips
// trailing semicolons, so that formatting differences do not matter.
func normalize(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	space := false
	var prev byte
	emit := func(c byte) {
		if space && b.Len() > 0 && !strings.ContainsRune("(,=", rune(prev)) && !strings.ContainsRune("),=", rune(c)) {
			b.WriteByte(' ')
		}
		space = false
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			space = true
			i++
		case c == '\'' || c == '"':
			j := i + 1
			for j < len(s) {
				if s[j] == c {
					if j+1 < len(s) && s[j+1] == c {
						j += 2
						continue
					}
					break
				}
				j++
			}
			end := min(j+1, len(s))
			emit(c)
			b.WriteString(s[i:end])
			prev = c
			i = end
		default:
			emit(c)
			b.WriteByte(c)
			prev = c
			i++
		}
	}
	return strings.TrimRight(b.String(), "; ")
}

// template compiles psql's query text (any formatting) into a matcher of its
// normalised form; {OID} matches a quoted or bare oid, captured.
func template(raw string) *regexp.Regexp {
	q := regexp.QuoteMeta(normalize(raw))
	q = strings.ReplaceAll(q, `\{OID\}`, `(\d+)`)
	return regexp.MustCompile("^" + q + "$")
}

// splitTop splits s at every top-level occurrence of sep (outside quotes and parentheses).
func splitTop(s, sep string) []string {
	var parts []string
	depth, start := 0, 0
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '(':
			depth++
		case c == ')':
			depth--
		case depth == 0 && strings.HasPrefix(s[i:], sep):
			parts = append(parts, s[start:i])
			start = i + len(sep)
			i += len(sep) - 1
		}
	}
	return append(parts, s[start:])
}

// unquote returns the value of a single-quoted SQL literal's body (a doubled quote is one quote).
func unquote(body string) string { return strings.ReplaceAll(body, "''", "'") }

// Column type shorthands: PostgreSQL's name, oid, text and "char" all travel as varchar.
var (
	tText = types.TVarchar
	tOID  = types.TInt32
	tBool = types.TBool
	tI2   = types.TInt16
	tI4   = types.TInt32
)

func dS(s string) types.Datum { return types.DString(s) }
func dI(v int64) types.Datum  { return types.DInt(v) }
func dB(b bool) types.Datum   { return types.DBool(b) }

var null = types.NullDatum

// cols builds a column list of one type.
func cols(t types.T, names ...string) []Column {
	out := make([]Column, len(names))
	for i, n := range names {
		out[i] = Column{Name: n, Type: t}
	}
	return out
}
