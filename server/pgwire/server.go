package pgwire

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"
)

// Config holds the listener-independent server options.
type Config struct {
	// ServerVersion is reported as server_version; default "15.0".
	ServerVersion string
	// Logger receives connection-level events; default slog.Default().
	Logger *slog.Logger
	// MaxMessageSize caps one frontend message body; default 64 MiB. A larger
	// message closes the connection with FATAL 08P01.
	MaxMessageSize int
	// StartupTimeout bounds the time from accept to a completed startup
	// message: a client that has not finished it by then is closed; default 10s.
	StartupTimeout time.Duration
	// MaxConnections is max_connections: client connections past it, counted
	// from accept (before the startup message and authentication), are
	// refused with FATAL 53300 "sorry, too many clients already"; cancel
	// requests are still served. Default 100.
	MaxConnections int
	// Auth decides how a connecting user authenticates (auth.go); nil
	// trusts everyone.
	Auth func(AuthRequest) AuthDecision
	// TLS, when set, makes the server answer an SSLRequest with 'S' and
	// encrypt the connection (tls.go); nil answers 'N'.
	TLS *tls.Config
}

func (c *Config) setDefaults() {
	if c.ServerVersion == "" {
		c.ServerVersion = "15.0"
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.MaxMessageSize <= 0 {
		c.MaxMessageSize = 64 << 20
	}
	if c.StartupTimeout <= 0 {
		c.StartupTimeout = 10 * time.Second
	}
	if c.MaxConnections <= 0 {
		c.MaxConnections = 100
	}
}

// Server accepts PostgreSQL connections and serves each with a Session from its
// Factory.
type Server struct {
	cfg     Config
	factory Factory
	log     *slog.Logger

	ctx    context.Context // cancelled by Close: every running statement's parent
	cancel context.CancelFunc
	wg     sync.WaitGroup // connection handlers

	mu struct {
		sync.Mutex
		closed    bool
		listeners map[net.Listener]struct{}
		conns     map[uint32]*conn // by process id
		nextPID   uint32
		admitted  int // connections counted against MaxConnections
		refusing  int // connections past it, until they are told so
	}
}

// NewServer returns a server that creates sessions with f.
func NewServer(cfg Config, f Factory) *Server {
	cfg.setDefaults()
	s := &Server{cfg: cfg, factory: f, log: cfg.Logger}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.mu.listeners = make(map[net.Listener]struct{})
	s.mu.conns = make(map[uint32]*conn)
	s.mu.nextPID = 1000
	return s
}

// Serve accepts connections on ln until Close; it then returns nil. Other accept
// errors that persist are returned. Serve closes ln when it returns.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		_ = ln.Close()
		return nil
	}
	s.mu.listeners[ln] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.mu.listeners, ln)
		s.mu.Unlock()
		_ = ln.Close()
	}()

	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.isClosed() {
				return nil
			}
			if errors.Is(err, net.ErrClosed) {
				return fmt.Errorf("accept on %s: %w", ln.Addr(), err)
			}
			// Transient failures (e.g. out of file descriptors): back off and retry.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.log.Warn("pgwire: accept failed", "addr", ln.Addr().String(), "err", err, "retry_in", backoff)
			t := time.NewTimer(backoff)
			select {
			case <-t.C:
			case <-s.ctx.Done():
				t.Stop()
				return nil
			}
			continue
		}
		backoff = 0
		if !s.startConn(nc) {
			_ = nc.Close()
			return nil
		}
	}
}

// startConn registers nc and starts its handler; false when the server is closed.
func (s *Server) startConn(nc net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		return false
	}
	c := newConn(s, nc)
	switch {
	case s.mu.admitted < s.cfg.MaxConnections:
		s.mu.admitted++
	case s.mu.refusing < s.cfg.MaxConnections:
		// Read its startup packet (a cancel request is served) and refuse it.
		c.refused = true
		c.state.Store(int32(ConnRefused))
		s.mu.refusing++
	default:
		// As many again are already being refused: close at once, so idle
		// sockets cannot exhaust file descriptors.
		s.log.Warn("pgwire: too many connections, closing a new one unread", "remote", nc.RemoteAddr().String())
		_ = nc.Close()
		return true
	}
	c.pid = s.allocPIDLocked()
	c.secret = randomSecret()
	s.mu.conns[c.pid] = c
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer s.removeConn(c)
		c.serve()
	}()
	return true
}

func (s *Server) allocPIDLocked() uint32 {
	for {
		s.mu.nextPID++
		if s.mu.nextPID == 0 {
			s.mu.nextPID = 1000
		}
		if _, used := s.mu.conns[s.mu.nextPID]; !used {
			return s.mu.nextPID
		}
	}
}

func randomSecret() uint32 {
	var b [4]byte
	if _, err := io.ReadFull(rand.Reader, b[:]); err != nil {
		// crypto/rand does not fail on supported platforms; fall back to the clock.
		return uint32(time.Now().UnixNano())
	}
	return binary.BigEndian.Uint32(b[:])
}

func (s *Server) removeConn(c *conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.conns[c.pid] == c {
		delete(s.mu.conns, c.pid)
		if c.refused {
			s.mu.refusing--
		} else {
			s.mu.admitted--
		}
	}
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.closed
}

// cancelRequest cancels the statement running on connection pid when secret matches.
func (s *Server) cancelRequest(pid, secret uint32) {
	s.mu.Lock()
	c := s.mu.conns[pid]
	s.mu.Unlock()
	if c == nil {
		s.log.Debug("pgwire: cancel request for unknown process", "pid", pid)
		return
	}
	var a, b [4]byte
	binary.BigEndian.PutUint32(a[:], c.secret)
	binary.BigEndian.PutUint32(b[:], secret)
	if subtle.ConstantTimeCompare(a[:], b[:]) != 1 {
		s.log.Warn("pgwire: cancel request with a wrong secret key", "pid", pid)
		return
	}
	c.cancelRunning()
}

// Close stops accepting, closes every client connection (cancelling running
// statements) and waits for the connection handlers to finish.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		s.wg.Wait()
		return nil
	}
	s.mu.closed = true
	var errs []error
	for ln := range s.mu.listeners {
		if err := ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, fmt.Errorf("close listener %s: %w", ln.Addr(), err))
		}
	}
	conns := make([]*conn, 0, len(s.mu.conns))
	for _, c := range s.mu.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()

	s.cancel()
	for _, c := range conns {
		_ = c.nc.Close() // unblocks reads and writes; the handler cleans up
	}
	s.wg.Wait()
	return errors.Join(errs...)
}
