package postgrescdc

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tributary/tributary/connector"
	"github.com/tributary/tributary/sql/types"
)

// Name is the connector's name in WITH (connector = ...).
const Name = "postgres-cdc"

// The options (WITH keys, lower case).
const (
	OptHostname          = "hostname"
	OptPort              = "port"
	OptUsername          = "username"
	OptPassword          = "password"
	OptDatabase          = "database.name"
	OptSchema            = "schema.name"
	OptTable             = "table.name"
	OptSlot              = "slot.name"
	OptPublication       = "publication.name"
	OptPublicationCreate = "publication.create.enable"
	OptSSLMode           = "ssl.mode"
	OptChunkRows         = "snapshot.batch.size"
	// OptParallelism (RisingWave's name) splits the copy into this many
	// primary-key ranges, copied at once over as many connections.
	OptParallelism = "backfill.parallelism"
	// OptRowsPerSplit (RisingWave's name) sizes the ranges instead: the
	// upstream's rows over it, copied backfill.parallelism at a time.
	OptRowsPerSplit = "backfill.num_rows_per_split"
)

// The options Tributary records itself (a user's WITH may not name them).
const (
	// OptSource marks a table of a CDC source (CREATE TABLE ... FROM
	// source TABLE): its value is the source's name. The table reads the
	// source's slot with the source's other tables; DROP TABLE leaves the
	// slot.
	OptSource = "tributary.source"
	// OptSiblings lists the other tables of the slot (their qualified names,
	// comma-separated), as the catalog has them when the job is built:
	// the slot's confirmed LSN waits for all of them after a restart.
	OptSiblings = connector.OptSiblings
	// OptSlotCreated: CREATE SOURCE made the slot (DROP SOURCE drops it).
	OptSlotCreated = "tributary.slot.created"
	// OptRanges fixes a parallel copy's key ranges at CREATE (a JSON array
	// of the n-1 bounds on the first key column, in text): the table's
	// splits are then the ranges, numbered from 0, which its job's actors
	// share out (ranged tables: parallel.go).
	OptRanges = "tributary.ranges"
)

// TableOf is the options of a table of a CDC source (connector.SourceConnector.TableOf):
// the source's, with the upstream table's schema and name.
func TableOf(props map[string]string, source, table string) (map[string]string, error) {
	schema, name := props[OptSchema], table
	if i := strings.IndexByte(table, '.'); i >= 0 {
		schema, name = table[:i], table[i+1:]
	}
	if schema == "" {
		schema = "public"
	}
	if name == "" || strings.Contains(name, ".") {
		return nil, types.Errorf(types.ErrInvalidParameter, "postgres-cdc: TABLE '%s' must name an upstream table as 'schema.table' or 'table'", table)
	}
	out := make(map[string]string, len(props)+3)
	for k, v := range props {
		if k != OptSlotCreated {
			out[k] = v
		}
	}
	out[OptSchema], out[OptTable], out[OptSource] = schema, name, source
	return out, nil
}

// InternalOption reports whether a WITH key is one Tributary records
// itself.
func InternalOption(key string) bool { return strings.HasPrefix(key, "tributary.") }

var knownOptions = []string{"connector", OptHostname, OptPort, OptUsername, OptPassword, OptDatabase, OptSchema,
	OptTable, OptSlot, OptPublication, OptPublicationCreate, OptSSLMode, OptChunkRows, OptParallelism, OptRowsPerSplit}

// MaxParallelism bounds backfill.parallelism (RisingWave's bound too).
const MaxParallelism = 256

// TableOptions are the options a table of a CDC source may set for itself
// (CREATE TABLE ... FROM source TABLE '...' WITH (...)); the source's apply
// otherwise.
var TableOptions = []string{OptChunkRows, OptParallelism, OptRowsPerSplit}

// MaxRanges bounds the ranges backfill.num_rows_per_split makes.
const MaxRanges = 1024

// DefaultChunkRows is how many rows one copy query reads at first; unless
// snapshot.batch.size is set (Config.AutoChunk false), a copy doubles its
// chunks up to MaxAutoChunkRows while a chunk's values take at most half
// of autoChunkBytes (and halves them above it): each chunk costs a few
// round trips to the upstream and its watermark's way through the WAL, so
// small rows copy in large chunks.
const (
	DefaultChunkRows = 8192
	MaxAutoChunkRows = 65536
	autoChunkBytes   = 16 << 20
)

// connectTimeout bounds connecting to the upstream.
const connectTimeout = 10 * time.Second

