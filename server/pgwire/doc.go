// Package pgwire owns the server side of the PostgreSQL v3 wire protocol: startup
// (TLS when configured, GSS refusal, ParameterStatus, BackendKeyData), client
// authentication (trust, SCRAM-SHA-256, md5, password, client certificates, and the
// pg_hba-style rules of HBA), the simple and the extended query protocols, row
// encoding in text and binary formats, CancelRequest, and the mapping of types.Err*
// kinds to SQLSTATE codes.
//
// Server accepts connections and runs one handler goroutine per connection. The SQL
// engine behind a connection is a Session (with Statement, Result, Column), created
// by a Factory; Config.Auth tells how a user authenticates (AuthDecision); pgwire
// knows nothing else about the engine.
package pgwire
