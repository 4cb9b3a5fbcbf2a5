package e2e

import (
	"context"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/e2e/pgtest"
	"github.com/tributary/tributary/e2e/slt"
	"github.com/tributary/tributary/e2e/testserver"
)

var (
	rewrite = flag.Bool("rewrite", false, "rewrite the expected query results in the .slt files with the actual answers")
	pgMode  = flag.Bool("pg", os.Getenv("TRIBUTARY_E2E_PG") != "",
		"run the scripts against a private PostgreSQL cluster instead of Tributary (engine name \"postgres\")")
)

// PostgresEngine is the engine name skipif/onlyif see in -pg mode.
const PostgresEngine = "postgres"

// maxParallel bounds how many scripts (and servers) run at once on our 2-core machines.
const maxParallel = 2

// findScripts lists the runnable scripts under dir: every *.slt outside include/ directories.
func findScripts(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != dir && (d.Name() == "include" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(d.Name(), ".slt") {
			out = append(out, path)
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

// target is one server a script runs against.
type target struct {
	dsn     string
	restart func(ctx context.Context, kill bool) error
}

func TestSLT(t *testing.T) {
	scripts, err := findScripts(".")
	if err != nil {
		t.Fatalf("find scripts: %v", err)
	}
	if len(scripts) == 0 {
		t.Fatal("no .slt scripts under e2e/")
	}
	engine := slt.DefaultEngine
	var start func(t *testing.T) target
	if *pgMode {
		engine = PostgresEngine
		start = func(t *testing.T) target {
			c := pgtest.Start(t)
			return target{dsn: c.DSN(), restart: func(_ context.Context, kill bool) error {
				if kill {
					if err := c.Kill(); err != nil {
						return err
					}
				}
				return c.Restart()
			}}
		}
	} else {
		bin := testserver.Build(t)
		start = func(t *testing.T) target {
			s := testserver.Start(t, bin, t.TempDir())
			return target{dsn: s.DSN(), restart: func(_ context.Context, kill bool) error {
				if kill {
					if err := s.Kill(); err != nil {
						return err
					}
				}
				return s.Restart()
			}}
		}
	}

	sem := make(chan struct{}, maxParallel)
	for _, path := range scripts {
		name := strings.TrimSuffix(filepath.ToSlash(path), ".slt")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			sem <- struct{}{}
			t.Cleanup(func() { <-sem }) // registered first, so it runs after the server stopped

			ctx, cancel := scriptContext(t)
			defer cancel()
			tg := start(t)
			r := &slt.Runner{DSN: tg.dsn, Engine: engine, Restart: tg.restart, Rewrite: *rewrite, Logf: t.Logf}
			defer r.Close(ctx)
			if err := r.RunFile(ctx, path); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// scriptContext bounds a script by the test binary's deadline (less a margin for cleanup),
// or by ten minutes.
func scriptContext(t *testing.T) (context.Context, context.CancelFunc) {
	if d, ok := t.Deadline(); ok {
		return context.WithDeadline(context.Background(), d.Add(-30*time.Second))
	}
	return context.WithTimeout(context.Background(), 10*time.Minute)
}
