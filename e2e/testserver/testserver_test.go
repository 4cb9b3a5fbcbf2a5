package testserver

import (
	"net"
	"os"
	"path/filepath"
	"testing"
)

func TestTail(t *testing.T) {
	p := filepath.Join(t.TempDir(), "log")
	if err := os.WriteFile(p, []byte("a\nb\nc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := Tail(p, 2); got != "b\nc" {
		t.Fatalf("Tail = %q", got)
	}
	if got := Tail(p, 10); got != "a\nb\nc" {
		t.Fatalf("Tail = %q", got)
	}
}

func TestFreeAddrIsBindable(t *testing.T) {
	addr, err := FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen on %s: %v", addr, err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestModuleRoot(t *testing.T) {
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatal(err)
	}
}
