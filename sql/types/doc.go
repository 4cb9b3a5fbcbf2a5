// Package types owns Tributary's SQL data types and values: T (a type), Datum (one
// scalar value, unboxed), Vector (one typed column) and Chunk (columnar rows with
// per-row ops and visibility, the unit that flows through batch and stream
// executors). Arrays are T{ID: Array, Elem: ...}, one dimension, their values
// encoded in a string by EncodeArray; structs are T{ID: Struct, Fields: ...}
// (StructFields), their values encoded by EncodeStruct. It also owns the PostgreSQL text forms
// of values (FormatText, ParseText), value ordering (Compare) and hashing
// (Hash), and the SQL error kinds (Error, ErrSyntax, ...) that the wire layer
// maps to SQLSTATE codes.
package types
