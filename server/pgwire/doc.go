// Package pgwire owns the server side of the PostgreSQL v3 wire protocol: startup
// (SSL/GSS refusal, trust auth, ParameterStatus, BackendKeyData), the simple and the
// extended query protocols, row encoding in text and binary formats, CancelRequest,
// and the mapping of types.Err* kinds to SQLSTATE codes.
//
// Server accepts connections and runs one handler goroutine per connection. The SQL
// engine behind a connection is a Session (with Statement, Result, Column), created
// by a Factory; pgwire knows nothing else about it.
package pgwire
