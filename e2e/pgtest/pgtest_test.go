package pgtest

import (
	"context"
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
