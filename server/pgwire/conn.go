package pgwire

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/tributary/tributary/sql/types"
)

// conn is one client connection. Everything but mu is owned by the handler goroutine.
type conn struct {
	srv *Server
	// nc is the accepted socket (closed, and given deadlines, from any
	// goroutine); rw is what the protocol reads and writes: nc, or the TLS
	// connection over it after an SSLRequest (tls.go).
	nc, rw      net.Conn
	tlsState    *tls.ConnectionState // nil without TLS
	log         *slog.Logger
	pid, secret uint32
	// refused is set for a connection past MaxConnections: after its startup
	// packet it is told so and closed.
	refused bool
	w       *wire
	be      *pgproto3.Backend
	sess    Session
	enc     rowEncoder

	stmts   map[string]*prepared
	portals map[string]*portal
	// paramBuf holds the parameters of paramOwner, the last unnamed portal
	// of a statement without result columns (paramsFor): the next such
	// portal reuses it once that one has run to completion and is closed,
	// so a bulk INSERT's thousands of parameters go into memory still in
	// the CPU's caches instead of a fresh allocation each time.
	paramBuf   []types.Datum
	paramOwner *portal
	// skipTillSync is set by an error in an extended-protocol message: every
	// message but Sync and Terminate is then discarded, as PostgreSQL does.
	skipTillSync bool

	mu struct {
		sync.Mutex
		cancel context.CancelFunc // cancels the running statement; nil when idle
	}
	// state is a ConnState, read by Server.ConnCounts.
	state atomic.Int32
	// act is what pg_stat_activity shows (Server.Activity); terminated is
	// set by pg_terminate_backend (Server.Signal).
	act        activity
	terminated atomic.Bool
}

// prepared is a statement created by a Parse message.
type prepared struct {
	name   string
	sql    string
	st     Statement // nil for an empty query
	params []types.T
	cols   []Column
}

// portal is a bound statement created by a Bind message.
type portal struct {
	name    string
	stmt    *prepared
	params  []types.Datum
	formats []int16 // per result column; nil = all text
	ctx     context.Context
	cancel  context.CancelFunc
	res     Result // nil until the first Execute and after completion
	cols    []Column
	cur     cursor
	started bool
	done    bool
	// suspended is set once an Execute stopped at its row limit.
	suspended bool
}

// cursor is the position in a result's current chunk.
type cursor struct {
	ch  *types.Chunk
	row int
}

func newConn(s *Server, nc net.Conn) *conn {
	return &conn{
		srv:     s,
		nc:      nc,
		rw:      nc,
		log:     s.log,
		w:       newWire(nc),
		stmts:   make(map[string]*prepared),
		portals: make(map[string]*portal),
	}
}

// serve runs the connection until the client leaves, a protocol error, or Close.
func (c *conn) serve() {
	c.log = c.log.With("pid", c.pid, "remote", c.nc.RemoteAddr().String())
	defer func() {
		if r := recover(); r != nil {
			c.log.Error("pgwire: panic in connection handler", "panic", r, "stack", string(debug.Stack()))
			c.fatal(pgError{Code: codeInternal, Message: fmt.Sprintf("internal error: %v", r)})
		}
		c.cleanup()
		_ = c.nc.Close()
	}()
	if err := c.nc.SetDeadline(time.Now().Add(c.srv.cfg.StartupTimeout)); err != nil {
		return
	}
	if !c.startup() {
		return
	}
	if err := c.nc.SetDeadline(time.Time{}); err != nil {
		return
	}
	c.backend() // authentication may have made it
	c.loop()
}

// cleanup closes portals and the session; it tolerates panics from session code.
func (c *conn) cleanup() {
	defer func() {
		if r := recover(); r != nil {
			c.log.Error("pgwire: panic while closing a session", "panic", r, "stack", string(debug.Stack()))
		}
	}()
	for name := range c.portals {
		c.closePortal(name)
	}
	if c.sess != nil {
		c.sess.Close()
		c.sess = nil
	}
}

// fatal sends a FATAL error and flushes; the caller then closes the connection.
func (c *conn) fatal(pe pgError) {
	c.w.sendError("FATAL", pe)
	_ = c.w.flush()
}

