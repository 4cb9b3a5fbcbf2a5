package psqlcat

import (
	"regexp"
	"strings"

	"github.com/tributary/tributary/catalog"
	"github.com/tributary/tributary/sql/types"
)

// RoleReader is a catalog.Reader that also knows the roles (\du).
type RoleReader interface {
	catalog.Reader
	Roles() []catalog.Role
}

// rolePatternRE finds \du's name pattern condition.
var rolePatternRE = regexp.MustCompile(`r\.rolname OPERATOR\(pg_catalog\.~\) ?'([^']*)'`)

// listRoles answers \du and \dg: psql's query over pg_roles (the member-of
// array comes back as its text form, "{}": roles have no members yet).
func listRoles(r catalog.Reader, q string) (*result, bool, error) {
	if !strings.HasPrefix(q, "SELECT r.rolname,r.rolsuper,r.rolinherit,") || !strings.Contains(q, "FROM pg_catalog.pg_roles r") {
		return nil, false, nil
	}
	rr, ok := r.(RoleReader)
	if !ok {
		return nil, false, nil
	}
	match := func(string) bool { return true }
	if m := rolePatternRE.FindStringSubmatch(q); m != nil {
		re, err := regexp.Compile(m[1])
		if err != nil {
			return nil, true, types.Errorf(types.ErrInvalidRegex, "invalid regular expression: %v", err)
		}
		match = re.MatchString
	} else if !strings.Contains(q, "r.rolname !~ '^pg_'") {
		return nil, false, nil
	}
	b, i4, ts := types.TBool, types.TInt32, types.TTimestamptz
	res := &result{cols: []Column{{"rolname", types.TVarchar}, {"rolsuper", b}, {"rolinherit", b}, {"rolcreaterole", b},
		{"rolcreatedb", b}, {"rolcanlogin", b}, {"rolconnlimit", i4}, {"rolvaliduntil", ts}, {"memberof", types.TVarchar},
		{"rolreplication", b}, {"rolbypassrls", b}}}
	for _, role := range rr.Roles() {
		if !match(role.Name) {
			continue
		}
		res.rows = append(res.rows, []types.Datum{types.DString(role.Name), types.DBool(role.Superuser), types.DBool(true),
			types.DBool(role.Superuser), types.DBool(role.CreateDB), types.DBool(role.Login), types.DInt(-1), types.NullDatum,
			types.DString("{}"), types.DBool(role.Superuser), types.DBool(role.Superuser)})
	}
	return res, true, nil
}
