package pgwire

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/tributary/tributary/sql/types"
)

// CopySpec describes a COPY's data: the table named in error contexts, the
// columns the rows carry (in data order) and the format.
type CopySpec struct {
	Table   string
	Columns []Column
	Options CopyOptions
}

// CopyInResult is the Result of COPY ... FROM STDIN. pgwire sends
// CopyInResponse, takes the client's data (CopyData until CopyDone or
// CopyFail), then calls Load once with the decoded rows; Tag follows a
// successful Load.
type CopyInResult interface {
	Result
	CopyIn() CopySpec
	// Load writes every row src yields into the table in one statement: all
	// of them or, on an error, none.
	Load(ctx context.Context, src CopySource) error
}

// CopyOutResult is the Result of COPY ... TO STDOUT: its rows (Next) are
// sent as CopyData in the spec's format between CopyOutResponse and
// CopyDone; Tag follows.
type CopyOutResult interface {
	Result
	CopyOut() CopySpec
}

// copySpoolMemory is how much COPY data is held in memory before the rest
// goes to a temporary file.
const copySpoolMemory = 8 << 20

// runCopy runs res when it is a COPY result (handled = true), sending its
// CommandComplete on success.
func (c *conn) runCopy(ctx context.Context, res Result) (handled bool, err error) {
	switch r := res.(type) {
	case CopyInResult:
		return true, c.copyIn(ctx, r)
	case CopyOutResult:
		return true, c.copyOut(ctx, r)
	}
	return false, nil
}

func copyFormats(spec CopySpec) (int16, []uint16) {
	f := uint16(formatText)
	if spec.Options.Format == CopyBinary {
		f = uint16(formatBinary)
	}
	codes := make([]uint16, len(spec.Columns))
	for i := range codes {
		codes[i] = f
	}
	return int16(f), codes
}

// copyIn takes the client's COPY data into a spool (memory, then a
// temporary file) and only then loads it, so that a slow client never holds
// the engine's write path. On an error the rest of the data is drained, as
// PostgreSQL does, and the connection stays usable.
func (c *conn) copyIn(ctx context.Context, r CopyInResult) error {
	spec := r.CopyIn()
	overall, codes := copyFormats(spec)
	c.w.send(&pgproto3.CopyInResponse{OverallFormat: byte(overall), ColumnFormatCodes: codes})
	if err := c.w.flush(); err != nil {
		return err
	}
	sp := &copySpool{}
	defer sp.close()
	if err := c.receiveCopy(sp); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return errCanceled()
	}
	rd, err := sp.reader()
	if err != nil {
		return err
	}
	if err := r.Load(ctx, newCopyDecoderOpen(sp.reader, rd, spec.Table, spec.Columns, spec.Options)); err != nil {
		return err
	}
	c.w.sendCommandComplete(r.Tag())
	return nil
}

// receiveCopy reads CopyData into sp until CopyDone; CopyFail and other
// messages end it with an error. A failed read closes the connection (the
// handler's next read then ends it).
func (c *conn) receiveCopy(sp *copySpool) error {
	var spoolErr error
	for {
		msg, err := c.be.Receive()
		if err != nil {
			c.receiveFailed(err)
			_ = c.nc.Close()
			return fmt.Errorf("COPY from stdin: %w", err)
		}
		switch m := msg.(type) {
		case *pgproto3.CopyData:
			if spoolErr == nil {
				spoolErr = sp.write(m.Data)
			}
		case *pgproto3.CopyDone:
			return spoolErr
		case *pgproto3.CopyFail:
			return types.Errorf(types.ErrQueryCanceled, "COPY from stdin failed: %s", m.Message)
		case *pgproto3.Flush, *pgproto3.Sync:
			// PostgreSQL ignores them during COPY FROM STDIN.
		default:
			return wireErrorf(codeProtocolViolation, "unexpected message type 0x%02X during COPY from stdin", messageType(msg))
		}
	}
}

// messageType returns a frontend message's type byte.
func messageType(msg pgproto3.FrontendMessage) byte {
	b, err := msg.Encode(nil)
	if err != nil || len(b) == 0 {
		return 0
	}
	return b[0]
}

// copyOut sends res's rows as CopyData.
func (c *conn) copyOut(ctx context.Context, r CopyOutResult) error {
	spec := r.CopyOut()
	overall, codes := copyFormats(spec)
	c.w.send(&pgproto3.CopyOutResponse{OverallFormat: byte(overall), ColumnFormatCodes: codes})
	enc := &copyEncoder{opts: spec.Options}
	w := c.w
	appendData := func(f func([]byte) ([]byte, error)) error {
		w.mu.Lock()
		defer w.mu.Unlock()
		buf, start := beginMsg(w.mu.buf, 'd')
		buf, err := f(buf)
		if err != nil {
			w.mu.buf = buf[:start-1]
			return err
		}
		if len(buf) == start+4 { // nothing to send
			w.mu.buf = buf[:start-1]
			return nil
		}
		w.mu.buf = finishMsg(buf, start)
		if len(w.mu.buf) >= flushThreshold {
			return w.flushLocked()
		}
		return nil
	}
	if err := appendData(func(b []byte) ([]byte, error) { return enc.appendHeader(b, spec.Columns), nil }); err != nil {
		return err
	}
	for {
		if ctx.Err() != nil {
			return errCanceled()
		}
		ch, err := r.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if err := checkChunk(ch, spec.Columns); err != nil {
			return err
		}
		for i := 0; i < ch.Len(); i++ {
			if !ch.Visible(i) {
				continue
			}
			if err := appendData(func(b []byte) ([]byte, error) { return enc.appendRow(b, ch, i, spec.Columns) }); err != nil {
				return err
			}
		}
	}
	if err := appendData(func(b []byte) ([]byte, error) { return enc.appendTrailer(b), nil }); err != nil {
		return err
	}
	w.sendEmpty('c') // CopyDone
	w.sendCommandComplete(r.Tag())
	return nil
}

// copySpool holds COPY FROM data: in memory up to copySpoolMemory, then in a
// temporary file that close removes.
type copySpool struct {
	mem  []byte
	file *os.File
}

func (s *copySpool) write(p []byte) error {
	if s.file == nil && len(s.mem)+len(p) <= copySpoolMemory {
		s.mem = append(s.mem, p...)
		return nil
	}
	if s.file == nil {
		f, err := os.CreateTemp("", "tributary-copy-*")
		if err != nil {
			return types.Errorf(types.ErrInsufficientRes, "COPY: cannot spool the data to a temporary file: %v", err)
		}
		s.file = f
		if _, err := f.Write(s.mem); err != nil {
			return types.Errorf(types.ErrInsufficientRes, "COPY: spool the data: %v", err)
		}
		s.mem = nil
	}
	if _, err := s.file.Write(p); err != nil {
		return types.Errorf(types.ErrInsufficientRes, "COPY: spool the data: %v", err)
	}
	return nil
}

// reader reads the spooled data from the start.
func (s *copySpool) reader() (io.Reader, error) {
	if s.file == nil {
		return bytes.NewReader(s.mem), nil
	}
	if _, err := s.file.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("COPY: rewind the spool: %w", err)
	}
	return s.file, nil
}

func (s *copySpool) close() {
	s.mem = nil
	if s.file != nil {
		name := s.file.Name()
		_ = s.file.Close()
		_ = os.Remove(name)
		s.file = nil
	}
}
