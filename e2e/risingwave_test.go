package e2e

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tributary/tributary/e2e/slt"
	"github.com/tributary/tributary/e2e/testserver"
)

// rwSuites are the directories of RisingWave's e2e_test that issue 18
// measures.
const rwSuites = "streaming,sink/sink_into_table,background_ddl,backfill"

// TestRisingWaveSuites runs RisingWave's own e2e files against Tributary:
// set RW_E2E_DIR to the e2e_test directory of a RisingWave checkout
// (skipped otherwise; nothing of RisingWave is in this repository).
// RW_E2E_SUITES picks its subdirectories (comma-separated; default
// rwSuites), RW_E2E_FILTER a substring of the paths. Each .slt file runs on
// a fresh server with every record run even after one failed; the test
// logs each file's records passed and the first failure, and the totals,
// and writes the table as Markdown to RW_E2E_REPORT when set. It fails
// only when a file cannot be read: a record failing is what it measures.
func TestRisingWaveSuites(t *testing.T) {
	root := os.Getenv("RW_E2E_DIR")
	if root == "" {
		t.Skip("RW_E2E_DIR (RisingWave's e2e_test directory) is not set")
	}
	suites := os.Getenv("RW_E2E_SUITES")
	if suites == "" {
		suites = rwSuites
	}
	var files []string
	for _, s := range strings.Split(suites, ",") {
		err := filepath.WalkDir(filepath.Join(root, strings.TrimSpace(s)), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && strings.HasSuffix(path, ".slt") && strings.Contains(path, os.Getenv("RW_E2E_FILTER")) {
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("suite %s: %v", s, err)
		}
	}
	sort.Strings(files)
	bin := testserver.Build(t)
	type result struct {
		file            string
		records, passed int
		first           string
	}
	var (
		mu      sync.Mutex
		results []result
	)
	t.Run("files", func(t *testing.T) {
		for _, path := range files {
			rel, _ := filepath.Rel(root, path)
			t.Run(rel, func(t *testing.T) {
				t.Parallel()
				res := result{file: rel}
				defer func() {
					mu.Lock()
					results = append(results, res)
					mu.Unlock()
				}()
				script, err := slt.ParseFile(path)
				if err != nil {
					res.first = "parse: " + err.Error()
					t.Log(res.first)
					return
				}
				srv := testserver.Start(t, bin, t.TempDir())
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				defer cancel()
				r := &slt.Runner{DSN: srv.DSN(), KeepGoing: true, AnyColumnCount: true, RecordTimeout: 20 * time.Second,
					Restart: func(_ context.Context, kill bool) error {
						if kill {
							if err := srv.Kill(); err != nil {
								return err
							}
						}
						return srv.Restart()
					},
					OnRecord: func(rec *slt.Record, err error) {
						res.records++
						if err == nil {
							res.passed++
						} else if res.first == "" {
							res.first = strings.ReplaceAll(strings.SplitN(err.Error(), "\n", 2)[0], "|", "/")
						}
					}}
				defer r.Close(ctx)
				_ = r.Run(ctx, script) // failures are counted, not fatal
				t.Logf("%d/%d records passed", res.passed, res.records)
			})
		}
	})
	sort.Slice(results, func(i, j int) bool { return results[i].file < results[j].file })
	var b strings.Builder
	records, passed, files100 := 0, 0, 0
	b.WriteString("| file | records passed | first failure |\n|---|---|---|\n")
	for _, r := range results {
		records += r.records
		passed += r.passed
		if r.records == r.passed && r.first == "" {
			files100++
		}
		fmt.Fprintf(&b, "| %s | %d/%d | %s |\n", r.file, r.passed, r.records, r.first)
	}
	pct := 0.0
	if records > 0 {
		pct = 100 * float64(passed) / float64(records)
	}
	total := fmt.Sprintf("%d files, %d passed whole; %d of %d records passed (%.1f%%)", len(results), files100, passed, records, pct)
	b.WriteString("\n" + total + "\n")
	t.Log("\n" + b.String())
	if out := os.Getenv("RW_E2E_REPORT"); out != "" {
		if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
