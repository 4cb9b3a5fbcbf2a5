package testserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// BinEnv names an environment variable that, when set, is the server binary Build returns
// instead of compiling ./cmd/server (handy to run the e2e suite against a prebuilt binary).
const BinEnv = "TRIBUTARY_BIN"

const (
	readyTimeout = 20 * time.Second // how long a start may take to accept connections
	stopTimeout  = 30 * time.Second // how long a clean shutdown may take before SIGKILL
	logTailLines = 60
)

// ModuleRoot returns the directory holding the repository's go.mod, searching up from the
// working directory.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("getwd: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// Build returns the server binary for t: $TRIBUTARY_BIN when set (as e2etest.Main sets it, to
// build once for a whole test package), else ./cmd/server compiled into a temporary directory of
// t. It fails the test with the compiler's output when the server does not build.
func Build(t testing.TB) string {
	t.Helper()
	noteMainPackage()
	if bin := os.Getenv(BinEnv); bin != "" {
		if _, err := os.Stat(bin); err != nil {
			t.Fatalf("$%s: %v", BinEnv, err)
		}
		return bin
	}
	bin, err := BuildInto(t.TempDir())
	if err != nil {
		t.Fatalf("build server: %v", err)
	}
	return bin
}

// noteMainPackage reads the server's main package (./cmd/server), which no test binary can
// import: go test keys its cached results on the files a test reads, so a change there alone
// reruns the tests that start a server too (the e2e packages' deps_test.go imports cover the rest
// of the server's code).
func noteMainPackage() {
	root, err := ModuleRoot()
	if err != nil {
		return // BuildInto reports it
	}
	dir := filepath.Join(root, "cmd", "server")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() {
			_, _ = os.ReadFile(filepath.Join(dir, e.Name()))
		}
	}
}

// BuildInto compiles ./cmd/server into dir and returns the binary's path; the error holds the
// compiler's output when the server does not build.
func BuildInto(dir string) (string, error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(root, "cmd", "server")); err != nil {
		return "", fmt.Errorf("./cmd/server does not exist yet (%v); it is written by another engineer", err)
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("go tool not found: %w", err)
	}
	bin := filepath.Join(dir, "tributary")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goBin, "build", "-o", bin, "./cmd/server")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("./cmd/server does not build (%v):\n%s", err, out)
	}
	return bin, nil
}

// FreeAddrs returns n loopback addresses with distinct ports that were free
// a moment ago (all held open together while they are picked).
func FreeAddrs(n int) ([]string, error) {
	var out []string
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		ls = append(ls, l)
		out = append(out, l.Addr().String())
	}
	return out, nil
}

// FreeAddr returns a loopback address with a port that was free a moment ago.
func FreeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	return addr, nil
}

// Tail returns the last n lines of the file at path (or why it cannot).
func Tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// WaitReady polls until dsn accepts a connection, the process behind exited (exited is closed),
// or timeout passes.
func WaitReady(ctx context.Context, dsn string, exited <-chan struct{}, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var lastErr error
	for {
		attempt, cancelAttempt := context.WithTimeout(ctx, 2*time.Second)
		c, err := pgconn.Connect(attempt, dsn)
		cancelAttempt()
		if err == nil {
			closeCtx, cancelClose := context.WithTimeout(ctx, 2*time.Second)
			_ = c.Close(closeCtx) // only a probe
			cancelClose()
			return nil
		}
		var pe *pgconn.PgError
		if errors.As(err, &pe) && strings.HasPrefix(pe.Code, "28") {
			return nil // it answered: it asks for a password the probe does not have
		}
		lastErr = err
		t := time.NewTimer(50 * time.Millisecond)
		select {
		case <-exited:
			t.Stop()
			return fmt.Errorf("process exited before accepting connections (last attempt: %v)", lastErr)
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("not accepting connections after %v: %v", timeout, lastErr)
		case <-t.C:
		}
	}
}

