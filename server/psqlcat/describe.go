package psqlcat

import (
	"cmp"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/sql/types"
)

var describeLookupRE = regexp.MustCompile(`^SELECT c\.oid,n\.nspname,c\.relname FROM pg_catalog\.pg_class c LEFT JOIN pg_catalog\.pg_namespace n ON n\.oid=c\.relnamespace(?: WHERE (.*))? ORDER BY 2,3$`)

// describeLookup answers describeTableDetails' first query: the relations a
// \d pattern names (oid, schema, name). Indexes are not describable here.
func describeLookup(r catalog.Reader, q string) (*result, bool, error) {
	m := describeLookupRE.FindStringSubmatch(q)
	if m == nil {
		return nil, false, nil
	}
	f := &filter{}
	if m[1] != "" {
		var ok bool
		var err error
		if f, ok, err = parseWhere(r, m[1]); !ok || err != nil {
			return nil, ok, err
		}
	}
	var matched []pgRow
	for _, row := range pgClass(r, false) {
		if f.keep(row) {
			matched = append(matched, row)
		}
	}
	slices.SortFunc(matched, func(a, b pgRow) int {
		return cmp.Or(cmp.Compare(a.schema, b.schema), cmp.Compare(a.name, b.name))
	})
	res := &result{cols: []Column{{"oid", tOID}, {"nspname", tText}, {"relname", tText}}}
	for _, row := range matched {
		res.rows = append(res.rows, []types.Datum{dI(int64(row.rel.ID)), dS(row.schema), dS(row.name)})
	}
	return res, true, nil
}

// tableInfoFormat is describeOneTableDetails' general query; %s is the
// reloptions column (an empty string literal or, with \d+, an array_to_string expression).
const tableInfoFormat = `SELECT c.relchecks, c.relkind, c.relhasindex, c.relhasrules, c.relhastriggers, c.relrowsecurity, c.relforcerowsecurity, false AS relhasoids, c.relispartition, %s, c.reltablespace, CASE WHEN c.reloftype = 0 THEN '' ELSE c.reloftype::pg_catalog.regtype::pg_catalog.text END, c.relpersistence, c.relreplident, am.amname
FROM pg_catalog.pg_class c
 LEFT JOIN pg_catalog.pg_class tc ON (c.reltoastrelid = tc.oid)
LEFT JOIN pg_catalog.pg_am am ON (c.relam = am.oid)
WHERE c.oid = '{OID}';`

var (
	tableInfoRE        = template(strings.Replace(tableInfoFormat, "%s", "''", 1))
	tableInfoVerboseRE = template(strings.Replace(tableInfoFormat, "%s",
		`pg_catalog.array_to_string(c.reloptions || array(select 'toast.' || x from pg_catalog.unnest(tc.reloptions) x), ', ')`, 1))
)

// relationByOID finds a pg_class relation by the oid psql quoted.
func relationByOID(r catalog.Reader, oid string) (*catalog.Relation, bool) {
	id, err := strconv.ParseUint(oid, 10, 32)
	if err != nil {
		return nil, false
	}
	rel, ok := r.ByID(uint32(id))
	if !ok || catalog.RelKind(rel) == 0 {
		return nil, false
	}
	return rel, true
}

// tableInfo answers the relation's general facts (relkind, hasindex, ...).
func tableInfo(r catalog.Reader, q string) (*result, bool, error) {
	m := tableInfoRE.FindStringSubmatch(q)
	optName := "?column?"
	if m == nil {
		if m = tableInfoVerboseRE.FindStringSubmatch(q); m == nil {
			return nil, false, nil
		}
		optName = "array_to_string"
	}
	res := &result{cols: []Column{
		{"relchecks", tI2}, {"relkind", tText}, {"relhasindex", tBool}, {"relhasrules", tBool},
		{"relhastriggers", tBool}, {"relrowsecurity", tBool}, {"relforcerowsecurity", tBool},
		{"relhasoids", tBool}, {"relispartition", tBool}, {optName, tText}, {"reltablespace", tOID},
		{"reloftype", tText}, {"relpersistence", tText}, {"relreplident", tText}, {"amname", tText},
	}}
	rel, ok := relationByOID(r, m[1])
	if !ok {
		return res, true, nil
	}
	kind := catalog.RelKind(rel)
	replident, am := "d", dS("heap")
	if kind == 'v' {
		replident, am = "n", null
	}
	res.rows = [][]types.Datum{{
		dI(0), dS(string(kind)), dB(catalog.HasPrimaryIndex(rel)), dB(false),
		dB(false), dB(false), dB(false),
		dB(false), dB(false), dS(""), dI(0),
		dS(""), dS("p"), dS(replident), am,
	}}
	return res, true, nil
}

