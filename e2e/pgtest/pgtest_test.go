package pgtest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestClusterSurvivesCrash(t *testing.T) {
	c := Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	query := func(sql string) string {
		t.Helper()
		conn, err := pgx.Connect(ctx, c.DSN())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var s string
		if err := conn.QueryRow(ctx, sql).Scan(&s); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return s
	}
	conn, err := pgx.Connect(ctx, c.DSN())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE t AS SELECT 42 AS v"); err != nil {
		t.Fatal(err)
	}
	if err := c.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = conn.Close(ctx) // the server is gone; the close cannot succeed cleanly
	if err := c.Restart(); err != nil {
		t.Fatal(err)
	}
	if got := query("SELECT v::text FROM t"); got != "42" {
		t.Fatalf("after crash: %q", got)
	}
	if got := query("SELECT current_database()::text"); got != "dev" {
		t.Fatalf("database %q", got)
	}
}

// TestPortTaken: only what a start wrote after the given offset counts.
func TestPortTaken(t *testing.T) {
	path := filepath.Join(t.TempDir(), "postgres.log")
	if portTaken(path, 0) || logSize(path) != 0 {
		t.Fatal("a missing log reports a taken port or a size")
	}
	old := "LOG:  could not bind IPv4 address \"127.0.0.1\": Address already in use\n"
	if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	from := logSize(path)
	if !portTaken(path, 0) || portTaken(path, from) {
		t.Fatalf("portTaken from 0 = %v, from %d = %v", portTaken(path, 0), from, portTaken(path, from))
	}
	if err := os.WriteFile(path, []byte(old+"LOG:  database system is ready to accept connections\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if portTaken(path, from) {
		t.Error("a start that bound its port reports it taken")
	}
}
