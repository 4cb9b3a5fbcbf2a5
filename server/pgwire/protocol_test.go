package pgwire

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

// rawConn is a hand-driven protocol client for exchanges pgx does not produce.
type rawConn struct {
	t  *testing.T
	nc net.Conn
	fe *pgproto3.Frontend
}

func dialRaw(t *testing.T, ts *testServer) *rawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", ts.addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.SetDeadline(time.Now().Add(20 * time.Second)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	return &rawConn{t: t, nc: nc, fe: pgproto3.NewFrontend(nc, nc)}
}

// startup performs a plain 3.0 startup and returns the messages up to ReadyForQuery.
func (r *rawConn) startup() string {
	r.send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30,
		Parameters: map[string]string{"user": "tester", "database": "db"}})
	return r.untilReady()
}

func (r *rawConn) send(msgs ...pgproto3.FrontendMessage) {
	r.t.Helper()
	for _, m := range msgs {
		r.fe.Send(m)
	}
	if err := r.fe.Flush(); err != nil {
		r.t.Fatalf("send: %v", err)
	}
}

// recv returns the summary of the next message, or "EOF" when the server closed.
func (r *rawConn) recv() string {
	r.t.Helper()
	m, err := r.fe.Receive()
	if err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF || strings.Contains(err.Error(), "EOF") ||
			strings.Contains(err.Error(), "connection reset") {
			return "EOF"
		}
		r.t.Fatalf("receive: %v", err)
	}
	return summarize(m)
}

// untilReady collects message summaries up to ReadyForQuery or EOF.
func (r *rawConn) untilReady() string {
	r.t.Helper()
	var out []string
	for {
		s := r.recv()
		if strings.HasPrefix(s, "ParameterStatus") || strings.HasPrefix(s, "BackendKeyData") {
			continue
		}
		out = append(out, s)
		if strings.HasPrefix(s, "ReadyForQuery") || s == "EOF" {
			return strings.Join(out, "\n")
		}
	}
}

func (r *rawConn) expect(got, want string) {
	r.t.Helper()
	want = strings.TrimSpace(want)
	if got != want {
		r.t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
}

func summarize(m pgproto3.BackendMessage) string {
	switch m := m.(type) {
	case *pgproto3.ErrorResponse:
		return fmt.Sprintf("Error %s %s %s", m.Severity, m.Code, m.Message)
	case *pgproto3.RowDescription:
		var f []string
		for _, d := range m.Fields {
			f = append(f, fmt.Sprintf("%s:%d:%d:%d:%d", d.Name, d.DataTypeOID, d.DataTypeSize, d.TypeModifier, d.Format))
		}
		return "RowDescription " + strings.Join(f, " ")
	case *pgproto3.DataRow:
		var f []string
		for _, v := range m.Values {
			if v == nil {
				f = append(f, "NULL")
			} else {
				f = append(f, fmt.Sprintf("%q", v))
			}
		}
		return "DataRow " + strings.Join(f, " ")
	case *pgproto3.CommandComplete:
		return "CommandComplete " + string(m.CommandTag)
	case *pgproto3.ReadyForQuery:
		return "ReadyForQuery " + string(m.TxStatus)
	case *pgproto3.ParameterDescription:
		return fmt.Sprintf("ParameterDescription %v", m.ParameterOIDs)
	case *pgproto3.NegotiateProtocolVersion:
		return fmt.Sprintf("NegotiateProtocolVersion %d %v", m.NewestMinorProtocol, m.UnrecognizedOptions)
	case *pgproto3.NoticeResponse:
		return fmt.Sprintf("Notice %s %s %s", m.Severity, m.Code, m.Message)
	}
	return strings.TrimPrefix(fmt.Sprintf("%T", m), "*pgproto3.")
}

func rawPacket(code uint32, body ...byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(8+len(body)))
	b = binary.BigEndian.AppendUint32(b, code)
	return append(b, body...)
}

