package postgrescdc

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/tributary/tributary/sql/types"
)

// TestBinaryDecodingMatchesText reads edge values of every type the copy
// reads in binary format both ways from PostgreSQL: decodeBinary must give
// what types.ParseText makes of the text form (which the change stream
// sends), bit for bit.
func TestBinaryDecodingMatchesText(t *testing.T) {
	u := startUpstream(t)
	cases := []struct {
		typ  string
		oid  uint32
		t    types.T
		vals []string
	}{
		{"bool", types.OIDBool, types.TBool, []string{"true", "false"}},
		{"int2", types.OIDInt2, types.TInt16, []string{"0", "-32768", "32767", "-1"}},
		{"int4", types.OIDInt4, types.TInt32, []string{"0", "-2147483648", "2147483647", "42"}},
		{"int8", types.OIDInt8, types.TInt64, []string{"0", "-9223372036854775808", "9223372036854775807", "1000000007"}},
		{"float4", types.OIDFloat4, types.TFloat32, []string{"0", "-0", "1.1", "3.4028235e38", "1e-45", "Infinity", "-Infinity", "NaN", "0.1"}},
		{"float8", types.OIDFloat8, types.TFloat64, []string{"0", "-0", "0.1", "1.7976931348623157e308", "5e-324", "Infinity", "-Infinity", "NaN", "2.5"}},
		{"bytea", types.OIDBytea, types.TBytea, []string{`\x`, `\x00ff10`, `abc`}},
		{"date", types.OIDDate, types.TDate, []string{"2000-01-01", "1970-01-01", "1969-12-31", "0001-01-01", "0044-03-15 BC", "0001-12-31 BC",
			"9999-12-31", "infinity", "-infinity", "2024-02-29", "1900-03-01"}},
		{"time", types.OIDTime, types.TTime, []string{"00:00:00", "24:00:00", "12:34:56.789012", "23:59:59.999999"}},
		{"timestamp", types.OIDTimestamp, types.TTimestamp, []string{"2000-01-01 00:00:00", "1970-01-01 00:00:00", "1969-12-31 23:59:59.999999",
			"0001-01-01 00:00:00", "9999-12-31 23:59:59.999999", "infinity", "-infinity", "2024-02-29 01:02:03.4"}},
		{"timestamptz", types.OIDTimestamptz, types.TTimestamptz, []string{"2000-01-01 00:00:00+00", "2000-01-01 00:00:00+05",
			"1970-01-01 00:00:00+00", "1901-06-01 12:00:00+00", "0001-01-01 00:00:00+00", "infinity", "-infinity"}},
		{"interval", types.OIDInterval, types.TInterval, []string{"0", "-1 year 2 mons -3 days 04:05:06.7", "1 day 2 hours",
			"178000000 years", "-00:00:00.000001", "1 mon -1 day"}},
	}
	u.exec("SET TimeZone = 'UTC'") // as the reader's sessions
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, c := range cases {
		for _, v := range c.vals {
			sql := "SELECT " + quoteLiteral(v) + "::" + c.typ
			text := u.conn.ExecParams(ctx, sql, nil, nil, nil, []int16{0}).Read()
			bin := u.conn.ExecParams(ctx, sql, nil, nil, nil, []int16{1}).Read()
			if text.Err != nil || bin.Err != nil {
				t.Fatalf("%s: %v %v", sql, text.Err, bin.Err)
			}
			want, err := types.ParseText(c.t, string(text.Rows[0][0]))
			if err != nil {
				t.Fatalf("%s: text %q: %v", sql, text.Rows[0][0], err)
			}
			var got types.Datum
			err = decodeBinary(c.oid, c.t, bin.Rows[0][0], &got)
			if err != nil {
				t.Fatalf("%s: binary %x: %v", sql, bin.Rows[0][0], err)
			}
			if got.Null != want.Null || got.I != want.I || got.S != want.S || got.Iv != want.Iv || math.Float64bits(got.F) != math.Float64bits(want.F) {
				t.Errorf("%s (text %q): binary decodes to %+v, text parses to %+v", sql, text.Rows[0][0], got, want)
			}
			if binaryKeys[c.oid] {
				// A key column read in binary: its text form (the offset's)
				// is PostgreSQL's.
				b := &binding{oids: []uint32{c.oid}, types: []types.T{c.t}, pk: []int{0}}
				b.setFormats()
				if !b.binary(0) {
					t.Fatalf("%s: a key of a binaryKeys type read in text", c.typ)
				}
				if got := rowPK(b, bin.Rows[0]); got[0] != string(text.Rows[0][0]) {
					t.Errorf("%s: key text %q, PostgreSQL's %q", sql, got[0], text.Rows[0][0])
				}
			}
		}
	}
	// types.ParseText does not read a timestamp BC (an error); its binary
	// form is the date's midnight plus the time.
	bc := u.conn.ExecParams(ctx, "SELECT '0044-03-15 12:00:00 BC'::timestamp, '0044-03-15 BC'::date", nil, nil, nil, []int16{1, 1}).Read()
	if bc.Err != nil {
		t.Fatal(bc.Err)
	}
	var ts, d types.Datum
	err1 := decodeBinary(types.OIDTimestamp, types.TTimestamp, bc.Rows[0][0], &ts)
	err2 := decodeBinary(types.OIDDate, types.TDate, bc.Rows[0][1], &d)
	if err1 != nil || err2 != nil || ts.I != d.I*86400e6+12*3600e6 {
		t.Errorf("44 BC: timestamp %d (%v), date %d (%v)", ts.I, err1, d.I, err2)
	}
	if err := decodeBinary(types.OIDInt4, types.TInt32, []byte{1, 2}, new(types.Datum)); err == nil {
		t.Error("an int4 of 2 bytes decoded")
	}
	b := &binding{oids: []uint32{types.OIDInt4}, types: []types.T{types.TInt32}, pk: []int{0}, pkTypes: []types.T{types.TInt32}}
	b.setFormats()
	if k := (&table{b: b}).rowKey([][]byte{{1, 2, 3}}); k != nil {
		t.Errorf("a key of 3 binary bytes parsed as %v", k)
	}
}

