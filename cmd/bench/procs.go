package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tributary/tributary/e2e/pgtest"
	"github.com/tributary/tributary/e2e/testserver"
)

const (
	readyTimeout = 60 * time.Second // a start may take this long to accept connections
	stopTimeout  = 60 * time.Second // a clean shutdown may take this long before SIGKILL
)

// child is one started process whose exit is observed by a goroutine.
type child struct {
	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr error
}

func startChild(cmd *exec.Cmd, logPath string) (*child, error) {
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open log %s: %w", logPath, err)
	}
	defer log.Close() // the child has its own copy of the descriptor
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("exec %s: %w", cmd.Path, err)
	}
	c := &child{cmd: cmd, exited: make(chan struct{})}
	go func() {
		c.waitErr = cmd.Wait()
		close(c.exited)
	}()
	return c, nil
}

// stop sends sig, waits up to stopTimeout, then SIGKILLs.
func (c *child) stop(sig syscall.Signal) error {
	select {
	case <-c.exited:
		return nil
	default:
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
		_ = c.cmd.Process.Kill() // it ignored sig; reported below
		<-c.exited
		return fmt.Errorf("no exit within %v of %v; killed", stopTimeout, sig)
	}
}

// buildServer compiles ./cmd/server of the module holding the working directory into dir.
func buildServer(ctx context.Context, dir string) (string, error) {
	root, err := testserver.ModuleRoot()
	if err != nil {
		return "", fmt.Errorf("build server: %w", err)
	}
	bin := filepath.Join(dir, "tributary")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/server")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/server: %w\n%s", err, out)
	}
	return bin, nil
}

// serverFlags returns the flag names (without dashes) that bin's -h output lists.
func serverFlags(bin string) (map[string]bool, error) {
	out, _ := exec.Command(bin, "-h").CombinedOutput() // -h exits with status 2 by design
	if len(out) == 0 {
		return nil, fmt.Errorf("%s -h printed nothing", bin)
	}
	flags := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if name, ok := strings.CutPrefix(line, "-"); ok {
			name = strings.TrimPrefix(name, "-")
			if i := strings.IndexAny(name, " \t="); i >= 0 {
				name = name[:i]
			}
			flags[name] = true
		}
	}
	return flags, nil
}

// tributaryServer is a server process on a free loopback port with its own data directory.
type tributaryServer struct {
	Addr     string
	HTTPAddr string // --http-listen as started (a later --http-listen in args wins)
	DataDir  string
	LogPath  string
	proc     *child
}

func startTributary(ctx context.Context, bin, dir string, args []string) (*tributaryServer, error) {
	addr, err := testserver.FreeAddr()
	if err != nil {
		return nil, err
	}
	// /metrics stays on (as by default) on a port of its own: benches run
	// servers side by side.
	httpAddr, err := testserver.FreeAddr()
	if err != nil {
		return nil, err
	}
	s := &tributaryServer{Addr: addr, HTTPAddr: httpAddr, DataDir: filepath.Join(dir, "data"), LogPath: filepath.Join(dir, "server.log")}
	argv := append([]string{"--listen", addr, "--data-dir", s.DataDir, "--log-level", "warn", "--http-listen", httpAddr}, args...)
	cmd := exec.Command(bin, argv...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // die with the bench
	if s.proc, err = startChild(cmd, s.LogPath); err != nil {
		return nil, err
	}
	if err := testserver.WaitReady(ctx, s.DSN(), s.proc.exited, readyTimeout); err != nil {
		_ = s.proc.stop(syscall.SIGKILL) // do not leave a half-started process
		return nil, fmt.Errorf("tributary at %s: %w\n%s", addr, err, testserver.Tail(s.LogPath, 30))
	}
	return s, nil
}

// DSN is a connection string for database dev.
func (s *tributaryServer) DSN() string {
	return fmt.Sprintf("postgres://tributary@%s/dev?sslmode=disable&connect_timeout=10", s.Addr)
}

// Pid is the server's process id.
func (s *tributaryServer) Pid() int { return s.proc.cmd.Process.Pid }

// Stop shuts the server down with SIGTERM and reports an unclean exit.
func (s *tributaryServer) Stop() error {
	if err := s.proc.stop(syscall.SIGTERM); err != nil {
		return fmt.Errorf("stop tributary: %w", err)
	}
	if s.proc.waitErr != nil {
		return fmt.Errorf("stop tributary: unclean exit: %w\n%s", s.proc.waitErr, testserver.Tail(s.LogPath, 30))
	}
	return nil
}

// procStatusKB reads a "Key:   N kB" line of /proc/<pid>/status.
func procStatusKB(pid int, key string) (int64, error) {
	path := fmt.Sprintf("/proc/%d/status", pid)
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", path, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		rest, ok := strings.CutPrefix(line, key+":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("%s: unexpected line %q", path, line)
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %s: %w", path, key, err)
		}
		return n, nil
	}
	return 0, fmt.Errorf("%s: no %s line", path, key)
}