func (c *conn) loop() {
	for {
		idle := c.idleDeadline()
		if c.terminated.Load() { // checked after any deadline is set: Signal sets its own after the flag
			c.terminate()
			return
		}
		msg, err := c.be.Receive()
		if c.terminated.Load() {
			c.terminate()
			return
		}
		var ne net.Error
		if err != nil && idle && errors.As(err, &ne) && ne.Timeout() {
			c.log.Info("pgwire: closing a connection idle in a transaction", "idle_in_transaction_session_timeout", c.sess.(Timeouts).IdleInTransactionTimeout())
			c.fatal(pgError{Code: codeIdleInTxTimeout, Message: "terminating connection due to idle-in-transaction timeout"})
			return
		}
		if err != nil {
			c.receiveFailed(err)
			return
		}
		if idle {
			if err := c.nc.SetReadDeadline(time.Time{}); err != nil {
				return
			}
		}
		if c.skipTillSync {
			switch msg.(type) {
			case *pgproto3.Sync, *pgproto3.Terminate:
			default:
				continue
			}
		}
		switch m := msg.(type) {
		case *pgproto3.Query:
			c.simpleQuery(m.String)
		case *pgproto3.Parse:
			c.extended(c.guard("Parse", func() error { return c.handleParse(m) }))
		case *pgproto3.Bind:
			c.extended(c.guard("Bind", func() error { return c.handleBind(m) }))
		case *pgproto3.Describe:
			c.extended(c.guard("Describe", func() error { return c.handleDescribe(m) }))
		case *pgproto3.Execute:
			c.extended(c.handleExecute(m))
		case *pgproto3.Close:
			c.extended(c.guard("Close", func() error { return c.handleClose(m) }))
		case *pgproto3.Sync:
			c.skipTillSync = false
			c.endOfTransaction()
			_ = c.w.sendReady(c.sess.TxStatus())
		case *pgproto3.Flush:
			_ = c.w.flush()
		case *pgproto3.Terminate:
			return
		case *pgproto3.CopyData, *pgproto3.CopyDone, *pgproto3.CopyFail:
			// Accepted and ignored, as PostgreSQL does: a COPY failed and the client
			// is still sending its data.
		case *pgproto3.FunctionCall:
			c.w.sendError("ERROR", pgError{Code: codeFeatureNotSupported, Message: "function call protocol is not supported"})
			_ = c.w.sendReady(c.sess.TxStatus())
		default:
			c.fatal(pgError{Code: codeProtocolViolation, Message: fmt.Sprintf("invalid frontend message type %T", msg)})
			return
		}
		if err := c.w.failed(); err != nil {
			c.log.Debug("pgwire: connection write failed", "err", err)
			return
		}
		if c.terminated.Load() {
			c.terminate()
			return
		}
	}
}

// guard runs one message's statement work. A panic in it (a bug in the
// session, planner or executor) fails that statement alone with ERROR XX000:
// it is logged with its stack, the session hears of it (Recoverer) and the
// connection goes on, as PostgreSQL reports an internal error. Panics outside
// statement work still end the connection (serve's recover).
func (c *conn) guard(what string, f func() error) (err error) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		c.log.Error("pgwire: panic in statement", "message", what, "panic", r, "stack", string(debug.Stack()))
		if rc, ok := c.sess.(Recoverer); ok {
			rc.Recovered()
		}
		err = types.Errorf(types.ErrInternal, "internal error: %v", r)
	}()
	return f()
}

// receiveFailed ends the connection after a failed read: quietly when the client
// went away, with FATAL 08P01 when it sent something malformed.
func (c *conn) receiveFailed(err error) {
	var ne net.Error
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) || errors.As(err, &ne) {
		c.log.Debug("pgwire: connection closed", "err", err)
		return
	}
	c.log.Info("pgwire: protocol violation, closing connection", "err", err)
	c.fatal(pgError{Code: codeProtocolViolation, Message: "invalid frontend message: " + err.Error()})
}

// extended finishes an extended-protocol message: an error is reported and the
// following messages are skipped until Sync.
func (c *conn) extended(err error) {
	if err == nil {
		return
	}
	c.w.sendError("ERROR", toPgError(err))
	c.skipTillSync = true
}