// TestNextChunk: chunks of small rows double up to MaxAutoChunkRows,
// chunks of large ones (or while the reader's queue is full) halve down to
// DefaultChunkRows, and a chunk size set in the options stays.
func TestNextChunk(t *testing.T) {
	auto := Config{ChunkRows: DefaultChunkRows, AutoChunk: true}
	n := DefaultChunkRows
	for i := 0; i < 10; i++ {
		n = nextChunk(auto, n, n*40, false) // 40 bytes a row
	}
	if n != MaxAutoChunkRows {
		t.Errorf("small rows: %d rows a chunk, want %d", n, MaxAutoChunkRows)
	}
	for i := 0; i < 10; i++ {
		n = nextChunk(auto, n, n*4096, false) // 4 kB a row: 32 MB at 8,192 rows
	}
	if n != DefaultChunkRows {
		t.Errorf("large rows: %d rows a chunk, want %d", n, DefaultChunkRows)
	}
	if n := nextChunk(auto, 16384, autoChunkBytes*3/4, false); n != 16384 {
		t.Errorf("a chunk of 3/4 the bytes: next %d rows, want 16384", n)
	}
	if n := nextChunk(auto, 32768, 32768*40, true); n != 16384 {
		t.Errorf("the queue was full: next chunk %d rows, want 16384", n)
	}
	fixed := Config{ChunkRows: 500}
	if n := nextChunk(fixed, 500, 500, false); n != 500 {
		t.Errorf("snapshot.batch.size 500: next chunk %d rows", n)
	}
}

// TestRawRows: rows read back as added, NULL apart from an empty value,
// rowInto reusing its caller's slice.
func TestRawRows(t *testing.T) {
	r := &rawRows{ncols: 3, data: make([]byte, 0, 1)}
	in := [][][]byte{
		{[]byte("a"), nil, []byte("ccc")},
		{nil, nil, nil},
		{{}, []byte("bb"), {}},
		{[]byte("x"), {}, nil},
	}
	for _, row := range in {
		for _, v := range row {
			if !r.add(v) {
				t.Fatal("add refused a small value")
			}
		}
	}
	if r.len() != len(in) {
		t.Fatalf("%d rows, want %d", r.len(), len(in))
	}
	var dst [][]byte
	for i, want := range in {
		dst = r.rowInto(dst, i)
		for j, v := range dst {
			if (v == nil) != (want[j] == nil) || string(v) != string(want[j]) {
				t.Fatalf("row %d column %d: %q (nil %v), want %q (nil %v)", i, j, v, v == nil, want[j], want[j] == nil)
			}
		}
		if got := r.row(i); len(got) != 3 || string(got[0]) != string(want[0]) {
			t.Fatalf("row %d: %q", i, got)
		}
	}
	if (&rawRows{}).len() != 0 || (*rawRows)(nil).len() != 0 {
		t.Fatal("an empty rawRows has rows")
	}
}
