package postgres

import (
	"strconv"
	"strings"
)

// maxParams is PostgreSQL's limit on one statement's parameters.
const maxParams = 65535

// maxRowsPerStatement bounds the rows (or keys) of one INSERT or DELETE.
const maxRowsPerStatement = 1000

// rowsPerStatement returns how many rows of width columns fit in one statement.
func rowsPerStatement(width int) int {
	return max(1, min(maxRowsPerStatement, maxParams/max(width, 1)))
}

// statements builds and caches the SQL text of a sink's statements. Every
// parameter is cast to its target column's type, by its schema-qualified name
// and without modifiers (so char(n) does not become char(1), and the
// column's own length and precision checks apply on assignment instead of a
// cast's silent truncation): the values are sent as text and PostgreSQL
// parses them with that type's input function.
type statements struct {
	tgt    *target
	upsert bool
	insert map[int]string // by row count (see cacheable)
	delete map[int]string // by key count
	// deleteNull deletes one key that has a NULL, which = never matches.
	deleteNull string
}

func newStatements(tgt *target, upsert bool) *statements {
	return &statements{tgt: tgt, upsert: upsert, insert: map[int]string{}, delete: map[int]string{}}
}

// cacheable reports whether the text of a statement of n rows is kept: the
// small ones every epoch of a trickle uses, and the full-size ones. A
// thousand-row statement's text is large, so the sizes between are rebuilt.
func (s *statements) cacheable(n int) bool {
	return n <= 32 || n == maxRowsPerStatement || n == rowsPerStatement(len(s.tgt.cols)) || n == rowsPerStatement(len(s.tgt.key))
}

func (s *statements) param(b *strings.Builder, n int, col int) {
	b.WriteByte('$')
	b.WriteString(strconv.Itoa(n))
	b.WriteString("::")
	b.WriteString(s.tgt.cols[col].cast)
}

// insertSQL is INSERT INTO t (cols) VALUES (...) x rows, and for an upsert
// sink ON CONFLICT (key) DO UPDATE SET c = EXCLUDED.c for the other columns
// (DO NOTHING when every column is in the key).
func (s *statements) insertSQL(rows int) string {
	if q, ok := s.insert[rows]; ok {
		return q
	}
	t := s.tgt
	var b strings.Builder
	b.WriteString("INSERT INTO ")
	b.WriteString(t.table)
	b.WriteString(" (")
	for j, c := range t.cols {
		if j > 0 {
			b.WriteString(", ")
		}
		b.WriteString(c.ident)
	}
	b.WriteString(") VALUES ")
	n := 1
	for r := 0; r < rows; r++ {
		if r > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('(')
		for j := range t.cols {
			if j > 0 {
				b.WriteString(", ")
			}
			s.param(&b, n, j)
			n++
		}
		b.WriteByte(')')
	}
	if s.upsert {
		b.WriteString(" ON CONFLICT (")
		isKey := make([]bool, len(t.cols))
		for i, k := range t.key {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(t.cols[k].ident)
			isKey[k] = true
		}
		b.WriteString(") DO ")
		first := true
		for j, c := range t.cols {
			if isKey[j] {
				continue
			}
			if first {
				b.WriteString("UPDATE SET ")
				first = false
			} else {
				b.WriteString(", ")
			}
			b.WriteString(c.ident)
			b.WriteString(" = EXCLUDED.")
			b.WriteString(c.ident)
		}
		if first {
			b.WriteString("NOTHING")
		}
	}
	q := b.String()
	if s.cacheable(rows) {
		s.insert[rows] = q
	}
	return q
}

// deleteSQL deletes keys rows by key:
// DELETE FROM t USING (VALUES (...), ...) AS v(k0, ...) WHERE t.key0 = v.k0 AND ...
func (s *statements) deleteSQL(keys int) string {
	if q, ok := s.delete[keys]; ok {
		return q
	}
	t := s.tgt
	var b strings.Builder
	b.WriteString("DELETE FROM ")
	b.WriteString(t.table)
	b.WriteString(" AS t USING (VALUES ")
	n := 1
	for r := 0; r < keys; r++ {
		if r > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('(')
		for i, k := range t.key {
			if i > 0 {
				b.WriteString(", ")
			}
			s.param(&b, n, k)
			n++
		}
		b.WriteByte(')')
	}
	b.WriteString(") AS v(")
	for i := range t.key {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("k")
		b.WriteString(strconv.Itoa(i))
	}
	b.WriteString(") WHERE ")
	for i, k := range t.key {
		if i > 0 {
			b.WriteString(" AND ")
		}
		b.WriteString("t.")
		b.WriteString(t.cols[k].ident)
		b.WriteString(" = v.k")
		b.WriteString(strconv.Itoa(i))
	}
	q := b.String()
	if s.cacheable(keys) {
		s.delete[keys] = q
	}
	return q
}

// deleteNullSQL deletes one key compared with IS NOT DISTINCT FROM, for keys
// with a NULL (a unique index allows them, and = would never match).
func (s *statements) deleteNullSQL() string {
	if s.deleteNull != "" {
		return s.deleteNull
	}
	t := s.tgt
	var b strings.Builder
	b.WriteString("DELETE FROM ")
	b.WriteString(t.table)
	b.WriteString(" WHERE ")
	for i, k := range t.key {
		if i > 0 {
			b.WriteString(" AND ")
		}
		b.WriteString(t.cols[k].ident)
		b.WriteString(" IS NOT DISTINCT FROM ")
		s.param(&b, i+1, k)
	}
	s.deleteNull = b.String()
	return s.deleteNull
}
