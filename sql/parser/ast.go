package parser

import (
	"strconv"
	"strings"
	"time"

	"github.com/pingcap/tidb/pkg/parser/ast"
)

// Statement is one parsed SQL statement.
type Statement interface {
	// Text is the statement's original source text (trimmed, without ';').
	Text() string
}

// Source carries a statement's original text; every statement embeds it.
type Source struct {
	text string
}

// Text returns the statement's original source text.
func (s *Source) Text() string { return s.text }

func (s *Source) setText(t string) { s.text = t }

// ObjectName is a possibly schema-qualified object name (Schema "" when not
// given).
type ObjectName struct {
	Database string // of a three-part name db.schema.name; "" otherwise
	Schema   string
	Name     string
}

// QualifiedString is the name as written, with its database if one was.
func (n ObjectName) QualifiedString() string {
	if n.Database != "" {
		return n.Database + "." + n.String()
	}
	return n.String()
}

func (n ObjectName) String() string {
	if n.Schema == "" {
		return n.Name
	}
	return n.Schema + "." + n.Name
}

// ObjectKind names the kind of catalog object a DROP or ALTER is about.
type ObjectKind uint8

// Object kinds.
const (
	KindTable ObjectKind = iota + 1
	KindMaterializedView
	KindView
	KindSink
	KindSource
	KindIndex
	KindSystem // ALTER SYSTEM SET
)

func (k ObjectKind) String() string {
	switch k {
	case KindTable:
		return "TABLE"
	case KindMaterializedView:
		return "MATERIALIZED VIEW"
	case KindView:
		return "VIEW"
	case KindSink:
		return "SINK"
	case KindSource:
		return "SOURCE"
	case KindIndex:
		return "INDEX"
	case KindSystem:
		return "SYSTEM"
	}
	return "ObjectKind(" + strconv.Itoa(int(k)) + ")"
}

// TypeName is a column or cast type with its name canonicalised to
// PostgreSQL's (integer, double precision, varchar, timestamptz, ...).
type TypeName struct {
	Name string
	Args []int
	// Array is set for an array of the named type (integer[], int ARRAY).
	Array bool
}

// String prints the type back, e.g. numeric(10,2), varchar(20), text, integer[].
func (t TypeName) String() string {
	var b strings.Builder
	b.WriteString(t.Name)
	if len(t.Args) > 0 {
		b.WriteByte('(')
		for i, a := range t.Args {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(a))
		}
		b.WriteByte(')')
	}
	if t.Array {
		b.WriteString("[]")
	}
	return b.String()
}

// Option is one key = value pair of a WITH (...) or FORMAT ... ENCODE ... (...)
// list. Key is lower case with dotted keys kept whole; Value is the unquoted
// string, number or identifier text.
type Option struct {
	Key   string
	Value string
}

// FormatEncode is a FORMAT x ENCODE y [(options)] clause.
type FormatEncode struct {
	Format  string
	Encode  string
	Options []Option
}

// TableFunc is a function call that appeared in FROM; the query refers to it
// by a placeholder table name (the key in Query.TableFuncs).
type TableFunc struct {
	Name          string // lower case, without a pg_catalog. qualifier
	Args          []ast.ExprNode
	ColumnAliases []string // from "AS g(a, b)"; nil when not given
	Ordinality    bool     // WITH ORDINALITY: a bigint row number column follows
}

// Query is a SELECT, set operation, VALUES, TABLE t, INSERT, UPDATE or DELETE,
// parsed by TiDB after the PostgreSQL compatibility rewrite.
type Query struct {
	Source
	Node       ast.StmtNode
	Returning  []*ast.SelectField    // a DML's RETURNING list; nil when absent
	TableFuncs map[string]*TableFunc // placeholder table name -> function
	// AliasColumns maps a FROM item's alias to the column names given in
	// "AS alias(a, b)" (TiDB takes no column list there).
	AliasColumns map[string][]string
	// From is UPDATE's FROM list or DELETE's USING list (the other
	// relations the statement joins its target with); nil when absent.
	From *ast.TableRefsClause
	// OnConflict is an INSERT's ON CONFLICT clause; nil when absent.
	OnConflict *OnConflict
	// OverridingSystem is INSERT ... OVERRIDING SYSTEM VALUE: explicit
	// values go into GENERATED ALWAYS AS IDENTITY columns.
	OverridingSystem bool
	// OverridingUser is OVERRIDING USER VALUE: identity columns take their
	// sequence's next value whatever the statement gives.
	OverridingUser bool
	// Rows are an INSERT's VALUES rows after the one in Node, when the
	// fast path took them as literals (insert_values.go).
	Rows [][]Literal
}