// Config is a postgres-cdc table's options, validated.
type Config struct {
	Host     string
	Port     int
	User     string
	Password string
	Database string
	Schema   string
	Table    string
	// Slot and Publication name the replication slot and the publication
	// (defaults derived from the Tributary relation and the upstream table).
	Slot              string
	Publication       string
	CreatePublication bool
	// SSLMode is libpq's sslmode (disable, prefer, require, ...).
	SSLMode string
	// ChunkRows is the rows one copy query reads (at first, with
	// AutoChunk: snapshot.batch.size not set).
	ChunkRows int
	AutoChunk bool
	// Parallelism is the key ranges the copy is split into (1: one range,
	// copied a chunk at a time on the session's connection), and how many
	// are copied at once.
	Parallelism int
	// RowsPerSplit (> 0) makes the ranges the upstream's rows over it
	// instead (at most MaxRanges), Parallelism of them copied at once.
	RowsPerSplit int64
	// SourceName is the CDC source a table reads ("" for the single-table
	// form); Siblings are the other tables of its slot (splits).
	SourceName string
	Siblings   []string
	// SlotCreated: CREATE SOURCE made the slot.
	SlotCreated bool
	// Ranged: the copy's key ranges were fixed at CREATE (OptRanges):
	// Bounds are the n-1 bounds between them, and the table's splits are
	// the ranges (numbered "0" to "n-1"), each with its own offset.
	Ranged bool
	Bounds []string
}

