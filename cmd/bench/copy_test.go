package main

import (
	"bufio"
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/e2e/pgtest"
	"github.com/tributary/tributary/e2e/testserver"
)

// TestCopyFile: the generated file has n lines of 4 fields, distinct ids 1..n.
func TestCopyFile(t *testing.T) {
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	const n = 1000
	if err := writeCopyRows(w, n, 7); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != n {
		t.Fatalf("%d lines, want %d", len(lines), n)
	}
	ids := map[string]bool{}
	for _, l := range lines {
		f := strings.Split(l, "\t")
		if len(f) != 4 {
			t.Fatalf("line %q has %d fields", l, len(f))
		}
		ids[f[0]] = true
	}
	if len(ids) != n {
		t.Fatalf("%d distinct ids in %d lines", len(ids), n)
	}
}

// TestCopySmall loads a small file on both systems: each must hold every row (runCopy checks).
func TestCopySmall(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server and a PostgreSQL cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	file := filepath.Join(t.TempDir(), "copy.txt")
	const rows = 20000
	size, err := writeCopyFile(file, rows, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, dsn := range []string{
		testserver.Start(t, testserver.Build(t), t.TempDir()).DSN(),
		pgtest.Start(t).DSN(),
	} {
		r, err := runCopy(ctx, dsn, "test", file, size, rows)
		if err != nil {
			t.Fatal(err)
		}
		if r.Rows != rows || r.Checked != rows || r.PerSec <= 0 {
			t.Errorf("%+v", r)
		}
	}
}
