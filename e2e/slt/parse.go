package slt

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// maxIncludeDepth bounds nested includes, so a cycle is an error rather than a hang.
const maxIncludeDepth = 16

// ParseFile reads and parses the script at path, expanding includes relative to its directory.
func ParseFile(path string) (*Script, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read script: %w", err)
	}
	return Parse(path, string(src))
}

// Parse parses src as the script named name. Includes are read from disk relative to
// filepath.Dir(name).
func Parse(name, src string) (*Script, error) {
	s := &Script{Path: name, sources: map[string][]string{}}
	p := &parser{script: s}
	if err := p.parse(name, src, 0); err != nil {
		return nil, err
	}
	return s, nil
}

type parser struct {
	script       *Script
	sortMode     SortMode // default set by `control sortmode`
	substitution bool     // set by `control substitution on|off`
}

// splitLines splits src into lines without their terminators; a final newline adds no line.
func splitLines(src string) []string {
	src = strings.ReplaceAll(src, "\r\n", "\n")
	src = strings.TrimSuffix(src, "\n")
	if src == "" {
		return nil
	}
	return strings.Split(src, "\n")
}

func isBlank(line string) bool { return strings.TrimSpace(line) == "" }

// directiveFields splits a directive line on whitespace, dropping a trailing `# comment`.
func directiveFields(line string) []string {
	f := strings.Fields(line)
	for i, w := range f {
		if strings.HasPrefix(w, "#") {
			return f[:i]
		}
	}
	return f
}

// restAfter returns the text of line after its first n whitespace-separated words, trimmed.
func restAfter(line string, n int) string {
	s := strings.TrimSpace(line)
	for i := 0; i < n; i++ {
		j := strings.IndexAny(s, " \t")
		if j < 0 {
			return ""
		}
		s = strings.TrimSpace(s[j:])
	}
	return s
}

var typesRE = regexp.MustCompile(`^[A-Za-z?]+$`)