// Server is one running (or stopped) server process with a fixed address and data directory.
// Its methods are for one goroutine at a time.
type Server struct {
	Addr string // 127.0.0.1:port, kept across restarts
	// HTTPAddr is --http-listen (/metrics), a free port kept across restarts.
	HTTPAddr string
	Bin      string
	DataDir  string
	LogPath  string // the process's stdout and stderr, appended across restarts

	opts    Options
	cmd     *exec.Cmd
	exited  chan struct{} // closed when cmd has been waited for
	waitErr error
	starts  int
}

// Options are extra settings for StartWith.
type Options struct {
	Args []string // appended after --listen, --data-dir and --http-listen, on every start
	Env  []string // KEY=value pairs added to the test's environment
}

// Start runs bin with --listen on a free loopback port and --data-dir dataDir, and returns once
// the server accepts connections. t.Cleanup stops it and, when t failed, logs its output's tail.
func Start(t testing.TB, bin, dataDir string) *Server {
	t.Helper()
	return StartWith(t, bin, dataDir, Options{})
}

// StartWith is Start with extra command-line arguments and environment.
func StartWith(t testing.TB, bin, dataDir string, opts Options) *Server {
	t.Helper()
	addrs, err := FreeAddrs(2) // two at once: never the same port twice
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Addr: addrs[0], HTTPAddr: addrs[1], Bin: bin, DataDir: dataDir, LogPath: filepath.Join(t.TempDir(), "server.log"), opts: opts}
	began := time.Now()
	t.Cleanup(func() {
		if t.Failed() && s.Running() && time.Since(began) > 30*time.Second {
			// A long test that failed may have hung: the server's goroutines
			// tell where.
			t.Logf("the server's goroutines at the failure:\n%s", s.Goroutines())
		}
		if err := s.Stop(); err != nil {
			t.Errorf("stop server at %s: %v", s.Addr, err)
		}
		if t.Failed() {
			t.Logf("last lines of the server log %s:\n%s", s.LogPath, Tail(s.LogPath, logTailLines))
		}
	})
	err = s.start()
	for try := 0; err != nil && try < portRetries && s.portTaken(); try++ {
		// Another process took a port between FreeAddrs and the server's
		// listen (an outgoing connection's source port, say): new ones.
		addrs, ferr := FreeAddrs(2)
		if ferr != nil {
			t.Fatal(ferr)
		}
		s.Addr, s.HTTPAddr = addrs[0], addrs[1]
		err = s.start()
	}
	if err != nil {
		t.Fatalf("start server: %v\nlast lines of %s:\n%s", err, s.LogPath, Tail(s.LogPath, logTailLines))
	}
	return s
}

// portRetries is how often a start whose port was taken tries again.
const portRetries = 5

// portTaken reports whether the last start failed because an address it
// was to listen on was in use.
func (s *Server) portTaken() bool {
	b, err := os.ReadFile(s.LogPath)
	if err != nil {
		return false
	}
	text := string(b)
	if i := strings.LastIndex(text, "=== testserver: start #"); i >= 0 {
		text = text[i:]
	}
	return strings.Contains(text, "address already in use")
}

// DSN is a connection string for database dev on this server.
func (s *Server) DSN() string {
	return fmt.Sprintf("postgres://tributary@%s/dev?sslmode=disable&connect_timeout=10", s.Addr)
}

// Goroutines returns the running server's goroutine stacks, grouped (pprof's debug=1 form), or
// why they could not be read.
func (s *Server) Goroutines() string {
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + s.HTTPAddr + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		return fmt.Sprintf("(goroutines unavailable: %v)", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Sprintf("(goroutines unavailable: %v)", err)
	}
	return string(b)
}

// stacksOf returns the goroutine dump at the end of the log at path (from its
// "SIGQUIT" line), at most 400 lines of it.
func stacksOf(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(log unreadable: %v)", err)
	}
	text := string(b)
	if i := strings.LastIndex(text, "SIGQUIT"); i >= 0 {
		text = text[i:]
	}
	lines := strings.Split(text, "\n")
	if len(lines) > 400 {
		lines = lines[:400]
	}
	return strings.Join(lines, "\n")
}

// MetricsURL is the server's Prometheus endpoint.
func (s *Server) MetricsURL() string { return "http://" + s.HTTPAddr + "/metrics" }

