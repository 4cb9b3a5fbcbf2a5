package recovery

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tributary/tributary/e2e/e2etest"
	"github.com/tributary/tributary/e2e/testseed"
	"github.com/tributary/tributary/e2e/testserver"
)

// TestStorageDamage writes a data directory with the real server, damages copies of it as a
// disk, an operator or a crash would, and starts the server binary on each: it must exit with
// status 1 and one line naming the damaged file (never start empty, never answer wrongly, never
// panic), or, given --accept-damaged-tail for a damaged write-ahead file, start with the writes
// from the damage on dropped and say so in its log.
func TestStorageDamage(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if _, err := exec.LookPath("cp"); err != nil {
		t.Skip("needs cp to copy sparse files")
	}
	bin := testserver.Build(t)
	base := t.TempDir()
	const baseRows = 20000
	srv := testserver.Start(t, bin, base)
	conn := e2etest.Connect(t, ctx, srv)
	e2etest.MustExec(t, ctx, conn, `CREATE TABLE t (id bigint PRIMARY KEY, note text)`)
	insertRows(t, ctx, conn, 0, baseRows)
	conn.Close(ctx)
	if err := srv.Stop(); err != nil { // a clean stop flushes everything into table files
		t.Fatal(err)
	}
	if len(globFiles(t, base, "*.sst")) == 0 {
		t.Fatal("no table files after a clean stop")
	}

	t.Run("control", func(t *testing.T) {
		dir := copyDataDir(t, base)
		s := testserver.Start(t, bin, dir)
		if n := countRowsOf(t, ctx, s); n != baseRows {
			t.Fatalf("count(*) = %d, want %d", n, baseRows)
		}
	})
	t.Run("missing MANIFEST", func(t *testing.T) {
		dir := copyDataDir(t, base)
		ssts := globFiles(t, dir, "*.sst")
		path := filepath.Join(dir, "MANIFEST")
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		refusesToStart(t, ctx, bin, dir, path)
		if got := globFiles(t, dir, "*.sst"); !slices.Equal(got, ssts) {
			t.Fatalf("table files changed: %v, had %v", got, ssts)
		}
	})
	t.Run("64 random bytes in a table file", func(t *testing.T) {
		dir := copyDataDir(t, base)
		ssts := globFiles(t, dir, "*.sst")
		path := ssts[len(ssts)-1]
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewSource(testseed.Int64(t)))
		off := rng.Intn(len(data) - 64)
		rng.Read(data[off : off+64])
		t.Logf("64 random bytes at %d of %d", off, len(data))
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		refusesToStart(t, ctx, bin, dir, path)
	})
	t.Run("truncated table file", func(t *testing.T) {
		dir := copyDataDir(t, base)
		path := globFiles(t, dir, "*.sst")[0]
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(path, info.Size()/2); err != nil {
			t.Fatal(err)
		}
		refusesToStart(t, ctx, bin, dir, path)
	})
	t.Run("damaged write-ahead file after kill -9", func(t *testing.T) {
		dir := copyDataDir(t, base)
		s := testserver.Start(t, bin, dir)
		c := e2etest.Connect(t, ctx, s)
		const more = 8000
		insertRows(t, ctx, c, baseRows, more) // acknowledged
		c.Close(ctx)
		if err := s.Kill(); err != nil {
			t.Fatal(err)
		}
		mems := globFiles(t, dir, "*.mem")
		if len(mems) == 0 {
			t.Fatal("no write-ahead (.mem) file after kill -9")
		}
		path := mems[len(mems)-1]
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		end := len(bytes.TrimRight(data, "\x00"))
		off := 20 + (end-20)/2
		rng := rand.New(rand.NewSource(testseed.Int64(t)))
		garbage := make([]byte, 64)
		rng.Read(garbage)
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt(garbage, int64(off)); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		t.Logf("64 random bytes at %d of %d data bytes in %s", off, end, filepath.Base(path))
		refusesToStart(t, ctx, bin, dir, path)

		// The operator accepts the loss explicitly: the server drops the damaged tail (its log
		// names the file), and the commit log, which holds every commit since its last
		// checkpoint, writes those commits back: no acknowledged row is lost.
		s2 := testserver.StartWith(t, bin, dir, testserver.Options{Args: []string{"--accept-damaged-tail"}})
		n := countRowsOf(t, ctx, s2)
		if n != baseRows+more {
			t.Fatalf("count(*) = %d after accepting the damaged tail, want all %d (the commit log covers it)", n, baseRows+more)
		}
		log, err := os.ReadFile(s2.LogPath)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(log), "accepting the loss of a damaged write-ahead tail") || !strings.Contains(string(log), path) ||
			!strings.Contains(string(log), "replayed commits from the commit log") {
			t.Fatalf("the server log does not report the accepted tail in %s and the replay:\n%s", path, log)
		}
		if kept, _ := filepath.Glob(path + ".dropped-at-*"); len(kept) != 1 {
			t.Fatalf("the dropped bytes of %s were not kept beside it: %v", path, kept)
		}
		t.Logf("accepted the damaged tail: %d of %d acknowledged rows kept", n, baseRows+more)
	})
}