// attribute is one visible column with its number and owner, for the columns query.
type attribute struct {
	rel *catalog.Relation
	idx int // index in rel.Columns
	col catalog.Column
}

// columnItems are the select-list items describeOneTableDetails may ask for
// about each column, in psql's text; each gives its result column and cell.
var columnItems = []struct {
	text string
	col  Column
	cell func(a attribute) types.Datum
}{
	{`a.attname`, Column{"attname", tText}, func(a attribute) types.Datum { return dS(a.col.Name) }},
	{`pg_catalog.format_type(a.atttypid, a.atttypmod)`, Column{"format_type", tText},
		func(a attribute) types.Datum { return dS(a.col.Type.String()) }},
	{`(SELECT pg_catalog.pg_get_expr(d.adbin, d.adrelid, true)
   FROM pg_catalog.pg_attrdef d
   WHERE d.adrelid = a.attrelid AND d.adnum = a.attnum AND a.atthasdef)`, Column{"pg_get_expr", tText},
		func(a attribute) types.Datum {
			if a.col.Default == "" {
				return null
			}
			return dS(catalog.DefaultText(a.col))
		}},
	{`a.attnotnull`, Column{"attnotnull", tBool}, func(a attribute) types.Datum { return dB(catalog.ColumnNotNull(a.rel, a.idx)) }},
	{`(SELECT c.collname FROM pg_catalog.pg_collation c, pg_catalog.pg_type t
   WHERE c.oid = a.attcollation AND t.oid = a.atttypid AND a.attcollation <> t.typcollation) AS attcollation`,
		Column{"attcollation", tText}, func(attribute) types.Datum { return null }},
	{`a.attidentity`, Column{"attidentity", tText}, func(a attribute) types.Datum { return dS(a.col.Identity) }},
	{`a.attgenerated`, Column{"attgenerated", tText}, func(attribute) types.Datum { return dS("") }},
	{`a.attstorage`, Column{"attstorage", tText},
		func(a attribute) types.Datum { return dS(string(catalog.PGTypeOf(a.col.Type).Storage)) }},
	{`a.attcompression AS attcompression`, Column{"attcompression", tText}, func(attribute) types.Datum { return dS("") }},
	{`CASE WHEN a.attstattarget=-1 THEN NULL ELSE a.attstattarget END AS attstattarget`, Column{"attstattarget", tI4},
		func(attribute) types.Datum { return null }},
	{`pg_catalog.col_description(a.attrelid, a.attnum)`, Column{"col_description", tText},
		func(a attribute) types.Datum {
			if a.col.Comment == "" {
				return null
			}
			return dS(a.col.Comment)
		}},
}

// columnItemIndex maps an item's normalised text to its index in columnItems.
var columnItemIndex = func() map[string]int {
	m := make(map[string]int, len(columnItems))
	for i, it := range columnItems {
		m[normalize(it.text)] = i
	}
	return m
}()

var tableColumnsRE = regexp.MustCompile(`^SELECT (.*) FROM pg_catalog\.pg_attribute a WHERE a\.attrelid='(\d+)' AND a\.attnum > 0 AND NOT a\.attisdropped ORDER BY a\.attnum$`)

// tableColumns answers the per-column query (\d and \d+ variants by relkind).
func tableColumns(r catalog.Reader, q string) (*result, bool, error) {
	m := tableColumnsRE.FindStringSubmatch(q)
	if m == nil {
		return nil, false, nil
	}
	items := splitTop(m[1], ",")
	res := &result{}
	picked := make([]int, len(items))
	for i, it := range items {
		k, ok := columnItemIndex[it]
		if !ok {
			return nil, false, nil
		}
		picked[i] = k
		res.cols = append(res.cols, columnItems[k].col)
	}
	rel, ok := relationByOID(r, m[2])
	if !ok {
		return res, true, nil
	}
	for i, c := range rel.Columns {
		if c.Hidden {
			continue
		}
		a := attribute{rel: rel, idx: i, col: c}
		row := make([]types.Datum, len(picked))
		for j, k := range picked {
			row[j] = columnItems[k].cell(a)
		}
		res.rows = append(res.rows, row)
	}
	return res, true, nil
}

var tableIndexesRE = template(`SELECT c2.relname, i.indisprimary, i.indisunique, i.indisclustered, i.indisvalid, pg_catalog.pg_get_indexdef(i.indexrelid, 0, true),
  pg_catalog.pg_get_constraintdef(con.oid, true), contype, condeferrable, condeferred, i.indisreplident, c2.reltablespace
FROM pg_catalog.pg_class c, pg_catalog.pg_class c2, pg_catalog.pg_index i
  LEFT JOIN pg_catalog.pg_constraint con ON (conrelid = i.indrelid AND conindid = i.indexrelid AND contype IN ('p','u','x'))
WHERE c.oid = '{OID}' AND c.oid = i.indrelid AND i.indexrelid = c2.oid
ORDER BY i.indisprimary DESC, c2.relname;`)