// ParseConfig reads the options (keys lower case). relation is the
// Tributary relation's qualified name, from which the slot's default name
// is made; table is false for a CDC source (CREATE SOURCE: no table.name;
// the publication's default name is made of relation too). Errors name
// the option (types.ErrInvalidParameter).
func ParseConfig(props map[string]string, relation string, table bool) (Config, error) {
	c := Config{Port: 5432, Schema: "public", CreatePublication: true, SSLMode: "prefer", ChunkRows: DefaultChunkRows, AutoChunk: true, Parallelism: 1}
	var unknown []string
	for k, v := range props {
		switch k {
		case "connector":
		case OptHostname:
			c.Host = strings.TrimSpace(v)
		case OptPort:
			p, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || p <= 0 || p > 65535 {
				return c, types.Errorf(types.ErrInvalidParameter, "postgres-cdc: %s must be a port number (1-65535), got %q", k, v)
			}
			c.Port = p
		case OptUsername:
			c.User = v
		case OptPassword:
			c.Password = v
		case OptDatabase:
			c.Database = v
		case OptSchema:
			c.Schema = v
		case OptTable:
			c.Table = v
		case OptSlot:
			c.Slot = v
		case OptPublication:
			c.Publication = v
		case OptPublicationCreate:
			b, err := strconv.ParseBool(strings.TrimSpace(v))
			if err != nil {
				return c, types.Errorf(types.ErrInvalidParameter, "postgres-cdc: %s must be true or false, got %q", k, v)
			}
			c.CreatePublication = b
		case OptSSLMode:
			switch m := strings.ToLower(strings.TrimSpace(v)); m {
			case "disable", "allow", "prefer", "require", "verify-ca", "verify-full":
				c.SSLMode = m
			default:
				return c, types.Errorf(types.ErrInvalidParameter, "postgres-cdc: %s must be disable, allow, prefer, require, verify-ca or verify-full, got %q", k, v)
			}
		case OptSource:
			c.SourceName = v
		case OptSiblings:
			for _, sib := range strings.Split(v, ",") {
				if sib != "" {
					c.Siblings = append(c.Siblings, sib)
				}
			}
		case OptSlotCreated:
			c.SlotCreated = v == "true"
		case OptRanges:
			if err := json.Unmarshal([]byte(v), &c.Bounds); err != nil {
				return c, types.Errorf(types.ErrInvalidParameter, "postgres-cdc: %s %q is malformed: %v", k, v, err)
			}
			c.Ranged = true
		case OptChunkRows:
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n <= 0 || n > 1<<20 {
				return c, types.Errorf(types.ErrInvalidParameter, "postgres-cdc: %s must be an integer from 1 to %d, got %q", k, 1<<20, v)
			}
			c.ChunkRows, c.AutoChunk = n, false
		case OptParallelism:
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n <= 0 || n > MaxParallelism {
				return c, types.Errorf(types.ErrInvalidParameter, "postgres-cdc: %s must be an integer from 1 to %d, got %q", k, MaxParallelism, v)
			}
			c.Parallelism = n
		case OptRowsPerSplit:
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil || n <= 0 {
				return c, types.Errorf(types.ErrInvalidParameter, "postgres-cdc: %s must be a positive integer, got %q", k, v)
			}
			c.RowsPerSplit = n
		default:
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return c, types.Errorf(types.ErrInvalidParameter, "unknown postgres-cdc option %s (known: %s)", quoted(unknown), strings.Join(knownOptions, ", "))
	}
	for _, req := range []struct{ opt, val string }{{OptHostname, c.Host}, {OptUsername, c.User}, {OptDatabase, c.Database}, {OptTable, c.Table}} {
		if req.opt == OptTable && !table {
			if req.val != "" {
				return c, types.Errorf(types.ErrInvalidParameter, "postgres-cdc: a source takes no %s: name the upstream table in CREATE TABLE t (...) FROM source TABLE 'schema.table'", OptTable)
			}
			continue
		}
		if req.val == "" {
			return c, types.Errorf(types.ErrInvalidParameter, "postgres-cdc: the %s option is required", req.opt)
		}
	}
	if c.Schema == "" {
		return c, types.Errorf(types.ErrInvalidParameter, "postgres-cdc: %s must not be empty", OptSchema)
	}
	if strings.Contains(c.Table, ".") && props[OptSchema] == "" {
		// table.name = 'schema.table'
		i := strings.IndexByte(c.Table, '.')
		c.Schema, c.Table = c.Table[:i], c.Table[i+1:]
	}
	if c.Slot == "" {
		c.Slot = identifier("tributary_" + relation)
	} else if !validSlot(c.Slot) {
		return c, types.Errorf(types.ErrInvalidParameter, "postgres-cdc: %s %q is not a valid replication slot name (lower-case letters, digits and underscores, at most 63)", OptSlot, c.Slot)
	}
	if c.Publication == "" && table {
		c.Publication = identifier("tributary_pub_" + c.Schema + "_" + c.Table)
	} else if c.Publication == "" {
		c.Publication = identifier("tributary_pub_" + relation)
	}
	return c, nil
}

func quoted(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// identifier makes a valid slot (and publication) name of s: lower case,
// characters other than [a-z0-9_] replaced by '_', at most 63 bytes.
func identifier(s string) string {
	b := []byte(strings.ToLower(s))
	for i, ch := range b {
		if !(ch >= 'a' && ch <= 'z' || ch >= '0' && ch <= '9' || ch == '_') {
			b[i] = '_'
		}
	}
	if len(b) > 63 {
		b = b[:63]
	}
	return string(b)
}

func validSlot(s string) bool {
	return s != "" && len(s) <= 63 && identifier(s) == s
}

// Addr is host:port.
func (c Config) Addr() string { return net.JoinHostPort(c.Host, strconv.Itoa(c.Port)) }

// QualifiedTable is the upstream table, quoted for SQL.
func (c Config) QualifiedTable() string { return quoteIdent(c.Schema) + "." + quoteIdent(c.Table) }

// connString is a libpq URL for the database; replication adds
// replication=database (a walsender connection). The session settings fix
// the text forms the values arrive in.
func (c Config) connString() string {
	u := url.URL{Scheme: "postgres", Host: c.Addr(), Path: "/" + c.Database}
	if c.Password != "" {
		u.User = url.UserPassword(c.User, c.Password)
	} else {
		u.User = url.User(c.User)
	}
	q := url.Values{}
	q.Set("sslmode", c.SSLMode)
	q.Set("connect_timeout", strconv.Itoa(int(connectTimeout/time.Second)))
	q.Set("application_name", "tributary-cdc")
	u.RawQuery = q.Encode()
	return u.String()
}

// settings are the session settings of every connection: the text forms
// types.ParseText reads.
var settings = map[string]string{
	"DateStyle": "ISO, MDY", "IntervalStyle": "postgres", "TimeZone": "UTC", "extra_float_digits": "3",
	"bytea_output": "hex", "client_encoding": "UTF8",
}

// connect opens a connection (replication: a walsender connection).
func (c Config) connect(ctx context.Context, replication bool) (*pgconn.PgConn, error) {
	pc, err := pgconn.ParseConfig(c.connString())
	if err != nil {
		return nil, types.Errorf(types.ErrInvalidParameter, "postgres-cdc: %v", err)
	}
	pc.LookupFunc = func(_ context.Context, host string) ([]string, error) { return []string{host}, nil } // connector.Dial resolves
	pc.DialFunc = connector.Dial
	for k, v := range settings {
		pc.RuntimeParams[k] = v
	}
	if replication {
		pc.RuntimeParams["replication"] = "database"
	}
	ctx, cancel := context.WithTimeout(ctx, connectTimeout+5*time.Second)
	defer cancel()
	conn, err := pgconn.ConnectConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("postgres-cdc: connect to %s database %q as %q: %w", c.Addr(), c.Database, c.User, connector.Peer(err))
	}
	return conn, nil
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

func quoteLiteral(s string) string { return `'` + strings.ReplaceAll(s, `'`, `''`) + `'` }
