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

// Func is one overload of a built-in function or aggregate (\df lists them
// in schema pg_catalog).
type Func struct {
	// Schema is a user function's schema ("": a built-in, in pg_catalog).
	Schema   string
	Name     string
	ArgNames []string // a user function's argument names ("" for none)
	Args     []types.T
	Variadic bool // the last argument repeats
	Result   types.T
	Agg      bool
	AnyArg   bool // one argument of any type ("any"); Args is empty
}

// FuncReader is a catalog.Reader that also knows the built-in functions (\df).
type FuncReader interface {
	catalog.Reader
	Functions() []Func
}

// funcsQuery is psql's \df (not \df+) query up to its WHERE clause.
var funcsQuery = normalize(`SELECT n.nspname as "Schema",
  p.proname as "Name",
  pg_catalog.pg_get_function_result(p.oid) as "Result data type",
  pg_catalog.pg_get_function_arguments(p.oid) as "Argument data types",
 CASE p.prokind
  WHEN 'a' THEN 'agg'
  WHEN 'w' THEN 'window'
  WHEN 'p' THEN 'proc'
  ELSE 'func'
 END as "Type"
FROM pg_catalog.pg_proc p
     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
WHERE `)

var (
	// namePatternRE finds a name pattern condition: the column and psql's regex.
	namePatternRE = regexp.MustCompile(`([a-z]\.[a-z]+) OPERATOR\(pg_catalog\.~\) '((?:[^']|'')*)' COLLATE pg_catalog\.default`)
	prokindRE     = regexp.MustCompile(`p\.prokind ?(=|<>) ?'(.)'`)
)

// patterns returns the regex conditions of where by column (p.proname,
// n.nspname, t.typname, e.extname); a pattern psql sends twice (\dT's
// typname OR format_type) comes back once.
func patterns(where string) (map[string]*regexp.Regexp, error) {
	out := map[string]*regexp.Regexp{}
	for _, m := range namePatternRE.FindAllStringSubmatch(where, -1) {
		re, err := regexp.Compile(unquote(m[2]))
		if err != nil {
			return nil, types.Errorf(types.ErrInvalidRegex, "invalid regular expression: %v", err)
		}
		out[m[1]] = re
	}
	return out, nil
}

// listFunctions answers \df and its kind variants (\dfa, \dfn, ...) with a
// name pattern or without. Without a schema pattern psql hides pg_catalog,
// where the built-in functions are; user functions (Func.Schema) show in their schemas.
func listFunctions(r catalog.Reader, q string) (*result, bool, error) {
	where, ok := strings.CutPrefix(q, funcsQuery)
	if !ok || !strings.HasSuffix(where, " ORDER BY 1,2,4") {
		return nil, false, nil
	}
	fr, ok := r.(FuncReader)
	if !ok {
		return nil, false, nil
	}
	pats, err := patterns(where)
	if err != nil {
		return nil, true, err
	}
	res := &result{cols: cols(tText, "Schema", "Name", "Result data type", "Argument data types", "Type")}
	hideSystem := strings.Contains(where, "n.nspname <> 'pg_catalog'")
	var want, not []string
	for _, m := range prokindRE.FindAllStringSubmatch(where, -1) {
		if m[1] == "=" {
			want = append(want, m[2])
		} else {
			not = append(not, m[2])
		}
	}
	type row struct{ schema, name, result, args, kind string }
	var rows []row
	seen := map[string]bool{}
	for _, f := range fr.Functions() {
		schema := cmp.Or(f.Schema, "pg_catalog")
		if schema == "pg_catalog" && hideSystem {
			continue
		}
		if s := pats["n.nspname"]; s != nil && !s.MatchString(schema) {
			continue
		}
		if p := pats["p.proname"]; p != nil && !p.MatchString(f.Name) {
			continue
		}
		kind, label := "f", "func"
		if f.Agg {
			kind, label = "a", "agg"
		}
		if (len(want) > 0 && !slices.Contains(want, kind)) || slices.Contains(not, kind) {
			continue
		}
		args := make([]string, len(f.Args))
		for i, t := range f.Args {
			args[i] = funcType(t)
			if i < len(f.ArgNames) && f.ArgNames[i] != "" {
				args[i] = f.ArgNames[i] + " " + args[i]
			}
			if f.Variadic && i == len(f.Args)-1 {
				args[i] = "VARIADIC " + funcType(types.ArrayOf(t))
			}
		}
		if f.AnyArg {
			args = []string{`"any"`}
		}
		rw := row{schema, f.Name, funcType(f.Result), strings.Join(args, ", "), label}
		key := rw.schema + "." + rw.name + "(" + rw.args + ")"
		if seen[key] {
			continue
		}
		seen[key] = true
		rows = append(rows, rw)
	}
	slices.SortFunc(rows, func(a, b row) int {
		return cmp.Or(cmp.Compare(a.schema, b.schema), cmp.Compare(a.name, b.name), cmp.Compare(a.args, b.args))
	})
	for _, rw := range rows {
		res.rows = append(res.rows, []types.Datum{dS(rw.schema), dS(rw.name), dS(rw.result), dS(rw.args), dS(rw.kind)})
	}
	return res, true, nil
}