// maxWireCount is the most parameters or result columns the protocol can
// describe: ParameterDescription and RowDescription count them in 16 bits.
const maxWireCount = 65535

// checkCounts refuses a statement with more parameters or result columns than
// the protocol can carry (54000) rather than fail to encode its description
// and drop the connection.
func checkCounts(params, cols int) error {
	if params > maxWireCount {
		return types.Errorf(types.ErrProgramLimit, "number of parameters must be between 0 and %d", maxWireCount)
	}
	if cols > maxWireCount {
		return types.Errorf(types.ErrTooManyColumns, "target lists can have at most %d entries", maxWireCount)
	}
	return nil
}

// setRunning makes cancel the target of cancel requests (nil: nothing runs).
func (c *conn) setRunning(cancel context.CancelFunc) {
	if cancel != nil {
		c.state.Store(int32(ConnActive))
	} else {
		c.setIdle()
	}
	c.stateChanged()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.cancel = cancel
}

// cancelRunning cancels the running statement, if any (from a CancelRequest).
func (c *conn) cancelRunning() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.cancel != nil {
		c.mu.cancel()
	}
}

// endOfTransaction drops every portal once the session is idle: portals live no
// longer than their transaction.
func (c *conn) endOfTransaction() {
	if c.sess.TxStatus() != 'I' {
		return
	}
	for name := range c.portals {
		c.closePortal(name)
	}
}

// armStatementTimeout cancels a statement (through cancel) once the
// session's statement_timeout passes. The returned stop disarms it and
// reports whether it fired; the caller then turns the statement's error into
// errStatementTimeout.
func (c *conn) armStatementTimeout(cancel context.CancelFunc) (stop func() bool) {
	ts, ok := c.sess.(Timeouts)
	if !ok {
		return func() bool { return false }
	}
	d := ts.StatementTimeout()
	if d <= 0 {
		return func() bool { return false }
	}
	var fired atomic.Bool
	t := time.AfterFunc(d, func() {
		fired.Store(true)
		cancel()
	})
	return func() bool {
		t.Stop()
		return fired.Load()
	}
}

func errStatementTimeout() error {
	return types.Errorf(types.ErrQueryCanceled, "canceling statement due to statement timeout")
}

// idleDeadline sets a read deadline for the wait for the next message when
// the session is in a transaction block and has an
// idle_in_transaction_session_timeout; it reports whether it set one.
func (c *conn) idleDeadline() bool {
	ts, ok := c.sess.(Timeouts)
	if !ok || c.sess.TxStatus() == 'I' {
		return false
	}
	d := ts.IdleInTransactionTimeout()
	if d <= 0 {
		return false
	}
	return c.nc.SetReadDeadline(time.Now().Add(d)) == nil
}

func errCanceled() error {
	return types.Errorf(types.ErrQueryCanceled, "canceling statement due to user request")
}

// simpleQuery runs a Query message: each statement in turn with text results; the
// first error stops the rest; one ReadyForQuery at the end.
func (c *conn) simpleQuery(sql string) {
	c.closePortal("")
	delete(c.stmts, "")
	ctx, cancel := context.WithCancel(c.srv.ctx)
	c.began(sql)
	c.setRunning(cancel)
	timedOut := c.armStatementTimeout(cancel)
	err := c.guard("Query", func() error { return c.runSimple(ctx, sql) })
	if timedOut() && err != nil {
		err = errStatementTimeout()
	}
	c.setRunning(nil)
	cancel()
	if c.terminated.Load() {
		return // the loop ends the connection
	}
	if err != nil {
		c.w.sendError("ERROR", toPgError(err))
	}
	c.endOfTransaction()
	_ = c.w.sendReady(c.sess.TxStatus())
}

func (c *conn) runSimple(ctx context.Context, sql string) error {
	if err := checkText(sql); err != nil {
		return err
	}
	stmts, err := c.sess.Parse(ctx, sql, nil)
	if err != nil {
		return err
	}
	if len(stmts) == 0 {
		c.w.sendEmpty('I') // EmptyQueryResponse
		return nil
	}
	for _, st := range stmts {
		params, _, err := st.Describe(ctx)
		if err != nil {
			return err
		}
		if len(params) > 0 {
			return types.Errorf(types.ErrUndefinedParameter, "there is no parameter $1")
		}
		if err := c.runToEnd(ctx, st); err != nil {
			return err
		}
	}
	return nil
}

