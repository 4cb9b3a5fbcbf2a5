package e2e

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/e2e/e2etest"
	"github.com/tributary/tributary/e2e/testserver"
)

// psqlBinary finds the psql client, or skips.
func psqlBinary(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("psql"); err == nil {
		return p
	}
	t.Skip("psql is not installed: the psql describe test needs the PostgreSQL client")
	return ""
}

// TestPsqlDescribe drives the real psql binary: \dt lists tables, \d t shows
// columns, defaults and the primary key, \d lists views too.
func TestPsqlDescribe(t *testing.T) {
	psql := psqlBinary(t)
	srv := e2etest.StartServer(t)
	run := func(cmds ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		host, port, _ := strings.Cut(srv.Addr, ":")
		args := []string{"-X", "-h", host, "-p", port, "-d", "dev", "-U", "tributary", "-v", "ON_ERROR_STOP=1"}
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
	run(`CREATE TABLE t (id int PRIMARY KEY, name varchar(20) NOT NULL DEFAULT 'x', v numeric(10,2))`,
		`CREATE TABLE nokey (a bigint, b text)`,
		`CREATE VIEW v AS SELECT id, name FROM t`)

	dt := run(`\dt`)
	for _, want := range []string{"List of relations", "public | nokey | table | root", "public | t     | table | root", "(2 rows)"} {
		if !strings.Contains(dt, want) {
			t.Errorf(`\dt output lacks %q:\n%s`, want, dt)
		}
	}
	d := run(`\d t`)
	for _, want := range []string{
		`Table "public.t"`,
		" id     | integer               |           | not null | ",
		" name   | character varying(20) |           | not null | 'x'::character varying",
		" v      | numeric(10,2)         |           |          | ",
		"Indexes:",
		`"t_pkey" PRIMARY KEY, btree (id)`,
	} {
		if !strings.Contains(d, want) {
			t.Errorf(`\d t output lacks %q:\n%s`, want, d)
		}
	}
	if nk := run(`\d nokey`); strings.Contains(nk, "_row_id") || strings.Contains(nk, "Indexes:") {
		t.Errorf(`\d nokey shows the hidden row id:\n%s`, nk)
	}
	all := run(`\d`)
	if !strings.Contains(all, "public | v     | view  | root") {
		t.Errorf(`\d lacks the view:\n%s`, all)
	}

	// Comments (\d+, \dt+) and a schema on the search path (issue 17).
	run(`COMMENT ON TABLE t IS 'the t table'`, `COMMENT ON COLUMN t.v IS 'a value'`, `CREATE SCHEMA sa`,
		`CREATE TABLE sa.t (k int)`)
	if plus := run(`\d+ t`); !strings.Contains(plus, "| a value") {
		t.Errorf(`\d+ t lacks the column comment:\n%s`, plus)
	}
	if plus := run(`\dt+ t`); !strings.Contains(plus, "| the t table") {
		t.Errorf(`\dt+ t lacks the table comment:\n%s`, plus)
	}
	if dn := run(`\dn`); !strings.Contains(dn, " sa ") {
		t.Errorf(`\dn lacks schema sa:\n%s`, dn)
	}
	if sa := run(`SET search_path = sa, public`, `\d t`); !strings.Contains(sa, `Table "sa.t"`) || !strings.Contains(sa, " k ") {
		t.Errorf(`\d t with search_path sa describes another table:\n%s`, sa)
	}
}

// TestSecondServerRefused checks a second server on the same data dir exits with a clear message.
func TestSecondServerRefused(t *testing.T) {
	bin := testserver.Build(t)
	dir := t.TempDir()
	testserver.Start(t, bin, dir)
	addr, err := testserver.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--listen", addr, "--data-dir", dir).CombinedOutput()
	if err == nil {
		t.Fatalf("second server on the same data dir started:\n%s", out)
	}
	if !strings.Contains(string(out), "in use by another process") {
		t.Errorf("second server's message is unclear:\n%s", out)
	}
}
