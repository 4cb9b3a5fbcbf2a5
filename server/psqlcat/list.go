package psqlcat

import (
	"cmp"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/sql/types"
)

// pgRow is one row of pg_class as psql's queries see it: a relation, or the
// primary-key index of a table (rel is then the table).
type pgRow struct {
	rel    *catalog.Relation
	schema string
	name   string
	kind   byte
	index  bool
}

// pgClass returns the rows of pg_class: every relation pg_class lists, plus a
// "<table>_pkey" index ('i') per table with a declared primary key when withIndexes.
func pgClass(r catalog.Reader, withIndexes bool) []pgRow {
	var out []pgRow
	rels := r.Relations()
	for _, rel := range rels {
		k := catalog.RelKind(rel)
		if k == 0 || k == 'i' {
			continue
		}
		out = append(out, pgRow{rel: rel, schema: rel.Schema, name: rel.Name, kind: k})
		if !withIndexes {
			continue
		}
		if catalog.HasPrimaryIndex(rel) {
			out = append(out, pgRow{rel: rel, schema: rel.Schema, name: catalog.PrimaryIndexName(rel), kind: 'i', index: true})
		}
		for _, idx := range catalog.IndexesOf(rels, rel.ID) {
			out = append(out, pgRow{rel: rel, schema: idx.Schema, name: idx.Name, kind: 'i', index: true})
		}
	}
	return out
}

// visible is pg_table_is_visible: a relation is visible when its bare name
// resolves to it (r resolves with the session's search path). PostgreSQL
// never searches information_schema implicitly; rw_catalog is treated the
// same way (our name resolution searches both, but psql should list their
// tables only when asked for the schema by name).
func visible(r catalog.Reader, rel *catalog.Relation) bool {
	if rel.Schema == "information_schema" || rel.Schema == "rw_catalog" {
		return false
	}
	got, err := r.Lookup("", rel.Name)
	return err == nil && got.ID == rel.ID
}

// Conditions psql puts in WHERE clauses over pg_class c and pg_namespace n.
var (
	condRelkinds  = regexp.MustCompile(`^c\.relkind IN \(((?:'[a-zA-Z]?',?)*)\)$`)
	condNspNot    = regexp.MustCompile(`^n\.nspname <> '((?:[^']|'')*)'$`)
	condNspNotRe  = regexp.MustCompile(`^n\.nspname !~ '((?:[^']|'')*)'$`)
	condNspRe     = regexp.MustCompile(`^n\.nspname OPERATOR\(pg_catalog\.~\) '((?:[^']|'')*)' COLLATE pg_catalog\.default$`)
	condRelnameRe = regexp.MustCompile(`^c\.relname OPERATOR\(pg_catalog\.~\) '((?:[^']|'')*)' COLLATE pg_catalog\.default$`)
)

const condVisible = "pg_catalog.pg_table_is_visible(c.oid)"

// filter is a parsed WHERE clause over pg_class rows.
type filter struct {
	kinds      []byte // nil: any kind
	preds      []func(pgRow) bool
	hideSystem bool // psql hid pg_catalog and information_schema by name; hide rw_catalog too
}

func (f *filter) keep(row pgRow) bool {
	if f.kinds != nil && !slices.Contains(f.kinds, row.kind) {
		return false
	}
	if f.hideSystem && row.schema == "rw_catalog" {
		return false
	}
	for _, p := range f.preds {
		if !p(row) {
			return false
		}
	}
	return true
}

// compilePattern compiles a POSIX regex psql sent; PostgreSQL's ~ and Go's
// regexp agree on the patterns psql generates.
func compilePattern(body string) (*regexp.Regexp, error) {
	re, err := regexp.Compile(unquote(body))
	if err != nil {
		return nil, types.Errorf(types.ErrInvalidRegex, "invalid regular expression: %v", err)
	}
	return re, nil
}