// funcType is how \df shows a function's argument or result type t:
// format_type(oid, NULL), its name without modifiers, but text for an
// unconstrained string, which functions take as PostgreSQL's take text.
func funcType(t types.T) string {
	switch {
	case t.ID == types.Unknown:
		return "unknown"
	case t.ID == types.Varchar:
		return "text"
	case t.ID == types.Array:
		return funcType(t.ElemType()) + "[]"
	}
	return t.Base().String()
}

// typesQuery is psql's \dT query up to its WHERE clause; typesQueryVerbose \dT+'s.
var (
	typesQuery = normalize(`SELECT n.nspname as "Schema",
  pg_catalog.format_type(t.oid, NULL) AS "Name",
  pg_catalog.obj_description(t.oid, 'pg_type') as "Description"
FROM pg_catalog.pg_type t
     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace
WHERE `)
	typesQueryVerbose = normalize(`SELECT n.nspname as "Schema",
  pg_catalog.format_type(t.oid, NULL) AS "Name",
  t.typname AS "Internal name",
  CASE WHEN t.typrelid != 0
      THEN CAST('tuple' AS pg_catalog.text)
    WHEN t.typlen < 0
      THEN CAST('var' AS pg_catalog.text)
    ELSE CAST(t.typlen AS pg_catalog.text)
  END AS "Size",
  pg_catalog.array_to_string(
      ARRAY(
          SELECT e.enumlabel
          FROM pg_catalog.pg_enum e
          WHERE e.enumtypid = t.oid
          ORDER BY e.enumsortorder
      ),
      E'\n'
  ) AS "Elements",
  pg_catalog.pg_get_userbyid(t.typowner) AS "Owner",
pg_catalog.array_to_string(t.typacl, E'\n') AS "Access privileges",
    pg_catalog.obj_description(t.oid, 'pg_type') as "Description"
FROM pg_catalog.pg_type t
     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace
WHERE `)
)

// typeDescriptions are PostgreSQL's descriptions of the types pg_type
// holds (obj_description(oid, 'pg_type')), by oid.
var typeDescriptions = map[uint32]string{
	types.OIDInt8: "~18 digit integer, 8-byte storage", types.OIDBool: "boolean, 'true'/'false'",
	types.OIDBytea: "variable-length string, binary values escaped", types.OIDBpchar: "char(length), blank-padded string, fixed storage length",
	types.OIDVarchar: "varchar(length), non-blank-padded string, variable storage length", types.OIDDate: "date",
	types.OIDFloat8: "double-precision floating point number, 8-byte storage", types.OIDInt4: "-2 billion to 2 billion integer, 4-byte storage",
	types.OIDInterval: "@ <number> <units>, time interval", types.OIDJSON: "JSON stored as text", types.OIDJsonb: "Binary JSON",
	types.OIDName: "63-byte type for storing system identifiers", types.OIDNumeric: "numeric(precision, decimal), arbitrary precision number",
	types.OIDOid: "object identifier(oid), maximum 4 billion", types.OIDFloat4: "single-precision floating point number, 4-byte storage",
	types.OIDRegclass: "registered class", types.OIDInt2: "-32 thousand to 32 thousand, 2-byte storage",
	types.OIDText: "variable-length string, no limit specified", types.OIDTime: "time of day",
	types.OIDTimestamptz: "date and time with time zone", types.OIDTimestamp: "date and time",
	types.OIDUnknown: "pseudo-type representing an undetermined type", types.OIDUuid: "UUID datatype",
}

