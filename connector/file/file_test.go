package file

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tributary/tributary/connector"
	"github.com/tributary/tributary/sql/types"
)

func TestParse(t *testing.T) {
	if _, err := Parse(map[string]string{"connector": "file"}); !errors.Is(err, types.ErrInvalidParameter) {
		t.Errorf("no path: %v", err)
	}
	if _, err := Parse(map[string]string{"path": "/x", "file.max_bytes": "0"}); !errors.Is(err, types.ErrInvalidParameter) {
		t.Errorf("zero max bytes: %v", err)
	}
	if _, err := Parse(map[string]string{"path": "/x", "colour": "blue"}); !errors.Is(err, types.ErrInvalidParameter) {
		t.Errorf("unknown option: %v", err)
	}
	cfg, err := Parse(map[string]string{"path": "/x", "file.max_bytes": "100", "type": "upsert"})
	if err != nil || cfg.Path != "/x" || cfg.MaxBytes != 100 {
		t.Errorf("Parse = %+v, %v", cfg, err)
	}
}

func TestWriteCommitReplayRotate(t *testing.T) {
	dir := t.TempDir()
	target := connector.SinkTarget{Sink: "public.s", Writer: 3, Columns: []connector.Column{
		{Name: "k", Type: types.TInt64}, {Name: "name", Type: types.TVarchar}, {Name: "_row_id", Type: types.TInt64, Hidden: true},
	}}
	s, err := Open(Config{Path: dir, MaxBytes: 60}, target)
	if err != nil {
		t.Fatal(err)
	}
	c := types.NewChunk([]types.T{types.TInt64, types.TVarchar, types.TInt64}, 4)
	c.AppendRowOp(types.OpInsert, []types.Datum{types.DInt(1), types.DString(`a"b`), types.DInt(9)})
	c.AppendRowOp(types.OpUpdateDelete, []types.Datum{types.DInt(2), types.NullDatum, types.DInt(9)})
	c.AppendRowOp(types.OpUpdateInsert, []types.Datum{types.DInt(2), types.DString("x"), types.DInt(9)})
	ctx := context.Background()
	for replay := 0; replay < 2; replay++ {
		if err := s.Write(ctx, c); err != nil {
			t.Fatal(err)
		}
		if err := s.Commit(ctx, 42); err != nil {
			t.Fatal(err)
		}
	}
	names, _ := filepath.Glob(filepath.Join(dir, "*"))
	var all []string
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, strings.TrimRight(string(b), "\n"))
	}
	// A part takes rows until it reaches MaxBytes (60).
	want := []string{
		`{"__op":"insert","k":1,"name":"a\"b"}` + "\n" + `{"__op":"update_delete","k":2,"name":null}`,
		`{"__op":"update_insert","k":2,"name":"x"}`,
	}
	if len(names) != 2 || filepath.Base(names[0]) != PartName(3, 42, 0) || strings.Join(all, "|") != strings.Join(want, "|") {
		t.Errorf("files %v:\n%s\nwant two parts (a replay rewrites them):\n%s", names, strings.Join(all, "\n--\n"), strings.Join(want, "\n--\n"))
	}
	// An epoch without rows writes nothing.
	if err := s.Commit(ctx, 43); err != nil {
		t.Fatal(err)
	}
	if n, _ := filepath.Glob(filepath.Join(dir, "*")); len(n) != 2 {
		t.Errorf("an empty epoch wrote files: %v", n)
	}
}

// TestRootConfines: with a root, relative paths resolve inside it, and
// absolute paths elsewhere, ".." and symbolic links out of it are refused
// with 42501.
func TestRootConfines(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	outside := filepath.Join(base, "outside")
	if err := os.MkdirAll(filepath.Join(root, "ok"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(outside, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "escape")); err != nil {
		t.Fatal(err)
	}
	SetRoot(root)
	defer SetRoot("")
	for _, c := range []struct {
		path string
		want string // "" when refused
	}{
		{"out", filepath.Join(root, "out")},
		{"ok/deeper/still", filepath.Join(root, "ok/deeper/still")},
		{filepath.Join(root, "abs"), filepath.Join(root, "abs")},
		{"../outside", ""},
		{"ok/../../outside", ""},
		{outside, ""},
		{"/etc", ""},
		{"escape", ""},
		{"escape/sub", ""},
	} {
		cfg, err := Parse(map[string]string{"connector": "file", "path": c.path})
		switch {
		case c.want == "" && !errors.Is(err, types.ErrInsufficientPrivilege):
			t.Errorf("path %q: %v (%q), want 42501", c.path, err, cfg.Path)
		case c.want != "" && (err != nil || cfg.Path != c.want):
			t.Errorf("path %q: %q, %v; want %q", c.path, cfg.Path, err, c.want)
		}
	}
}