// OnConflict is INSERT ... ON CONFLICT [(columns) | ON CONSTRAINT name]
// DO NOTHING | DO UPDATE SET ... [WHERE ...].
type OnConflict struct {
	Columns    []string // the conflict target's columns (none: any key)
	Constraint string   // ON CONSTRAINT name
	DoNothing  bool
	// Set and Where are DO UPDATE's assignments and condition (TiDB's
	// nodes; EXCLUDED.c names the row proposed for insertion).
	Set   []*ast.Assignment
	Where ast.ExprNode
}

// Explain is EXPLAIN [VERBOSE] <statement>.
type Explain struct {
	Source
	Stmt    Statement
	Verbose bool
}

// ExplainAnalyze is EXPLAIN ANALYZE [(DURATION d)] MATERIALIZED VIEW | SINK
// | TABLE name: the running job's plan with each operator's measured rates
// over Duration (0: the default).
type ExplainAnalyze struct {
	Source
	Kind     ObjectKind
	Name     ObjectName
	Duration time.Duration
	// Plain is EXPLAIN MATERIALIZED VIEW | SINK name (without ANALYZE):
	// the running job's plan with each operator's fragment and current
	// parallelism, nothing measured.
	Plain bool
}

// ColumnDef is one column of CREATE TABLE or CREATE SOURCE.
type ColumnDef struct {
	Name        string
	Type        TypeName
	NotNull     bool
	PrimaryKey  bool
	Default     ast.ExprNode // nil if none
	DefaultText string       // the default expression's original text
	// Generated is a generated column's expression (RisingWave's "AS expr"
	// or PostgreSQL's GENERATED ALWAYS AS (expr) STORED), nil if none.
	Generated     ast.ExprNode
	GeneratedText string
	// Serial is set for serial, bigserial and smallserial (Type is then
	// the integer type): the default comes from the column's own sequence.
	Serial bool
	// Identity is GENERATED ALWAYS AS IDENTITY ("always") or GENERATED BY
	// DEFAULT AS IDENTITY ("by default"); "" for neither. SeqStart and
	// SeqIncrement are its sequence options (0: not given).
	Identity     string
	SeqStart     int64
	SeqIncrement int64
}

// CreateTable is CREATE TABLE, parsed by our own grammar.
type CreateTable struct {
	Source
	Name        ObjectName
	IfNotExists bool
	Columns     []*ColumnDef
	PrimaryKey  []string
	AppendOnly  bool
	// OnConflict is RisingWave's ON CONFLICT clause: "overwrite", "ignore"
	// or "do_update_if_not_null" ("": PostgreSQL's 23505).
	OnConflict string
	// VersionColumns are ON CONFLICT's WITH VERSION COLUMN (names).
	VersionColumns []string
	Include        []Include
	With           []Option
	Format         *FormatEncode
	// FromSource and SourceTable are FROM source TABLE 'name': a table
	// mirroring one upstream table of a CDC source.
	FromSource  *ObjectName
	SourceTable string
	// Watermark is WATERMARK FOR col AS col - INTERVAL '...' (nil: none).
	Watermark *Watermark
	// AsQuery is CREATE TABLE name [(AsColumns)] AS query [WITH [NO]
	// DATA]: the table takes the query's columns and (unless WithNoData)
	// its rows; Columns is then empty.
	AsQuery    *Query
	AsColumns  []string
	WithNoData bool
}

// Watermark is a column list's WATERMARK FOR col AS col [- INTERVAL 'd']:
// rows of the relation whose Column is below the greatest value seen minus
// Delay are late. Delay is the interval's text in PostgreSQL's input form
// ("" for none: the watermark is the greatest value itself).
type Watermark struct {
	Column string
	Delay  string
}