// parseWhere parses psql's conjunction of pg_class/pg_namespace conditions;
// ok is false when a conjunct is not one psql sends for these queries.
func parseWhere(r catalog.Reader, where string) (*filter, bool, error) {
	f := &filter{}
	for _, c := range splitTop(where, " AND ") {
		c = strings.TrimSpace(c)
		if m := condRelkinds.FindStringSubmatch(c); m != nil {
			f.kinds = []byte{}
			for _, k := range strings.Split(m[1], ",") {
				if len(k) == 3 {
					f.kinds = append(f.kinds, k[1])
				}
			}
			continue
		}
		if m := condNspNot.FindStringSubmatch(c); m != nil {
			name := unquote(m[1])
			if name == "information_schema" {
				f.hideSystem = true
			}
			f.preds = append(f.preds, func(row pgRow) bool { return row.schema != name })
			continue
		}
		if m := condNspNotRe.FindStringSubmatch(c); m != nil {
			re, err := compilePattern(m[1])
			if err != nil {
				return nil, true, err
			}
			f.preds = append(f.preds, func(row pgRow) bool { return !re.MatchString(row.schema) })
			continue
		}
		if m := condNspRe.FindStringSubmatch(c); m != nil {
			re, err := compilePattern(m[1])
			if err != nil {
				return nil, true, err
			}
			f.preds = append(f.preds, func(row pgRow) bool { return re.MatchString(row.schema) })
			continue
		}
		if m := condRelnameRe.FindStringSubmatch(c); m != nil {
			re, err := compilePattern(m[1])
			if err != nil {
				return nil, true, err
			}
			f.preds = append(f.preds, func(row pgRow) bool { return re.MatchString(row.name) })
			continue
		}
		if c == condVisible {
			f.preds = append(f.preds, func(row pgRow) bool { return visible(r, row.rel) })
			continue
		}
		return nil, false, nil
	}
	return f, true, nil
}

// relkindName is psql's CASE c.relkind ... "Type" column.
func relkindName(k byte) string {
	switch k {
	case 'r':
		return "table"
	case 'v':
		return "view"
	case 'm':
		return "materialized view"
	case 'i':
		return "index"
	case 'S':
		return "sequence"
	case 't':
		return "TOAST table"
	case 'f':
		return "foreign table"
	case 'p':
		return "partitioned table"
	case 'I':
		return "partitioned index"
	}
	return ""
}

// accessMethod is pg_am.amname of a pg_class row (NULL for views).
func accessMethod(row pgRow) types.Datum {
	switch {
	case row.index:
		return dS("btree")
	case row.kind == 'v':
		return null
	}
	return dS("heap")
}

// listColumns produce the cells of listTables' columns, by their "as" alias.
var listColumns = map[string]func(row pgRow) types.Datum{
	"Schema": func(row pgRow) types.Datum { return dS(row.schema) },
	"Name":   func(row pgRow) types.Datum { return dS(row.name) },
	"Type":   func(row pgRow) types.Datum { return dS(relkindName(row.kind)) },
	"Owner": func(row pgRow) types.Datum {
		if row.rel.Owner != "" {
			return dS(row.rel.Owner)
		}
		return dS(catalog.Owner)
	},
	"Persistence":   func(pgRow) types.Datum { return dS("permanent") },
	"Access method": accessMethod,
	// Sizes are not tracked per relation: unknown, shown empty.
	"Size": func(pgRow) types.Datum { return null },
	"Description": func(row pgRow) types.Datum {
		if row.index || row.rel.Comment == "" {
			return null
		}
		return dS(row.rel.Comment)
	},
	"Table": func(row pgRow) types.Datum {
		if row.index {
			return dS(row.rel.Name)
		}
		return null
	},
}

var aliasRE = regexp.MustCompile(`(?:as|AS) "([^"]+)"(?:,|$)`)

const (
	listPrefix = `SELECT n.nspname as "Schema",c.relname as "Name",CASE c.relkind WHEN 'r' THEN 'table'`
	listFrom   = ` FROM pg_catalog.pg_class c LEFT JOIN pg_catalog.pg_namespace n ON n.oid=c.relnamespace`
)

// listJoins are the extra joins listTables adds (for the access method and for \di).
var listJoins = []string{
	` LEFT JOIN pg_catalog.pg_am am ON am.oid=c.relam`,
	` LEFT JOIN pg_catalog.pg_index i ON i.indexrelid=c.oid`,
	` LEFT JOIN pg_catalog.pg_class c2 ON i.indrelid=c2.oid`,
}

// listRelations answers listTables (\d with no pattern, \dt, \dv, \dm, \di,
// \ds, \dE, with S, + and patterns).
func listRelations(r catalog.Reader, q string) (*result, bool, error) {
	if !strings.HasPrefix(q, "SELECT n.nspname as \"Schema\",") {
		return nil, false, nil
	}
	from := strings.Index(q, listFrom)
	if !strings.HasPrefix(q, listPrefix) || from < 0 || !strings.HasSuffix(q, " ORDER BY 1,2") {
		return nil, false, nil
	}
	rest := strings.TrimSuffix(q[from+len(listFrom):], " ORDER BY 1,2")
	for _, j := range listJoins {
		rest = strings.TrimPrefix(rest, j)
	}
	where, found := strings.CutPrefix(rest, " WHERE ")
	if !found {
		return nil, false, nil
	}
	var out []Column
	var cells []func(pgRow) types.Datum
	for _, m := range aliasRE.FindAllStringSubmatch(q[:from], -1) {
		f, ok := listColumns[m[1]]
		if !ok {
			return nil, false, nil
		}
		out = append(out, Column{Name: m[1], Type: tText})
		cells = append(cells, f)
	}
	f, ok, err := parseWhere(r, where)
	if !ok || err != nil {
		return nil, ok, err
	}
	var matched []pgRow
	for _, row := range pgClass(r, true) {
		if f.keep(row) {
			matched = append(matched, row)
		}
	}
	slices.SortFunc(matched, func(a, b pgRow) int {
		return cmp.Or(cmp.Compare(a.schema, b.schema), cmp.Compare(a.name, b.name))
	})
	res := &result{cols: out}
	for _, row := range matched {
		vals := make([]types.Datum, len(cells))
		for i, c := range cells {
			vals[i] = c(row)
		}
		res.rows = append(res.rows, vals)
	}
	return res, true, nil
}