// runToEnd runs st without parameters and sends its rows in text format.
func (c *conn) runToEnd(ctx context.Context, st Statement) error {
	res, err := st.Run(ctx, nil)
	if err != nil {
		return err
	}
	defer res.Close()
	if ok, err := c.runCopy(ctx, res); ok {
		return err
	}
	cols := res.Columns()
	if err := checkCounts(0, len(cols)); err != nil {
		return err
	}
	if cols != nil {
		c.w.send(rowDescription(cols, nil))
	}
	var cur cursor
	if _, _, err := c.sendRows(ctx, res, &cur, cols, nil, 0); err != nil {
		return err
	}
	c.w.sendCommandComplete(res.Tag())
	return nil
}

// sendRows sends DataRows from res, resuming at cur, until the end of the result
// (eof) or max rows (0 = no limit). It never calls Next once max rows are sent.
func (c *conn) sendRows(ctx context.Context, res Result, cur *cursor, cols []Column, formats []int16, max int) (sent int, eof bool, err error) {
	for {
		if max > 0 && sent >= max {
			return sent, false, nil
		}
		if cur.ch == nil || cur.row >= cur.ch.Len() {
			if ctx.Err() != nil {
				return sent, false, errCanceled()
			}
			ch, err := res.Next(ctx)
			if err == io.EOF {
				*cur = cursor{}
				return sent, true, nil
			}
			if err != nil {
				return sent, false, err
			}
			if err := checkChunk(ch, cols); err != nil {
				return sent, false, err
			}
			*cur = cursor{ch: ch}
			continue
		}
		limit := 0
		if max > 0 {
			limit = max - sent
		}
		n, err := c.encodeRows(cur, cols, formats, limit)
		sent += n
		if err != nil {
			return sent, false, err
		}
	}
}