// Include is an INCLUDE what [AS name] clause of a connector's CREATE SOURCE
// or CREATE TABLE: a column filled from the message's metadata. What is
// lower case (partition, offset, timestamp, key); Name is "" when not given.
type Include struct {
	What string
	Name string
}

// CreateMaterializedView is CREATE MATERIALIZED VIEW [IF NOT EXISTS] n
// [WITH (...)] AS query.
type CreateMaterializedView struct {
	Source
	Name        ObjectName
	IfNotExists bool
	Columns     []string // optional names of the visible columns, in order
	Query       *Query
	With        []Option
	// EmitOnWindowClose is EMIT ON WINDOW CLOSE after the query.
	EmitOnWindowClose bool
}

// CreateIndex is CREATE INDEX [IF NOT EXISTS] [name] ON table (columns)
// [INCLUDE (columns)] [DISTRIBUTED BY (columns)]. Name is "" when omitted.
type CreateIndex struct {
	Source
	Name          string
	IfNotExists   bool
	Table         ObjectName
	Columns       []string
	Include       []string
	DistributedBy []string
}

// CreateView is CREATE [OR REPLACE] VIEW [IF NOT EXISTS] n [(cols)] AS query.
type CreateView struct {
	Source
	Name        ObjectName
	IfNotExists bool
	OrReplace   bool
	Columns     []string
	Query       *Query
}

// CreateSink is CREATE SINK [IF NOT EXISTS] n [INTO t [(cols)]] {FROM rel | AS
// query} [WITH (...)] [FORMAT x ENCODE y [(...)]]. Exactly one of From and
// Query is set.
type CreateSink struct {
	Source
	Name        ObjectName
	IfNotExists bool
	Into        *ObjectName
	IntoColumns []string
	From        *ObjectName
	Query       *Query
	With        []Option
	Format      *FormatEncode
	// EmitOnWindowClose is EMIT ON WINDOW CLOSE after the query.
	EmitOnWindowClose bool
}

// CreateSource is CREATE SOURCE [IF NOT EXISTS] n [(cols)] WITH (...)
// [FORMAT x ENCODE y [(...)]].
type CreateSource struct {
	Source
	Name        ObjectName
	IfNotExists bool
	Columns     []*ColumnDef
	PrimaryKey  []string
	Include     []Include
	With        []Option
	Format      *FormatEncode
	Watermark   *Watermark
}

// Drop is DROP <kind> [IF EXISTS] n [, ...] [CASCADE | RESTRICT].
type Drop struct {
	Source
	Kind     ObjectKind
	Names    []ObjectName
	IfExists bool
	Cascade  bool
}

// Set is SET [SESSION | LOCAL] name {= | TO} value [, ...], SET ... DEFAULT and
// RESET name (Default set). Name is lower case ("timezone" for SET TIME ZONE).
type Set struct {
	Source
	Name    string
	Value   []string
	Default bool
	Reset   bool // RESET x rather than SET x = DEFAULT (the command tags differ)
	Local   bool
}

// Show is a SHOW command. Kind is one of "tables", "materialized_views",
// "views", "sinks", "sources", "jobs", "databases", "schemas", "columns",
// "all", "parameters", "create_table", "create_materialized_view",
// "create_view", "create_sink", "create_source", "indexes" or "variable"
// (then Name is the variable, e.g. "timezone"). Object is the relation for
// SHOW COLUMNS/CREATE/INDEXES, or carries the schema (Object.Schema) for
// SHOW TABLES FROM s and the like.
type Show struct {
	Source
	Kind   string
	Name   string
	Object *ObjectName
}

// Describe is DESCRIBE t (same as SHOW COLUMNS FROM t).
type Describe struct {
	Source
	Name ObjectName
}

// Flush is FLUSH.
type Flush struct{ Source }

// Wait is WAIT.
type Wait struct{ Source }

// Recover is RECOVER.
type Recover struct{ Source }

// CancelJobs is CANCEL JOB[S] id [, ...].
type CancelJobs struct {
	Source
	IDs []int64
}

// Begin is BEGIN / START TRANSACTION with its modes. Isolation is lower case
// ("serializable", "repeatable read", ...) or "" when not given.
type Begin struct {
	Source
	Start     bool // START TRANSACTION rather than BEGIN (the command tags differ)
	ReadOnly  bool
	Isolation string
}