func (p *parser) parse(file, src string, depth int) error {
	if depth > maxIncludeDepth {
		return fmt.Errorf("%s: includes nested deeper than %d (a cycle?)", file, maxIncludeDepth)
	}
	lines := splitLines(src)
	p.script.sources[file] = lines

	var conds []Condition
	conn := ""
	pendingLine := 0 // line of the first pending modifier, 0 when none
	errf := func(i int, format string, args ...any) error {
		return fmt.Errorf("%s:%d: %s", file, i+1, fmt.Sprintf(format, args...))
	}

	for i := 0; i < len(lines); {
		line := lines[i]
		trimmed := strings.TrimSpace(line)
		if trimmed == "" {
			// As in sqllogictest-rs, skipif/onlyif/connection apply to the next record even
			// across blank lines.
			i++
			continue
		}
		if strings.HasPrefix(trimmed, "#") {
			i++
			continue
		}
		f := directiveFields(trimmed)
		if len(f) == 0 { // a line of only a comment after whitespace
			i++
			continue
		}
		rec := &Record{Pos: Pos{File: file, Line: i + 1}, Count: -1, directive: line}
		if f[0] == "statement" || f[0] == "query" {
			var err error
			if line, err = rec.setRetry(line); err != nil {
				return errf(i, "%v", err)
			}
			f = directiveFields(strings.TrimSpace(line))
		}
		switch f[0] {
		case "skipif", "onlyif":
			if len(f) != 2 {
				return errf(i, "%s wants one engine name", f[0])
			}
			conds = append(conds, Condition{Skip: f[0] == "skipif", Engine: f[1]})
			if pendingLine == 0 {
				pendingLine = i + 1
			}
			i++
			continue
		case "connection":
			if len(f) != 2 {
				return errf(i, "connection wants one name")
			}
			conn = f[1]
			if pendingLine == 0 {
				pendingLine = i + 1
			}
			i++
			continue
		case "statement":
			rec.Kind = KindStatement
			if len(f) < 2 {
				return errf(i, "statement wants ok, error or count")
			}
			switch f[1] {
			case "ok":
				if len(f) > 2 {
					return errf(i, "unexpected %q after statement ok", f[2])
				}
			case "error":
				if err := rec.setError(restAfter(line, 2)); err != nil {
					return errf(i, "%v", err)
				}
			case "count":
				if len(f) != 3 {
					return errf(i, "statement count wants a number")
				}
				n, err := strconv.ParseInt(f[2], 10, 64)
				if err != nil || n < 0 {
					return errf(i, "bad statement count %q", f[2])
				}
				rec.Count = n
			default:
				return errf(i, "statement wants ok, error or count, not %q", f[1])
			}
			i = p.readBody(rec, lines, i+1)
			if rec.SQL == "" {
				return errf(i-1, "statement without SQL")
			}
			if rec.hasSep {
				if !rec.ExpectError {
					return errf(rec.sqlEnd, "---- after a statement that expects no error")
				}
				rec.ErrorMessage = strings.TrimSpace(strings.Join(rec.Expected, "\n"))
				rec.Expected = nil
			}
		case "query":
			rec.Kind = KindQuery
			if len(f) == 1 {
				// sqllogictest-rs: a query without column types (any columns).
				rec.AnyTypes = true
				rec.SortMode = p.sortMode
			} else if f[1] == "error" {
				if err := rec.setError(restAfter(line, 2)); err != nil {
					return errf(i, "%v", err)
				}
			} else {
				if !typesRE.MatchString(f[1]) {
					return errf(i, "bad column types %q (want letters such as I, T, R, or ?)", f[1])
				}
				rec.Types = f[1]
				rec.SortMode = p.sortMode
				rest := f[2:]
				if len(rest) > 0 {
					if m, ok := parseSortMode(rest[0]); ok {
						rec.SortMode = m
						rest = rest[1:]
					}
				}
				if len(rest) > 1 {
					return errf(i, "unexpected %q after query label", rest[1])
				}
				if len(rest) == 1 {
					rec.Label = rest[0]
				}
			}
			i = p.readBody(rec, lines, i+1)
			if rec.SQL == "" {
				return errf(i-1, "query without SQL")
			}
			if rec.ExpectError && rec.hasSep {
				rec.ErrorMessage = strings.TrimSpace(strings.Join(rec.Expected, "\n"))
				rec.Expected = nil
			}
		case "sleep":
			if len(f) != 2 {
				return errf(i, "sleep wants one duration, e.g. sleep 500ms")
			}
			d, err := time.ParseDuration(f[1])
			if err != nil || d < 0 {
				return errf(i, "bad sleep duration %q", f[1])
			}
			rec.Kind, rec.Duration = KindSleep, d
			i++
		case "halt":
			rec.Kind = KindHalt
			i++
		case "restart":
			rec.Kind = KindRestart
			switch {
			case len(f) == 1:
			case len(f) == 2 && f[1] == "kill":
				rec.Kill = true
			default:
				return errf(i, "restart takes nothing or kill")
			}
			i++
		case "kafka":
			cmd, next, err := parseKafka(f, lines, i)
			if err != nil {
				return errf(i, "%v", err)
			}
			rec.Kind, rec.Kafka = KindKafka, cmd
			i = next
		case "system":
			if len(f) != 2 || f[1] != "ok" {
				return errf(i, "system wants `system ok` and the command on the following lines")
			}
			var cmd []string
			for i++; i < len(lines) && !isBlank(lines[i]); i++ {
				cmd = append(cmd, lines[i])
			}
			if len(cmd) == 0 {
				return errf(i-1, "system ok without a command")
			}
			rec.Kind, rec.Command = KindSystem, strings.Join(cmd, "\n")
		case "control":
			if len(f) == 3 && f[1] == "substitution" && (f[2] == "on" || f[2] == "off") {
				if pendingLine != 0 {
					return errf(i, "control cannot be conditional")
				}
				p.substitution = f[2] == "on"
				i++
				continue
			}
			if len(f) != 3 || f[1] != "sortmode" {
				return errf(i, "only `control sortmode <mode>` and `control substitution on|off` are supported")
			}
			m, ok := parseSortMode(f[2])
			if !ok {
				return errf(i, "unknown sort mode %q", f[2])
			}
			if pendingLine != 0 {
				return errf(i, "control cannot be conditional")
			}
			p.sortMode = m
			i++
			continue
		case "hash-threshold":
			// Accepted for compatibility; results are always compared in full.
			i++
			continue
		case "include":
			if pendingLine != 0 {
				return errf(i, "include cannot be conditional")
			}
			pattern := restAfter(line, 1)
			if pattern == "" {
				return errf(i, "include wants a path or glob")
			}
			if err := p.include(file, pattern, depth); err != nil {
				return errf(i, "%v", err)
			}
			i++
			continue
		default:
			return errf(i, "unknown directive %q", f[0])
		}
		rec.Conditions, rec.Connection, rec.Substitute = conds, conn, p.substitution
		conds, conn, pendingLine = nil, "", 0
		p.script.Records = append(p.script.Records, rec)
	}
	if pendingLine != 0 {
		return errf(pendingLine-1, "skipif/onlyif/connection at end of file")
	}
	return nil
}

