package slt

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func mustParse(t *testing.T, src string) *Script {
	t.Helper()
	s, err := Parse(filepath.Join(t.TempDir(), "test.slt"), src)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return s
}

func TestParseRecords(t *testing.T) {
	s := mustParse(t, `# a comment
statement ok
CREATE TABLE t (
  id int primary key,
# a comment line inside SQL is dropped
  name varchar
)

statement error 23505
INSERT INTO t VALUES (1, 'a')

statement error
SELECT nope
----
column "nope" does not exist

statement count 2
INSERT INTO t VALUES (1, 'a'), (2, 'b')

skipif postgres
onlyif tributary
connection other
query IT rowsort my_label
SELECT id, name
  FROM t
----
1   a
2	b

control sortmode valuesort

query I
SELECT 1
----
1

query error relation .* does not exist
SELECT * FROM missing

query T nosort
SELECT ''

sleep 150ms

restart

restart kill

hash-threshold 8

halt
`)
	r := s.Records
	if len(r) != 12 || r[11].Kind != KindHalt {
		t.Fatalf("got %d records, want 12 ending in halt", len(r))
	}
	if r[0].Kind != KindStatement || r[0].ExpectError || r[0].SQL != "CREATE TABLE t (\n  id int primary key,\n  name varchar\n)" || r[0].Pos.Line != 2 {
		t.Errorf("record 0: %+v", r[0])
	}
	if !r[1].ExpectError || r[1].ErrorPattern != "23505" || r[1].ErrorRegex == nil {
		t.Errorf("record 1: %+v", r[1])
	}
	if !r[2].ExpectError || r[2].ErrorRegex != nil || r[2].ErrorMessage != `column "nope" does not exist` {
		t.Errorf("record 2: %+v", r[2])
	}
	if r[3].Count != 2 {
		t.Errorf("record 3 count = %d", r[3].Count)
	}
	q := r[4]
	if q.Kind != KindQuery || q.Types != "IT" || q.SortMode != RowSort || q.Label != "my_label" ||
		q.Connection != "other" || len(q.Conditions) != 2 || strings.Join(q.Expected, "|") != "1   a|2\tb" ||
		q.SQL != "SELECT id, name\n  FROM t" {
		t.Errorf("record 4: %+v", q)
	}
	if !q.Skipped("postgres") || q.Skipped("tributary") || !q.Skipped("sqlite") {
		t.Errorf("skipif/onlyif evaluation wrong")
	}
	if r[5].SortMode != ValueSort {
		t.Errorf("control sortmode not applied: %v", r[5].SortMode)
	}
	if !r[6].ExpectError || r[6].Kind != KindQuery || !r[6].ErrorRegex.MatchString(`relation "x" does not exist`) {
		t.Errorf("record 6: %+v", r[6])
	}
	if r[7].SortMode != NoSort || r[7].hasSep || len(r[7].Expected) != 0 {
		t.Errorf("record 7: %+v", r[7])
	}
	if r[8].Kind != KindSleep || r[8].Duration != 150*time.Millisecond {
		t.Errorf("record 8: %+v", r[8])
	}
	if r[9].Kind != KindRestart || r[9].Kill || r[10].Kind != KindRestart || !r[10].Kill {
		t.Errorf("restart records: %+v %+v", r[9], r[10])
	}
	if r[4].Connection != "other" || r[5].Connection != "" {
		t.Errorf("connection must apply to one record only")
	}
}

func TestParseHaltIsARecord(t *testing.T) {
	s := mustParse(t, "onlyif tributary\nhalt\n\nstatement ok\nSELECT 1\n")
	if len(s.Records) != 2 || s.Records[0].Kind != KindHalt {
		t.Fatalf("records: %+v", s.Records)
	}
}