// Commit is COMMIT or END.
type Commit struct{ Source }

// Rollback is ROLLBACK or ABORT, or ROLLBACK TO [SAVEPOINT] name when
// ToSavepoint is set.
type Rollback struct {
	Source
	ToSavepoint string
}

// Savepoint is SAVEPOINT name.
type Savepoint struct {
	Source
	Name string
}

// Release is RELEASE [SAVEPOINT] name.
type Release struct {
	Source
	Name string
}

// Alter is ALTER {MATERIALIZED VIEW | SINK | TABLE | SOURCE | SYSTEM} [n] SET
// key {= | TO} {value | DEFAULT}. Action is "set"; Key is lower case.
type Alter struct {
	Source
	Kind    ObjectKind
	Name    ObjectName
	Action  string
	Key     string
	Value   string
	Default bool
}

// Discard is DISCARD {ALL | PLANS | SEQUENCES | TEMP}; What is lower case.
type Discard struct {
	Source
	What string
}

// Prepare is PREPARE name [(types)] AS statement: Body is the statement's
// text, Statement its parse.
type Prepare struct {
	Source
	Name      string
	Types     []TypeName
	Body      string
	Statement Statement
}

// Execute is EXECUTE name [(args)]: each argument's expression text.
type Execute struct {
	Source
	Name string
	Args []string
}

// Deallocate is DEALLOCATE [PREPARE] {name | ALL}.
type Deallocate struct {
	Source
	Name string
	All  bool
}

// Truncate is TRUNCATE [TABLE] [ONLY] name [, ...] [RESTART IDENTITY |
// CONTINUE IDENTITY] [CASCADE | RESTRICT].
type Truncate struct {
	Source
	Names           []ObjectName
	RestartIdentity bool
	Cascade         bool
}

// Rename is ALTER {TABLE | MATERIALIZED VIEW | VIEW | SINK | SOURCE}
// [IF EXISTS] name RENAME TO new, or, with Column set, ALTER TABLE name
// RENAME [COLUMN] column TO new, or, with NewSchema set, ALTER ... name SET
// SCHEMA s (NewName is then the name itself).
type Rename struct {
	Source
	Kind      ObjectKind
	Name      ObjectName
	IfExists  bool
	Column    string
	NewName   string
	NewSchema string
}

// AlterColumn is ALTER TABLE [IF EXISTS] name ADD [COLUMN] [IF NOT EXISTS]
// def (Add set) or DROP [COLUMN] [IF EXISTS] column [CASCADE | RESTRICT]
// (Drop set).
type AlterColumn struct {
	Source
	Name     ObjectName
	IfExists bool
	Add      *ColumnDef
	Drop     string
	// ColumnIf is ADD's IF NOT EXISTS or DROP's IF EXISTS.
	ColumnIf bool
	Cascade  bool
}

// Comment is COMMENT ON {TABLE | MATERIALIZED VIEW | VIEW | SINK | SOURCE |
// COLUMN} name IS {'text' | NULL}. For a column, Name is its relation and
// Column the column; Null (or ”) removes the comment.
type Comment struct {
	Source
	Kind    ObjectKind
	Name    ObjectName
	Column  string
	Comment string
	Null    bool
}

// CreateSchema is CREATE SCHEMA [IF NOT EXISTS] name [AUTHORIZATION role]
// (or CREATE SCHEMA AUTHORIZATION role, naming it after the role).
type CreateSchema struct {
	Source
	Name          string
	IfNotExists   bool
	Authorization string
}

// CreateDatabase is CREATE DATABASE [IF NOT EXISTS] name [[WITH] OWNER [=] role].
type CreateDatabase struct {
	Source
	Name        string
	IfNotExists bool
	Owner       string
}

// DropDatabase is DROP DATABASE [IF EXISTS] name.
type DropDatabase struct {
	Source
	Name     string
	IfExists bool
}

// DropSchema is DROP SCHEMA [IF EXISTS] name [, ...] [CASCADE | RESTRICT].
type DropSchema struct {
	Source
	Names    []string
	IfExists bool
	Cascade  bool
}
