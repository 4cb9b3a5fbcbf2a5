package types

import (
	"errors"
	"fmt"
)

// Error kinds. Every error a user can cause wraps exactly one of these; the wire
// layer (server/pgwire) maps each to its SQLSTATE. Tests assert the kind with
// errors.Is, never the message text.
var (
	ErrSyntax                 = errors.New("syntax error")                        // 42601
	ErrUndefinedTable         = errors.New("undefined table")                     // 42P01
	ErrUndefinedColumn        = errors.New("undefined column")                    // 42703
	ErrUndefinedFunction      = errors.New("undefined function")                  // 42883
	ErrUndefinedObject        = errors.New("undefined object")                    // 42704
	ErrUndefinedParameter     = errors.New("undefined parameter")                 // 42P02
	ErrAmbiguousColumn        = errors.New("ambiguous column")                    // 42702
	ErrDuplicateTable         = errors.New("duplicate table")                     // 42P07
	ErrDuplicateColumn        = errors.New("duplicate column")                    // 42701
	ErrDuplicateObject        = errors.New("duplicate object")                    // 42710
	ErrDuplicateSchema        = errors.New("duplicate schema")                    // 42P06
	ErrDuplicatePrepared      = errors.New("duplicate prepared statement")        // 42P05
	ErrUndefinedPrepared      = errors.New("undefined prepared statement")        // 26000
	ErrReservedName           = errors.New("reserved name")                       // 42939
	ErrInvalidSchemaName      = errors.New("invalid schema name")                 // 3F000
	ErrDatatypeMismatch       = errors.New("datatype mismatch")                   // 42804
	ErrInvalidTableDefinition = errors.New("invalid table definition")            // 42P16
	ErrWindowing              = errors.New("windowing error")                     // 42P20
	ErrCannotCoerce           = errors.New("cannot coerce")                       // 42846
	ErrDuplicateAlias         = errors.New("duplicate alias")                     // 42712
	ErrCantChangeParam        = errors.New("cant change runtime param")           // 55P02
	ErrGrouping               = errors.New("grouping error")                      // 42803
	ErrWrongObjectType        = errors.New("wrong object type")                   // 42809
	ErrInvalidColumnRef       = errors.New("invalid column reference")            // 42P10
	ErrUnsupported            = errors.New("feature not supported")               // 0A000
	ErrNumericOutOfRange      = errors.New("numeric value out of range")          // 22003
	ErrDivisionByZero         = errors.New("division by zero")                    // 22012
	ErrInvalidText            = errors.New("invalid input syntax")                // 22P02
	ErrInvalidDatetime        = errors.New("invalid datetime format")             // 22007
	ErrDatetimeOverflow       = errors.New("datetime field overflow")             // 22008
	ErrStringTruncation       = errors.New("string data right truncation")        // 22001
	ErrInvalidParameter       = errors.New("invalid parameter value")             // 22023
	ErrInvalidRegex           = errors.New("invalid regular expression")          // 2201B
	ErrDataException          = errors.New("data exception")                      // 22000
	ErrNotNullViolation       = errors.New("not null violation")                  // 23502
	ErrUniqueViolation        = errors.New("unique violation")                    // 23505
	ErrCardinality            = errors.New("cardinality violation")               // 21000
	ErrDependentObjects       = errors.New("dependent objects still exist")       // 2BP01
	ErrInvalidTxState         = errors.New("invalid transaction state")           // 25000
	ErrInFailedTx             = errors.New("in failed sql transaction")           // 25P02
	ErrActiveTx               = errors.New("active sql transaction")              // 25001
	ErrNoActiveTx             = errors.New("no active sql transaction")           // 25P01
	ErrInvalidSavepoint       = errors.New("invalid savepoint specification")     // 3B001
	ErrSerialization          = errors.New("serialization failure")               // 40001
	ErrGeneratedAlways        = errors.New("generated always")                    // 428C9
	ErrQueryCanceled          = errors.New("query canceled")                      // 57014
	ErrInvalidCatalogName     = errors.New("invalid catalog name")                // 3D000
	ErrProtocolViolation      = errors.New("protocol violation")                  // 08P01
	ErrDiskFull               = errors.New("disk full")                           // 53100
	ErrInternal               = errors.New("internal error")                      // XX000
	ErrObjectInUse            = errors.New("object in use")                       // 55006
	ErrDuplicateDatabase      = errors.New("duplicate database")                  // 42P04
	ErrInsufficientRes        = errors.New("insufficient resources")              // 53000
	ErrInvalidName            = errors.New("invalid name")                        // 42602
	ErrInvalidDefinition      = errors.New("invalid object definition")           // 42P17
	ErrFeatureNotReady        = errors.New("object not in prerequisite state")    // 55000
	ErrStackDepth             = errors.New("stack depth limit exceeded")          // 54001
	ErrProgramLimit           = errors.New("program limit exceeded")              // 54000
	ErrTooManyColumns         = errors.New("too many columns")                    // 54011
	ErrInsufficientPrivilege  = errors.New("insufficient privilege")              // 42501
	ErrSequenceLimit          = errors.New("sequence limit exceeded")             // 2200H
	ErrIndeterminateDatatype  = errors.New("indeterminate datatype")              // 42P18
	ErrArraySubscript         = errors.New("array subscript error")               // 2202E
	ErrInvalidEscape          = errors.New("invalid escape sequence")             // 22025
	ErrNthValueArgument       = errors.New("invalid argument for nth_value")      // 22016
	ErrNtileArgument          = errors.New("invalid argument for ntile")          // 22014
	ErrNullNotAllowed         = errors.New("null value not allowed")              // 22004
	ErrWindowFrameSize        = errors.New("invalid preceding or following size") // 22013
	ErrDuplicateFunction      = errors.New("duplicate function")                  // 42723
	ErrInvalidFunctionDef     = errors.New("invalid function definition")         // 42P13
	ErrInvalidRecursion       = errors.New("invalid recursion")                   // 42P19
	ErrAmbiguousFunction      = errors.New("ambiguous function")                  // 42725
	ErrInvalidLimit           = errors.New("invalid row count in limit clause")   // 2201W
	ErrInvalidOffset          = errors.New("invalid row count in result offset")  // 2201X
)

