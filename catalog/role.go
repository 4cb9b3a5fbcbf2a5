package catalog

// RootRole is the superuser that exists from the first start.
const RootRole = "root"

// Role is a user or role (CREATE USER | ROLE). Password is PostgreSQL's
// SCRAM-SHA-256 verifier ("SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>",
// base64) or md5 hash ("md5" and 32 hex digits), never the password; ""
// when the role has none.
type Role struct {
	Name      string `json:"name"`
	OID       uint32 `json:"oid"`
	Superuser bool   `json:"superuser,omitempty"`
	Login     bool   `json:"login,omitempty"`
	CreateDB  bool   `json:"createdb,omitempty"`
	// CreateConnection lets the role create connectors that connect out
	// (CREATECONNECTION).
	CreateConnection bool   `json:"createconnection,omitempty"`
	Password         string `json:"password,omitempty"`
}
