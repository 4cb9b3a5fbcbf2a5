package pgwire

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"github.com/tributary/tributary/sql/types"
)

// SQLSTATE codes pgwire raises itself (protocol-level conditions with no types kind).
const (
	codeProtocolViolation   = "08P01"
	codeFeatureNotSupported = "0A000"
	codeInternal            = "XX000"
	codeQueryCanceled       = "57014"
	codeInvalidBinaryFormat = "22P03"
	codeUndefinedStatement  = "26000" // invalid_sql_statement_name
	codeUndefinedPortal     = "34000" // invalid_cursor_name
	codeDuplicateStatement  = "42P05" // duplicate_prepared_statement
	codeDuplicatePortal     = "42P03" // duplicate_cursor
	codeInvalidAuthSpec     = "28000"
	codeInvalidPassword     = "28P01"
	codeSyntax              = "42601"
	codeUndefinedParameter  = "42P02"
	codeTooManyConnections  = "53300"
	codeIdleInTxTimeout     = "25P03"
	codeAdminShutdown       = "57P01"
)

// sqlStates maps each types.Err* kind to its SQLSTATE; the first match (errors.Is)
// wins. This is the only SQLSTATE table in the code base.
var sqlStates = []struct {
	kind error
	code string
}{
	{types.ErrSyntax, "42601"},
	{types.ErrUndefinedTable, "42P01"},
	{types.ErrUndefinedColumn, "42703"},
	{types.ErrUndefinedFunction, "42883"},
	{types.ErrUndefinedObject, "42704"},
	{types.ErrUndefinedParameter, "42P02"},
	{types.ErrAmbiguousColumn, "42702"},
	{types.ErrDuplicateTable, "42P07"},
	{types.ErrDuplicateColumn, "42701"},
	{types.ErrDuplicateObject, "42710"},
	{types.ErrDuplicateSchema, "42P06"},
	{types.ErrDuplicateDatabase, "42P04"},
	{types.ErrDuplicatePrepared, "42P05"},
	{types.ErrUndefinedPrepared, "26000"},
	{types.ErrReservedName, "42939"},
	{types.ErrInvalidSchemaName, "3F000"},
	{types.ErrDatatypeMismatch, "42804"},
	{types.ErrCannotCoerce, "42846"},
	{types.ErrInvalidTableDefinition, "42P16"},
	{types.ErrWindowing, "42P20"},
	{types.ErrDuplicateAlias, "42712"},
	{types.ErrCantChangeParam, "55P02"},
	{types.ErrGrouping, "42803"},
	{types.ErrWrongObjectType, "42809"},
	{types.ErrInvalidColumnRef, "42P10"},
	{types.ErrUnsupported, "0A000"},
	{types.ErrNumericOutOfRange, "22003"},
	{types.ErrDivisionByZero, "22012"},
	{types.ErrInvalidText, "22P02"},
	{types.ErrInvalidDatetime, "22007"},
	{types.ErrDatetimeOverflow, "22008"},
	{types.ErrStringTruncation, "22001"},
	{types.ErrInvalidParameter, "22023"},
	{types.ErrInvalidRegex, "2201B"},
	{types.ErrDataException, "22000"},
	{types.ErrNotNullViolation, "23502"},
	{types.ErrUniqueViolation, "23505"},
	{types.ErrCardinality, "21000"},
	{types.ErrDependentObjects, "2BP01"},
	{types.ErrInvalidTxState, "25000"},
	{types.ErrInFailedTx, "25P02"},
	{types.ErrActiveTx, "25001"},
	{types.ErrNoActiveTx, "25P01"},
	{types.ErrInvalidSavepoint, "3B001"},
	{types.ErrSerialization, "40001"},
	{types.ErrGeneratedAlways, "428C9"},
	{types.ErrSequenceLimit, "2200H"},
	{types.ErrIndeterminateDatatype, "42P18"},
	{types.ErrArraySubscript, "2202E"},
	{types.ErrInvalidEscape, "22025"},
	{types.ErrNthValueArgument, "22016"},
	{types.ErrNtileArgument, "22014"},
	{types.ErrNullNotAllowed, "22004"},
	{types.ErrWindowFrameSize, "22013"},
	{types.ErrDuplicateFunction, "42723"},
	{types.ErrInvalidFunctionDef, "42P13"},
	{types.ErrInvalidRecursion, "42P19"},
	{types.ErrAmbiguousFunction, "42725"},
	{types.ErrInvalidLimit, "2201W"},
	{types.ErrInvalidOffset, "2201X"},
	{types.ErrQueryCanceled, "57014"},
	{types.ErrInvalidCatalogName, "3D000"},
	{types.ErrProtocolViolation, "08P01"},
	{types.ErrDiskFull, "53100"},
	{syscall.ENOSPC, "53100"}, // a full disk met in storage (storage.ErrDiskFull wraps it)
	{types.ErrInternal, "XX000"},
	{types.ErrObjectInUse, "55006"},
	{types.ErrInsufficientRes, "53000"},
	{types.ErrInvalidName, "42602"},
	{types.ErrInvalidDefinition, "42P17"},
	{types.ErrFeatureNotReady, "55000"},
	{types.ErrStackDepth, "54001"},
	{types.ErrProgramLimit, "54000"},
	{types.ErrInsufficientPrivilege, "42501"},
	{types.ErrTooManyColumns, "54011"},
	{context.Canceled, codeQueryCanceled},
}

// wireError is an error pgwire raises itself with an explicit SQLSTATE.
type wireError struct {
	code string
	msg  string
}

func (e *wireError) Error() string { return e.msg }

func wireErrorf(code, format string, args ...any) error {
	return &wireError{code: code, msg: fmt.Sprintf(format, args...)}
}

// pgError is the content of an ErrorResponse.
type pgError struct {
	Code, Message, Detail, Hint string
	// Where is the context (CONTEXT in psql), e.g. a COPY's line and column.
	Where    string
	Position int32
}

// SQLState returns the SQLSTATE for err: a pgwire protocol code, the code of its
// types.Err* kind, or XX000.
func SQLState(err error) string {
	var we *wireError
	if errors.As(err, &we) {
		return we.code
	}
	for _, s := range sqlStates {
		if errors.Is(err, s.kind) {
			return s.code
		}
	}
	return codeInternal
}

// toPgError extracts what an ErrorResponse carries from err: the message of the
// innermost *types.Error (or err.Error()), its position, detail and hint.
func toPgError(err error) pgError {
	pe := pgError{Code: SQLState(err), Message: err.Error()}
	var te *types.Error
	if errors.As(err, &te) {
		for {
			var inner *types.Error
			if te.Kind == nil || !errors.As(te.Kind, &inner) {
				break
			}
			te = inner
		}
		pe.Message = te.Msg
		pe.Detail = te.Detail
		pe.Hint = te.Hint
		if te.Pos > 0 {
			pe.Position = int32(te.Pos)
		}
	}
	var ce *copyError
	if errors.As(err, &ce) {
		pe.Where = ce.where
	}
	if errors.Is(err, context.Canceled) && pe.Code == codeQueryCanceled && te == nil {
		pe.Message = "canceling statement due to user request"
	}
	if te == nil && errors.Is(err, syscall.ENOSPC) {
		// The storage error names epochs and paths: logged by the server,
		// not the client's business.
		pe.Message = "could not write to the data directory: No space left on device"
		pe.Hint = "Free disk space where the server keeps its data; until then it refuses writes."
	}
	return pe
}
