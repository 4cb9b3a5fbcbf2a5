package pgwire

import (
	"context"
	"time"

	"github.com/tributary/tributary/sql/types"
)

// Session is one client connection's SQL engine. pgwire calls it from one goroutine
// per connection.
type Session interface {
	// Parse splits and parses sql into statements without executing or binding
	// anything (a later statement may depend on an earlier one's effects). Zero
	// statements = empty query. paramTypes are the client's declared parameter types
	// (TUnknown when unspecified).
	Parse(ctx context.Context, sql string, paramTypes []types.T) ([]Statement, error)
	// TxStatus returns 'I' idle, 'T' in transaction, 'E' failed transaction.
	TxStatus() byte
	Close()
}

// Statement is one parsed statement. pgwire always calls Describe before Run on the
// same Statement (for a simple query just before Run; for a prepared statement at
// Parse time, then Run once per Execute of each portal bound to it), so an
// implementation may keep the plan it bound in Describe for Run.
type Statement interface {
	// Describe binds the statement (against the current catalog) and reports its
	// parameter types (inferred where the client gave none) and result columns (nil
	// when it returns no rows).
	Describe(ctx context.Context) (params []types.T, cols []Column, err error)
	// Run executes with parameter values (len == len(params) from Describe, already
	// decoded to the parameter types). The Result streams rows; Close must always be
	// called. ctx stays valid until the Result is closed; its cancellation (a
	// CancelRequest, or the server closing) must make Run and Next return promptly.
	Run(ctx context.Context, params []types.Datum) (Result, error)
}

// Column describes one result column as RowDescription reports it.
type Column struct {
	Name       string
	Type       types.T
	TableOID   uint32
	ColumnAttr int16
}

// Result is a running statement's output.
type Result interface {
	// Columns returns the result columns; nil for statements without rows (then
	// RowDescription is not sent; NoData on Describe).
	Columns() []Column
	// Next returns the next chunk (only visible rows are sent), io.EOF at the end.
	// The chunk stays valid until the next call of Next or Close.
	Next(ctx context.Context) (*types.Chunk, error)
	// Tag returns the command tag, valid after Next returned io.EOF (e.g.
	// "SELECT 3", "INSERT 0 1", "CREATE TABLE").
	Tag() string
	Close()
}

// Notifier lets the session send NoticeResponse messages (e.g. progress) while a
// statement runs. The server passes one to the session factory. It is safe to call
// from any goroutine; notices sent after the connection closed are dropped.
type Notifier interface {
	Notice(severity, code, msg string)
}

// Factory creates a session for a validated startup (user, database, all startup
// params; "database" defaults to "user") or returns an error (*types.Error of kind
// ErrInvalidCatalogName for an unknown database → FATAL 3D000).
type Factory func(params map[string]string, n Notifier) (Session, error)

// ParamBackendPID is the params key under which a Factory finds the
// connection's process id (BackendKeyData's, decimal), which pg_backend_pid
// reports; it holds a NUL, so no startup packet can set it.
const ParamBackendPID = "\x00backend_pid"

// Superuser is implemented by a Session that knows whether its user is a
// superuser: is_superuser's ParameterStatus at startup ("on" without it).
type Superuser interface {
	IsSuperuser() bool
}

// Timeouts is implemented by a Session whose timeouts pgwire enforces:
// statement_timeout cancels a statement running longer (57014, "canceling
// statement due to statement timeout"), idle_in_transaction_session_timeout
// closes a connection idle that long inside a transaction block (FATAL
// 25P03). Zero turns either off. pgwire reads them when a statement starts
// and when it waits for the client.
type Timeouts interface {
	StatementTimeout() time.Duration
	IdleInTransactionTimeout() time.Duration
}

// Recoverer is implemented by a Session that wants to know when pgwire
// recovered a panic in one of its statements (reported to the client as
// ERROR XX000; the connection lives on): the session then treats the
// statement as failed, for example by failing its transaction block.
type Recoverer interface {
	Recovered()
}
