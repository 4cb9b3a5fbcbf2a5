package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tributary/tributary/e2e/e2etest"
	"github.com/tributary/tributary/e2e/pgtest"
)

// TestBadBytes sends what a script cannot (issue 14, item 6): invalid UTF-8 in
// a simple query, in a Parse message's query text and in text parameters, and
// NUL bytes in text parameters, each answered with PostgreSQL's 22021 and the
// offending bytes; and statements with more result columns or parameters than
// PostgreSQL allows (54011, 54000), which dropped the connection. After each error
// the session answers on the same connection. With -pg the same checks run on
// PostgreSQL.
func TestBadBytes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dsn := ""
	if *pgMode {
		dsn = pgtest.Start(t).DSN()
	} else {
		dsn = e2etest.StartServer(t).DSN()
	}
	conn, err := pgconn.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if err := conn.Exec(ctx, "CREATE TABLE bytes_t (id int PRIMARY KEY, s varchar)").Close(); err != nil {
		t.Fatal(err)
	}
	alive := func(what string) {
		t.Helper()
		res := conn.ExecParams(ctx, "SELECT $1::int + 1", [][]byte{[]byte("41")}, nil, nil, nil).Read()
		if res.Err != nil || len(res.Rows) != 1 || string(res.Rows[0][0]) != "42" {
			t.Fatalf("%s: the session no longer answers: %v %q", what, res.Err, res.Rows)
		}
	}
	want := func(what string, err error, code, msg string) {
		t.Helper()
		var pe *pgconn.PgError
		if !errors.As(err, &pe) {
			t.Errorf("%s: want %s %q, got %v", what, code, msg, err)
		} else if pe.Code != code || (msg != "" && pe.Message != msg) {
			t.Errorf("%s: want %s %q, got %s %q", what, code, msg, pe.Code, pe.Message)
		}
		alive(what)
	}
	const bad = `invalid byte sequence for encoding "UTF8": `

	_, err = conn.Exec(ctx, "SELECT 'a\xffb'").ReadAll()
	want("simple query, 0xff", err, "22021", bad+"0xff")
	_, err = conn.Exec(ctx, "INSERT INTO bytes_t VALUES (1, 'caf\xc3(')").ReadAll()
	want("simple query, truncated 2-byte sequence", err, "22021", bad+"0xc3 0x28")
	_, err = conn.Exec(ctx, "SELECT 1 AS \"\xe2\x82\"").ReadAll()
	want("simple query, sequence cut by the end of a quoted name", err, "22021", bad+"0xe2 0x82 0x22")

	_, err = conn.Prepare(ctx, "", "SELECT 'a\xed\xa0\x80b'", nil) // a UTF-16 surrogate
	want("Parse, surrogate", err, "22021", bad+"0xed 0xa0 0x80")

	res := conn.ExecParams(ctx, "INSERT INTO bytes_t VALUES (2, $1)", [][]byte{[]byte("x\xfey")}, nil, nil, nil).Read()
	want("text parameter, 0xfe", res.Err, "22021", bad+"0xfe")
	res = conn.ExecParams(ctx, "INSERT INTO bytes_t VALUES (3, $1)", [][]byte{[]byte("a\x00b")}, nil, nil, nil).Read()
	want("text parameter, NUL", res.Err, "22021", bad+"0x00")
	res = conn.ExecParams(ctx, "INSERT INTO bytes_t VALUES (4, $1)", [][]byte{[]byte("a\x00b")}, []uint32{1043}, []int16{1}, nil).Read()
	want("binary varchar parameter, NUL", res.Err, "22021", bad+"0x00")
	res = conn.ExecParams(ctx, "SELECT $1::int", [][]byte{[]byte("1\x00")}, nil, nil, nil).Read()
	want("text int parameter, NUL", res.Err, "22021", bad+"0x00")

	// Nothing was stored.
	res = conn.ExecParams(ctx, "SELECT count(*) FROM bytes_t", nil, nil, nil, nil).Read()
	if res.Err != nil || string(res.Rows[0][0]) != "0" {
		t.Errorf("rows stored: %v %q", res.Err, res.Rows)
	}

	// Valid multi-byte text goes through.
	res = conn.ExecParams(ctx, "SELECT $1::varchar", [][]byte{[]byte("café 😀")}, nil, nil, nil).Read()
	if res.Err != nil || string(res.Rows[0][0]) != "café 😀" {
		t.Errorf("valid UTF-8: %v %q", res.Err, res.Rows)
	}

	// 70,000 result columns: PostgreSQL's limit is 1664.
	cols := "SELECT 1" + strings.Repeat(",1", 69999)
	_, err = conn.Exec(ctx, cols).ReadAll()
	want("70k columns, simple", err, "54011", "target lists can have at most 1664 entries")
	_, err = conn.Prepare(ctx, "", cols, nil)
	want("70k columns, Parse", err, "54011", "target lists can have at most 1664 entries")
	_, err = conn.Exec(ctx, "SELECT 1"+strings.Repeat(",1", 1664)).ReadAll()
	want("1665 columns", err, "54011", "target lists can have at most 1664 entries")
	if _, err = conn.Exec(ctx, "SELECT 1"+strings.Repeat(",1", 1663)).ReadAll(); err != nil {
		t.Errorf("1664 columns: %v", err)
	}

	// 70,000 parameters: more than a Bind message can carry.
	var b strings.Builder
	b.WriteString("SELECT 1 WHERE 0 IN ($1::int")
	for i := 2; i <= 70000; i++ {
		fmt.Fprintf(&b, ", $%d::int", i)
	}
	b.WriteString(")")
	start := time.Now()
	_, err = conn.Prepare(ctx, "", b.String(), nil)
	if *pgMode {
		// PostgreSQL prepares it (and reports the count modulo 2^16); no client
		// can bind it.
		t.Logf("PostgreSQL: %v", err)
		alive("70k parameters")
	} else {
		want("70k parameters", err, "54000", "number of parameters must be between 0 and 65535")
	}
	t.Logf("70k parameters: %v", time.Since(start))
}