// tableIndexes answers the "Indexes:" footer query: the primary key, if declared.
func tableIndexes(r catalog.Reader, q string) (*result, bool, error) {
	m := tableIndexesRE.FindStringSubmatch(q)
	if m == nil {
		return nil, false, nil
	}
	res := &result{cols: []Column{
		{"relname", tText}, {"indisprimary", tBool}, {"indisunique", tBool}, {"indisclustered", tBool},
		{"indisvalid", tBool}, {"pg_get_indexdef", tText}, {"pg_get_constraintdef", tText}, {"contype", tText},
		{"condeferrable", tBool}, {"condeferred", tBool}, {"indisreplident", tBool}, {"reltablespace", tOID},
	}}
	rel, ok := relationByOID(r, m[1])
	if !ok {
		return res, true, nil
	}
	defer func() {
		for _, idx := range catalog.IndexesOf(r.Relations(), rel.ID) {
			res.rows = append(res.rows, []types.Datum{
				dS(idx.Name), dB(false), dB(false), dB(false),
				dB(true), dS(IndexDef(rel, idx)), null, null,
				dB(false), dB(false), dB(false), dI(0),
			})
		}
	}()
	if !catalog.HasPrimaryIndex(rel) {
		return res, true, nil
	}
	keys := make([]string, len(rel.PK))
	for i, k := range rel.PK {
		keys[i] = quoteIdent(rel.Columns[k].Name)
	}
	name, list := catalog.PrimaryIndexName(rel), strings.Join(keys, ", ")
	indexDef := "CREATE UNIQUE INDEX " + quoteIdent(name) + " ON " + quoteIdent(rel.Schema) + "." + quoteIdent(rel.Name) +
		" USING btree (" + list + ")"
	res.rows = [][]types.Datum{{
		dS(name), dB(true), dB(true), dB(false),
		dB(true), dS(indexDef), dS("PRIMARY KEY (" + list + ")"), dS("p"),
		dB(false), dB(false), dB(false), dI(0),
	}}
	return res, true, nil
}

// IndexDef is pg_get_indexdef of an index (CREATE INDEX) on rel.
func IndexDef(rel, idx *catalog.Relation) string {
	cols := make([]string, len(idx.Index.Columns))
	for i, c := range idx.Index.Columns {
		cols[i] = quoteIdent(idx.Columns[c].Name)
	}
	return "CREATE INDEX " + quoteIdent(idx.Name) + " ON " + quoteIdent(rel.Schema) + "." + quoteIdent(rel.Name) +
		" USING btree (" + strings.Join(cols, ", ") + ")"
}

var plainIdent = regexp.MustCompile(`^[a-z_][a-z0-9_$]*$`)