func TestStartupNegotiation(t *testing.T) {
	ts := startServer(t, Config{})
	t.Run("ssl and gss refused", func(t *testing.T) {
		r := dialRaw(t, ts)
		for _, code := range []uint32{sslRequestCode, gssEncRequestCode} {
			if _, err := r.nc.Write(rawPacket(code)); err != nil {
				t.Fatal(err)
			}
			var b [1]byte
			if _, err := io.ReadFull(r.nc, b[:]); err != nil || b[0] != 'N' {
				t.Fatalf("answer %q %v", b, err)
			}
		}
		r.expect(r.startup(), "AuthenticationOk\nReadyForQuery I")
	})
	t.Run("protocol 2.0", func(t *testing.T) {
		r := dialRaw(t, ts)
		if _, err := r.nc.Write(rawPacket(2<<16, 'u', 0, 0)); err != nil {
			t.Fatal(err)
		}
		r.expect(r.untilReady(), `
Error FATAL 0A000 unsupported frontend protocol 2.0: server supports 3.0 to 3.0
EOF`)
	})
	t.Run("protocol 3.2 negotiated down", func(t *testing.T) {
		r := dialRaw(t, ts)
		body := []byte("user\x00tester\x00_pq_.x\x001\x00\x00")
		if _, err := r.nc.Write(rawPacket(3<<16|2, body...)); err != nil {
			t.Fatal(err)
		}
		r.expect(r.untilReady(), "NegotiateProtocolVersion 0 [_pq_.x]\nAuthenticationOk\nReadyForQuery I")
	})
	t.Run("no user", func(t *testing.T) {
		r := dialRaw(t, ts)
		if _, err := r.nc.Write(rawPacket(3<<16, 'd', 'a', 't', 'a', 'b', 'a', 's', 'e', 0, 'x', 0, 0)); err != nil {
			t.Fatal(err)
		}
		r.expect(r.untilReady(), "Error FATAL 28000 no PostgreSQL user name specified in startup packet\nEOF")
	})
	t.Run("bad length", func(t *testing.T) {
		r := dialRaw(t, ts)
		if _, err := r.nc.Write([]byte{0, 0, 0, 2}); err != nil {
			t.Fatal(err)
		}
		r.expect(r.untilReady(), "Error FATAL 08P01 invalid length of startup packet\nEOF")
	})
	t.Run("unterminated params", func(t *testing.T) {
		r := dialRaw(t, ts)
		if _, err := r.nc.Write(rawPacket(3<<16, 'u', 's', 'e', 'r', 0, 'x')); err != nil {
			t.Fatal(err)
		}
		r.expect(r.untilReady(), "Error FATAL 08P01 invalid startup packet layout: expected terminator as last byte\nEOF")
	})
}

func TestSimpleQueryMessages(t *testing.T) {
	ts := startServer(t, Config{})
	r := dialRaw(t, ts)
	r.startup()
	r.send(&pgproto3.Query{String: " ; "})
	r.expect(r.untilReady(), "EmptyQueryResponse\nReadyForQuery I")

	r.send(&pgproto3.Query{String: "select  '7' ::int; create temp table tt(a int, b text, c timestamptz, d numeric); select gen($1)"})
	r.expect(r.untilReady(), `
RowDescription int4:23:4:-1:0
DataRow "7"
CommandComplete SELECT 1
CommandComplete CREATE TABLE
Error ERROR 42P02 there is no parameter $1
ReadyForQuery I`)

	r.send(&pgproto3.Query{String: "begin; fail; select  '7' ::int"})
	r.expect(r.untilReady(), `
CommandComplete BEGIN
Error ERROR 22000 deliberate failure
ReadyForQuery E`)
	r.send(&pgproto3.Query{String: "commit"})
	r.expect(r.untilReady(), "CommandComplete ROLLBACK\nReadyForQuery I")

	r.send(&pgproto3.Query{String: "select types"})
	r.expect(r.untilReady(), `
RowDescription i8:20:8:-1:0 f8:701:8:-1:0 num:1700:-1:-1:0 b:16:1:-1:0 txt:1043:-1:-1:0 by:17:-1:-1:0 tstz:1184:8:-1:0 d:1082:4:-1:0 iv:1186:16:-1:0 tm:1083:8:-1:0 j:3802:-1:-1:0 i2:21:2:-1:0 i4:23:4:-1:0 f4:700:4:-1:0 ts:1114:8:-1:0
DataRow "-9007199254740993" "3.25" "-12345.678900" "t" "héllo" "\\x0001ff" "2024-02-29 12:34:56.789012+00" "1999-12-31" "1 year 2 mons 3 days 04:05:06.5" "13:14:15.5" "{\"a\": [1, 2.5, null], \"bb\": \"x\"}" "-32768" "2147483647" "1.5" "1969-07-20 20:17:40"
DataRow NULL NULL NULL NULL NULL NULL NULL NULL NULL NULL NULL NULL NULL NULL NULL
CommandComplete SELECT 2
ReadyForQuery I`)

	// COPY data after a refused COPY is ignored; so is a FunctionCall.
	r.send(&pgproto3.Query{String: "copy t from stdin"}, &pgproto3.CopyData{Data: []byte("1\n")}, &pgproto3.CopyDone{})
	r.expect(r.untilReady(), "Error ERROR 0A000 COPY FROM STDIN is not supported\nReadyForQuery I")
	r.send(&pgproto3.FunctionCall{Function: 1})
	r.expect(r.untilReady(), "Error ERROR 0A000 function call protocol is not supported\nReadyForQuery I")

	r.send(&pgproto3.Terminate{})
	r.expect(r.recv(), "EOF")
}