// encodeRows appends up to limit (0 = all) visible rows of the current chunk,
// holding the output lock for the whole batch.
func (c *conn) encodeRows(cur *cursor, cols []Column, formats []int16, limit int) (int, error) {
	w := c.w
	w.mu.Lock()
	defer w.mu.Unlock()
	ch := cur.ch
	n := 0
	for cur.row < ch.Len() && (limit == 0 || n < limit) {
		i := cur.row
		cur.row++
		if !ch.Visible(i) {
			continue
		}
		buf, err := c.enc.appendDataRow(w.mu.buf, ch, i, cols, formats)
		w.mu.buf = buf
		if err != nil {
			return n, err
		}
		n++
		if len(w.mu.buf) >= flushThreshold {
			if err := w.flushLocked(); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

func (c *conn) handleParse(m *pgproto3.Parse) error {
	if m.Name == "" {
		delete(c.stmts, "")
	} else if _, ok := c.stmts[m.Name]; ok {
		return wireErrorf(codeDuplicateStatement, "prepared statement %q already exists", m.Name)
	}
	if err := checkText(m.Query); err != nil {
		return err
	}
	declared := make([]types.T, len(m.ParameterOIDs))
	for i, oid := range m.ParameterOIDs {
		t, ok := types.FromOID(oid)
		if !ok {
			return types.Errorf(types.ErrUndefinedObject, "type with OID %d does not exist", oid)
		}
		declared[i] = t
	}
	ctx, cancel := context.WithCancel(c.srv.ctx)
	c.setRunning(cancel)
	defer func() {
		c.setRunning(nil)
		cancel()
	}()
	stmts, err := c.sess.Parse(ctx, m.Query, declared)
	if err != nil {
		return err
	}
	p := &prepared{name: m.Name, sql: m.Query}
	switch len(stmts) {
	case 0:
		p.params = declared
	case 1:
		params, cols, err := stmts[0].Describe(ctx)
		if err != nil {
			return err
		}
		for len(params) < len(declared) { // declared but unused parameters still count
			params = append(params, declared[len(params)])
		}
		if err := checkCounts(len(params), len(cols)); err != nil {
			return err
		}
		p.st, p.params, p.cols = stmts[0], params, cols
	default:
		return wireErrorf(codeSyntax, "cannot insert multiple commands into a prepared statement")
	}
	c.stmts[m.Name] = p
	c.w.sendEmpty('1') // ParseComplete
	return nil
}

func (c *conn) handleBind(m *pgproto3.Bind) error {
	if m.DestinationPortal == "" {
		c.closePortal("")
	} else if _, ok := c.portals[m.DestinationPortal]; ok {
		return wireErrorf(codeDuplicatePortal, "portal %q already exists", m.DestinationPortal)
	}
	p, ok := c.stmts[m.PreparedStatement]
	if !ok {
		return wireErrorf(codeUndefinedStatement, "prepared statement %q does not exist", m.PreparedStatement)
	}
	n := len(p.params)
	if len(m.Parameters) != n {
		return wireErrorf(codeProtocolViolation, "bind message supplies %d parameters, but prepared statement %q requires %d",
			len(m.Parameters), m.PreparedStatement, n)
	}
	pf := m.ParameterFormatCodes
	if len(pf) > 1 && len(pf) != n {
		return wireErrorf(codeProtocolViolation, "bind message has %d parameter formats but %d parameters", len(pf), n)
	}
	var params []types.Datum
	reused := false
	if n > 0 {
		params, reused = c.paramsFor(m.DestinationPortal == "" && len(p.cols) == 0, n)
	}
	for i := range params {
		f := formatText
		switch len(pf) {
		case 1:
			f = pf[0]
		case n:
			f = pf[i]
		}
		if err := decodeParamInto(&params[i], p.params[i], f, m.Parameters[i], i); err != nil {
			return err
		}
	}
	formats, err := resultFormats(m.ResultFormatCodes, len(p.cols))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(c.srv.ctx)
	pt := &portal{name: m.DestinationPortal, stmt: p, params: params, formats: formats, ctx: ctx, cancel: cancel}
	c.portals[m.DestinationPortal] = pt
	if reused {
		c.paramOwner = pt
	}
	c.w.sendEmpty('2') // BindComplete
	return nil
}

// paramsFor returns room for n parameters: paramBuf's when reuse (an unnamed
// portal of a statement without result columns) and its last owner ran to
// completion and is closed (nothing of its statement still reads them), else
// a new slice; reused says which.
func (c *conn) paramsFor(reuse bool, n int) (params []types.Datum, reused bool) {
	if o := c.paramOwner; o != nil {
		switch open := c.portals[o.name] == o; {
		case open:
			reuse = false
		case !o.done:
			// Closed before it completed: its memory is not reused.
			c.paramBuf, c.paramOwner = nil, nil
		}
	}
	if !reuse {
		return make([]types.Datum, n), false
	}
	if cap(c.paramBuf) < n {
		c.paramBuf = make([]types.Datum, n)
	}
	return c.paramBuf[:n], true
}

// resultFormats expands Bind's result format codes to one per column (nil = all text).
func resultFormats(codes []int16, ncols int) ([]int16, error) {
	for _, f := range codes {
		if f != formatText && f != formatBinary {
			return nil, types.Errorf(types.ErrInvalidParameter, "unsupported format code: %d", f)
		}
	}
	switch {
	case len(codes) == 0 || ncols == 0:
		if len(codes) > 1 {
			return nil, wireErrorf(codeProtocolViolation, "bind message has %d result formats but query has %d columns", len(codes), ncols)
		}
		return nil, nil
	case len(codes) == 1:
		if codes[0] == formatText {
			return nil, nil
		}
		out := make([]int16, ncols)
		for i := range out {
			out[i] = codes[0]
		}
		return out, nil
	case len(codes) == ncols:
		return append([]int16(nil), codes...), nil
	}
	return nil, wireErrorf(codeProtocolViolation, "bind message has %d result formats but query has %d columns", len(codes), ncols)
}

func (c *conn) handleDescribe(m *pgproto3.Describe) error {
	switch m.ObjectType {
	case 'S':
		p, ok := c.stmts[m.Name]
		if !ok {
			return wireErrorf(codeUndefinedStatement, "prepared statement %q does not exist", m.Name)
		}
		oids := make([]uint32, len(p.params))
		for i, t := range p.params {
			oids[i] = t.OID()
		}
		c.w.send(&pgproto3.ParameterDescription{ParameterOIDs: oids})
		c.describeRows(p.cols, nil)
	case 'P':
		pt, ok := c.portals[m.Name]
		if !ok {
			return wireErrorf(codeUndefinedPortal, "portal %q does not exist", m.Name)
		}
		c.describeRows(pt.stmt.cols, pt.formats)
	default:
		return wireErrorf(codeProtocolViolation, "invalid DESCRIBE message subtype %d", m.ObjectType)
	}
	return nil
}

func (c *conn) describeRows(cols []Column, formats []int16) {
	if cols == nil {
		c.w.sendEmpty('n') // NoData
		return
	}
	c.w.send(rowDescription(cols, formats))
}

func (c *conn) handleClose(m *pgproto3.Close) error {
	switch m.ObjectType {
	case 'S':
		delete(c.stmts, m.Name)
	case 'P':
		c.closePortal(m.Name)
	default:
		return wireErrorf(codeProtocolViolation, "invalid CLOSE message subtype %d", m.ObjectType)
	}
	c.w.sendEmpty('3') // CloseComplete
	return nil
}

// closePortal closes and forgets a portal (nothing when it does not exist).
func (c *conn) closePortal(name string) {
	p, ok := c.portals[name]
	if !ok {
		return
	}
	delete(c.portals, name)
	if p.res != nil {
		p.res.Close()
		p.res = nil
	}
	p.cancel()
}

func (c *conn) handleExecute(m *pgproto3.Execute) error {
	p, ok := c.portals[m.Portal]
	if !ok {
		return wireErrorf(codeUndefinedPortal, "portal %q does not exist", m.Portal)
	}
	if p.stmt.st == nil {
		c.w.sendEmpty('I') // EmptyQueryResponse
		return nil
	}
	err := c.guard("Execute", func() error { return c.execute(p, int(min(m.MaxRows, 1<<30))) })
	if err != nil {
		// The failed statement's portal does not survive; a result that
		// panicked may panic again as it closes.
		if cerr := c.guard("Close", func() error { c.closePortal(m.Portal); return nil }); cerr != nil {
			delete(c.portals, m.Portal)
			p.cancel()
		}
	}
	return err
}

func (c *conn) execute(p *portal, maxRows int) error {
	if p.done {
		if p.cols == nil {
			return types.Errorf(types.ErrFeatureNotReady, "portal %q cannot be run", p.name)
		}
		c.w.sendCommandComplete("SELECT 0")
		return nil
	}
	c.began(p.stmt.sql)
	c.setRunning(p.cancel)
	defer c.setRunning(nil)
	timedOut := c.armStatementTimeout(p.cancel)
	err := c.executeRun(p, maxRows)
	if timedOut() && err != nil {
		err = errStatementTimeout()
	}
	return err
}

func (c *conn) executeRun(p *portal, maxRows int) error {
	if !p.started {
		if err := p.ctx.Err(); err != nil {
			return errCanceled()
		}
		res, err := p.stmt.st.Run(p.ctx, p.params)
		if err != nil {
			return err
		}
		if ok, err := c.runCopy(p.ctx, res); ok {
			res.Close()
			p.started, p.done = true, true
			return err
		}
		p.res, p.started = res, true
		p.cols = res.Columns()
		if len(p.cols) != len(p.stmt.cols) || (p.cols == nil) != (p.stmt.cols == nil) {
			return types.Errorf(types.ErrInternal, "statement returned %d columns but was described with %d", len(p.cols), len(p.stmt.cols))
		}
	}
	sent, eof, err := c.sendRows(p.ctx, p.res, &p.cur, p.cols, p.formats, maxRows)
	if err != nil {
		return err
	}
	if !eof {
		p.suspended = true
		c.w.sendEmpty('s') // PortalSuspended
		return nil
	}
	tag := p.res.Tag()
	if p.suspended && strings.HasPrefix(tag, "SELECT ") {
		tag = "SELECT " + strconv.Itoa(sent) // rows of this Execute, as PostgreSQL reports
	}
	p.res.Close()
	p.res, p.done = nil, true
	c.w.sendCommandComplete(tag)
	return nil
}
