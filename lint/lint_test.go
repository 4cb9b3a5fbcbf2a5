package lint

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/tributary/tributary/"

// allowed lists, per package (prefix match on the path below the module),
// which project packages it may import. Rules follow DESIGN.md §1; a package
// may always import its own sub-packages' siblings listed here explicitly.
var allowed = []struct {
	pkg     string
	imports []string
}{
	{"cmd/", []string{""}}, // anything
	{"server/session", []string{"server/pgwire", "server/psqlcat", "sql/", "planner/", "executor/", "catalog", "storage", "connector"}},
	{"server/pgwire", []string{"sql/types"}},
	{"server/psqlcat", []string{"catalog", "sql/types"}},
	{"server/metrics", []string{"executor/coordinator", "executor/stream", "connector"}},
	{"server/dashboard", []string{"executor/coordinator", "executor/stream", "catalog"}},
	{"executor/coordinator", []string{"executor/stream", "executor/batch", "storage", "catalog", "sql/", "planner/plan", "connector"}},
	{"executor/stream", []string{"planner/plan", "sql/", "storage", "connector", "catalog", "executor/stream", "executor/window"}},
	{"executor/batch", []string{"planner/plan", "sql/expr", "sql/types", "storage", "catalog", "executor/window"}},
	{"executor/window", []string{"planner/plan", "sql/expr", "sql/types"}},
	{"planner/", []string{"sql/parser", "sql/expr", "sql/types", "catalog", "planner/"}},
	{"catalog/persist", []string{"catalog", "storage", "sql/types"}},
	{"catalog", []string{"sql/types"}},
	{"connector", []string{"sql/types", "connector"}},
	{"storage/codec", []string{"storage", "sql/types"}},
	{"storage/state", []string{"storage", "sql/types"}},
	{"storage/logstore", []string{"storage", "sql/types"}},
	{"storage/storagetest", []string{"storage"}},
	{"storage/", []string{"storage"}},
	{"storage", nil},
	{"sql/parser", []string{"sql/types"}},
	{"sql/expr", []string{"sql/types"}},
	{"sql/types", nil},
	{"e2e", []string{"e2e/"}},
	{"lint", nil},
	{"planner", nil},
	{"executor", nil},
}

type pkgInfo struct {
	ImportPath   string
	Dir          string
	Imports      []string
	GoFiles      []string
	TestImports  []string
	XTestImports []string
}

func listPackages(t *testing.T) []pkgInfo {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-json", "./...")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	var pkgs []pkgInfo
	for dec.More() {
		var p pkgInfo
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("decode go list: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

func rulesFor(rel string) ([]string, bool) {
	for _, r := range allowed {
		if rel == r.pkg || (strings.HasSuffix(r.pkg, "/") && strings.HasPrefix(rel, r.pkg)) ||
			strings.HasPrefix(rel, r.pkg+"/") {
			return r.imports, true
		}
	}
	return nil, false
}

func TestImportDirection(t *testing.T) {
	for _, p := range listPackages(t) {
		rel := strings.TrimPrefix(p.ImportPath, module)
		rules, ok := rulesFor(rel)
		if !ok {
			t.Errorf("package %s has no import rule: add it to lint_test.go and DESIGN.md", rel)
			continue
		}
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			target := strings.TrimPrefix(imp, module)
			if target == rel || strings.HasPrefix(target, rel+"/") {
				continue // own sub-packages
			}
			ok := false
			for _, a := range rules {
				if a == "" || target == a || strings.HasPrefix(target, a) && (strings.HasSuffix(a, "/") || strings.HasPrefix(target, a+"/")) {
					ok = true
				}
			}
			if !ok {
				t.Errorf("%s imports %s, against the direction in DESIGN.md", rel, target)
			}
		}
		if strings.HasPrefix(rel, "planner") {
			for _, imp := range p.Imports {
				if strings.HasPrefix(imp, module+"executor") || strings.HasPrefix(imp, module+"storage") {
					t.Errorf("planner package %s imports %s", rel, imp)
				}
			}
		}
	}
}

// TestNoPanicOrPrint checks library code: no panic() outside main, no fmt.Print*.
func TestNoPanicOrPrint(t *testing.T) {
	for _, p := range listPackages(t) {
		rel := strings.TrimPrefix(p.ImportPath, module)
		if strings.HasPrefix(rel, "cmd/") {
			continue
		}
		for _, f := range p.GoFiles {
			path := filepath.Join(p.Dir, f)
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			fset := token.NewFileSet()
			file, err := parser.ParseFile(fset, path, src, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(file, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				switch fn := call.Fun.(type) {
				case *ast.Ident:
					if fn.Name == "panic" {
						t.Errorf("%s: panic in library code", fset.Position(call.Pos()))
					}
				case *ast.SelectorExpr:
					if x, ok := fn.X.(*ast.Ident); ok && x.Name == "fmt" && strings.HasPrefix(fn.Sel.Name, "Print") {
						t.Errorf("%s: fmt.%s in library code", fset.Position(call.Pos()), fn.Sel.Name)
					}
				}
				return true
			})
		}
	}
}
