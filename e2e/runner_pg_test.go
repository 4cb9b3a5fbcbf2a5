package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/e2e/pgtest"
	"github.com/tributary/tributary/e2e/slt"
)

// TestRunnerOnPostgres drives every directive of the runner against a real PostgreSQL, so the
// runner itself is checked whether or not the Tributary server builds.
func TestRunnerOnPostgres(t *testing.T) {
	c := pgtest.Start(t)
	dir := t.TempDir()
	write := func(name, src string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	restarts := 0
	runner := func(rewrite bool) *slt.Runner {
		return &slt.Runner{DSN: c.DSN(), Engine: PostgresEngine, Rewrite: rewrite, Logf: t.Logf,
			Restart: func(_ context.Context, kill bool) error {
				restarts++
				if kill {
					if err := c.Kill(); err != nil {
						return err
					}
				}
				return c.Restart()
			}}
	}

	write("include/setup.slt.part", "statement ok\nCREATE TABLE t (id int primary key, s text, b bool, n numeric)\n")
	ok := write("ok.slt", `include include/*.slt.part

statement count 3
INSERT INTO t VALUES (1, 'a b', true, 1.50), (2, '', false, NULL), (3, NULL, NULL, 0)

connection second
statement ok
SET search_path = nonexistent

connection second
statement error 42P01
SELECT * FROM t

query ITTR rowsort
SELECT id, s, b, n FROM t
----
3 NULL NULL 0
1 a   b t 1.50
2 (empty) f NULL

query T valuesort
SELECT s FROM t
----
NULL
(empty)
a b

restart kill

query I
SELECT count(*) FROM t
----
3

restart

sleep 1ms

skipif postgres
statement ok
THIS IS NOT SQL

onlyif postgres
halt

statement ok
NOR IS THIS
`)
	r := runner(false)
	if err := r.RunFile(ctx, ok); err != nil {
		t.Fatal(err)
	}
	r.Close(ctx)
	if restarts != 2 {
		t.Fatalf("restarts = %d, want 2", restarts)
	}

	bad := write("bad.slt", "query I\nSELECT id FROM t ORDER BY id\n----\n1\n3\n")
	r = runner(false)
	err := r.RunFile(ctx, bad)
	r.Close(ctx)
	if err == nil || !strings.Contains(err.Error(), "bad.slt:1: query result mismatch") ||
		!strings.Contains(err.Error(), "actual (3 rows):\n    1\n    2\n    3") {
		t.Fatalf("mismatch report: %v", err)
	}
	r = runner(true)
	err = r.RunFile(ctx, bad)
	r.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(bad); string(got) != "query I\nSELECT id FROM t ORDER BY id\n----\n1\n2\n3\n" {
		t.Fatalf("rewritten:\n%s", got)
	}

	failing := write("fail.slt", "statement ok\nSELECT * FROM missing\n")
	r = runner(false)
	err = r.RunFile(ctx, failing)
	r.Close(ctx)
	if err == nil || !strings.Contains(err.Error(), "fail.slt:1: statement failed") || !strings.Contains(err.Error(), "42P01") {
		t.Fatalf("failure report: %v", err)
	}
}
