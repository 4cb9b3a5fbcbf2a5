package e2e

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tributary/tributary/e2e/testserver"
)

// fakePeer is a TCP service on 127.0.0.1 that answers a PostgreSQL client
// like a server refusing it, with a FATAL message holding banner: what a
// connector's error could echo from any service a user points it at.
func fakePeer(t *testing.T, banner string) (port string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				for {
					var hdr [8]byte
					if _, err := io.ReadFull(c, hdr[:]); err != nil {
						return
					}
					n := int(binary.BigEndian.Uint32(hdr[:4]))
					if n < 8 || n > 10000 {
						return
					}
					if _, err := io.CopyN(io.Discard, c, int64(n-8)); err != nil {
						return
					}
					if binary.BigEndian.Uint32(hdr[4:]) == 80877103 { // SSLRequest
						if _, err := c.Write([]byte{'N'}); err != nil {
							return
						}
						continue
					}
					body := []byte("SFATAL\x00CXX000\x00M" + banner + "\x00\x00")
					msg := append([]byte{'E', 0, 0, 0, 0}, body...)
					binary.BigEndian.PutUint32(msg[1:], uint32(len(body)+4))
					_, _ = c.Write(msg)
					return
				}
			}()
		}
	}()
	_, port, _ = net.SplitHostPort(ln.Addr().String())
	return port
}

// TestConnectorsThatConnectOut is issue 15's item 4: creating a postgres,
// kafka or postgres-cdc connector needs superuser or CREATECONNECTION;
// --connector-allow refuses other hosts (42501) before anything
// connects; and a connection error shown to a non-superuser does not echo
// what the remote host answered (a superuser sees it).
func TestConnectorsThatConnectOut(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const banner = "SECRET-BANNER-42"
	port := fakePeer(t, banner)
	srv := testserver.StartWith(t, testserver.Build(t), t.TempDir(), testserver.Options{
		Args: []string{"--auth", "password", "--connector-allow", "127.0.0.1:" + port + ",localhost:" + port},
		Env:  []string{"TRIBUTARY_ROOT_PASSWORD=s3cret"}})
	login := func(user, password string) *pgx.Conn {
		t.Helper()
		c, err := pgx.Connect(ctx, fmt.Sprintf("postgres://%s@%s/dev?sslmode=disable&connect_timeout=10", url.UserPassword(user, password), srv.Addr))
		if err != nil {
			t.Fatalf("%s: %v", user, err)
		}
		t.Cleanup(func() { c.Close(context.Background()) })
		return c
	}
	root := login("root", "s3cret")
	for _, s := range []string{"CREATE USER alice WITH PASSWORD 'a'", "CREATE TABLE t (id int PRIMARY KEY)", "GRANT SELECT ON t TO alice"} {
		if _, err := root.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	alice := login("alice", "a")
	pgSink := func(name, host string) string {
		return fmt.Sprintf("CREATE SINK %s FROM t WITH (connector = 'postgres', host = '%s', port = '%s', user = 'u', password = 'p', database = 'd', table = 'x', type = 'upsert', primary_key = 'id')", name, host, port)
	}
	kafka := "CREATE SOURCE k (v int) WITH (connector = 'kafka', properties.bootstrap.server = '10.9.8.7:9092', topic = 'x') FORMAT PLAIN ENCODE JSON"
	cdc := "CREATE SOURCE c WITH (connector = 'postgres-cdc', hostname = '10.9.8.7', port = '5432', username = 'u', password = 'p', database.name = 'd')"
	fails := func(c *pgx.Conn, sql, code, contains string) string {
		t.Helper()
		_, err := c.Exec(ctx, sql)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || (code != "" && pe.Code != code) || !strings.Contains(pe.Message, contains) {
			t.Fatalf("%s: %v, want %s ...%s...", sql, err, code, contains)
		}
		return pe.Message
	}
	for _, s := range []string{pgSink("s1", "127.0.0.1"), kafka, cdc} {
		fails(alice, s, "42501", "needs superuser or CREATECONNECTION")
	}
	if _, err := root.Exec(ctx, "ALTER USER alice CREATECONNECTION"); err != nil {
		t.Fatal(err)
	}
	fails(alice, pgSink("s1", "10.9.8.7"), "42501", "host 10.9.8.7:"+port+" is not in the connector allow-list")
	fails(alice, kafka, "42501", "host 10.9.8.7:9092 is not in the connector allow-list")
	fails(alice, cdc, "42501", "host 10.9.8.7:5432 is not in the connector allow-list")
	fails(root, cdc, "42501", "not in the connector allow-list") // superusers too: the operator's list binds everyone

	// An allowed host that answers: alice does not see its reply, root does.
	msg := fails(alice, pgSink("s1", "127.0.0.1"), "22023", "the remote host's reply is not shown")
	if strings.Contains(msg, banner) {
		t.Fatalf("alice sees the remote host's reply: %s", msg)
	}
	if msg := fails(root, pgSink("s1", "localhost"), "", ""); !strings.Contains(msg, banner) {
		t.Fatalf("root's error lacks the remote host's reply: %s", msg)
	}
	if _, err := root.Exec(ctx, "ALTER USER alice NOCREATECONNECTION"); err != nil {
		t.Fatal(err)
	}
	fails(alice, pgSink("s1", "127.0.0.1"), "42501", "needs superuser or CREATECONNECTION")
}
