package slt

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

func TestFormatRow(t *testing.T) {
	got := FormatRow([][]byte{[]byte("1"), nil, {}, []byte("t"), []byte("3.5")})
	if got != "1 NULL (empty) t 3.5" {
		t.Fatalf("FormatRow = %q", got)
	}
}

func TestCompare(t *testing.T) {
	cases := []struct {
		name     string
		mode     SortMode
		expected []string
		actual   []string
		at       int
	}{
		{"equal", NoSort, []string{"1 a", "2 b"}, []string{"1 a", "2 b"}, -1},
		{"whitespace is normalized", NoSort, []string{"1\ta", " 2   b "}, []string{"1 a", "2 b"}, -1},
		{"order matters in nosort", NoSort, []string{"1 a", "2 b"}, []string{"2 b", "1 a"}, 0},
		{"rowsort ignores order", RowSort, []string{"2 b", "1 a"}, []string{"1 a", "2 b"}, -1},
		{"rowsort keeps rows whole", RowSort, []string{"1 b", "2 a"}, []string{"1 a", "2 b"}, 0},
		{"valuesort sorts values", ValueSort, []string{"a", "1", "b", "2"}, []string{"1 a", "2 b"}, -1},
		{"missing row", NoSort, []string{"1", "2"}, []string{"1"}, 1},
		{"extra row", RowSort, []string{"1"}, []string{"1", "0"}, 0},
		{"empty", NoSort, nil, nil, -1},
		{"null vs empty", NoSort, []string{"NULL"}, []string{"(empty)"}, 0},
	}
	for _, c := range cases {
		if at := Compare(c.mode, c.expected, c.actual); at != c.at {
			t.Errorf("%s: Compare = %d, want %d", c.name, at, c.at)
		}
	}
}

func TestMismatchErrorReport(t *testing.T) {
	e := &MismatchError{Pos: Pos{File: "x.slt", Line: 7}, SQL: "SELECT 1", Mode: NoSort,
		Expected: []string{"2"}, Actual: []string{"1"}, At: 0}
	msg := e.Error()
	for _, want := range []string{"x.slt:7", "SELECT 1", "expected (1 rows):\n    2", "actual (1 rows):\n    1"} {
		if !strings.Contains(msg, want) {
			t.Errorf("report lacks %q:\n%s", want, msg)
		}
	}
}

func TestCheckError(t *testing.T) {
	s := mustParse(t, "statement error 23505\nX\n\nstatement error duplicate key\nX\n\nstatement error\nX\n\nstatement error 42P01\nX\n\nstatement error\nX\n----\nboom\n")
	dup := &pgconn.PgError{Severity: "ERROR", Code: "23505", Message: "duplicate key value violates unique constraint"}
	if err := checkError(s.Records[0], dup); err != nil {
		t.Errorf("SQLSTATE match: %v", err)
	}
	if err := checkError(s.Records[1], dup); err != nil {
		t.Errorf("message match: %v", err)
	}
	if err := checkError(s.Records[2], dup); err != nil {
		t.Errorf("any error: %v", err)
	}
	if err := checkError(s.Records[3], dup); err == nil {
		t.Errorf("wrong SQLSTATE accepted")
	}
	if err := checkError(s.Records[2], nil); err == nil {
		t.Errorf("success accepted as error")
	}
	if err := checkError(s.Records[2], os.ErrClosed); err == nil {
		t.Errorf("a client-side error accepted as a server error")
	}
	if err := checkError(s.Records[4], &pgconn.PgError{Code: "XX000", Message: "boom"}); err != nil {
		t.Errorf("exact message: %v", err)
	}
	if err := checkError(s.Records[4], &pgconn.PgError{Code: "XX000", Message: "boom!"}); err == nil {
		t.Errorf("exact message mismatch accepted")
	}
}

func TestTypesCheckAndRewrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.slt")
	src := "query I\nSELECT 1, 'x'\n----\n5\n\nquery T rowsort\nSELECT 'b' UNION SELECT 'a'\n\nquery I\nSELECT 1\n----\n1\n"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := ParseFile(path)
	if err != nil {
		t.Fatal(err)
	}
	two := &pgconn.Result{
		FieldDescriptions: []pgconn.FieldDescription{{DataTypeOID: 23}, {DataTypeOID: 25}},
		Rows:              [][][]byte{{[]byte("1"), []byte("x")}},
	}
	r := &Runner{}
	if err := r.checkQuery(s.Records[0], []*pgconn.Result{two}, true); err == nil || !strings.Contains(err.Error(), "declares 1 columns") {
		t.Fatalf("column count check: %v", err)
	}
	r = &Runner{Rewrite: true, edits: map[string][]edit{}}
	if err := r.checkQuery(s.Records[0], []*pgconn.Result{two}, true); err != nil {
		t.Fatal(err)
	}
	ab := &pgconn.Result{
		FieldDescriptions: []pgconn.FieldDescription{{DataTypeOID: 25}},
		Rows:              [][][]byte{{[]byte("b")}, {[]byte("a")}},
	}
	if err := r.checkQuery(s.Records[1], []*pgconn.Result{ab}, true); err != nil {
		t.Fatal(err)
	}
	one := &pgconn.Result{FieldDescriptions: []pgconn.FieldDescription{{DataTypeOID: 23}}, Rows: [][][]byte{{[]byte("1")}}}
	if err := r.checkQuery(s.Records[2], []*pgconn.Result{one}, true); err != nil {
		t.Fatal(err)
	}
	if err := r.applyEdits(s); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := "query IT\nSELECT 1, 'x'\n----\n1 x\n\nquery T rowsort\nSELECT 'b' UNION SELECT 'a'\n----\na\nb\n\nquery I\nSELECT 1\n----\n1\n"
	if string(got) != want {
		t.Fatalf("rewritten file:\n%s\nwant:\n%s", got, want)
	}
}
