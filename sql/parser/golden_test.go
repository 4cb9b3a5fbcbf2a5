package parser

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/format"

	"github.com/tributary/tributary/sql/types"
)

var rewriteGolden = flag.Bool("rewrite", false, "rewrite the expected output of testdata files")

// Golden files in testdata/: blocks of
//
//	<command>
//	<sql, one or more lines>
//	----
//	<expected output, no blank lines>
//	<blank line>
//
// Commands: "parse" prints a summary of each statement; "rewrite" prints the
// text handed to TiDB after the compatibility pass. Lines starting with # are
// comments between blocks.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) { runGoldenFile(t, f) })
	}
}

type goldenCase struct {
	cmd, sql, want string
	line           int
}

func readGolden(t *testing.T, path string) (head []string, cases []goldenCase, comments map[int][]string) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	comments = map[int][]string{}
	i := 0
	for i < len(lines) {
		l := lines[i]
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
			comments[len(cases)] = append(comments[len(cases)], l)
			i++
			continue
		}
		c := goldenCase{cmd: strings.TrimSpace(l), line: i + 1}
		i++
		var sqlLines []string
		for i < len(lines) && lines[i] != "----" {
			sqlLines = append(sqlLines, lines[i])
			i++
		}
		if i >= len(lines) {
			t.Fatalf("%s:%d: missing ----", path, c.line)
		}
		i++
		var out []string
		for i < len(lines) && lines[i] != "" {
			out = append(out, lines[i])
			i++
		}
		c.sql = strings.Join(sqlLines, "\n")
		c.want = strings.Join(out, "\n")
		cases = append(cases, c)
	}
	return head, cases, comments
}

