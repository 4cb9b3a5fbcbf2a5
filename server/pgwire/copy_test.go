package pgwire

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/tributary/tributary/sql/types"
)

func copyCols(ts ...types.T) []Column {
	cols := make([]Column, len(ts))
	for i, t := range ts {
		cols[i] = Column{Name: string(rune('a' + i)), Type: t}
	}
	return cols
}

func mustOptions(t *testing.T, from bool, cols []Column, opts ...CopyOption) CopyOptions {
	t.Helper()
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.Name
	}
	o, err := NewCopyOptions(opts, names, from)
	if err != nil {
		t.Fatalf("options %v: %v", opts, err)
	}
	return o
}

// decodeAll decodes data and prints each row's values as text (NULL as <null>).
func decodeAll(t *testing.T, data string, cols []Column, o CopyOptions) ([]string, error) {
	t.Helper()
	d := newCopyDecoder(strings.NewReader(data), "t", cols, o)
	var out []string
	for {
		ch, err := d.Next(context.Background())
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		for i := 0; i < ch.Len(); i++ {
			var parts []string
			for j := range cols {
				v := ch.Cols[j].Get(i)
				if v.Null {
					parts = append(parts, "<null>")
				} else {
					parts = append(parts, types.FormatText(cols[j].Type, &v))
				}
			}
			out = append(out, strings.Join(parts, "|"))
		}
	}
}

func TestCopyDecodeText(t *testing.T) {
	cols := copyCols(types.TInt32, types.TVarchar)
	o := mustOptions(t, true, cols)
	data := "1\tplain\n2\t\\N\n3\ttab\\there\\\\back\\nnl\n4\t\\101\\x42\\q\r\n5\t\n\\.\nignored\n"
	got, err := decodeAll(t, data, cols, o)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"1|plain", "2|<null>", "3|tab\there\\back\nnl", "4|ABq", "5|"}
	if strings.Join(got, ";") != strings.Join(want, ";") {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}

