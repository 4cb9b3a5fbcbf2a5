package e2e

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tributary/tributary/e2e/e2etest"
)

// TestActivityCancelTerminate is issue 16's item 3: pg_stat_activity shows
// every session (pid, user, database, application_name, client address,
// state, query, its start times); pg_cancel_backend cancels a running
// pg_sleep (57014, the session stays usable) and pg_terminate_backend ends
// the session (FATAL 57P01); statement_timeout cuts a pg_sleep short.
func TestActivityCancelTerminate(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv := e2etest.StartServer(t)
	cfg, err := pgx.ParseConfig(srv.DSN())
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["application_name"] = "sleeper"
	sleeper, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer sleeper.Close(context.Background())
	admin := e2etest.Connect(t, ctx, srv)
	var sleeperPID int32
	if err := sleeper.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&sleeperPID); err != nil {
		t.Fatal(err)
	}

	// sleep runs pg_sleep on the sleeper and reports how it ended.
	sleep := func() chan error {
		done := make(chan error, 1)
		go func() {
			_, err := sleeper.Exec(ctx, "SELECT pg_sleep(30)")
			done <- err
		}()
		// Until pg_stat_activity shows it running.
		deadline := time.Now().Add(10 * time.Second)
		for {
			var state, query, user, db, app string
			var started, queryStarted bool
			err := admin.QueryRow(ctx, `SELECT state, query, usename, datname, application_name,
				backend_start IS NOT NULL, query_start >= backend_start FROM pg_stat_activity WHERE pid = $1`, sleeperPID).
				Scan(&state, &query, &user, &db, &app, &started, &queryStarted)
			if err == nil && state == "active" && query == "SELECT pg_sleep(30)" {
				if user != sleeper.Config().User || db != "dev" || app != "sleeper" || !started || !queryStarted {
					t.Fatalf("pg_stat_activity row: user %q, database %q, application %q, started %v, query started %v", user, db, app, started, queryStarted)
				}
				return done
			}
			if err != nil && !errors.Is(err, pgx.ErrNoRows) {
				t.Fatal(err)
			}
			if time.Now().After(deadline) {
				t.Fatalf("pg_stat_activity never showed the sleeper active (last: %q %q %v)", state, query, err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	wait := func(done chan error) error {
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			t.Fatal("the sleeper was not stopped")
			return nil
		}
	}

	done := sleep()
	var ok bool
	if err := admin.QueryRow(ctx, "SELECT pg_cancel_backend($1)", sleeperPID).Scan(&ok); err != nil || !ok {
		t.Fatalf("pg_cancel_backend: %v %v", ok, err)
	}
	var pe *pgconn.PgError
	if err := wait(done); !errors.As(err, &pe) || pe.Code != "57014" {
		t.Fatalf("the cancelled pg_sleep ended with %v, want 57014", err)
	}
	var one int
	if err := sleeper.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("the session after a cancel: %v", err)
	}
	if err := admin.QueryRow(ctx, "SELECT pg_cancel_backend(2147483647)").Scan(&ok); err != nil || ok {
		t.Fatalf("pg_cancel_backend of no session: %v %v", ok, err)
	}

	// statement_timeout applies to pg_sleep.
	if _, err := sleeper.Exec(ctx, "SET statement_timeout = 100"); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	if _, err := sleeper.Exec(ctx, "SELECT pg_sleep(10)"); !errors.As(err, &pe) || pe.Code != "57014" {
		t.Fatalf("pg_sleep past statement_timeout: %v, want 57014", err)
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Fatalf("pg_sleep(10) with statement_timeout 100 ms took %v", took)
	}
	if _, err := sleeper.Exec(ctx, "SET statement_timeout = 0"); err != nil {
		t.Fatal(err)
	}

	done = sleep()
	if err := admin.QueryRow(ctx, "SELECT pg_terminate_backend($1)", sleeperPID).Scan(&ok); err != nil || !ok {
		t.Fatalf("pg_terminate_backend: %v %v", ok, err)
	}
	err = wait(done)
	if !errors.As(err, &pe) || pe.Code != "57P01" {
		// The cancelled statement's error may come first; the connection must end.
		if _, err2 := sleeper.Exec(ctx, "SELECT 1"); err2 == nil {
			t.Fatalf("the terminated session still runs statements (pg_sleep ended with %v)", err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int
		if err := admin.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE pid = $1", sleeperPID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the terminated session is still in pg_stat_activity")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
