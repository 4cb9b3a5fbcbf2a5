package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFindScripts(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"a/x.slt", "a/include/common.slt", "b/y.slt", "b/part.slt.part", "top.slt", "notes.md"} {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := findScripts(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		got[i], _ = filepath.Rel(dir, got[i])
	}
	if strings.Join(got, ",") != "a/x.slt,b/y.slt,top.slt" {
		t.Fatalf("findScripts = %v", got)
	}
}