// pgSettings are the benchmark cluster's settings: PostgreSQL's defaults except fsync=off (which
// only helps PostgreSQL: Tributary syncs each epoch's commit unless started with --fsync=false).
// The durable-commit benchmark uses durableSettings instead.
var pgSettings = []string{
	"listen_addresses=127.0.0.1", "unix_socket_directories=", "fsync=off", "max_connections=20",
	"TimeZone=UTC", "logging_collector=off",
}

// startPostgres starts a private PostgreSQL cluster under dir (see pgtest.Launch).
func startPostgres(dir string) (*pgtest.Cluster, error) {
	return pgtest.Launch(dir, pgSettings)
}

// clearPostgres syncs the files of a stopped cluster and removes them (unless --keep), before
// Tributary's runs: with a PostgreSQL run's table files left in place, the next Tributary runs took
// 10-20% more CPU a row than alone (bench ingest, 2026-12-04), although the pages were clean.
func (e *env) clearPostgres(cluster *pgtest.Cluster) error {
	return e.clearData(cluster.DataDir, "postgres")
}

// clearData syncs the files of a stopped server's data directory dir and removes them (unless
// --keep), so that they cost the next runs nothing (clearPostgres); who names the server.
func (e *env) clearData(dir, who string) error {
	syscall.Sync()
	if e.keep {
		return nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove %s's data: %w", who, err)
	}
	return nil
}

// launchPostgres starts a private PostgreSQL cluster in a fresh directory of e with settings
// and checks that the running server took each of check (names whose "name=value" is in
// settings, e.g. "fsync"): a setting silently overridden would make the run measure something
// else. It returns the server's version.
func launchPostgres(ctx context.Context, e *env, settings []string, check ...string) (cluster *pgtest.Cluster, version string, err error) {
	dir, err := e.subdir("postgres")
	if err != nil {
		return nil, "", err
	}
	if cluster, err = pgtest.Launch(dir, settings); err != nil {
		return nil, "", err
	}
	defer func() {
		if err != nil {
			_ = cluster.Stop() // the check's error is the one to report
			cluster = nil
		}
	}()
	c, err := connect(ctx, cluster.DSN())
	if err != nil {
		return nil, "", err
	}
	defer c.Close(context.Background())
	if err := c.QueryRow(ctx, "SHOW server_version").Scan(&version); err != nil {
		return nil, "", fmt.Errorf("postgres version: %w", err)
	}
	for _, name := range check {
		want := ""
		for _, s := range settings {
			if v, ok := strings.CutPrefix(s, name+"="); ok {
				want = v
			}
		}
		var got string
		if err := c.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&got); err != nil {
			return nil, "", fmt.Errorf("postgres setting %s: %w", name, err)
		}
		if got != want {
			return nil, "", fmt.Errorf("postgres runs with %s=%s, want %s", name, got, want)
		}
	}
	return cluster, version, nil
}

// startConnected starts a fresh server with args in e's subdirectory name
// and connects to it; stop closes the connection and stops the server.
func startConnected(ctx context.Context, e *env, name string, args []string) (srv *tributaryServer, conn *pgx.Conn, stop func() error, err error) {
	dir, err := e.subdir(name)
	if err != nil {
		return nil, nil, nil, err
	}
	srv, err = startTributary(ctx, e.bin, dir, args)
	if err != nil {
		return nil, nil, nil, err
	}
	conn, err = connect(ctx, srv.DSN())
	if err != nil {
		return nil, nil, nil, errors.Join(err, srv.Stop())
	}
	stop = func() error {
		_ = conn.Close(context.Background()) // the server's stop tells what matters
		return srv.Stop()
	}
	return srv, conn, stop, nil
}

// onOneServer runs fn against one fresh server (built unless serverBin is
// given, in a temporary directory kept with keep, started with serverArgs),
// all within timeout, and stops it.
func onOneServer(ctx context.Context, timeout time.Duration, serverBin string, keep bool, name, serverArgs string,
	fn func(context.Context, *tributaryServer) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	e, err := newEnv(ctx, serverBin, keep)
	if err != nil {
		return err
	}
	defer e.close()
	dir, err := e.subdir(name)
	if err != nil {
		return err
	}
	srv, err := startTributary(ctx, e.bin, dir, strings.Fields(serverArgs))
	if err != nil {
		return err
	}
	err = fn(ctx, srv)
	if stopErr := srv.Stop(); err == nil {
		err = stopErr
	}
	return err
}
