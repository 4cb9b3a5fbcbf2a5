package pgwire

import (
	"net"
	"sort"
	"strconv"
	"sync"
	"time"
)

// Activity is one client connection as pg_stat_activity shows it.
type Activity struct {
	PID             int32
	User, Database  string
	ApplicationName string
	ClientAddr      string // "" for a Unix socket
	ClientPort      int32  // -1 for a Unix socket
	State           ConnState
	Query           string // the running or the last statement's text
	BackendStart    time.Time
	QueryStart      time.Time // zero before the first statement
	StateChange     time.Time
}

// activity is what a connection records for Activity.
type activity struct {
	sync.Mutex
	user, database, app string
	backendStart        time.Time
	query               string
	queryStart          time.Time
	stateChange         time.Time
}

// began records a statement's start.
func (c *conn) began(sql string) {
	c.act.Lock()
	defer c.act.Unlock()
	c.act.query, c.act.queryStart = sql, time.Now()
}

// stateChanged records when the state last changed.
func (c *conn) stateChanged() {
	c.act.Lock()
	c.act.stateChange = time.Now()
	c.act.Unlock()
}

// Activity lists the client connections past their startup, by pid.
func (s *Server) Activity() []Activity {
	s.mu.Lock()
	conns := make([]*conn, 0, len(s.mu.conns))
	for _, c := range s.mu.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	out := make([]Activity, 0, len(conns))
	for _, c := range conns {
		st := ConnState(c.state.Load())
		if st == ConnStartup || st == ConnRefused {
			continue
		}
		a := Activity{PID: int32(c.pid), State: st, ClientPort: -1}
		if host, port, err := net.SplitHostPort(c.nc.RemoteAddr().String()); err == nil {
			a.ClientAddr = host
			if p, err := strconv.Atoi(port); err == nil {
				a.ClientPort = int32(p)
			}
		}
		c.act.Lock()
		a.User, a.Database, a.ApplicationName = c.act.user, c.act.database, c.act.app
		a.BackendStart, a.Query, a.QueryStart, a.StateChange = c.act.backendStart, c.act.query, c.act.queryStart, c.act.stateChange
		c.act.Unlock()
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out
}

// Signal cancels the statement running on connection pid or, with
// terminate, ends the connection (after its running statement is
// cancelled, with FATAL 57P01): pg_cancel_backend and pg_terminate_backend.
// False when no such connection exists.
func (s *Server) Signal(pid int32, terminate bool) bool {
	s.mu.Lock()
	c := s.mu.conns[uint32(pid)]
	s.mu.Unlock()
	if c == nil || ConnState(c.state.Load()) == ConnStartup || ConnState(c.state.Load()) == ConnRefused {
		return false
	}
	if terminate {
		c.terminated.Store(true)
		// Wake a connection waiting for its client's next message.
		_ = c.nc.SetReadDeadline(time.Now())
	}
	c.cancelRunning()
	return true
}

// terminate ends a connection pg_terminate_backend named.
func (c *conn) terminate() {
	c.fatal(pgError{Code: codeAdminShutdown, Message: "terminating connection due to administrator command"})
}