func runGoldenFile(t *testing.T, path string) {
	_, cases, comments := readGolden(t, path)
	var b strings.Builder
	for k, c := range cases {
		got := runGoldenCmd(t, c.cmd, c.sql)
		if !*rewriteGolden && got != c.want {
			t.Errorf("%s:%d: %s\n%s\ngot:\n%s\nwant:\n%s", path, c.line, c.cmd, c.sql, got, c.want)
		}
		for _, l := range comments[k] {
			b.WriteString(l + "\n")
		}
		fmt.Fprintf(&b, "%s\n%s\n----\n%s\n", c.cmd, c.sql, got)
		if k < len(cases)-1 && len(comments[k+1]) == 0 {
			b.WriteString("\n")
		}
	}
	for _, l := range comments[len(cases)] {
		b.WriteString(l + "\n")
	}
	if *rewriteGolden {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func runGoldenCmd(t *testing.T, cmd, sql string) string {
	switch cmd {
	case "parse":
		stmts, err := Parse(sql)
		if err != nil {
			return errString(sql, err)
		}
		var out []string
		for _, s := range stmts {
			spliceRows(s) // the fast path's literal rows print as the rows they are
			out = append(out, summarize(s))
		}
		if len(out) == 0 {
			return "(no statements)"
		}
		return strings.Join(out, "\n")
	case "rewrite":
		got, err := rewriteText(sql)
		if err != nil {
			return errString(sql, err)
		}
		return got
	}
	t.Fatalf("unknown golden command %q", cmd)
	return ""
}

// rewriteText runs the compatibility pass over one statement.
func rewriteText(sql string) (string, error) {
	toks, err := lex(sql)
	if err != nil {
		return "", err
	}
	seq, err := buildTree(sql, toks)
	if err != nil {
		return "", err
	}
	c := &rewriteCtx{src: sql}
	if seq, err = c.rewrite(seq); err != nil {
		return "", err
	}
	return renderString(seq), nil
}

func errString(sql string, err error) string {
	var te *types.Error
	if !errors.As(err, &te) {
		return "error (not *types.Error): " + err.Error()
	}
	kind := "42601"
	if errors.Is(err, types.ErrUnsupported) {
		kind = "0A000"
	} else if !errors.Is(err, types.ErrSyntax) {
		kind = te.Kind.Error()
	}
	at := ""
	if te.Pos > 0 {
		r := []rune(sql)
		if te.Pos-1 <= len(r) {
			end := min(te.Pos-1+10, len(r))
			at = fmt.Sprintf(" (at %q)", string(r[te.Pos-1:end]))
		}
	}
	return fmt.Sprintf("error %s pos=%d: %s%s", kind, te.Pos, te.Msg, at)
}

func restore(n ast.Node) string {
	var b strings.Builder
	ctx := format.NewRestoreCtx(format.RestoreStringSingleQuotes|format.RestoreKeyWordUppercase|format.RestoreNameDoubleQuotes|format.RestoreStringWithoutCharset, &b)
	if err := n.Restore(ctx); err != nil {
		return "<restore error: " + err.Error() + ">"
	}
	return b.String()
}

// summarize prints a statement for golden tests.
func summarize(s Statement) string {
	switch s := s.(type) {
	case *Query:
		out := fmt.Sprintf("Query %T: %s", s.Node, restore(s.Node))
		if s.Returning != nil {
			var fs []string
			for _, f := range s.Returning {
				fs = append(fs, restore(f))
			}
			out += "\n  returning: " + strings.Join(fs, ", ")
		}
		if s.From != nil {
			out += "\n  from: " + restore(s.From)
		}
		var keys []string
		for k := range s.TableFuncs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			tf := s.TableFuncs[k]
			var args []string
			for _, a := range tf.Args {
				args = append(args, restore(a))
			}
			out += fmt.Sprintf("\n  %s = %s(%s)", k, tf.Name, strings.Join(args, ", "))
			if tf.ColumnAliases != nil {
				out += fmt.Sprintf(" columns %v", tf.ColumnAliases)
			}
		}
		return out
	case *Copy:
		out := fmt.Sprintf("Copy %s columns=%v from=%v file=%q program=%v", s.Table, s.Columns, s.From, s.File, s.Program)
		for _, o := range s.Options {
			out += fmt.Sprintf("\n  %s=%q columns=%v all=%v", o.Key, o.Value, o.Columns, o.All)
		}
		if s.Query != nil {
			out += "\n  " + summarize(s.Query)
		}
		return out
	case *ExplainAnalyze:
		return fmt.Sprintf("ExplainAnalyze %s %s duration=%s", s.Kind, s.Name, s.Duration)
	case *Explain:
		return fmt.Sprintf("Explain verbose=%v\n  %s", s.Verbose, strings.ReplaceAll(summarize(s.Stmt), "\n", "\n  "))
	case *CreateTable:
		out := fmt.Sprintf("CreateTable %s ifNotExists=%v appendOnly=%v pk=%v", s.Name, s.IfNotExists, s.AppendOnly, s.PrimaryKey)
		out += columnsSummary(s.Columns) + optsSummary(s.With, s.Format)
		if s.FromSource != nil {
			out += fmt.Sprintf("\n  from source %s table %q", s.FromSource, s.SourceTable)
		}
		if s.AsQuery != nil {
			out += fmt.Sprintf("\n  as columns=%v noData=%v %s", s.AsColumns, s.WithNoData, summarize(s.AsQuery))
		}
		return out + watermarkSummary(s.Watermark)
	case *CreateSource:
		out := fmt.Sprintf("CreateSource %s ifNotExists=%v pk=%v", s.Name, s.IfNotExists, s.PrimaryKey)
		return out + columnsSummary(s.Columns) + optsSummary(s.With, s.Format) + watermarkSummary(s.Watermark)
	case *CreateMaterializedView:
		eowc := ""
		if s.EmitOnWindowClose {
			eowc = " emitOnWindowClose"
		}
		return fmt.Sprintf("CreateMaterializedView %s ifNotExists=%v%s%s\n  %s", s.Name, s.IfNotExists, eowc, optsSummary(s.With, nil), summarize(s.Query))
	case *CreateView:
		return fmt.Sprintf("CreateView %s ifNotExists=%v orReplace=%v columns=%v\n  %s", s.Name, s.IfNotExists, s.OrReplace, s.Columns, summarize(s.Query))
	case *AlterColumn:
		out := fmt.Sprintf("AlterColumn %s ifExists=%v drop=%q columnIf=%v cascade=%v", s.Name, s.IfExists, s.Drop, s.ColumnIf, s.Cascade)
		if s.Add != nil {
			out += columnsSummary([]*ColumnDef{s.Add})
		}
		return out
	case *CreateSink:
		out := fmt.Sprintf("CreateSink %s ifNotExists=%v", s.Name, s.IfNotExists)
		if s.Into != nil {
			out += fmt.Sprintf(" into=%s%v", s.Into, s.IntoColumns)
		}
		if s.From != nil {
			out += fmt.Sprintf(" from=%s", s.From)
		}
		if s.EmitOnWindowClose {
			out += " emitOnWindowClose"
		}
		out += optsSummary(s.With, s.Format)
		if s.Query != nil {
			out += "\n  " + summarize(s.Query)
		}
		return out
	}
	// Plain structs: print exported fields.
	v := reflect.ValueOf(s).Elem()
	out := v.Type().Name()
	for i := 0; i < v.NumField(); i++ {
		f := v.Type().Field(i)
		if f.Anonymous {
			continue
		}
		fv := v.Field(i).Interface()
		if o, ok := fv.(*ObjectName); ok {
			if o == nil {
				continue
			}
			fv = *o
		}
		out += fmt.Sprintf(" %s=%v", f.Name, fv)
	}
	return out
}

func watermarkSummary(w *Watermark) string {
	if w == nil {
		return ""
	}
	return fmt.Sprintf("\n  watermark for %q delay %q", w.Column, w.Delay)
}

func columnsSummary(cols []*ColumnDef) string {
	var out string
	for _, c := range cols {
		out += fmt.Sprintf("\n  column %q %s notNull=%v pk=%v", c.Name, c.Type, c.NotNull, c.PrimaryKey)
		if c.Default != nil {
			out += fmt.Sprintf(" default=%s text=%q", restore(c.Default), c.DefaultText)
		}
		if c.Serial {
			out += " serial"
		}
		if c.Identity != "" {
			out += fmt.Sprintf(" identity=%q start=%d increment=%d", c.Identity, c.SeqStart, c.SeqIncrement)
		}
	}
	return out
}

func optsSummary(with []Option, f *FormatEncode) string {
	var out string
	if with != nil {
		out += fmt.Sprintf("\n  with %v", with)
	}
	if f != nil {
		out += fmt.Sprintf("\n  format %s encode %s %v", f.Format, f.Encode, f.Options)
	}
	return out
}
