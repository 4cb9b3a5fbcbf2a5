package e2e

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
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

// rwStep is one file of a sequence: run with vars for its `control
// substitution` (as RisingWave's CI sets TEST_NAME for one run), its
// records counted unless again (a second run of a file already counted).
type rwStep struct {
	file  string // relative to e2e_test
	vars  map[string]string
	again bool
}

// rwSequences are files RisingWave's CI (ci/scripts/run-backfill-tests.sh)
// runs one after another on one cluster, each building on what the one
// before created: run alone on a fresh server they can only fail. Each
// sequence runs on one fresh server, in the script's order (its concurrent
// runs one after the other); a file in a sequence is not run alone.
var rwSequences = func() [][]rwStep {
	q3 := map[string]string{"TEST_NAME": "nexmark_q3"}
	q7 := map[string]string{"TEST_NAME": "nexmark_q7"}
	sb := "backfill/snapshot_backfill/"
	rt := "backfill/runtime/"
	return [][]rwStep{
		{{file: rt + "create_table.slt"}, {file: rt + "insert_snapshot.slt"}, {file: rt + "insert_upstream.slt"},
			{file: rt + "create_arrangement_backfill_mv.slt"}, {file: rt + "create_no_shuffle_mv.slt"},
			{file: rt + "validate_rows_no_shuffle.slt"}, {file: rt + "validate_rows_arrangement.slt"}},
		{{file: rt + "create_wide_table.slt"}, {file: rt + "insert_wide_snapshot.slt"}},
		{{file: sb + "create_nexmark_table.slt"},
			{file: sb + "nexmark/nexmark_q3.slt", vars: q3}, {file: sb + "nexmark/nexmark_q7.slt", vars: q7},
			{file: sb + "scale.slt", vars: q3}, {file: sb + "scale.slt", vars: q7, again: true},
			{file: sb + "check_data_equal.slt.part", vars: q3, again: true}, {file: sb + "check_data_equal.slt.part", vars: q7, again: true},
			{file: sb + "drop_mv.slt", vars: q3}, {file: sb + "drop_mv.slt", vars: q7, again: true},
			{file: sb + "drop_nexmark_table.slt"}},
	}
}()

// includedFiles returns the .slt files that another of files includes
// (`include <pattern>`): RisingWave runs them only as part of it.
func includedFiles(files []string) (map[string]bool, error) {
	out := map[string]bool{}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		for _, line := range strings.Split(string(src), "\n") {
			pat, ok := strings.CutPrefix(strings.TrimSpace(line), "include ")
			if !ok {
				continue
			}
			matches, err := filepath.Glob(filepath.Join(filepath.Dir(f), strings.TrimSpace(pat)))
			if err != nil {
				return nil, fmt.Errorf("%s: include %s: %w", f, pat, err)
			}
			for _, m := range matches {
				if m != f {
					out[m] = true
				}
			}
		}
	}
	return out, nil
}

// TestRisingWaveSuites runs RisingWave's own e2e files against Tributary:
// set RW_E2E_DIR to the e2e_test directory of a RisingWave checkout
// (skipped otherwise; nothing of RisingWave is in this repository).
// RW_E2E_SUITES picks its subdirectories (comma-separated; default
// rwSuites), RW_E2E_FILTER a substring of the paths. Each .slt file runs on
// a fresh server with every record run even after one failed, except files
// another file includes (counted as part of it) and the sequences of
// rwSequences (one server per sequence); the test
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
	included, err := includedFiles(files)
	if err != nil {
		t.Fatal(err)
	}
	// A run is one fresh server: a file alone, or a sequence.
	var runs [][]rwStep
	inSequence := map[string]bool{}
	for _, seq := range rwSequences {
		keep := false
		for _, st := range seq {
			p := filepath.Join(root, st.file)
			inSequence[p] = true
			keep = keep || slices.Contains(files, p)
		}
		if keep {
			runs = append(runs, seq)
		}
	}
	for _, path := range files {
		if included[path] || inSequence[path] {
			continue
		}
		rel, _ := filepath.Rel(root, path)
		runs = append(runs, []rwStep{{file: rel}})
	}
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
		for _, run := range runs {
			t.Run(run[0].file, func(t *testing.T) {
				t.Parallel()
				srv := testserver.Start(t, bin, t.TempDir())
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute*time.Duration(len(run)))
				defer cancel()
				for _, st := range run {
					res := result{file: st.file}
					script, err := slt.ParseFile(filepath.Join(root, st.file))
					if err != nil {
						res.first = "parse: " + err.Error()
						t.Log(res.first)
					} else {
						limit := 20 * time.Second
						if len(run) > 1 {
							limit = 2 * time.Minute // RisingWave's CI loads millions of rows in these
						}
						r := &slt.Runner{DSN: srv.DSN(), Vars: st.vars, KeepGoing: true, AnyColumnCount: true, RecordTimeout: limit,
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
								if err != nil && os.Getenv("RW_E2E_VERBOSE") != "" {
									t.Logf("%s", strings.SplitN(err.Error(), "\nSQL:", 2)[0])
								}
								if err == nil {
									res.passed++
								} else if res.first == "" {
									res.first = strings.ReplaceAll(strings.SplitN(err.Error(), "\n", 2)[0], "|", "/")
								}
							}}
						_ = r.Run(ctx, script) // failures are counted, not fatal
						r.Close(ctx)
						t.Logf("%s: %d/%d records passed %s", st.file, res.passed, res.records, res.first)
					}
					if st.again || !strings.HasSuffix(st.file, ".slt") {
						continue
					}
					mu.Lock()
					results = append(results, res)
					mu.Unlock()
				}
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