func TestCopyDecodeCSV(t *testing.T) {
	cols := copyCols(types.TInt32, types.TVarchar, types.TVarchar)
	o := mustOptions(t, true, cols, CopyOption{Key: "format", Value: "csv"}, CopyOption{Key: "header"})
	data := "a,b,c\n1,\"x,y\",\n2,\"\",\"multi\nline \"\"q\"\"\"\n3,plain,\"\"\n"
	got, err := decodeAll(t, data, cols, o)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"1|x,y|<null>", "2||multi\nline \"q\"", "3|plain|"}
	if strings.Join(got, ";") != strings.Join(want, ";") {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	// FORCE_NOT_NULL, FORCE_NULL, another delimiter, NULL and ESCAPE.
	o = mustOptions(t, true, cols, CopyOption{Key: "format", Value: "csv"}, CopyOption{Key: "delimiter", Value: ";"},
		CopyOption{Key: "null", Value: "NA"}, CopyOption{Key: "escape", Value: `\`},
		CopyOption{Key: "force_not_null", Columns: []string{"b"}}, CopyOption{Key: "force_null", Columns: []string{"c"}})
	got, err = decodeAll(t, "1;NA;\"NA\"\nNA;\"a\\\"b\";x\n", cols, o)
	if err != nil {
		t.Fatal(err)
	}
	want = []string{"1|NA|<null>", "<null>|a\"b|x"}
	if strings.Join(got, ";") != strings.Join(want, ";") {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}

func TestCopyDecodeErrors(t *testing.T) {
	cols := copyCols(types.TInt32, types.TInt32)
	csv := CopyOption{Key: "format", Value: "csv"}
	for _, tc := range []struct {
		data  string
		opts  []CopyOption
		code  string
		where string
	}{
		{"1\t2\n3\tx\n", nil, "22P02", `COPY t, line 2, column b: "x"`},
		{"1\t2\n3\n", nil, "22P04", `COPY t, line 2: "3"`},
		{"1\t2\t3\n", nil, "22P04", `COPY t, line 1: "1	2	3"`},
		{"1,\"open\n", []CopyOption{csv}, "22P04", `COPY t, line 1: "1,"open"`},
		{"a,x\n1,2\n", []CopyOption{csv, {Key: "header", Value: "match"}}, "22P04", `COPY t, line 1: "a,x"`},
		{"1\t\xff\n", nil, "22021", "COPY t, line 1, column b: \"\xff\""},
	} {
		o := mustOptions(t, true, cols, tc.opts...)
		_, err := decodeAll(t, tc.data, cols, o)
		var ce *copyError
		if err == nil || !errors.As(err, &ce) {
			t.Errorf("%q: got %v, want a COPY error", tc.data, err)
			continue
		}
		if got := SQLState(err); got != tc.code || ce.where != tc.where {
			t.Errorf("%q: got %s %q (%v), want %s %q", tc.data, got, ce.where, err, tc.code, tc.where)
		}
	}
}

func TestCopyOptionErrors(t *testing.T) {
	for _, tc := range []struct {
		opts []CopyOption
		from bool
		code string
	}{
		{[]CopyOption{{Key: "format", Value: "xml"}}, true, "22023"},
		{[]CopyOption{{Key: "format", Value: "csv"}, {Key: "format", Value: "csv"}}, true, "42601"},
		{[]CopyOption{{Key: "quote", Value: "'"}}, true, "0A000"},
		{[]CopyOption{{Key: "delimiter", Value: "ab"}}, true, "0A000"},
		{[]CopyOption{{Key: "format", Value: "binary"}, {Key: "header"}}, true, "0A000"},
		{[]CopyOption{{Key: "header", Value: "match"}}, false, "42601"},
		{[]CopyOption{{Key: "format", Value: "csv"}, {Key: "force_not_null", Columns: []string{"zz"}}}, true, "42P10"},
		{[]CopyOption{{Key: "format", Value: "csv"}, {Key: "force_quote", All: true}}, true, "0A000"},
		{[]CopyOption{{Key: "bogus"}}, true, "42601"},
	} {
		_, err := NewCopyOptions(tc.opts, []string{"a", "b"}, tc.from)
		if got := SQLState(err); err == nil || got != tc.code {
			t.Errorf("%v: got %v (%s), want %s", tc.opts, err, got, tc.code)
		}
	}
}

func TestCopyEncodeTextAndCSV(t *testing.T) {
	cols := copyCols(types.TInt32, types.TVarchar, types.TBytea)
	ch := types.NewChunk([]types.T{types.TInt32, types.TVarchar, types.TBytea}, 4)
	ch.AppendRow([]types.Datum{types.DInt(1), types.DString("a\tb\\c\nd"), {S: "\x01\xff"}})
	ch.AppendRow([]types.Datum{types.NullDatum, types.DString(""), types.NullDatum})
	ch.AppendRow([]types.Datum{types.DInt(3), types.DString(`say "hi", ok`), {S: ""}})
	encode := func(o CopyOptions) string {
		e := &copyEncoder{opts: o}
		buf := e.appendHeader(nil, cols)
		for i := 0; i < ch.Len(); i++ {
			var err error
			if buf, err = e.appendRow(buf, ch, i, cols); err != nil {
				t.Fatal(err)
			}
		}
		return string(e.appendTrailer(buf))
	}
	got := encode(mustOptions(t, false, cols))
	want := "1\ta\\tb\\\\c\\nd\t\\\\x01ff\n\\N\t\t\\N\n3\tsay \"hi\", ok\t\\\\x\n"
	if got != want {
		t.Errorf("text:\ngot  %q\nwant %q", got, want)
	}
	got = encode(mustOptions(t, false, cols, CopyOption{Key: "format", Value: "csv"}, CopyOption{Key: "header"}))
	want = "a,b,c\n1,\"a\tb\\c\nd\",\\x01ff\n,\"\",\n3,\"say \"\"hi\"\", ok\",\\x\n"
	if got != want {
		t.Errorf("csv:\ngot  %q\nwant %q", got, want)
	}
	// Round trip through the decoder in both formats.
	for _, o := range []CopyOptions{mustOptions(t, true, cols), mustOptions(t, true, cols, CopyOption{Key: "format", Value: "csv"}), mustOptions(t, true, cols, CopyOption{Key: "format", Value: "binary"})} {
		data := encode(o)
		rows, err := decodeAll(t, data, cols, o)
		if err != nil {
			t.Fatalf("%s: %v", o.Format, err)
		}
		want := []string{"1|a\tb\\c\nd|\\x01ff", "<null>||<null>", "3|say \"hi\", ok|\\x"}
		if strings.Join(rows, ";") != strings.Join(want, ";") {
			t.Errorf("%s round trip: got %q", o.Format, rows)
		}
	}
}

func TestCopyDecodeBinary(t *testing.T) {
	cols := copyCols(types.TInt64, types.TVarchar)
	o := mustOptions(t, true, cols, CopyOption{Key: "format", Value: "binary"})
	var b bytes.Buffer
	b.Write(copySignature)
	b.Write([]byte{0, 0, 0, 0, 0, 0, 0, 0})
	b.Write([]byte{0, 2, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 2, 'h', 'i'})
	b.Write([]byte{0, 2, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 8, 0xff, 0xff, 0xff, 0xff})
	b.Write([]byte{0xff, 0xff})
	rows, err := decodeAll(t, b.String(), cols, o)
	if err != nil || strings.Join(rows, ";") != "7|hi;8|<null>" {
		t.Fatalf("got %q, %v", rows, err)
	}
	// A short field and a bad signature.
	bad := b.Bytes()[:len(copySignature)+8]
	bad = append(append([]byte(nil), bad...), 0, 2, 0, 0, 0, 4, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff)
	_, err = decodeAll(t, string(bad), cols, o)
	var ce *copyError
	if !errors.As(err, &ce) || SQLState(err) != codeInvalidBinaryFormat || ce.where != "COPY t, line 1, column a" {
		t.Errorf("short int8: got %v", err)
	}
	_, err = decodeAll(t, "PGCOPY\n", cols, o)
	if SQLState(err) != codeBadCopyFormat {
		t.Errorf("bad signature: got %v", err)
	}
}
