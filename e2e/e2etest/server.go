package e2etest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/tributary/tributary/e2e/testserver"
)

// StartServer builds the server and starts it on a fresh data directory.
func StartServer(t testing.TB) *testserver.Server {
	t.Helper()
	return testserver.Start(t, testserver.Build(t), t.TempDir())
}

// Connect opens a session on srv, closed when the test ends.
func Connect(t testing.TB, ctx context.Context, srv *testserver.Server) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(ctx, srv.DSN())
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}
