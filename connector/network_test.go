package connector

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/sql/types"
)

func TestAllowList(t *testing.T) {
	t.Cleanup(func() { _ = SetAllowedHosts("") })
	if err := SetAllowedHosts("db.example.com:5432, Kafka.Example.com, 10.0.0.0/8, 192.168.1.5:9092, [::1]:6000"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ep string
		ok bool
	}{
		{"db.example.com:5432", true}, {"DB.example.com.:5432", true}, {"db.example.com:5433", false},
		{"kafka.example.com:9092", true}, {"kafka.example.com:1", true},
		{"10.1.2.3:5432", true}, {"11.1.2.3:5432", false},
		{"192.168.1.5:9092", true}, {"192.168.1.5:9093", false},
		{"[::1]:6000", true}, {"[::1]:6001", false},
		// A name the list does not hold is let in when it resolves into a block.
		{"other.example.invalid:5432", false},
	} {
		err := CheckEndpoint(context.Background(), "test", c.ep)
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, types.ErrInsufficientPrivilege)) {
			t.Errorf("%s: %v, want allowed=%v", c.ep, err, c.ok)
		}
	}
	if err := SetAllowedHosts("127.0.0.0/8"); err != nil {
		t.Fatal(err)
	}
	if err := CheckEndpoint(context.Background(), "test", "localhost:5432"); err != nil {
		t.Errorf("localhost within 127.0.0.0/8: %v", err)
	}
	for _, bad := range []string{"host:port:x", "[::1", ":5432"} {
		if err := SetAllowedHosts(bad); err == nil {
			t.Errorf("SetAllowedHosts(%q) accepted", bad)
		}
	}
}

// TestDialAllowList dials a local listener: allowed by name, by address
// block after resolving, and refused (42501, nothing accepted) otherwise.
func TestDialAllowList(t *testing.T) {
	t.Cleanup(func() { _ = SetAllowedHosts("") })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	expectAccept := func(what string) {
		t.Helper()
		select {
		case c := <-accepted:
			c.Close()
		case <-ctx.Done():
			t.Fatalf("%s: not accepted", what)
		}
	}
	for _, c := range []struct{ allow, addr string }{
		{"", "127.0.0.1:" + port},
		{"127.0.0.1:" + port, "127.0.0.1:" + port},
		{"localhost", "localhost:" + port},
		{"127.0.0.0/8", "localhost:" + port},
	} {
		if err := SetAllowedHosts(c.allow); err != nil {
			t.Fatal(err)
		}
		conn, err := Dial(ctx, "tcp", c.addr)
		if err != nil {
			t.Fatalf("allow %q, dial %s: %v", c.allow, c.addr, err)
		}
		conn.Close()
		expectAccept(fmt.Sprintf("allow %q, dial %s", c.allow, c.addr))
	}
	for _, c := range []struct{ allow, addr string }{
		{"10.0.0.0/8", "127.0.0.1:" + port},
		{"10.0.0.0/8", "localhost:" + port},
		{"127.0.0.1:1", "127.0.0.1:" + port},
		{"db.example.com", "127.0.0.1:" + port},
	} {
		if err := SetAllowedHosts(c.allow); err != nil {
			t.Fatal(err)
		}
		if conn, err := Dial(ctx, "tcp", c.addr); err == nil || !errors.Is(err, types.ErrInsufficientPrivilege) {
			if conn != nil {
				conn.Close()
			}
			t.Fatalf("allow %q, dial %s: %v, want 42501", c.allow, c.addr, err)
		}
	}
	ln.Close()
	for c := range accepted {
		c.Close()
		t.Fatal("a refused dial reached the listener")
	}
}

func TestRedact(t *testing.T) {
	peer := errors.New("FATAL: SECRET BANNER (SQLSTATE XX000)")
	wrapped := fmt.Errorf("create sink s: postgres sink s: connect to h:1: %w", Peer(peer))
	red := Redact(wrapped)
	if strings.Contains(red.Error(), "SECRET") || !strings.HasPrefix(red.Error(), "create sink s: postgres sink s: connect to h:1: (the remote host's reply") {
		t.Fatalf("redacted: %q", red)
	}
	typed := PeerErrorf(types.ErrInvalidParameter, peer, "kafka sink: cannot reach the brokers b:1: %v", peer)
	red = Redact(fmt.Errorf("create sink s: %w", typed))
	if strings.Contains(red.Error(), "SECRET") || !errors.Is(red, types.ErrInvalidParameter) || !strings.HasPrefix(red.Error(), "kafka sink: cannot reach") {
		t.Fatalf("redacted: %q", red)
	}
	if !errors.Is(typed, types.ErrInvalidParameter) {
		t.Fatal("PeerErrorf lost its kind")
	}
	plain := types.Errorf(types.ErrInvalidParameter, "no peer text")
	if Redact(plain) != plain {
		t.Fatal("an error without peer text changed")
	}
}