func TestParseErrors(t *testing.T) {
	cases := map[string]string{
		"unknown directive":     "frobnicate\n",
		"statement without SQL": "statement ok\n",
		"statement wants":       "statement maybe\nSELECT 1\n",
		"bad column types":      "query I-T\nSELECT 1\n",
		"bad error regex":       "statement error (\nSELECT 1\n",
		"at end of file":        "statement ok\nSELECT 1\n\nonlyif x\n",
		"bad sleep":             "sleep forever\n",
		"expects no error":      "statement ok\nSELECT 1\n----\n1\n",
		"no file matches":       "include nothing_here_*.slt\n",
		"restart takes":         "restart now\n",
		"unknown sort mode":     "control sortmode random\n",
		"bad statement count":   "statement count x\nSELECT 1\n",
		"unexpected":            "query I rowsort label extra\nSELECT 1\n",
	}
	for want, src := range cases {
		_, err := Parse(filepath.Join(t.TempDir(), "e.slt"), src)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got error %v, want one containing %q", src, err, want)
		}
		if err != nil && !strings.Contains(err.Error(), "e.slt:") {
			t.Errorf("%q: error %v lacks file:line", src, err)
		}
	}
}

func TestParseInclude(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "include"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, src string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("include/b.slt.part", "statement ok\nSELECT 'b'\n")
	write("include/a.slt.part", "control sortmode rowsort\n\nstatement ok\nSELECT 'a'\n")
	write("main.slt", "statement ok\nSELECT 0\n\ninclude include/*.slt.part\n\nquery I\nSELECT 1\n----\n1\n")
	s, err := ParseFile(filepath.Join(dir, "main.slt"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range s.Records {
		got = append(got, r.SQL)
	}
	if strings.Join(got, ",") != "SELECT 0,SELECT 'a',SELECT 'b',SELECT 1" {
		t.Fatalf("records: %v", got)
	}
	if p := s.Records[1].Pos; filepath.Base(p.File) != "a.slt.part" || p.Line != 3 {
		t.Errorf("included record pos = %v", p)
	}
	if s.Records[3].SortMode != RowSort {
		t.Errorf("control sortmode from an include must carry on")
	}

	write("loop.slt", "include loop.slt\n")
	if _, err := ParseFile(filepath.Join(dir, "loop.slt")); err == nil || !strings.Contains(err.Error(), "cycle") {
		t.Errorf("include cycle: got %v", err)
	}
}

// TestParseRisingWaveForms: the forms of sqllogictest-rs that RisingWave's files use.
func TestParseRisingWaveForms(t *testing.T) {
	src := "onlyif x\n\nstatement ok\nSELECT 1\n\n" +
		"control substitution on\n\nquery\nSELECT '$__DATABASE__'\n----\ndev\n\n" +
		"control substitution off\n\n" +
		"statement error\nSELECT x\n----\ndb error: ERROR: Failed\n\nCaused by:\n  bad x\n\n\n" +
		"statement error\nSELECT y\n----\nshort\n\nstatement ok\nSELECT 2\n"
	s, err := Parse(filepath.Join(t.TempDir(), "rw.slt"), src)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Records) != 5 {
		t.Fatalf("%d records, want 5: %+v", len(s.Records), s.Records)
	}
	if r := s.Records[0]; len(r.Conditions) != 1 || r.SQL != "SELECT 1" {
		t.Errorf("condition across a blank line: %+v", r)
	}
	if r := s.Records[1]; !r.AnyTypes || !r.Substitute || r.Expected[0] != "dev" {
		t.Errorf("query without types under substitution: %+v", r)
	}
	if r := s.Records[2]; r.Substitute || r.ErrorMessage != "db error: ERROR: Failed\n\nCaused by:\n  bad x" {
		t.Errorf("multi-line error: %q (substitute %v)", r.ErrorMessage, r.Substitute)
	}
	if r := s.Records[3]; r.ErrorMessage != "short" {
		t.Errorf("one-line error before the next record: %q", r.ErrorMessage)
	}
	if got := substituteVars("a $__DATABASE__ ${__DATABASE__} $NOPE_NOT_SET_X", "/x/y.slt", "postgres://u@h/dev", nil); got != "a dev dev $NOPE_NOT_SET_X" {
		if got := substituteVars("${TEST_NAME}_mv $TEST_NAME", "/x/y.slt", "", map[string]string{"TEST_NAME": "nexmark_q3"}); got != "nexmark_q3_mv nexmark_q3" {
			t.Errorf("a run's variable: %q", got)
		}
		t.Errorf("substituteVars: %q", got)
	}
}
