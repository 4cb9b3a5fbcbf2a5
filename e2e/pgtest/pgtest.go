package pgtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/tributary/tributary/e2e/testserver"
)

// BinDirEnv names an environment variable that overrides where initdb and postgres are found.
const BinDirEnv = "TRIBUTARY_PG_BIN"

// ErrNotInstalled is returned by BinDir when no PostgreSQL binaries are found.
var ErrNotInstalled = errors.New("no PostgreSQL server binaries (initdb, postgres) under /usr/lib/postgresql/*/bin; install the postgresql package")

const (
	readyTimeout = 30 * time.Second
	stopTimeout  = 30 * time.Second
)

// BinDir returns the directory of the newest installed PostgreSQL's initdb and postgres.
func BinDir() (string, error) {
	if dir := os.Getenv(BinDirEnv); dir != "" {
		return dir, nil
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb") // the pattern is valid
	var dirs []string
	for _, m := range matches {
		dir := filepath.Dir(m)
		if _, err := os.Stat(filepath.Join(dir, "postgres")); err == nil {
			dirs = append(dirs, dir)
		}
	}
	if len(dirs) == 0 {
		return "", ErrNotInstalled
	}
	version := func(dir string) float64 {
		v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(dir)), 64) // non-numeric sorts first
		return v
	}
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	return dirs[0], nil
}

// Cluster is one private PostgreSQL server. Its methods are for one goroutine at a time.
type Cluster struct {
	Addr    string // 127.0.0.1:port, kept across restarts
	DataDir string
	LogPath string

	bin      string
	cred     *syscall.Credential // non-nil when running as root: postgres refuses root
	settings []string            // postgres -c settings
	cmd      *exec.Cmd
	exited   chan struct{}
	waitErr  error
}

// StartPostgres starts a cluster (see Start) and returns a DSN for its database dev.
func StartPostgres(t testing.TB) string {
	t.Helper()
	return Start(t).DSN()
}

// TestSettings are the settings of the clusters Start makes: small and quick.
var TestSettings = []string{
	"listen_addresses=127.0.0.1", "unix_socket_directories=", "fsync=off", "shared_buffers=16MB",
	"max_connections=40", "TimeZone=UTC", "logging_collector=off",
}

// Start initdb's a cluster in a temporary directory, starts it on a free loopback port, creates
// database dev, and stops and removes everything at cleanup. It skips t when PostgreSQL is not
// installed. As root, the cluster runs as the postgres (or nobody) user.
func Start(t testing.TB) *Cluster {
	t.Helper()
	return StartWith(t)
}

// LogicalSettings are the settings a cluster for logical replication (CDC)
// adds to TestSettings.
var LogicalSettings = []string{"wal_level=logical", "max_replication_slots=20", "max_wal_senders=20"}

// StartWith is Start with more postgres settings (-c), e.g. LogicalSettings.
func StartWith(t testing.TB, settings ...string) *Cluster {
	t.Helper()
	if _, err := BinDir(); err != nil {
		t.Skipf("pgtest: %v", err)
	}
	// As root t.TempDir's parents are private, so the cluster gets its own directory.
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) }) // temporary files; nothing to report
	c, err := Launch(dir, append(append([]string(nil), TestSettings...), settings...))
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("pgtest: stop PostgreSQL: %v", err)
		}
		if t.Failed() {
			t.Logf("last lines of the PostgreSQL log %s:\n%s", c.LogPath, testserver.Tail(c.LogPath, 40))
		}
	})
	return c
}

// Launch initdb's a cluster under dir (which it makes reachable to the
// cluster's user), starts it with the given postgres settings (-c) on a free
// loopback port and creates database dev. The caller stops it. As root the
// cluster runs as the postgres (or nobody) user, which PostgreSQL requires.
func Launch(dir string, settings []string) (*Cluster, error) {
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	c := &Cluster{bin: bin, settings: settings}
	if os.Geteuid() == 0 {
		if c.cred, err = unprivileged(); err != nil {
			return nil, err
		}
		if err := os.Chmod(dir, 0o755); err != nil {
			return nil, fmt.Errorf("chmod %s: %w", dir, err)
		}
	}
	root := filepath.Join(dir, "pg")
	if err := os.Mkdir(root, 0o700); err != nil {
		return nil, fmt.Errorf("mkdir %s: %w", root, err)
	}
	if c.cred != nil {
		if err := os.Chown(root, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
			return nil, fmt.Errorf("chown %s: %w", root, err)
		}
	}
	c.DataDir, c.LogPath = filepath.Join(root, "data"), filepath.Join(root, "postgres.log")
	if err := c.initdb(); err != nil {
		return nil, err
	}
	// The port is free when picked, not necessarily when postgres binds it (tests start servers
	// side by side): a cluster that finds it taken tries another.
	for attempt := 1; ; attempt++ {
		if c.Addr, err = testserver.FreeAddr(); err != nil {
			return nil, err
		}
		logged := logSize(c.LogPath)
		err := c.start()
		if err == nil {
			break
		}
		if attempt < 3 && portTaken(c.LogPath, logged) {
			continue
		}
		return nil, fmt.Errorf("%w\n%s", err, testserver.Tail(c.LogPath, 40))
	}
	if err := c.createDB("dev"); err != nil {
		_ = c.Stop()
		return nil, err
	}
	return c, nil
}