// Nesting limits. Go cannot recover from a stack overflow, so every recursive
// stage (parser, binder, planner, expression evaluation) refuses input nested
// deeper than these with StackDepthError, as PostgreSQL does past
// max_stack_depth (where about 5,000 chained operators already fail).
const (
	// MaxExprDepth bounds the depth of an expression: operators chained or
	// nested, e.g. 0+1+1+... with more than this many terms.
	MaxExprDepth = 10000
	// MaxNesting bounds brackets nested in a statement's text and queries
	// nested in a statement (subqueries, joins, set operations).
	MaxNesting = 1000
)

// StackDepthError is PostgreSQL's 54001 "stack depth limit exceeded", with a
// hint naming the limit that was passed.
func StackDepthError(limit int, what string) error {
	return &Error{Kind: ErrStackDepth, Msg: "stack depth limit exceeded",
		Hint: fmt.Sprintf("The statement nests %s more than %d deep; simplify it "+
			"(Tributary's limit is fixed: there is no \"max_stack_depth\" parameter to increase).", what, limit)}
}

// Error is a user-facing error: a kind (one of the Err* sentinels), the message
// PostgreSQL would print, and optionally a 1-based character position in the
// statement text. errors.Is(err, ErrSyntax) works through it.
type Error struct {
	Kind   error
	Msg    string
	Pos    int    // 1-based character offset in the statement, 0 if none
	Detail string // optional DETAIL line
	Hint   string // optional HINT line
}

func (e *Error) Error() string { return e.Msg }

// Unwrap returns the kind so errors.Is matches it.
func (e *Error) Unwrap() error { return e.Kind }

// Errorf builds an *Error of the given kind.
func Errorf(kind error, format string, args ...any) error {
	return &Error{Kind: kind, Msg: fmt.Sprintf(format, args...)}
}

// ErrorAt builds an *Error of the given kind with a statement position.
func ErrorAt(kind error, pos int, format string, args ...any) error {
	return &Error{Kind: kind, Msg: fmt.Sprintf(format, args...), Pos: pos}
}