func TestExtendedProtocolMessages(t *testing.T) {
	ts := startServer(t, Config{})
	r := dialRaw(t, ts)
	r.startup()
	int8Param := func(n int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(n)) }

	// Row limits: PortalSuspended, then resume; hidden rows are not sent.
	r.send(&pgproto3.Parse{Name: "gen", Query: "select gen($1)", ParameterOIDs: []uint32{20}},
		&pgproto3.Describe{ObjectType: 'S', Name: "gen"},
		&pgproto3.Bind{PreparedStatement: "gen", ParameterFormatCodes: []int16{1}, Parameters: [][]byte{int8Param(5)}},
		&pgproto3.Describe{ObjectType: 'P'},
		&pgproto3.Execute{MaxRows: 2}, &pgproto3.Execute{MaxRows: 2}, &pgproto3.Execute{MaxRows: 2},
		&pgproto3.Execute{MaxRows: 2}, &pgproto3.Sync{})
	r.expect(r.untilReady(), `
ParseComplete
ParameterDescription [20]
RowDescription n:20:8:-1:0
BindComplete
RowDescription n:20:8:-1:0
DataRow "0"
DataRow "1"
PortalSuspended
DataRow "2"
DataRow "3"
PortalSuspended
DataRow "4"
CommandComplete SELECT 1
CommandComplete SELECT 0
ReadyForQuery I`)

	// Binary result format per column; portal gone after Sync.
	r.send(&pgproto3.Bind{DestinationPortal: "p1", PreparedStatement: "gen", Parameters: [][]byte{[]byte("1")},
		ResultFormatCodes: []int16{1}},
		&pgproto3.Describe{ObjectType: 'P', Name: "p1"}, &pgproto3.Execute{Portal: "p1"}, &pgproto3.Sync{},
		&pgproto3.Execute{Portal: "p1"}, &pgproto3.Sync{})
	r.expect(r.untilReady(), `
BindComplete
RowDescription n:20:8:-1:1
DataRow "\x00\x00\x00\x00\x00\x00\x00\x00"
CommandComplete SELECT 1
ReadyForQuery I`)
	r.expect(r.untilReady(), `
Error ERROR 34000 portal "p1" does not exist
ReadyForQuery I`)

	// An error skips everything up to Sync; several statements cannot be prepared.
	r.send(&pgproto3.Parse{Query: "select  '7' ::int; select  '7' ::int"},
		&pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Query{String: "select  '7' ::int"}, &pgproto3.Sync{})
	r.expect(r.untilReady(), `
Error ERROR 42601 cannot insert multiple commands into a prepared statement
ReadyForQuery I`)

	// Duplicate names, missing statements, parameter count, Close, Flush.
	r.send(&pgproto3.Parse{Name: "gen", Query: "select  '7' ::int"}, &pgproto3.Sync{})
	r.expect(r.untilReady(), "Error ERROR 42P05 prepared statement \"gen\" already exists\nReadyForQuery I")
	r.send(&pgproto3.Bind{PreparedStatement: "gen"}, &pgproto3.Sync{})
	r.expect(r.untilReady(), "Error ERROR 08P01 bind message supplies 0 parameters, but prepared statement \"gen\" requires 1\nReadyForQuery I")
	r.send(&pgproto3.Bind{PreparedStatement: "gen", ParameterFormatCodes: []int16{1}, Parameters: [][]byte{{1, 2}}}, &pgproto3.Sync{})
	r.expect(r.untilReady(), "Error ERROR 22P03 incorrect binary data format in bind parameter 1\nReadyForQuery I")
	r.send(&pgproto3.Bind{PreparedStatement: "gen", Parameters: [][]byte{[]byte("x1")}}, &pgproto3.Sync{})
	r.expect(r.untilReady(), "Error ERROR 22P02 invalid input syntax for type bigint: \"x1\"\nReadyForQuery I")
	r.send(&pgproto3.Close{ObjectType: 'S', Name: "gen"}, &pgproto3.Close{ObjectType: 'S', Name: "gen"},
		&pgproto3.Bind{PreparedStatement: "gen"}, &pgproto3.Sync{})
	r.expect(r.untilReady(), "CloseComplete\nCloseComplete\nError ERROR 26000 prepared statement \"gen\" does not exist\nReadyForQuery I")
	r.send(&pgproto3.Parse{Query: "select $1 = 'a'"}, &pgproto3.Describe{ObjectType: 'S'}, &pgproto3.Flush{})
	r.expect(r.recv(), "ParseComplete")
	r.expect(r.recv(), "ParameterDescription [25]")
	r.expect(r.recv(), "RowDescription ?column?:16:1:-1:0")
	// The unnamed statement is replaced by the next Parse.
	r.send(&pgproto3.Parse{Query: "create temp table tt(a int, b text, c timestamptz, d numeric)"},
		&pgproto3.Describe{ObjectType: 'S'}, &pgproto3.Bind{}, &pgproto3.Describe{ObjectType: 'P'},
		&pgproto3.Execute{}, &pgproto3.Execute{}, &pgproto3.Sync{})
	r.expect(r.untilReady(), `
ParseComplete
ParameterDescription []
NoData
BindComplete
NoData
CommandComplete CREATE TABLE
Error ERROR 55000 portal "" cannot be run
ReadyForQuery I`)
	// Empty query through the extended protocol.
	r.send(&pgproto3.Parse{Query: ""}, &pgproto3.Bind{}, &pgproto3.Describe{ObjectType: 'P'}, &pgproto3.Execute{}, &pgproto3.Sync{})
	r.expect(r.untilReady(), "ParseComplete\nBindComplete\nNoData\nEmptyQueryResponse\nReadyForQuery I")
	// An error in the middle of a result, after rows went out.
	r.send(&pgproto3.Parse{Query: "select 1/0"}, &pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Execute{}, &pgproto3.Sync{})
	r.expect(r.untilReady(), "ParseComplete\nBindComplete\nDataRow \"1\"\nError ERROR 22012 division by zero\nReadyForQuery I")
	// Unknown type OID.
	r.send(&pgproto3.Parse{Query: "select $1::int", ParameterOIDs: []uint32{628}}, &pgproto3.Sync{})
	r.expect(r.untilReady(), "Error ERROR 42704 type with OID 628 does not exist\nReadyForQuery I")
}

