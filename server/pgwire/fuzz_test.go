package pgwire

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"
)

// encodeFrontend returns the wire bytes of msgs.
func encodeFrontend(t testing.TB, msgs ...pgproto3.FrontendMessage) []byte {
	var buf bytes.Buffer
	fe := pgproto3.NewFrontend(nil, &buf)
	for _, m := range msgs {
		fe.Send(m)
	}
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func startupBytes(t testing.TB) []byte {
	return encodeFrontend(t, &pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30,
		Parameters: map[string]string{"user": "fuzz", "database": "db"}})
}

// validSequences are well-formed message sequences that the random tests corrupt.
func validSequences(t testing.TB) [][]byte {
	return [][]byte{
		encodeFrontend(t, &pgproto3.Query{String: "select types"}),
		encodeFrontend(t, &pgproto3.Query{String: "select  '7' ::int; begin; fail; commit"}),
		encodeFrontend(t, &pgproto3.Parse{Name: "s", Query: "select gen($1)", ParameterOIDs: []uint32{20}},
			&pgproto3.Describe{ObjectType: 'S', Name: "s"},
			&pgproto3.Bind{PreparedStatement: "s", Parameters: [][]byte{[]byte("20")}, ResultFormatCodes: []int16{1}},
			&pgproto3.Execute{MaxRows: 3}, &pgproto3.Execute{}, &pgproto3.Sync{}),
		encodeFrontend(t, &pgproto3.Parse{Query: "select echo($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15)"},
			&pgproto3.Bind{ParameterFormatCodes: []int16{1}, Parameters: [][]byte{
				{0, 0, 0, 0, 0, 0, 0, 1}, {0x40, 0, 0, 0, 0, 0, 0, 0}, {0, 2, 0, 0, 0, 0, 0, 1, 0, 1, 0x13, 0x88}, {1},
				[]byte("txt"), {0, 1}, {0, 0, 0, 0, 0, 0, 0, 9}, {0, 0, 0, 1}, make([]byte, 16), {0, 0, 0, 0, 0, 0, 0, 1},
				[]byte("\x01{\"a\": 1}"), {0, 1}, {0, 0, 0, 1}, {0x3f, 0x80, 0, 0}, {0, 0, 0, 0, 0, 0, 0, 2}}},
			&pgproto3.Describe{ObjectType: 'P'}, &pgproto3.Execute{}, &pgproto3.Sync{}),
		encodeFrontend(t, &pgproto3.Parse{Query: "select 1/0"}, &pgproto3.Bind{}, &pgproto3.Execute{},
			&pgproto3.Sync{}, &pgproto3.Query{String: ""}, &pgproto3.Terminate{}),
	}
}

// sendGarbage writes data on a fresh connection, half-closes it and reads until the
// server closes the connection (bounded in time and bytes).
func sendGarbage(t testing.TB, addr string, data []byte) {
	nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if err := nc.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := nc.Write(data); err != nil {
		return // the server may already have closed on a bad prefix
	}
	_ = nc.(*net.TCPConn).CloseWrite()
	n, err := io.Copy(io.Discard, io.LimitReader(nc, 1<<20))
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("server did not close the connection after %d bytes of output; input %q", n, data)
	}
}

// checkAlive runs a query on a new pgx connection.
func checkAlive(t testing.TB, ts *testServer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := connect(t, ts, pgx.QueryExecModeCacheStatement)
	var n int32
	if err := c.QueryRow(ctx, "select $1::int", 3).Scan(&n); err != nil || n != 3 {
		t.Fatalf("server no longer serves: %d %v", n, err)
	}
}

func TestRandomBytes(t *testing.T) {
	seed := uint64(20261204) // fixed: every run sends the same bytes
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed>>32))
	ts := startServer(t, Config{MaxMessageSize: 1 << 16})
	startup := startupBytes(t)
	seqs := validSequences(t)
	for i := 0; i < 300; i++ {
		var data []byte
		switch i % 3 {
		case 0: // pure noise, before or after a valid startup
			data = make([]byte, rng.IntN(200))
			for j := range data {
				data[j] = byte(rng.UintN(256))
			}
			if rng.IntN(2) == 0 {
				data = append(append([]byte(nil), startup...), data...)
			}
		default: // a valid sequence, corrupted
			seq := append([]byte(nil), seqs[rng.IntN(len(seqs))]...)
			for k := rng.IntN(4) + 1; k > 0; k-- {
				switch pos := rng.IntN(len(seq)); rng.IntN(3) {
				case 0:
					seq[pos] = byte(rng.UintN(256))
				case 1:
					seq = seq[:pos]
				default:
					seq = append(seq[:pos], append([]byte{byte(rng.UintN(256))}, seq[pos:]...)...)
				}
				if len(seq) == 0 {
					break
				}
			}
			data = append(append([]byte(nil), startup...), seq...)
		}
		sendGarbage(t, ts.addr, data)
		if n := ts.logs.count("panic in connection handler"); n != 0 {
			t.Errorf("handler panicked on input %q", data)
		}
		if t.Failed() {
			t.Fatalf("seed %d iteration %d", seed, i)
		}
	}
	checkAlive(t, ts)
}

func FuzzConn(f *testing.F) {
	ts := startServer(f, Config{MaxMessageSize: 1 << 16})
	startup := startupBytes(f)
	for _, s := range validSequences(f) {
		f.Add(append(append([]byte(nil), startup...), s...))
	}
	f.Add([]byte{0, 0, 0, 8, 4, 0xd2, 0x16, 0x2f}) // SSLRequest only
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		sendGarbage(t, ts.addr, data)
		if n := ts.logs.count("panic in connection handler"); n != 0 {
			t.Fatalf("handler panicked on input %q", data)
		}
		checkAlive(t, ts)
	})
}
