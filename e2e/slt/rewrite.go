package slt

import (
	"fmt"
	"os"
	"sort"
	"strings"
)

// edit replaces lines [start, end) of a file with lines.
type edit struct {
	start, end int
	lines      []string
}

func (r *Runner) addEdit(file string, e edit) {
	for i, old := range r.edits[file] {
		if old.start == e.start { // an included file run twice: keep the latest answer
			r.edits[file][i] = e
			return
		}
	}
	r.edits[file] = append(r.edits[file], e)
}

// rewriteResult records that rec's expected rows should become actual, sorted as the record's
// sort mode would sort them.
func (r *Runner) rewriteResult(rec *Record, actual []string) {
	rows := actual
	if rec.SortMode != NoSort {
		rows = SortResult(rec.SortMode, actual)
	}
	if rec.hasSep {
		r.addEdit(rec.Pos.File, edit{start: rec.resultStart, end: rec.resultEnd, lines: rows})
	} else {
		r.addEdit(rec.Pos.File, edit{start: rec.sqlEnd, end: rec.sqlEnd, lines: append([]string{"----"}, rows...)})
	}
	if r.Logf != nil {
		r.Logf("%s: rewrote %d expected rows", rec.Pos, len(rows))
	}
}

// rewriteTypes records that rec's directive line should declare types.
func (r *Runner) rewriteTypes(rec *Record, types string) {
	line := strings.Fields(rec.directive)
	if len(line) < 2 {
		return
	}
	line[1] = types
	r.addEdit(rec.Pos.File, edit{start: rec.Pos.Line - 1, end: rec.Pos.Line, lines: []string{strings.Join(line, " ")}})
	if r.Logf != nil {
		r.Logf("%s: rewrote column types %s -> %s", rec.Pos, rec.Types, types)
	}
}

func (r *Runner) applyEdits(s *Script) error {
	for file, edits := range r.edits {
		lines := append([]string(nil), s.sources[file]...)
		sort.Slice(edits, func(i, j int) bool { return edits[i].start > edits[j].start })
		for _, e := range edits {
			out := append([]string(nil), lines[:e.start]...)
			out = append(out, e.lines...)
			lines = append(out, lines[e.end:]...)
		}
		info, err := os.Stat(file)
		if err != nil {
			return fmt.Errorf("rewrite %s: %w", file, err)
		}
		if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), info.Mode().Perm()); err != nil {
			return fmt.Errorf("rewrite %s: %w", file, err)
		}
		s.sources[file] = lines
	}
	r.edits = nil
	return nil
}