func TestProtocolViolationsCloseConnection(t *testing.T) {
	ts := startServer(t, Config{MaxMessageSize: 1024})
	t.Run("oversized", func(t *testing.T) {
		r := dialRaw(t, ts)
		r.startup()
		r.send(&pgproto3.Query{String: strings.Repeat("x", 2000)})
		got := r.untilReady()
		if !strings.HasPrefix(got, "Error FATAL 08P01 invalid frontend message:") || !strings.HasSuffix(got, "EOF") {
			t.Fatalf("got %s", got)
		}
	})
	t.Run("unknown type", func(t *testing.T) {
		r := dialRaw(t, ts)
		r.startup()
		if _, err := r.nc.Write([]byte{'!', 0, 0, 0, 4}); err != nil {
			t.Fatal(err)
		}
		got := r.untilReady()
		if !strings.HasPrefix(got, "Error FATAL 08P01") || !strings.HasSuffix(got, "EOF") {
			t.Fatalf("got %s", got)
		}
	})
	t.Run("malformed bind", func(t *testing.T) {
		r := dialRaw(t, ts)
		r.startup()
		if _, err := r.nc.Write([]byte{'B', 0, 0, 0, 6, 0, 0}); err != nil {
			t.Fatal(err)
		}
		got := r.untilReady()
		if !strings.HasPrefix(got, "Error FATAL 08P01") || !strings.HasSuffix(got, "EOF") {
			t.Fatalf("got %s", got)
		}
	})
}
