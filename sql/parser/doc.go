// Package parser turns SQL text into Tributary's statement AST. It owns a
// PostgreSQL-aware tokenizer, an ordered list of named rewrite rules that turn
// PostgreSQL-only expression forms into text TiDB's parser accepts (queries and
// DML are parsed by TiDB, github.com/pingcap/tidb/pkg/parser), and its own small
// grammar for the streaming DDL and session commands TiDB lacks. A bulk INSERT ... VALUES
// of literal rows skips both for its rows after the first (insert_values.go), which are
// split off its tokens and kept as Literal values (Query.Rows) for the binder.
//
// Parse is the entry point; it returns Statement values such as *Query,
// *CreateTable (also CREATE TABLE ... FROM source TABLE 'name' and CREATE
// TABLE ... AS query), *CreateSource, *CreateMaterializedView, *CreateSink,
// *Truncate, *Rename, *AlterColumn, *Comment, *CreateSchema, *DropSchema,
// *CreateFunction, *DropFunction,
// *Set and *Show. Errors are
// *types.Error of kind types.ErrSyntax (with a position in the original text) or
// types.ErrUnsupported.
package parser
