package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tributary/tributary/e2e/testserver"
)

// TestPrivilegeMatrix is issue 15's privilege matrix: alice owns a table,
// a materialized view, a view, a source and a sink, and grants one
// privilege to each of four roles (none to a fifth). For every object kind
// and every privilege that means something on it, the role holding it
// succeeds and every other role gets 42501 with PostgreSQL's message;
// only the owner (or a superuser) grants on, alters or drops an object,
// sinks included; pg_cancel_backend and pg_terminate_backend reach only
// the same role's sessions (a superuser's: none). The grants survive a
// kill -9 and restart; psql's \dp shows them.
func TestPrivilegeMatrix(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv := testserver.StartWith(t, testserver.Build(t), t.TempDir(), testserver.Options{
		Args: []string{"--auth", "password"}, Env: []string{"TRIBUTARY_ROOT_PASSWORD=s3cret"}})
	conns := map[string]*pgx.Conn{}
	login := func(user string) *pgx.Conn {
		t.Helper()
		password := "pw-" + user
		if user == "root" {
			password = "s3cret"
		}
		c, err := pgx.Connect(ctx, fmt.Sprintf("postgres://%s@%s/dev?sslmode=disable&connect_timeout=10", url.UserPassword(user, password), srv.Addr))
		if err != nil {
			t.Fatalf("%s: %v", user, err)
		}
		t.Cleanup(func() { c.Close(context.Background()) })
		conns[user] = c
		return c
	}
	do := func(user string, sqls ...string) {
		t.Helper()
		for _, s := range sqls {
			if _, err := conns[user].Exec(ctx, s); err != nil {
				t.Fatalf("%s: %s: %v", user, s, err)
			}
		}
	}
	deny := func(user, sql, msg string) {
		t.Helper()
		_, err := conns[user].Exec(ctx, sql)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "42501" || pe.Message != msg {
			t.Fatalf("%s: %s: %v, want 42501 %q", user, sql, err, msg)
		}
	}
	privs := []string{"select", "insert", "update", "delete"}
	login("root")
	for _, u := range append([]string{"alice", "nobody"}, privs...) {
		do("root", fmt.Sprintf("CREATE USER %q WITH PASSWORD 'pw-%s'", u, u))
		login(u)
	}
	do("alice",
		"CREATE TABLE t (id int PRIMARY KEY, v int)",
		"INSERT INTO t VALUES (1, 10), (2, 20)",
		"CREATE MATERIALIZED VIEW m AS SELECT sum(v) AS s FROM t",
		"CREATE VIEW v AS SELECT id FROM t",
		"CREATE SOURCE src (id bigint) WITH (connector = 'datagen', fields.id.kind = 'sequence', fields.id.end = '10', datagen.rows.per.second = '1000000')",
		"CREATE SINK snk FROM t WITH (connector = 'blackhole')",
	)
	for _, p := range privs {
		do("alice", fmt.Sprintf("GRANT %s ON TABLE t, m, v TO %q", p, p), fmt.Sprintf("GRANT %s ON SOURCE src TO %q", p, p), fmt.Sprintf("GRANT %s ON SINK snk TO %q", p, p))
	}

	// One check per object kind and privilege: the statement, and the
	// message every role without the privilege gets.
	type check struct {
		priv, sql, denied string
	}
	mvSeq := 0
	checks := func() []check {
		mvSeq++
		return []check{
			{"select", "SELECT * FROM t", "permission denied for table t"},
			{"insert", fmt.Sprintf("INSERT INTO t VALUES (%d, 1)", 100+mvSeq), "permission denied for table t"},
			{"update", "UPDATE t SET v = 5", "permission denied for table t"},
			{"delete", "DELETE FROM t WHERE false", "permission denied for table t"},
			{"select", "SELECT * FROM m", "permission denied for materialized view m"},
			{"select", "SELECT * FROM v", "permission denied for view v"},
			// Reading a source: a materialized view over it (dropped again).
			{"select", fmt.Sprintf("CREATE MATERIALIZED VIEW over_src_%d AS SELECT count(*) AS n FROM src", mvSeq), "permission denied for source src"},
		}
	}
	runMatrix := func(when string) {
		t.Helper()
		for _, c := range checks() {
			for _, u := range append([]string{"nobody"}, privs...) {
				if u != c.priv {
					deny(u, c.sql, c.denied)
				}
			}
			if _, err := conns[c.priv].Exec(ctx, c.sql); err != nil {
				t.Fatalf("%s: role %s: %s: %v", when, c.priv, c.sql, err)
			}
			if strings.HasPrefix(c.sql, "CREATE MATERIALIZED VIEW") {
				do("root", "DROP MATERIALIZED VIEW "+strings.Fields(c.sql)[3])
			}
		}
		// An UPDATE or DELETE that reads the rows needs SELECT as well.
		deny("update", "UPDATE t SET v = v + 1", "permission denied for table t")
		deny("delete", "DELETE FROM t WHERE id = 1", "permission denied for table t")
		deny("insert", "INSERT INTO t VALUES (500, 1) RETURNING v", "permission denied for table t")
	}
	runMatrix("before the restart")

	// Ownership: only alice (or root) grants, alters or drops.
	for _, o := range []struct{ kind, name, word string }{
		{"TABLE", "t", "table"}, {"MATERIALIZED VIEW", "m", "materialized view"}, {"VIEW", "v", "view"},
		{"SOURCE", "src", "source"}, {"SINK", "snk", "sink"},
	} {
		for _, u := range append([]string{"nobody"}, privs...) {
			deny(u, fmt.Sprintf("DROP %s %s", o.kind, o.name), fmt.Sprintf("must be owner of %s %s", o.word, o.name))
			deny(u, fmt.Sprintf("GRANT SELECT ON %s %s TO nobody", o.kind, o.name), fmt.Sprintf("must be owner of %s %s", o.word, o.name))
		}
	}
	deny("select", "ALTER SINK snk SET PARALLELISM = 1", "must be owner of sink snk")
	do("alice", "ALTER SINK snk SET PARALLELISM = 1")

	// Signalling other sessions: only a superuser's own business, or the
	// same role's.
	pid := func(user string) int32 {
		var p int32
		if err := conns[user].QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	deny("nobody", fmt.Sprintf("SELECT pg_terminate_backend(%d)", pid("root")), "must be a superuser to terminate superuser process")
	deny("nobody", fmt.Sprintf("SELECT pg_cancel_backend(%d)", pid("root")), "must be a superuser to cancel superuser query")
	deny("nobody", fmt.Sprintf("SELECT pg_cancel_backend(%d)", pid("alice")), "must be a member of the role whose query is being canceled or member of pg_signal_backend")
	var ok bool
	// Its own session: allowed, so the statement cancels itself.
	var pe *pgconn.PgError
	if err := conns["nobody"].QueryRow(ctx, fmt.Sprintf("SELECT pg_cancel_backend(%d)", pid("nobody"))).Scan(&ok); !errors.As(err, &pe) || pe.Code != "57014" {
		t.Fatalf("nobody cancels its own session's query: %v, want 57014", err)
	}
	if err := conns["root"].QueryRow(ctx, fmt.Sprintf("SELECT pg_cancel_backend(%d)", pid("alice"))).Scan(&ok); err != nil || !ok {
		t.Fatalf("root cancels alice's query: %v %v", ok, err)
	}

	// A crash keeps every grant.
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	for u := range conns {
		login(u)
	}
	runMatrix("after kill -9 and a restart")

	if psql, err := exec.LookPath("psql"); err != nil {
		t.Log("psql is not installed: \\dp is not checked")
	} else {
		cmd := exec.CommandContext(ctx, psql, "-X", "-c", `\dp t`, fmt.Sprintf("host=127.0.0.1 port=%s user=root dbname=dev sslmode=disable", strings.Split(srv.Addr, ":")[1]))
		cmd.Env = append(os.Environ(), "PGPASSWORD=s3cret")
		out, err := cmd.CombinedOutput()
		for _, want := range []string{"alice=arwdDxt/alice", "delete=d/alice", "insert=a/alice", `select=r/alice`, "update=w/alice"} {
			if err != nil || !strings.Contains(string(out), want) {
				t.Fatalf("psql \\dp t: %v\n%s\nwant %q", err, out, want)
			}
		}
	}
	// Revoking takes a privilege back; the owner drops everything.
	do("alice", "REVOKE SELECT ON t FROM \"select\"")
	deny("select", "SELECT * FROM t", "permission denied for table t")
	do("alice", "DROP SINK snk", "DROP SOURCE src", "DROP VIEW v", "DROP MATERIALIZED VIEW m", "DROP TABLE t")
}
