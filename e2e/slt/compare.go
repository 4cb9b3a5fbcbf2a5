package slt

import (
	"fmt"
	"sort"
	"strings"
)

// FormatValue renders one text-format value as a script writes it: NULL (nil) as `NULL`, the
// empty string as `(empty)`, anything else as the server sent it.
func FormatValue(v []byte) string {
	if v == nil {
		return "NULL"
	}
	if len(v) == 0 {
		return "(empty)"
	}
	return string(v)
}

// FormatRow renders one row of text-format values as a result line.
func FormatRow(values [][]byte) string {
	var b strings.Builder
	for i, v := range values {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(FormatValue(v))
	}
	return b.String()
}

// normalize collapses runs of whitespace to one space and trims the ends, as sqllogictest-rs
// does, so columns may be aligned with several spaces or tabs in a script.
func normalize(line string) string { return strings.Join(strings.Fields(line), " ") }

// SortResult returns lines normalized and ordered by mode: NoSort keeps the order, RowSort
// sorts whole lines, ValueSort splits every line into values and sorts them, one per line.
func SortResult(mode SortMode, lines []string) []string {
	var out []string
	switch mode {
	case ValueSort:
		for _, l := range lines {
			out = append(out, strings.Fields(l)...)
		}
		sort.Strings(out)
	default:
		out = make([]string, len(lines))
		for i, l := range lines {
			out[i] = normalize(l)
		}
		if mode == RowSort {
			sort.Strings(out)
		}
	}
	return out
}

// Compare reports whether actual matches expected under mode, both given as result lines.
// It returns the index of the first differing line after sorting (-1 when they match).
func Compare(mode SortMode, expected, actual []string) int {
	e, a := SortResult(mode, expected), SortResult(mode, actual)
	n := min(len(e), len(a))
	for i := 0; i < n; i++ {
		if e[i] != a[i] {
			return i
		}
	}
	if len(e) != len(a) {
		return n
	}
	return -1
}

// MismatchError describes a query whose rows differ from the script's.
type MismatchError struct {
	Pos      Pos
	SQL      string
	Mode     SortMode
	Expected []string // as written in the script
	Actual   []string // as the server answered, formatted
	At       int      // first differing line after sorting
}

func (e *MismatchError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: query result mismatch (%s, first difference at row %d)\n", e.Pos, e.Mode, e.At+1)
	writeBlock(&b, "SQL", []string{e.SQL})
	writeBlock(&b, fmt.Sprintf("expected (%d rows)", len(e.Expected)), SortResult(e.Mode, e.Expected))
	writeBlock(&b, fmt.Sprintf("actual (%d rows)", len(e.Actual)), SortResult(e.Mode, e.Actual))
	return strings.TrimSuffix(b.String(), "\n")
}

func writeBlock(b *strings.Builder, title string, lines []string) {
	fmt.Fprintf(b, "%s:\n", title)
	for _, l := range lines {
		for _, sub := range strings.Split(l, "\n") {
			fmt.Fprintf(b, "    %s\n", sub)
		}
	}
}