var listDatabasesRE = template(`SELECT d.datname as "Name",
       pg_catalog.pg_get_userbyid(d.datdba) as "Owner",
       pg_catalog.pg_encoding_to_char(d.encoding) as "Encoding",
       d.datcollate as "Collate",
       d.datctype as "Ctype",
       d.daticulocale as "ICU Locale",
       CASE d.datlocprovider WHEN 'c' THEN 'libc' WHEN 'i' THEN 'icu' END AS "Locale Provider",
       pg_catalog.array_to_string(d.datacl, E'\n') AS "Access privileges"
FROM pg_catalog.pg_database d
ORDER BY 1;`)

// listDatabases answers \l: the databases by name.
func listDatabases(r catalog.Reader, q string) (*result, bool, error) {
	if !listDatabasesRE.MatchString(q) {
		return nil, false, nil
	}
	dbs := r.Databases()
	sort.Slice(dbs, func(i, j int) bool { return dbs[i].Name < dbs[j].Name })
	var rows [][]types.Datum
	for _, d := range dbs {
		owner := d.Owner
		if owner == "" {
			owner = catalog.Owner
		}
		rows = append(rows, []types.Datum{dS(d.Name), dS(owner), dS("UTF8"), dS("C.UTF-8"), dS("C.UTF-8"), null, dS("libc"), null})
	}
	return &result{
		cols: cols(tText, "Name", "Owner", "Encoding", "Collate", "Ctype", "ICU Locale", "Locale Provider", "Access privileges"),
		rows: rows,
	}, true, nil
}

var (
	listSchemasRE = regexp.MustCompile(`^SELECT n\.nspname AS "Name",pg_catalog\.pg_get_userbyid\(n\.nspowner\) AS "Owner"` +
		`((?:,pg_catalog\.array_to_string\(n\.nspacl,E'\\n'\) AS "Access privileges",pg_catalog\.obj_description\(n\.oid,'pg_namespace'\) AS "Description")?)` +
		` FROM pg_catalog\.pg_namespace n(?: WHERE (.*))? ORDER BY 1$`)
	condNspNotPg = `n.nspname !~ '^pg_'`
	condNspNotIS = `n.nspname <> 'information_schema'`
)

// listSchemas answers \dn (and \dnS, \dn+, \dn PATTERN).
func listSchemas(r catalog.Reader, q string) (*result, bool, error) {
	m := listSchemasRE.FindStringSubmatch(q)
	if m == nil {
		return nil, false, nil
	}
	verbose := m[1] != ""
	var preds []func(string) bool
	if m[2] != "" {
		for _, c := range splitTop(m[2], " AND ") {
			switch c = strings.TrimSpace(c); {
			case c == condNspNotPg:
				preds = append(preds, func(s string) bool { return !strings.HasPrefix(s, "pg_") })
			case c == condNspNotIS:
				// psql hides system schemas by name; rw_catalog is ours and hidden alike.
				preds = append(preds, func(s string) bool { return s != "information_schema" && s != "rw_catalog" })
			default:
				sm := condNspRe.FindStringSubmatch(c)
				if sm == nil {
					return nil, false, nil
				}
				re, err := compilePattern(sm[1])
				if err != nil {
					return nil, true, err
				}
				preds = append(preds, re.MatchString)
			}
		}
	}
	res := &result{cols: cols(tText, "Name", "Owner")}
	if verbose {
		res.cols = cols(tText, "Name", "Owner", "Access privileges", "Description")
	}
	schemas := r.Schemas()
	slices.Sort(schemas)
outer:
	for _, s := range schemas {
		for _, p := range preds {
			if !p(s) {
				continue outer
			}
		}
		row := []types.Datum{dS(s), dS(catalog.Owner)}
		if verbose {
			row = append(row, null, null)
		}
		res.rows = append(res.rows, row)
	}
	return res, true, nil
}
