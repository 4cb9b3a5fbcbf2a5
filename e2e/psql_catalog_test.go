package e2e

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/e2e/e2etest"
	"github.com/tributary/tributary/e2e/pgtest"
)

// runPsql runs the real psql with commands against dsn and returns its output.
func runPsql(t *testing.T, psql, dsn string, cmds ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	args := []string{"-X", "-v", "ON_ERROR_STOP=1", "-d", dsn}
	for _, c := range cmds {
		args = append(args, "-c", c)
	}
	cmd := exec.CommandContext(ctx, psql, args...)
	cmd.Env = append(cmd.Environ(), "PGCONNECT_TIMEOUT=10", "PAGER=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("psql %v: %v\n%s", cmds, err, out)
	}
	return string(out)
}

// TestPsqlFunctionsTypesPrivileges drives psql's \df, \dT, \dx, \du, \z and
// \dp (issue 17): where PostgreSQL 15 has the same objects (functions and
// types Tributary has too, no user functions or types) psql must print the
// same; extensions, roles and privileges are checked against what was made.
func TestPsqlFunctionsTypesPrivileges(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server and a PostgreSQL cluster")
	}
	psql := psqlBinary(t)
	srv := e2etest.StartServer(t)
	pg := pgtest.Start(t).DSN()
	same := []string{`\df`, `\df abs`, `\df pg_catalog.abs`, `\dfa`, `\df sqrt|round|floor`, `\df count`, `\df now|md5`,
		`\dT`, `\dT int4`, `\dT uuid|jsonb|interval`,
		`SELECT proname, prokind, provolatile, pronargs, prorettype::int, proargtypes::text FROM pg_catalog.pg_proc
		 WHERE proname IN ('now', 'random', 'abs', 'sqrt', 'count') ORDER BY 1, 5, 6`}
	for _, c := range same {
		got, want := runPsql(t, psql, srv.DSN(), c), runPsql(t, psql, pg, c)
		if got != want {
			t.Errorf("%s:\ntributary:\n%s\npostgres:\n%s", c, got, want)
		}
	}

	if dx := runPsql(t, psql, srv.DSN(), `\dx`); !strings.Contains(dx, "List of installed extensions") || !strings.Contains(dx, "(0 rows)") {
		t.Errorf(`\dx:\n%s`, dx)
	}
	if n := runPsql(t, psql, srv.DSN(), `SELECT count(*) FROM pg_catalog.pg_extension`); !strings.Contains(n, "     0\n") {
		t.Errorf("pg_extension:\n%s", n)
	}
	if dx := runPsql(t, psql, srv.DSN(), `\dx plpgsql`); !strings.Contains(dx, "(0 rows)") {
		t.Errorf(`\dx plpgsql:\n%s`, dx)
	}
	// \dT+ as PostgreSQL but for the owner (its bootstrap superuser is root here).
	if dt := runPsql(t, psql, srv.DSN(), `\dT+ date`); !strings.Contains(dt, " pg_catalog | date | date          | 4    |          | root  |                   | date") {
		t.Errorf(`\dT+ date:\n%s`, dt)
	}

	runPsql(t, psql, srv.DSN(), `CREATE TABLE acct (id int PRIMARY KEY, v int)`, `CREATE TABLE other (a int)`,
		`CREATE USER alice WITH PASSWORD 'pw'`, `GRANT SELECT ON acct TO alice`, `GRANT INSERT, UPDATE ON other TO alice`)
	du := runPsql(t, psql, srv.DSN(), `\du`)
	for _, want := range []string{"List of roles", " alice     |", " root      | Superuser, Create role, Create DB, Replication, Bypass RLS"} {
		if !strings.Contains(du, want) {
			t.Errorf(`\du lacks %q:\n%s`, want, du)
		}
	}
	z := runPsql(t, psql, srv.DSN(), `\z`)
	for _, want := range []string{" public | acct  | table | root=arwdDxt/root+", "alice=r/root ", " public | other | table | root=arwdDxt/root+", "alice=aw/root "} {
		if !strings.Contains(z, want) {
			t.Errorf(`\z lacks %q:\n%s`, want, z)
		}
	}
	if dp := runPsql(t, psql, srv.DSN(), `\dp acct`); !strings.Contains(dp, "alice=r/root") || strings.Contains(dp, "other") {
		t.Errorf(`\dp acct:\n%s`, dp)
	}
}
