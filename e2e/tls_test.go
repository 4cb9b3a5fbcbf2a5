package e2e

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tributary/tributary/e2e/testserver"
)

// TestTLSAndHBA is issue 15's TLS and rule-file items over the real
// server: --tls-cert/--tls-key/--tls-client-ca with an --hba-file that
// wants TLS (hostssl) from everyone; pgx and psql log in with
// sslmode=require and verify-full, by SCRAM, md5 (a stored md5 hash, and
// password_encryption = md5) and a client certificate; without TLS the
// connection gets PostgreSQL's 28000; a wrong password and an unknown user
// get the same 28P01; SIGHUP reloads the rules.
func TestTLSAndHBA(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	files := testserver.WriteTLSFiles(t, dir, "alice")
	hba := filepath.Join(dir, "hba.conf")
	rules := "hostssl all alice 127.0.0.1/32 cert\nhostssl all all 127.0.0.1/32 md5\n"
	if err := os.WriteFile(hba, []byte(rules), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := testserver.StartWith(t, testserver.Build(t), t.TempDir(), testserver.Options{
		Args: []string{"--tls-cert", files.Cert, "--tls-key", files.Key, "--tls-client-ca", files.CA, "--hba-file", hba},
		Env:  []string{"TRIBUTARY_ROOT_PASSWORD=s3cret"}})
	host, port, _ := strings.Cut(srv.Addr, ":")
	dsn := func(user, password, params string) string {
		return fmt.Sprintf("postgres://%s@%s/dev?connect_timeout=10&%s", url.UserPassword(user, password), srv.Addr, params)
	}
	verifyFull := "sslmode=verify-full&sslrootcert=" + files.CA
	connect := func(what, d string) *pgx.Conn {
		t.Helper()
		c, err := pgx.Connect(ctx, d)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		t.Cleanup(func() { c.Close(context.Background()) })
		return c
	}
	refused := func(what, d, code, msg string) {
		t.Helper()
		c, err := pgx.Connect(ctx, d)
		if err == nil {
			c.Close(ctx)
			t.Fatalf("%s: connected", what)
		}
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != code || pe.Message != msg {
			t.Fatalf("%s: %v, want %s %q", what, err, code, msg)
		}
	}
	root := connect("root over verify-full", dsn("root", "s3cret", verifyFull))
	md5Hash := func(user, password string) string {
		sum := md5.Sum([]byte(password + user))
		return "md5" + hex.EncodeToString(sum[:])
	}
	for _, s := range []string{
		"CREATE USER alice",
		fmt.Sprintf("CREATE USER m WITH PASSWORD '%s'", md5Hash("m", "pw-m")),
		"SET password_encryption = 'md5'",
		"CREATE USER m2 WITH PASSWORD 'pw-m2'",
		"RESET password_encryption",
		"CREATE USER s WITH PASSWORD 'pw-s'",
	} {
		if _, err := root.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	var m2, s string
	if err := root.QueryRow(ctx, "SELECT rolpassword FROM pg_authid WHERE rolname = 'm2'").Scan(&m2); err != nil || m2 != md5Hash("m2", "pw-m2") {
		t.Fatalf("m2's password under password_encryption = md5: %q, %v", m2, err)
	}
	if err := root.QueryRow(ctx, "SELECT rolpassword FROM pg_authid WHERE rolname = 's'").Scan(&s); err != nil || !strings.HasPrefix(s, "SCRAM-SHA-256$") {
		t.Fatalf("s's password: %q, %v", s, err)
	}
	connect("md5 (a given hash) with require", dsn("m", "pw-m", "sslmode=require"))
	connect("md5 (password_encryption) with verify-full", dsn("m2", "pw-m2", verifyFull))
	connect("SCRAM under an md5 rule", dsn("s", "pw-s", verifyFull))
	cert := "&sslcert=" + files.Clients["alice"][0] + "&sslkey=" + files.Clients["alice"][1]
	alice := connect("alice by certificate", dsn("alice", "", verifyFull+cert))
	var who string
	if err := alice.QueryRow(ctx, "SELECT current_user").Scan(&who); err != nil || who != "alice" {
		t.Fatalf("alice's current_user: %q, %v", who, err)
	}
	refused("alice without her certificate", dsn("alice", "", "sslmode=require"), "28000", "connection requires a valid client certificate")
	refused("no TLS", dsn("root", "s3cret", "sslmode=disable"), "28000", `no pg_hba.conf entry for host "127.0.0.1", user "root", database "dev", no encryption`)
	for _, c := range [][2]string{{"m", "wrong"}, {"s", "wrong"}, {"nobody", "pw-m"}} {
		refused(c[0]+" with a wrong password", dsn(c[0], c[1], "sslmode=require"), "28P01", fmt.Sprintf("password authentication failed for user \"%s\"", c[0]))
	}

	if psql, err := exec.LookPath("psql"); err != nil {
		t.Log("psql is not installed: its logins are not tried")
	} else {
		run := func(conninfo, password string) (string, error) {
			cmd := exec.CommandContext(ctx, psql, "-X", "-At", "-c", "SELECT current_user", fmt.Sprintf("host=%s port=%s dbname=dev connect_timeout=10 %s", host, port, conninfo))
			cmd.Env = append(os.Environ(), "PGPASSWORD="+password, "PGSSLMODE=", "PGSSLROOTCERT=", "PGSSLCERT=", "PGSSLKEY=")
			out, err := cmd.CombinedOutput()
			return strings.TrimSpace(string(out)), err
		}
		for _, c := range []struct{ what, conninfo, password, user string }{
			{"psql SCRAM with require", "user=root sslmode=require", "s3cret", "root"},
			{"psql md5 with verify-full", "user=m sslmode=verify-full sslrootcert=" + files.CA, "pw-m", "m"},
			{"psql by certificate", fmt.Sprintf("user=alice sslmode=verify-full sslrootcert=%s sslcert=%s sslkey=%s", files.CA, files.Clients["alice"][0], files.Clients["alice"][1]), "", "alice"},
		} {
			if out, err := run(c.conninfo, c.password); err != nil || out != c.user {
				t.Fatalf("%s: %q, %v", c.what, out, err)
			}
		}
		for _, c := range []struct{ what, conninfo, password, want string }{
			{"psql without TLS", "user=root sslmode=disable", "s3cret", `no pg_hba.conf entry for host "127.0.0.1", user "root", database "dev", no encryption`},
			{"psql wrong password", "user=m sslmode=require", "nope", `password authentication failed for user "m"`},
			{"psql unknown user", "user=nobody sslmode=require", "nope", `password authentication failed for user "nobody"`},
		} {
			if out, err := run(c.conninfo, c.password); err == nil || !strings.Contains(out, c.want) {
				t.Fatalf("%s: %q, %v; want %q", c.what, out, err, c.want)
			}
		}
	}

	// SIGHUP reloads the rules: connections without TLS are then let in by
	// password.
	if err := os.WriteFile(hba, []byte(rules+"hostnossl all all 127.0.0.1/32 scram-sha-256\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := srv.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := pgx.Connect(ctx, dsn("root", "s3cret", "sslmode=disable"))
		if err == nil {
			c.Close(ctx)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after SIGHUP, a connection without TLS: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
