package slt

import (
	"fmt"
	"regexp"
	"time"
)

// Kind says what a Record does.
type Kind int

// The record kinds.
const (
	KindStatement Kind = iota // statement ok | error [regex] | count N
	KindQuery                 // query <types> [sortmode] [label], or query error [regex]
	KindSleep                 // sleep <duration>
	KindHalt                  // halt: stop running the script
	KindRestart               // restart [kill]: Tributary's own directive
	KindKafka                 // kafka <command> ...: the script's in-process Kafka cluster
	KindSystem                // system ok: a shell command (Tributary's own directive)
)

func (k Kind) String() string {
	switch k {
	case KindStatement:
		return "statement"
	case KindQuery:
		return "query"
	case KindSleep:
		return "sleep"
	case KindHalt:
		return "halt"
	case KindRestart:
		return "restart"
	case KindKafka:
		return "kafka"
	case KindSystem:
		return "system"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// SortMode says how a query's rows are ordered before comparison.
type SortMode int

// The sort modes of sqllogictest.
const (
	NoSort    SortMode = iota // compare rows in the order the server sent them
	RowSort                   // sort rows (as printed lines) before comparing
	ValueSort                 // sort every single value before comparing
)

func (m SortMode) String() string {
	switch m {
	case NoSort:
		return "nosort"
	case RowSort:
		return "rowsort"
	case ValueSort:
		return "valuesort"
	}
	return fmt.Sprintf("SortMode(%d)", int(m))
}

func parseSortMode(s string) (SortMode, bool) {
	switch s {
	case "nosort":
		return NoSort, true
	case "rowsort":
		return RowSort, true
	case "valuesort":
		return ValueSort, true
	}
	return NoSort, false
}

// Pos is where a record starts: the line of its directive (1-based).
type Pos struct {
	File string
	Line int
}

func (p Pos) String() string { return fmt.Sprintf("%s:%d", p.File, p.Line) }

// Condition is one `skipif <engine>` or `onlyif <engine>` line.
type Condition struct {
	Skip   bool // skipif (true) or onlyif (false)
	Engine string
}

// Record is one blank-line-separated unit of a script.
type Record struct {
	Kind       Kind
	Pos        Pos
	Conditions []Condition
	Connection string // "" is the default session
	// Substitute is set under `control substitution on`: $NAME and ${NAME} in the SQL
	// and commands are replaced (Runner.substituteVars).
	Substitute bool
	SQL        string

	// Statements and queries that expect an error.
	ExpectError  bool
	ErrorPattern string         // as written; "" accepts any error
	ErrorRegex   *regexp.Regexp // compiled ErrorPattern, nil when empty
	ErrorMessage string         // `----` block after `statement error`: the exact message, "" if none

	// Statements: `statement count N` (-1 when not given).
	Count int64

	// Queries.
	Types    string   // one letter per column, e.g. "ITR"
	AnyTypes bool     // `query` without types: any number of columns
	SortMode SortMode // resolved, including `control sortmode`
	Label    string
	Expected []string // expected result lines as written

	Duration time.Duration // sleep
	Kill     bool          // restart kill
	Kafka    *KafkaCommand // kafka
	Command  string        // system ok: the shell command (sh -c)

	// Statements and queries with `retry <n> backoff <duration>`: run again up to Retry more
	// times, Backoff apart, until the record passes (within the record's timeout).
	Retry   int
	Backoff time.Duration

	directive string // the directive line as written, for rewrite

	// Line indexes (0-based, into the record's file) used by rewrite.
	sqlEnd      int  // index of the first line after the SQL
	hasSep      bool // a `----` line follows the SQL at sqlEnd
	resultStart int  // first result line
	resultEnd   int  // one past the last result line
}

// Skipped reports whether the record's conditions exclude it on engine.
func (r *Record) Skipped(engine string) bool {
	for _, c := range r.Conditions {
		if c.Skip == (c.Engine == engine) {
			return true
		}
	}
	return false
}

// Script is a parsed file with its includes expanded in place. After a rewrite its records'
// line positions are stale: parse the file again to run it again.
type Script struct {
	Path    string
	Records []*Record
	sources map[string][]string // file -> its lines, for rewrite
}
