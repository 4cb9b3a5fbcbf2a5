package pgwire

// ConnState is a client connection's state, as PostgreSQL's
// pg_stat_activity.state names it (plus startup and refused).
type ConnState int32

const (
	ConnStartup           ConnState = iota // before the session exists (startup, auth)
	ConnIdle                               // waiting for a command
	ConnActive                             // running a statement
	ConnIdleInTransaction                  // waiting, inside a transaction block
	ConnRefused                            // past max_connections, being told so
	numConnStates
)

// String is the state's name: "startup", "idle", "active",
// "idle in transaction" or "refused".
func (s ConnState) String() string {
	switch s {
	case ConnStartup:
		return "startup"
	case ConnIdle:
		return "idle"
	case ConnActive:
		return "active"
	case ConnIdleInTransaction:
		return "idle in transaction"
	case ConnRefused:
		return "refused"
	}
	return "unknown"
}

// ConnCounts returns how many client connections are in each state: every
// state appears, with 0 when none is in it.
func (s *Server) ConnCounts() map[ConnState]int {
	out := make(map[ConnState]int, numConnStates)
	for st := ConnStartup; st < numConnStates; st++ {
		out[st] = 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.mu.conns {
		out[ConnState(c.state.Load())]++
	}
	return out
}

// setIdle marks the connection idle, or idle in a transaction (after a
// statement or the startup).
func (c *conn) setIdle() {
	if c.sess != nil && c.sess.TxStatus() != 'I' {
		c.state.Store(int32(ConnIdleInTransaction))
		return
	}
	c.state.Store(int32(ConnIdle))
}