// quoteIdent is PostgreSQL's quote_ident, short of the reserved-keyword check.
func quoteIdent(s string) string {
	if plainIdent.MatchString(s) {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

var viewDefRE = template(`SELECT pg_catalog.pg_get_viewdef('{OID}'::pg_catalog.oid, true);`)

// viewDefinition answers pg_get_viewdef for \d+ of a view or materialized view.
func viewDefinition(r catalog.Reader, q string) (*result, bool, error) {
	m := viewDefRE.FindStringSubmatch(q)
	if m == nil {
		return nil, false, nil
	}
	def := null
	if rel, ok := relationByOID(r, m[1]); ok && (rel.Kind == catalog.KindView || rel.Kind == catalog.KindMaterializedView) {
		def = dS(catalog.ViewDefinition(rel))
	}
	return &result{cols: []Column{{"pg_get_viewdef", tText}}, rows: [][]types.Datum{{def}}}, true, nil
}

// emptyFooter is a footer query about something Tributary does not have
// (row-level policies, extended statistics, publications, inheritance,
// partitions, rules): it always answers zero rows, with psql's columns.
type emptyFooter struct {
	re   *regexp.Regexp
	cols []Column
}

var zeroRowQueries = []emptyFooter{
	{template(`SELECT pol.polname, pol.polpermissive,
  CASE WHEN pol.polroles = '{0}' THEN NULL ELSE pg_catalog.array_to_string(array(select rolname from pg_catalog.pg_roles where oid = any (pol.polroles) order by 1),',') END,
  pg_catalog.pg_get_expr(pol.polqual, pol.polrelid),
  pg_catalog.pg_get_expr(pol.polwithcheck, pol.polrelid),
  CASE pol.polcmd
    WHEN 'r' THEN 'SELECT'
    WHEN 'a' THEN 'INSERT'
    WHEN 'w' THEN 'UPDATE'
    WHEN 'd' THEN 'DELETE'
    END AS cmd
FROM pg_catalog.pg_policy pol
WHERE pol.polrelid = '{OID}' ORDER BY 1;`),
		[]Column{{"polname", tText}, {"polpermissive", tBool}, {"array_to_string", tText}, {"pg_get_expr", tText}, {"pg_get_expr", tText}, {"cmd", tText}}},
	{template(`SELECT oid, stxrelid::pg_catalog.regclass, stxnamespace::pg_catalog.regnamespace::pg_catalog.text AS nsp, stxname,
pg_catalog.pg_get_statisticsobjdef_columns(oid) AS columns,
  'd' = any(stxkind) AS ndist_enabled,
  'f' = any(stxkind) AS deps_enabled,
  'm' = any(stxkind) AS mcv_enabled,
stxstattarget
FROM pg_catalog.pg_statistic_ext
WHERE stxrelid = '{OID}'
ORDER BY nsp, stxname;`),
		[]Column{{"oid", tOID}, {"stxrelid", tText}, {"nsp", tText}, {"stxname", tText}, {"columns", tText},
			{"ndist_enabled", tBool}, {"deps_enabled", tBool}, {"mcv_enabled", tBool}, {"stxstattarget", tI4}}},
	{template(`SELECT pubname
     , NULL
     , NULL
FROM pg_catalog.pg_publication p
     JOIN pg_catalog.pg_publication_namespace pn ON p.oid = pn.pnpubid
     JOIN pg_catalog.pg_class pc ON pc.relnamespace = pn.pnnspid
WHERE pc.oid ='{OID}' and pg_catalog.pg_relation_is_publishable('{OID}')
UNION
SELECT pubname
     , pg_get_expr(pr.prqual, c.oid)
     , (CASE WHEN pr.prattrs IS NOT NULL THEN
         (SELECT string_agg(attname, ', ')
           FROM pg_catalog.generate_series(0, pg_catalog.array_upper(pr.prattrs::pg_catalog.int2[], 1)) s,
                pg_catalog.pg_attribute
          WHERE attrelid = pr.prrelid AND attnum = prattrs[s])
        ELSE NULL END) FROM pg_catalog.pg_publication p
     JOIN pg_catalog.pg_publication_rel pr ON p.oid = pr.prpubid
     JOIN pg_catalog.pg_class c ON c.oid = pr.prrelid
WHERE pr.prrelid = '{OID}'
UNION
SELECT pubname
     , NULL
     , NULL
FROM pg_catalog.pg_publication p
WHERE p.puballtables AND pg_catalog.pg_relation_is_publishable('{OID}')
ORDER BY 1;`),
		[]Column{{"pubname", tText}, {"?column?", tText}, {"?column?", tText}}},
	{template(`SELECT c.oid::pg_catalog.regclass
FROM pg_catalog.pg_class c, pg_catalog.pg_inherits i
WHERE c.oid = i.inhparent AND i.inhrelid = '{OID}'
  AND c.relkind != 'p' AND c.relkind != 'I'
ORDER BY inhseqno;`),
		[]Column{{"oid", tText}}},
	{template(`SELECT c.oid::pg_catalog.regclass, c.relkind, inhdetachpending, pg_catalog.pg_get_expr(c.relpartbound, c.oid)
FROM pg_catalog.pg_class c, pg_catalog.pg_inherits i
WHERE c.oid = i.inhrelid AND i.inhparent = '{OID}'
ORDER BY pg_catalog.pg_get_expr(c.relpartbound, c.oid) = 'DEFAULT', c.oid::pg_catalog.regclass::pg_catalog.text;`),
		[]Column{{"oid", tText}, {"relkind", tText}, {"inhdetachpending", tBool}, {"pg_get_expr", tText}}},
	{template(`SELECT r.rulename, trim(trailing ';' from pg_catalog.pg_get_ruledef(r.oid, true))
FROM pg_catalog.pg_rewrite r
WHERE r.ev_class = '{OID}' AND r.rulename != '_RETURN' ORDER BY 1;`),
		[]Column{{"rulename", tText}, {"rtrim", tText}}},
}

// emptyFooters answers the footer queries that always have zero rows.
func emptyFooters(_ catalog.Reader, q string) (*result, bool, error) {
	for _, f := range zeroRowQueries {
		if f.re.MatchString(q) {
			return &result{cols: f.cols}, true, nil
		}
	}
	return nil, false, nil
}