// retryRE matches sqllogictest-rs's `retry <n> backoff <duration>` at the end of a statement
// or query directive.
var retryRE = regexp.MustCompile(`^(.*?)\s+retry\s+(\S+)\s+backoff\s+(\S+)\s*$`)

// setRetry reads a trailing `retry <n> backoff <duration>` of line into r and returns the
// line without it.
func (r *Record) setRetry(line string) (string, error) {
	m := retryRE.FindStringSubmatch(strings.TrimSpace(line))
	if m == nil {
		if strings.Contains(" "+strings.Join(directiveFields(line), " ")+" ", " retry ") {
			return "", fmt.Errorf("retry wants `retry <n> backoff <duration>` at the end of the line")
		}
		return line, nil
	}
	n, err := strconv.Atoi(m[2])
	if err != nil || n < 1 {
		return "", fmt.Errorf("bad retry count %q", m[2])
	}
	d, err := time.ParseDuration(m[3])
	if err != nil || d < 0 {
		return "", fmt.Errorf("bad retry backoff %q", m[3])
	}
	r.Retry, r.Backoff = n, d
	return m[1], nil
}

func (r *Record) setError(pattern string) error {
	r.ExpectError = true
	r.ErrorPattern = pattern
	if pattern == "" {
		return nil
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return fmt.Errorf("bad error regex %q: %w", pattern, err)
	}
	r.ErrorRegex = re
	return nil
}

// readBody reads SQL lines from start until a blank line or `----`, then, after `----`, result
// lines until a blank line. It returns the index of the first line after the record.
func (p *parser) readBody(rec *Record, lines []string, start int) int {
	i := start
	var sql []string
	for ; i < len(lines) && !isBlank(lines[i]) && strings.TrimSpace(lines[i]) != "----"; i++ {
		if strings.HasPrefix(strings.TrimSpace(lines[i]), "#") {
			continue
		}
		sql = append(sql, lines[i])
	}
	rec.SQL = strings.TrimSpace(strings.Join(sql, "\n"))
	rec.sqlEnd = i
	rec.resultStart, rec.resultEnd = i, i
	if i < len(lines) && strings.TrimSpace(lines[i]) == "----" {
		rec.hasSep = true
		i++
		rec.resultStart = i
		for ; i < len(lines); i++ {
			if isBlank(lines[i]) {
				// An expected error message may hold blank lines ("...\n\nCaused by:"): it
				// ends at two blank lines, or at one followed by the next record.
				if !rec.ExpectError || i+1 >= len(lines) || isBlank(lines[i+1]) || startsRecord(lines[i+1]) {
					break
				}
			}
			rec.Expected = append(rec.Expected, lines[i])
		}
		rec.resultEnd = i
	}
	return i
}

// recordWords are the words that start a directive line.
var recordWords = map[string]bool{"statement": true, "query": true, "skipif": true, "onlyif": true, "connection": true,
	"control": true, "sleep": true, "system": true, "include": true, "halt": true, "restart": true, "kafka": true,
	"hash-threshold": true}

// startsRecord reports whether line is a directive or a comment (not a line of an error message).
func startsRecord(line string) bool {
	t := strings.TrimSpace(line)
	if strings.HasPrefix(t, "#") {
		return true
	}
	f := strings.Fields(t)
	return len(f) > 0 && recordWords[f[0]]
}

func (p *parser) include(file, pattern string, depth int) error {
	if !filepath.IsAbs(pattern) {
		pattern = filepath.Join(filepath.Dir(file), pattern)
	}
	matches, err := filepath.Glob(pattern)
	if err != nil {
		return fmt.Errorf("include %s: %w", pattern, err)
	}
	if len(matches) == 0 {
		return fmt.Errorf("include %s: no file matches", pattern)
	}
	sort.Strings(matches)
	for _, m := range matches {
		src, err := os.ReadFile(m)
		if err != nil {
			return fmt.Errorf("include: %w", err)
		}
		if err := p.parse(m, string(src), depth+1); err != nil {
			return err
		}
	}
	return nil
}
