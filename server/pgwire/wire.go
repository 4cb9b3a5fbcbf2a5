package pgwire

import (
	"encoding/binary"
	"fmt"
	"io"
	"sync"

	"github.com/jackc/pgx/v5/pgproto3"
)

// flushThreshold is the output size after which rows are written to the socket
// even though the client has not asked for a flush yet.
const flushThreshold = 64 << 10

// wire is one connection's output buffer. Only whole messages are appended, always
// under mu, so a Notice sent from another goroutine never lands inside a message.
// A write error is sticky: later writes are dropped and flush reports it.
type wire struct {
	w  io.Writer
	mu struct {
		sync.Mutex
		buf []byte
		err error
	}
}

func newWire(w io.Writer) *wire {
	x := &wire{w: w}
	x.mu.buf = make([]byte, 0, 8<<10)
	return x
}

// send appends one encoded message.
func (w *wire) send(msg pgproto3.BackendMessage) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.sendLocked(msg)
}

func (w *wire) sendLocked(msg pgproto3.BackendMessage) {
	buf, err := msg.Encode(w.mu.buf)
	if err != nil {
		if w.mu.err == nil {
			w.mu.err = fmt.Errorf("encode %T: %w", msg, err)
		}
		return
	}
	w.mu.buf = buf
}

// setWriter makes w write to out from now on (the TLS connection after
// an SSLRequest); nothing is buffered then.
func (w *wire) setWriter(out io.Writer) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.w = out
}

// sendEmpty appends a message without a body (ParseComplete, BindComplete, NoData,
// CloseComplete, EmptyQueryResponse, PortalSuspended).
func (w *wire) sendEmpty(typ byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.mu.buf = append(w.mu.buf, typ, 0, 0, 0, 4)
}

// sendCommandComplete appends CommandComplete without converting tag to []byte.
func (w *wire) sendCommandComplete(tag string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	buf, start := beginMsg(w.mu.buf, 'C')
	buf = append(buf, tag...)
	buf = append(buf, 0)
	w.mu.buf = finishMsg(buf, start)
}

// sendReady appends ReadyForQuery and flushes.
func (w *wire) sendReady(status byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.mu.buf = append(w.mu.buf, 'Z', 0, 0, 0, 5, status)
	return w.flushLocked()
}

func (w *wire) flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.flushLocked()
}

func (w *wire) flushLocked() error {
	if w.mu.err != nil {
		w.mu.buf = w.mu.buf[:0]
		return w.mu.err
	}
	if len(w.mu.buf) == 0 {
		return nil
	}
	_, err := w.w.Write(w.mu.buf)
	if cap(w.mu.buf) > 4*flushThreshold {
		w.mu.buf = make([]byte, 0, flushThreshold)
	} else {
		w.mu.buf = w.mu.buf[:0]
	}
	if err != nil {
		w.mu.err = fmt.Errorf("write to client: %w", err)
	}
	return w.mu.err
}

// sendError appends an ErrorResponse (or a NoticeResponse when notice is set).
func (w *wire) sendError(severity string, pe pgError) {
	er := pgproto3.ErrorResponse{
		Severity:            severity,
		SeverityUnlocalized: severity,
		Code:                pe.Code,
		Message:             pe.Message,
		Detail:              pe.Detail,
		Hint:                pe.Hint,
		Where:               pe.Where,
		Position:            pe.Position,
	}
	w.send(&er)
}

// notice sends a NoticeResponse at once.
func (w *wire) notice(severity, code, msg string) {
	n := pgproto3.NoticeResponse{Severity: severity, SeverityUnlocalized: severity, Code: code, Message: msg}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.sendLocked(&n)
	_ = w.flushLocked() // a failed write is sticky and seen by the connection handler
}

func beginMsg(buf []byte, typ byte) ([]byte, int) {
	buf = append(buf, typ, 0, 0, 0, 0)
	return buf, len(buf) - 4
}

func finishMsg(buf []byte, start int) []byte {
	binary.BigEndian.PutUint32(buf[start:], uint32(len(buf)-start))
	return buf
}

// failed returns the sticky write error, if any.
func (w *wire) failed() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.mu.err
}