// insertRows inserts rows [from, from+n) into t, 500 per statement.
func insertRows(t *testing.T, ctx context.Context, conn *pgx.Conn, from, n int) {
	t.Helper()
	note := strings.Repeat("n", 200)
	for lo := from; lo < from+n; lo += 500 {
		var sb strings.Builder
		sb.WriteString("INSERT INTO t VALUES ")
		for i := lo; i < min(lo+500, from+n); i++ {
			if i > lo {
				sb.WriteString(", ")
			}
			fmt.Fprintf(&sb, "(%d, '%s')", i, note)
		}
		e2etest.MustExec(t, ctx, conn, sb.String())
	}
}

func countRowsOf(t *testing.T, ctx context.Context, s *testserver.Server) int {
	t.Helper()
	c := e2etest.Connect(t, ctx, s)
	var n int
	if err := c.QueryRow(ctx, `SELECT count(*) FROM t`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func globFiles(t *testing.T, dir, pattern string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, pattern))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(m)
	return m
}

// copyDataDir copies a data directory (cp keeps preallocated write-ahead files sparse).
func copyDataDir(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "data")
	if out, err := exec.Command("cp", "-a", src, dst).CombinedOutput(); err != nil {
		t.Fatalf("copy data dir: %v: %s", err, out)
	}
	return dst
}

// refusesToStart runs the server on dir and wants exit status 1, no panic, and a last line
// naming file.
func refusesToStart(t *testing.T, ctx context.Context, bin, dir, file string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	addr, err := testserver.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, bin, "--listen", addr, "--data-dir", dir, "--http-listen", "")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("server on a damaged dir: %v, want exit status 1; output:\n%s", err, out)
	}
	if bytes.HasPrefix(out, []byte("panic:")) || bytes.Contains(out, []byte("\npanic:")) || bytes.Contains(out, []byte("\ngoroutine ")) {
		t.Fatalf("the server panicked:\n%s", out)
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "tributary: ") || !strings.Contains(last, file) {
		t.Fatalf("last line %q does not name %s; output:\n%s", last, file, out)
	}
	t.Logf("refused: %s", last)
}

// TestFsyncFalse: --fsync=false is said at start, and what it acknowledged still survives kill -9.
func TestFsyncFalse(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv := testserver.StartWith(t, testserver.Build(t), t.TempDir(), testserver.Options{Args: []string{"--fsync=false"}})
	conn := e2etest.Connect(t, ctx, srv)
	e2etest.MustExec(t, ctx, conn, `CREATE TABLE t (id bigint PRIMARY KEY, note text)`)
	insertRows(t, ctx, conn, 0, 1000)
	conn.Close(ctx)
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	if n := countRowsOf(t, ctx, srv); n != 1000 {
		t.Fatalf("count(*) = %d after kill -9, want 1000", n)
	}
	log, err := os.ReadFile(srv.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "--fsync=false: commits are acknowledged before they reach the disk") {
		t.Fatalf("no warning about --fsync=false in the log:\n%s", log)
	}
}
