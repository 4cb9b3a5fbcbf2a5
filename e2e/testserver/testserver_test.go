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

func TestPortTakenReadsTheLastStart(t *testing.T) {
	s := &Server{LogPath: filepath.Join(t.TempDir(), "server.log")}
	write := func(text string) {
		t.Helper()
		if err := os.WriteFile(s.LogPath, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("=== testserver: start #1: x\ntributary: --http-listen: listen tcp 127.0.0.1:1: bind: address already in use\n")
	if !s.portTaken() {
		t.Error("a start that failed on a taken port: not seen")
	}
	write("=== testserver: start #1: x\nbind: address already in use\n=== testserver: start #2: x\nrefusing to start: damaged MANIFEST\n")
	if s.portTaken() {
		t.Error("an earlier start's taken port was taken for the last one's")
	}
}
