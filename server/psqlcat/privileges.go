package psqlcat

import (
	"cmp"
	"slices"
	"strings"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/sql/types"
)

// listPrivileges answers \dp and \z (with a pattern too): each relation's
// access privileges in PostgreSQL's aclitem text form, one per line,
// "grantee=privileges/grantor" ("=r/alice" for PUBLIC); NULL, shown empty,
// while a relation has no grants. There are no column privileges or row
// security policies.
func listPrivileges(r catalog.Reader, q string) (*result, bool, error) {
	if !strings.HasPrefix(q, listPrefix) || !strings.Contains(q, `pg_catalog.array_to_string(c.relacl,E'\n') AS "Access privileges"`) ||
		!strings.Contains(q, `AS "Policies"`) || !strings.HasSuffix(q, " ORDER BY 1,2") {
		return nil, false, nil
	}
	from := strings.LastIndex(q, listFrom)
	if from < 0 {
		return nil, false, nil
	}
	where, found := strings.CutPrefix(strings.TrimSuffix(q[from+len(listFrom):], " ORDER BY 1,2"), " WHERE ")
	if !found {
		return nil, false, nil
	}
	f, ok, err := parseWhere(r, where)
	if !ok || err != nil {
		return nil, ok, err
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
	res := &result{cols: cols(tText, "Schema", "Name", "Type", "Access privileges", "Column privileges", "Policies")}
	for _, row := range matched {
		privs := null
		if a := acl(row.rel); len(a) > 0 {
			privs = dS(strings.Join(a, "\n"))
		}
		res.rows = append(res.rows, []types.Datum{dS(row.schema), dS(row.name), dS(relkindName(row.kind)), privs, dS(""), dS("")})
	}
	return res, true, nil
}

// aclLetters are PostgreSQL's aclitem letters of the privileges a grant
// can hold, in its order.
var aclLetters = []struct{ priv, letter string }{{"insert", "a"}, {"select", "r"}, {"update", "w"}, {"delete", "d"}}

// acl is rel's relacl as PostgreSQL writes its items: nil while nothing
// was granted; else the owner's item (every privilege, arwdDxt) first,
// then each grantee's, PUBLIC last.
func acl(rel *catalog.Relation) []string {
	if len(rel.Grants) == 0 {
		return nil
	}
	owner := rel.Owner
	if owner == "" {
		owner = catalog.RootRole
	}
	out := []string{aclName(owner) + "=arwdDxt/" + aclName(owner)}
	grantees := make([]string, 0, len(rel.Grants))
	for g := range rel.Grants {
		grantees = append(grantees, g)
	}
	slices.SortFunc(grantees, func(a, b string) int {
		return cmp.Or(cmp.Compare(boolInt(a == "public"), boolInt(b == "public")), cmp.Compare(a, b))
	})
	for _, g := range grantees {
		if g == owner {
			continue
		}
		var letters strings.Builder
		for _, l := range aclLetters {
			if slices.Contains(rel.Grants[g], l.priv) {
				letters.WriteString(l.letter)
			}
		}
		name := aclName(g)
		if g == "public" {
			name = ""
		}
		out = append(out, name+"="+letters.String()+"/"+aclName(owner))
	}
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// aclName quotes a role name in an aclitem when it has a character other
// than a letter, digit or underscore, as PostgreSQL does.
func aclName(n string) string {
	for _, c := range n {
		if !(c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return `"` + strings.ReplaceAll(n, `"`, `""`) + `"`
		}
	}
	return n
}