// typeNames are format_type's names of the types whose typname differs.
var typeNames = map[uint32]string{
	types.OIDInt8: "bigint", types.OIDBool: "boolean", types.OIDBpchar: "character", types.OIDVarchar: "character varying",
	types.OIDFloat8: "double precision", types.OIDInt4: "integer", types.OIDFloat4: "real", types.OIDInt2: "smallint",
	types.OIDTime: "time without time zone", types.OIDTimestamptz: "timestamp with time zone",
	types.OIDTimestamp: "timestamp without time zone",
}

// listTypes answers \dT and \dT+: pg_type's types but the array types, all
// in pg_catalog (there are no user-defined types), so a listing without a
// pattern is empty as in PostgreSQL without user types.
func listTypes(r catalog.Reader, q string) (*result, bool, error) {
	where, verbose := "", false
	if w, ok := strings.CutPrefix(q, typesQuery); ok {
		where = w
	} else if w, ok := strings.CutPrefix(q, typesQueryVerbose); ok {
		where, verbose = w, true
	} else {
		return nil, false, nil
	}
	if !strings.HasSuffix(where, " ORDER BY 1,2") {
		return nil, false, nil
	}
	pats, err := patterns(where)
	if err != nil {
		return nil, true, err
	}
	res := &result{cols: cols(tText, "Schema", "Name", "Description")}
	if verbose {
		res.cols = cols(tText, "Schema", "Name", "Internal name", "Size", "Elements", "Owner", "Access privileges", "Description")
	}
	if strings.Contains(where, "n.nspname <> 'pg_catalog'") {
		return res, true, nil
	}
	if s := pats["n.nspname"]; s != nil && !s.MatchString("pg_catalog") {
		return res, true, nil
	}
	type row struct {
		name string
		t    catalog.PGType
	}
	var rows []row
	for _, t := range catalog.PGTypes {
		if t.Category == 'A' {
			continue
		}
		name := t.Name
		if n, ok := typeNames[t.OID]; ok {
			name = n
		}
		if p := pats["t.typname"]; p != nil && !p.MatchString(t.Name) && !p.MatchString(name) {
			continue
		}
		rows = append(rows, row{name, t})
	}
	slices.SortFunc(rows, func(a, b row) int { return cmp.Compare(a.name, b.name) })
	for _, rw := range rows {
		desc := null
		if d, ok := typeDescriptions[rw.t.OID]; ok {
			desc = dS(d)
		}
		if !verbose {
			res.rows = append(res.rows, []types.Datum{dS("pg_catalog"), dS(rw.name), desc})
			continue
		}
		size := "var"
		if rw.t.Len >= 0 {
			size = strconv.Itoa(int(rw.t.Len))
		}
		res.rows = append(res.rows, []types.Datum{dS("pg_catalog"), dS(rw.name), dS(rw.t.Name), dS(size), dS(""),
			dS(catalog.Owner), null, desc})
	}
	return res, true, nil
}

// extensionsQuery is psql's \dx query up to its WHERE or ORDER BY.
var extensionsQuery = normalize(`SELECT e.extname AS "Name", e.extversion AS "Version", n.nspname AS "Schema", c.description AS "Description"
FROM pg_catalog.pg_extension e LEFT JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace LEFT JOIN pg_catalog.pg_description c ON c.objoid = e.oid AND c.classoid = 'pg_catalog.pg_extension'::pg_catalog.regclass`)

// listExtensions answers \dx: there are no extensions (not even plpgsql).
func listExtensions(_ catalog.Reader, q string) (*result, bool, error) {
	rest, ok := strings.CutPrefix(q, extensionsQuery)
	if !ok || !strings.HasSuffix(rest, "ORDER BY 1") {
		return nil, false, nil
	}
	if _, err := patterns(rest); err != nil {
		return nil, true, err
	}
	return &result{cols: cols(tText, "Name", "Version", "Schema", "Description")}, true, nil
}
