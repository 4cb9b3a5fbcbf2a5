package pgwire

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tributary/tributary/e2e/testserver"
)

// TestTLSAndMethods runs every authentication method over TLS with rules
// like an --hba-file's: sslmode require and verify-full, client
// certificates (cert method, clientcert=verify-full), md5, SCRAM, password
// in clear, and the refusal of a connection without TLS.
func TestTLSAndMethods(t *testing.T) {
	files := testserver.WriteTLSFiles(t, t.TempDir(), "alice", "mallory")
	other := testserver.WriteTLSFiles(t, t.TempDir())
	tlsCfg, err := TLSConfig(files.Cert, files.Key, files.CA)
	if err != nil {
		t.Fatal(err)
	}
	rules, err := ParseHBA(`
hostssl all alice    127.0.0.1/32 cert
hostssl all full     127.0.0.1/32 scram-sha-256 clientcert=verify-full
hostssl all clear    127.0.0.1/32 password
hostssl all all      127.0.0.1/32 md5
`)
	if err != nil {
		t.Fatal(err)
	}
	secrets := map[string]string{"m": MD5For("m", "pw-m"), "alice": ""}
	for _, u := range []string{"s", "full", "clear"} {
		if secrets[u], err = VerifierFor("pw-" + u); err != nil {
			t.Fatal(err)
		}
	}
	ts := startServer(t, Config{TLS: tlsCfg, Auth: func(req AuthRequest) AuthDecision {
		d := rules.Match(req)
		d.Secret = secrets[req.User]
		return d
	}})
	ctx := testCtx(t)
	dsn := func(user, password, params string) string {
		return fmt.Sprintf("postgres://%s@%s/db?connect_timeout=10&%s", url.UserPassword(user, password), ts.addr, params)
	}
	login := func(what, d string) {
		t.Helper()
		c, err := pgx.Connect(ctx, d)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		defer c.Close(context.Background())
		if _, ok := c.PgConn().Conn().(*tls.Conn); !ok {
			t.Fatalf("%s: the connection is not TLS: %T", what, c.PgConn().Conn())
		}
		if _, err := c.Exec(ctx, "create temp table tt(a int, b text, c timestamptz, d numeric)"); err != nil {
			t.Fatalf("%s: a query: %v", what, err)
		}
	}
	refused := func(what, d, code, msg string) {
		t.Helper()
		c, err := pgx.Connect(ctx, d)
		if err == nil {
			c.Close(context.Background())
			t.Fatalf("%s: connected", what)
		}
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != code || pe.Message != msg {
			t.Fatalf("%s: %v, want %s %q", what, err, code, msg)
		}
	}
	ca := "sslrootcert=" + files.CA
	login("md5 with sslmode=require", dsn("m", "pw-m", "sslmode=require"))
	login("md5 with sslmode=verify-full", dsn("m", "pw-m", "sslmode=verify-full&"+ca))
	login("SCRAM under an md5 rule", dsn("s", "pw-s", "sslmode=verify-full&"+ca))
	login("password in clear", dsn("clear", "pw-clear", "sslmode=require"))
	refused("no TLS", dsn("m", "pw-m", "sslmode=disable"), "28000", `no pg_hba.conf entry for host "127.0.0.1", user "m", database "db", no encryption`)
	for _, c := range []struct{ user, password string }{{"m", "wrong"}, {"nobody", "pw-m"}, {"s", "wrong"}, {"clear", "wrong"}} {
		refused(c.user+" with a wrong password", dsn(c.user, c.password, "sslmode=require"), "28P01", fmt.Sprintf("password authentication failed for user \"%s\"", c.user))
	}
	// verify-full against another CA: the client refuses the server.
	if c, err := pgx.Connect(ctx, dsn("m", "pw-m", "sslmode=verify-full&sslrootcert="+other.CA)); err == nil || !strings.Contains(err.Error(), "certificate") {
		if err == nil {
			c.Close(context.Background())
		}
		t.Fatalf("verify-full against another CA: %v", err)
	}
	// Client certificates.
	cert := func(cn string) string { return "sslcert=" + files.Clients[cn][0] + "&sslkey=" + files.Clients[cn][1] }
	login("alice by certificate", dsn("alice", "", "sslmode=verify-full&"+ca+"&"+cert("alice")))
	refused("alice without a certificate", dsn("alice", "", "sslmode=require"), "28000", "connection requires a valid client certificate")
	refused("alice with mallory's certificate", dsn("alice", "", "sslmode=require&"+cert("mallory")), "28000", `certificate authentication failed for user "alice"`)
	secrets["full"] = secrets["s"]
	refused("clientcert=verify-full with another name", dsn("full", "pw-s", "sslmode=require&"+cert("mallory")), "28000", `certificate validation (clientcert=verify-full) failed for user "full": CN mismatch`)
	// A certificate from another CA fails the handshake.
	if c, err := pgx.Connect(ctx, dsn("alice", "", "sslmode=require&sslcert="+other.Cert+"&sslkey="+other.Key)); err == nil {
		c.Close(context.Background())
		t.Fatal("a client certificate of another CA was accepted")
	}

	// A server without TLS answers 'N': sslmode=require gives up.
	plain := startServer(t, Config{})
	if c, err := pgx.Connect(ctx, "postgres://tester@"+plain.addr+"/db?sslmode=require&connect_timeout=10"); err == nil || !strings.Contains(err.Error(), "refused TLS") {
		if err == nil {
			c.Close(context.Background())
		}
		t.Fatalf("sslmode=require without TLS: %v", err)
	}
}

func TestMD5Hash(t *testing.T) {
	// PostgreSQL's hash of password "secret" for user "alice" (md5 of "secretalice").
	if got := MD5For("alice", "secret"); got != "md54a0a68b43b6cd5cf266fa02f196e2371" || !IsMD5Hash(got) {
		t.Fatalf("MD5For: %q", got)
	}
	if !PasswordMatches(MD5For("alice", "secret"), "alice", "secret") || PasswordMatches(MD5For("alice", "secret"), "bob", "secret") {
		t.Fatal("PasswordMatches on md5 hashes")
	}
	v, err := VerifierFor("secret")
	if err != nil {
		t.Fatal(err)
	}
	if !PasswordMatches(v, "alice", "secret") || PasswordMatches(v, "alice", "Secret") {
		t.Fatal("PasswordMatches on SCRAM verifiers")
	}
	for _, s := range []string{"md5", "md5xyz", "md5" + strings.Repeat("g", 32), "SCRAM-SHA-256$x"} {
		if IsMD5Hash(s) {
			t.Errorf("IsMD5Hash(%q)", s)
		}
	}
}