// logSize returns the size of the file at path (0 when it does not exist yet).
func logSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// portTaken reports whether the server log at path says, after its first from bytes, that
// postgres could not bind its port because another process holds it.
func portTaken(path string, from int64) bool {
	b, err := os.ReadFile(path)
	if err != nil || int64(len(b)) < from {
		return false
	}
	return bytes.Contains(b[from:], []byte("Address already in use"))
}

// Version returns the PostgreSQL major version of the binaries ("15").
func (c *Cluster) Version() string { return filepath.Base(filepath.Dir(c.bin)) }

func unprivileged() (*syscall.Credential, error) {
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 == nil && err2 == nil {
			return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
		}
	}
	return nil, errors.New("running as root and no postgres or nobody user to run PostgreSQL as")
}

func (c *Cluster) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(c.bin, name), args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred, Pdeathsig: syscall.SIGQUIT}
	cmd.Env = append(os.Environ(), "LC_ALL=C", "TZ=UTC")
	return cmd
}

func (c *Cluster) initdb() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := c.command(ctx, "initdb", "-D", c.DataDir, "-U", "postgres", "-A", "trust", "-E", "UTF8",
		"--locale=C", "--no-sync")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb %s: %w\n%s", c.DataDir, err, out)
	}
	return nil
}

// DSN is a connection string for database dev.
func (c *Cluster) DSN() string { return c.dsn("dev") }

func (c *Cluster) dsn(db string) string {
	return fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable&connect_timeout=10", c.Addr, db)
}

func (c *Cluster) running() bool {
	if c.cmd == nil {
		return false
	}
	select {
	case <-c.exited:
		return false
	default:
		return true
	}
}

func (c *Cluster) start() error {
	log, err := os.OpenFile(c.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open log: %w", err)
	}
	defer log.Close() // the child has its own copy
	args := []string{"-D", c.DataDir, "-p", c.Addr[strings.LastIndexByte(c.Addr, ':')+1:]}
	for _, s := range c.settings {
		args = append(args, "-c", s)
	}
	cmd := c.command(context.Background(), "postgres", args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	c.cmd, c.exited, c.waitErr = cmd, make(chan struct{}), nil
	go func(exited chan struct{}) {
		c.waitErr = cmd.Wait()
		close(exited)
	}(c.exited)
	if err := testserver.WaitReady(context.Background(), c.dsn("postgres"), c.exited, readyTimeout); err != nil {
		_ = c.signalAndWait(syscall.SIGQUIT) // do not leave a half-started cluster
		return fmt.Errorf("postgres at %s: %w", c.Addr, err)
	}
	return nil
}

func (c *Cluster) createDB(name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgconn.Connect(ctx, c.dsn("postgres"))
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name).ReadAll(); err != nil {
		return fmt.Errorf("create database %s: %w", name, err)
	}
	return nil
}

func (c *Cluster) signalAndWait(sig syscall.Signal) error {
	if !c.running() {
		return nil
	}
	if err := c.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signal %v: %w", sig, err)
	}
	t := time.NewTimer(stopTimeout)
	defer t.Stop()
	select {
	case <-c.exited:
		return nil
	case <-t.C:
		_ = c.cmd.Process.Kill() // reported below
		<-c.exited
		return fmt.Errorf("postgres did not exit within %v of %v; killed", stopTimeout, sig)
	}
}

// Stop shuts the cluster down (fast shutdown: SIGINT, clients are disconnected).
func (c *Cluster) Stop() error {
	return c.signalAndWait(syscall.SIGINT)
}

// Kill crashes the cluster (immediate shutdown: SIGQUIT, no checkpoint; the next start runs
// crash recovery). Unlike SIGKILL on the postmaster, it also ends the backends, so the cluster
// can start again.
func (c *Cluster) Kill() error {
	return c.signalAndWait(syscall.SIGQUIT)
}

// Restart stops the cluster when it runs and starts it again on the same port and data.
func (c *Cluster) Restart() error {
	if err := c.Stop(); err != nil {
		return err
	}
	if err := c.start(); err != nil {
		return fmt.Errorf("%w\n%s", err, testserver.Tail(c.LogPath, 40))
	}
	return nil
}