// Running reports whether the process is up.
func (s *Server) Running() bool {
	if s.cmd == nil {
		return false
	}
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

func (s *Server) start() error {
	if s.Running() {
		return errors.New("already running")
	}
	s.starts++
	log, err := os.OpenFile(s.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open server log: %w", err)
	}
	defer log.Close() // the child has its own copy of the descriptor
	args := append([]string{"--listen", s.Addr, "--data-dir", s.DataDir, "--http-listen", s.HTTPAddr}, s.opts.Args...)
	fmt.Fprintf(log, "=== testserver: start #%d: %s %s\n", s.starts, s.Bin, strings.Join(args, " "))
	cmd := exec.Command(s.Bin, args...)
	cmd.Env = append(os.Environ(), s.opts.Env...)
	cmd.Stdout, cmd.Stderr = log, log
	// Die with the test binary (e.g. on a test timeout) instead of lingering.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("exec %s: %w", s.Bin, err)
	}
	s.cmd, s.exited, s.waitErr = cmd, make(chan struct{}), nil
	go func(exited chan struct{}) {
		s.waitErr = cmd.Wait()
		close(exited)
	}(s.exited)
	if err := WaitReady(context.Background(), s.DSN(), s.exited, readyTimeout); err != nil {
		if s.Running() {
			// Stuck starting: SIGQUIT makes Go write every goroutine's stack
			// to the log before the process ends.
			_ = s.signalAndWait(syscall.SIGQUIT, 5*time.Second)
			err = fmt.Errorf("%w; its goroutines at the timeout:\n%s", err, stacksOf(s.LogPath))
		}
		_ = s.signalAndWait(syscall.SIGKILL, stopTimeout) // do not leave a half-started process
		return fmt.Errorf("server at %s: %w", s.Addr, err)
	}
	return nil
}

// signalAndWait sends sig and waits up to timeout for the exit, then SIGKILLs.
func (s *Server) signalAndWait(sig syscall.Signal, timeout time.Duration) error {
	if !s.Running() {
		return nil
	}
	if err := s.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signal %v: %w", sig, err)
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-s.exited:
		return nil
	case <-t.C:
		_ = s.cmd.Process.Kill() // it ignored sig; the error is reported below
		<-s.exited
		return fmt.Errorf("no exit within %v of %v; killed", timeout, sig)
	}
}

// Signal sends sig to the running server (SIGHUP reloads its --hba-file).
func (s *Server) Signal(sig syscall.Signal) error {
	if !s.Running() {
		return errors.New("the server is not running")
	}
	if err := s.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("signal %v: %w", sig, err)
	}
	return nil
}

// Stop shuts the server down with SIGTERM and waits for it (SIGKILL after 30 s). It fails
// unless the process exits with status 0. Stopping a stopped server does nothing.
func (s *Server) Stop() error {
	if !s.Running() {
		return nil
	}
	if err := s.signalAndWait(syscall.SIGTERM, stopTimeout); err != nil {
		return err
	}
	if s.waitErr != nil {
		return fmt.Errorf("unclean shutdown on SIGTERM: %w", s.waitErr)
	}
	return nil
}

// Kill crashes the server with SIGKILL and waits for the process to be gone.
func (s *Server) Kill() error {
	return s.signalAndWait(syscall.SIGKILL, stopTimeout)
}

// Restart stops the server (SIGTERM) when it still runs, starts it again on the same address
// and data directory, and waits until it accepts connections. Call Kill first for a crash
// restart.
func (s *Server) Restart() error {
	if err := s.Stop(); err != nil {
		return err
	}
	err := s.start()
	// The address is kept across restarts: while another process holds one
	// of its ports (an outgoing connection's source port, say), try again.
	for try := 0; err != nil && try < portRetries && s.portTaken(); try++ {
		time.Sleep(time.Duration(try+1) * 200 * time.Millisecond)
		err = s.start()
	}
	if err != nil {
		return fmt.Errorf("%w\nlast lines of %s:\n%s", err, s.LogPath, Tail(s.LogPath, logTailLines))
	}
	return nil
}
