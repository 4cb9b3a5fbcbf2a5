package e2e

import (
	"strings"
	"testing"

	"github.com/tributary/tributary/e2e/e2etest"
	"github.com/tributary/tributary/e2e/pgtest"
)

// TestPsqlUserFunctions checks that SQL functions made by CREATE FUNCTION
// show in psql's \df and in pg_proc as PostgreSQL 15 shows the same
// functions, and leave them after DROP FUNCTION (issue 17).
func TestPsqlUserFunctions(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server and a PostgreSQL cluster")
	}
	psql := psqlBinary(t)
	srv := e2etest.StartServer(t)
	pg := pgtest.Start(t).DSN()
	create := []string{
		`CREATE FUNCTION udf_inc(x integer) RETURNS integer LANGUAGE SQL IMMUTABLE AS $$ SELECT x + 1 $$`,
		`CREATE FUNCTION udf_inc(x bigint, y bigint) RETURNS bigint LANGUAGE SQL STRICT AS 'SELECT x + y'`,
		`CREATE FUNCTION udf_neg(boolean) RETURNS boolean LANGUAGE SQL STABLE AS $$ SELECT NOT $1 $$`,
	}
	for _, dsn := range []string{srv.DSN(), pg} {
		runPsql(t, psql, dsn, create...)
	}
	same := []string{`\df`, `\df udf_inc`, `\df public.*`, `\df udf_*`,
		`SELECT proname, prokind, provolatile, proisstrict, pronargs, prorettype::int, proargtypes::text, prosrc
		 FROM pg_catalog.pg_proc WHERE proname LIKE 'udf%' ORDER BY 1, 5`}
	for _, c := range same {
		got, want := runPsql(t, psql, srv.DSN(), c), runPsql(t, psql, pg, c)
		if got != want {
			t.Errorf("%s:\ntributary:\n%s\npostgres:\n%s", c, got, want)
		}
	}
	if out := runPsql(t, psql, srv.DSN(), `\df udf_inc`); !strings.Contains(out, "udf_inc | bigint") {
		t.Errorf(`\df udf_inc lacks the bigint overload:\n%s`, out)
	}
	runPsql(t, psql, srv.DSN(), `DROP FUNCTION udf_inc(integer)`, `DROP FUNCTION udf_inc`, `DROP FUNCTION udf_neg`)
	if out := runPsql(t, psql, srv.DSN(), `\df`); !strings.Contains(out, "(0 rows)") {
		t.Errorf(`\df after DROP FUNCTION:\n%s`, out)
	}
}
